"""``gangway webhook-certs --out DIR``: a CA and serving certificate for a local webhook.

For development and local runs only; in a cluster, cert-manager (or deploy/'s self-signed
job) issues the certificate. The CA's key is thrown away once the certificate is signed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from gangway_localcluster.certs import write_serving_certificate

DEFAULT_HOSTS: Final = (
    "localhost",
    "127.0.0.1",
    "gangway-admission.gangway-system.svc",
    "gangway-admission.gangway-system.svc.cluster.local",
)


def add_arguments(certs: argparse.ArgumentParser) -> None:
    certs.add_argument("--out", type=Path, required=True, help="directory to write them into")
    certs.add_argument(
        "--host",
        action="append",
        dest="hosts",
        help="a name or IP the certificate is for (repeatable; default: "
        f"{', '.join(DEFAULT_HOSTS)})",
    )
    certs.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    files = write_serving_certificate(args.out, tuple(args.hosts or DEFAULT_HOSTS))
    print(f"CA (the webhook configuration's caBundle): {files.ca}")
    print(f"GANGWAY_TLS_CERT_FILE={files.cert}")
    print(f"GANGWAY_TLS_KEY_FILE={files.key}")
    return 0
