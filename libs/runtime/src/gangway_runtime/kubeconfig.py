"""Where the API server is and how to authenticate to it: in-cluster or from a kubeconfig.

Written here rather than taken from kubernetes_asyncio: importing that package loads every
generated API model (≈35 MiB of a service's ≈90 MiB at idle, measured with
``bench.memory``), and a service needs only this part of it. What is read, as kubectl reads
it:

- in a pod: ``KUBERNETES_SERVICE_HOST``/``_PORT``, the service account's CA and token (the
  token file re-read, since the kubelet rotates it);
- a kubeconfig (the given file, else the first file of ``$KUBECONFIG`` that has a current
  context, else ``~/.kube/config``): the current context's cluster (``server``,
  ``certificate-authority[-data]``, ``insecure-skip-tls-verify``, ``tls-server-name``) and
  user (``token``, ``tokenFile``, ``client-certificate[-data]``/``client-key[-data]``, or an
  ``exec`` credential plugin, its token kept until it expires). Relative paths are relative
  to the kubeconfig's folder. Anything else a kubeconfig may hold (``auth-provider``, basic
  auth, a proxy) is refused by name.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import yaml

SERVICE_ACCOUNT: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS: Final = 60.0  # the kubelet rotates a projected token well before expiry
EXEC_MARGIN_SECONDS: Final = 30.0  # renew an exec plugin's token this long before it expires


class KubeconfigError(OSError):
    """A kubeconfig that cannot be used: an OSError, as a missing one is, so that whoever
    reports unreachable clusters in one line reports this one too."""


@dataclass
class Credentials:
    """The API server's address, the TLS context to reach it and the bearer token source."""

    server: str
    tls: ssl.SSLContext | bool  # False: insecure-skip-tls-verify
    token: TokenSource | None = None
    server_name: str | None = None  # the name the server's certificate is checked against


@dataclass
class TokenSource:
    """A bearer token: fixed, read from a file (re-read now and then), or from an exec
    credential plugin (run again when the token it gave expires)."""

    value: str = ""
    path: Path | None = None
    plugin: Mapping[str, Any] | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    tls: ssl.SSLContext | None = None  # where an exec plugin's client certificate goes
    _expires: float = 0.0
    _lock: asyncio.Lock | None = None

    async def get(self) -> str:
        if self.path is None and self.plugin is None:
            return self.value
        if time.monotonic() < self._expires:
            return self.value
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if time.monotonic() >= self._expires:
                if self.path is not None:
                    self.value = self.path.read_text().strip()
                    self._expires = time.monotonic() + TOKEN_REREAD_SECONDS
                else:
                    await self._run_plugin()
        return self.value

    async def _run_plugin(self) -> None:
        assert self.plugin is not None
        command = str(self.plugin.get("command", ""))
        env = dict(os.environ)
        env.update({e["name"]: e["value"] for e in self.plugin.get("env") or []})
        api_version = self.plugin.get("apiVersion", "client.authentication.k8s.io/v1")
        env["KUBERNETES_EXEC_INFO"] = json.dumps(
            {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
        )
        process = await asyncio.create_subprocess_exec(
            command,
            *[str(a) for a in self.plugin.get("args") or []],
            env=env,
            cwd=self.base_dir,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        if process.returncode != 0:
            why = err.decode(errors="replace").strip()[:300]
            raise KubeconfigError(f"exec plugin {command}: exit {process.returncode}: {why}")
        status = json.loads(out).get("status") or {}
        self.value = status.get("token", "")
        if status.get("clientCertificateData") and self.tls is not None:
            _load_client_cert(
                self.tls, status["clientCertificateData"].encode(), status["clientKeyData"].encode()
            )
        expiry = status.get("expirationTimestamp")
        lifetime = (
            datetime.fromisoformat(expiry.replace("Z", "+00:00")).timestamp() - time.time()
            if expiry
            else float("inf")
        )
        self._expires = time.monotonic() + lifetime - EXEC_MARGIN_SECONDS


def in_cluster() -> Credentials:
    """The pod's own service account, as every in-cluster client reads it."""
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    tls = ssl.create_default_context(cafile=str(SERVICE_ACCOUNT / "ca.crt"))
    return Credentials(
        server=f"https://{host}:{port}", tls=tls, token=TokenSource(path=SERVICE_ACCOUNT / "token")
    )


def kubeconfig_path(given: Path | None) -> Path:
    """The kubeconfig to read: the given one, else the first of ``$KUBECONFIG`` that names a
    current context, else ``~/.kube/config``."""
    if given is not None:
        return given
    listed = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    for path in listed:
        if path.is_file() and _current_context(path):
            return path
    return listed[0] if listed else Path.home() / ".kube" / "config"


def _current_context(path: Path) -> bool:
    try:
        return bool((yaml.safe_load(path.read_text()) or {}).get("current-context"))
    except (yaml.YAMLError, AttributeError):
        return False  # not a kubeconfig: the next one is looked at


def from_kubeconfig(given: Path | None = None) -> Credentials:
    """The current context's cluster and user; KubeconfigError saying what is wrong."""
    path = kubeconfig_path(given)
    try:
        return _credentials(path, yaml.safe_load(path.read_text()) or {})
    except (KeyError, TypeError, ValueError, AttributeError, ssl.SSLError, yaml.YAMLError) as exc:
        why = exc.args[0] if isinstance(exc, KubeconfigError) else f"{exc!s:.200}"
        raise KubeconfigError(f"kubeconfig {path}: cannot be used ({why})") from None


def _named(config: Mapping[str, Any], kind: str, name: str) -> Mapping[str, Any]:
    for entry in config.get(f"{kind}s") or []:
        if entry.get("name") == name:
            found: Mapping[str, Any] = entry.get(kind) or {}
            return found
    raise ValueError(f"no {kind} named {name!r}")


def _credentials(path: Path, config: Mapping[str, Any]) -> Credentials:
    current = config.get("current-context")
    if not current:
        raise ValueError("empty or incomplete: no current-context")
    context = _named(config, "context", current)
    cluster = _named(config, "cluster", context["cluster"])
    user = _named(config, "user", context["user"]) if context.get("user") else {}
    for unsupported in ("auth-provider", "username", "password"):
        if unsupported in user:
            raise ValueError(f"user {context.get('user')!r}: {unsupported} is not supported")
    if cluster.get("proxy-url"):
        raise ValueError(f"cluster {context['cluster']!r}: proxy-url is not supported")
    base = path.parent
    tls = _tls(cluster, user, base)
    token = None
    if user.get("token"):
        token = TokenSource(value=str(user["token"]))
    elif user.get("tokenFile"):
        token = TokenSource(path=base / user["tokenFile"])
    elif user.get("exec"):
        token = TokenSource(
            plugin=user["exec"], base_dir=base, tls=tls if isinstance(tls, ssl.SSLContext) else None
        )
    return Credentials(
        server=str(cluster["server"]).rstrip("/"),
        tls=tls,
        token=token,
        server_name=cluster.get("tls-server-name"),
    )


def _tls(cluster: Mapping[str, Any], user: Mapping[str, Any], base: Path) -> ssl.SSLContext | bool:
    if cluster.get("insecure-skip-tls-verify"):
        return False
    if data := cluster.get("certificate-authority-data"):
        tls = ssl.create_default_context(cadata=base64.b64decode(data).decode())
    elif file := cluster.get("certificate-authority"):
        tls = ssl.create_default_context(cafile=str(base / file))
    else:
        tls = ssl.create_default_context()
    cert, key = user.get("client-certificate-data"), user.get("client-key-data")
    if cert and key:
        _load_client_cert(tls, base64.b64decode(cert), base64.b64decode(key))
    elif user.get("client-certificate") and user.get("client-key"):
        tls.load_cert_chain(str(base / user["client-certificate"]), str(base / user["client-key"]))
    return tls


def _load_client_cert(tls: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl loads a certificate and key from files only: written to a private temporary
    folder, loaded, removed."""
    with tempfile.TemporaryDirectory() as folder:
        cert_file, key_file = Path(folder) / "cert.pem", Path(folder) / "key.pem"
        cert_file.write_bytes(cert)
        key_file.touch(mode=0o600)
        key_file.write_bytes(key)
        tls.load_cert_chain(str(cert_file), str(key_file))
