"""The admission service under test, in the test's event loop, and a webhook registration
that sends only this test's namespace to it (tests share one API server)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_admission.service import listening
from gangway_admission.settings import AdmissionSettings
from gangway_admission.webhook import PATH
from gangway_cli.cluster import WEBHOOK_CONFIGURATIONS
from gangway_cli.up import registration_by_url
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.subjects import Subjects
from gangway_localcluster.certs import write_serving_certificate
from gangway_runtime.kube import KubeError
from gangway_runtime.status import PODCLIQUESETS
from gangway_runtime.streams import ensure_streams
from tests.support.kube import kube_of
from tests.support.manifests import fixture
from tests.support.store import eventually


@dataclass(frozen=True)
class Admission:
    url: str
    ca_bundle: bytes


@contextlib.asynccontextmanager
async def running_admission(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    config: dict[str, Any],
    certs: Path,
    **settings: Any,
) -> AsyncIterator[Admission]:
    files = write_serving_certificate(certs, ("127.0.0.1",))
    # The pods' dry run asks podgang: only where the test runs one.
    settings.setdefault("dry_run_pods", False)
    admission_settings = AdmissionSettings(
        subject_prefix=subjects.prefix,
        webhook_host="127.0.0.1",
        webhook_port=0,
        tls_cert_file=files.cert,
        tls_key_file=files.key,
        **settings,
    )
    js = nc.jetstream()
    await ensure_streams(js, subjects, admission_settings.streams)
    async with listening(
        nc, js, kube_of(api), admission_settings, parse_scheduler_config(config)
    ) as port:
        yield Admission(f"https://127.0.0.1:{port}{PATH}", files.ca.read_bytes())


def webhook_configuration(name: str, admission: Admission, namespace: str) -> dict[str, Any]:
    """As deploy/ registers it, but by URL and for this test's namespace alone."""
    only = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return registration_by_url(name, admission.url, admission.ca_bundle, only)


async def create(api: ApiClient, doc: dict[str, Any], namespace: str, dry_run: bool = False) -> str:
    """Create; the API server's error message if refused, else ""."""
    query = [("dryRun", "All")] if dry_run else []
    try:
        await kube_of(api).request("POST", PODCLIQUESETS.path(namespace), query, body=doc)
    except KubeError as exc:
        return str(exc)
    return ""


async def patch(api: ApiClient, path: str, body: dict[str, Any]) -> str:
    """JSON merge patch; the API server's error message if refused, else ""."""
    try:
        await kube_of(api).request(
            "PATCH", path, body=body, content_type="application/merge-patch+json"
        )
    except KubeError as exc:
        return str(exc)
    return ""


@contextlib.asynccontextmanager
async def registered(api: ApiClient, admission: Admission, namespace: str) -> AsyncIterator[None]:
    """The webhook registered for ``namespace``, and in effect (the API server picks a new
    registration up a moment later)."""
    kube = kube_of(api)
    name = f"gangway-test-{namespace}"
    await kube.request(
        "POST",
        WEBHOOK_CONFIGURATIONS.path(),
        body=webhook_configuration(name, admission, namespace),
    )
    try:
        probe = fixture("podcliquesets/single-clique.yaml")
        probe["metadata"] = {"name": "probe", "namespace": namespace}
        probe["spec"]["template"]["cliques"][0]["name"] = "Not_A_Label"
        await eventually(
            lambda: create(api, probe, namespace, dry_run=True),
            lambda message: "podcliquesets.gangway.dev" in message,
        )
        yield
    finally:
        await kube.request("DELETE", WEBHOOK_CONFIGURATIONS.path(name=name))
