"""Raw requests to the API server through kubernetes-asyncio: its configuration loading
(in-cluster, or a kubeconfig with every auth method it supports) and its ``ApiClient``
(aiohttp underneath); bodies are decoded with msgspec by the caller.

Raw rather than through the generated API classes and models: Grove's and the schedulers'
resources have no model, and decoding every pod of a large workload into models would cost
what msgspec's views do not. The watcher's list/watch streams through the same
``ApiClient`` (not ``kubernetes_asyncio.watch.Watch``: it decodes every event twice with
``json``, retries a 410 from the same stale version where the watcher must relist, and
closes the whole client when it ends); see :meth:`Kube.lines`.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import aiohttp
import msgspec
import yaml
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import ConfigException, load_incluster_config, load_kube_config
from kubernetes_asyncio.config.kube_config import KubeConfigLoader
from prometheus_client import Counter, Histogram

__all__ = ["ApiResource", "ApiSession", "Kube", "KubeError", "KubeconfigError", "api_client"]

REQUEST_TIMEOUT: Final = 60.0  # to an answer's headers, then again to its whole body
CONNECT_TIMEOUT: Final = 30.0  # to a watch's headers; then each read waits its own timeout
CONNECTIONS: Final = 100  # per session by default, as kubernetes_asyncio's pool
SERVICE_ACCOUNT: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# A kubeconfig's credentials are loaded again this often (see _renewal); in a pod,
# kubernetes-asyncio's in-cluster loader re-reads the service account token by itself.
CREDENTIALS_RELOAD_SECONDS: Final = 60.0

# asyncio gives every TLS connection a read buffer of this size, allocated whole when the
# connection opens: 256 KiB by default, 8 MiB of a service's memory at 32 connections. A TLS
# record holds at most 16 KiB, so a read never returns more than that at once; the API
# server's answers to writes are a few KiB, a larger one is read a record a call.
TLS_READ_BUFFER: Final = 16 << 10
asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BUFFER

REQUESTS = Counter(
    "gangway_api_requests",
    "Requests to the API server by method, resource (plural.group[/subresource]) and "
    "status code (error: no answer)",
    ["method", "resource", "code"],
)
REQUEST_SECONDS = Histogram(
    "gangway_api_request_seconds",
    "Time to an API server's answer (its headers, for a watch)",
    ["method", "resource"],
)


def resource_of(path: str) -> str:
    """``pods``, ``podgangs.scheduler.grove.io/status``, ``discovery``: a request's resource
    without namespace or name, so the metric's labels stay few."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if parts[0] == "api" and len(parts) > 2:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return "discovery"
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]  # the namespace's objects, not the namespace
    plural = f"{rest[0]}.{group}" if group else rest[0]
    return f"{plural}/{rest[2]}" if len(rest) > 2 else plural


@dataclass(frozen=True)
class ApiResource:
    """One REST resource at one version: ``group``/``version``/``plural``."""

    group: str  # "" for the core API
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        base = f"/apis/{self.api_version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        tail = f"/{name}" + (f"/{subresource}" if subresource else "") if name else ""
        return f"{base}{scope}/{self.plural}{tail}"


class Status(msgspec.Struct):
    """The API server's ``Status`` body of a failed request."""

    message: str = ""
    reason: str = ""
    code: int = 0


class KubeError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(f"HTTP {status} {reason}: {message}")

    @classmethod
    def from_body(cls, status: int, body: bytes) -> KubeError:
        try:
            decoded = msgspec.json.decode(body, type=Status)
        except msgspec.DecodeError:
            decoded = Status(message=body[:500].decode(errors="replace"))
        return cls(status, decoded.reason, decoded.message)

    @property
    def transient(self) -> bool:
        """Worth retrying: throttled, conflicting, or the server is having a bad moment."""
        return self.status in (409, 429) or self.status >= 500


class KubeconfigError(OSError):
    """Credentials that cannot be used: an OSError, as a missing kubeconfig is, so that whoever
    reports unreachable clusters in one line reports this one too."""


class ConnectionLost(ConnectionError):
    """No usable answer: the connection failed or closed mid-answer. A ConnectionError, so
    whatever retries on a lost connection retries on it (aiohttp's own errors are not all
    OSErrors)."""


class Answer:
    """An answer whose headers have come: its body read whole or line by line, once; closed
    after (an answer read to its end gives its connection back to the pool)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.status = response.status
        self._response = response

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except aiohttp.ClientError as exc:
            raise ConnectionLost(f"the API server's answer was cut short: {exc}") from exc

    async def lines(self) -> AsyncIterator[bytes]:
        """The body one newline-terminated line at a time, as it arrives; a line longer than
        aiohttp's read buffer (``ApiClient``'s: 2 MiB, above etcd's largest object) ends it
        with a KubeError."""
        try:
            async for line in self._response.content:
                yield line
        except ValueError as exc:  # aiohttp: "Chunk too big"
            raise KubeError(0, "EventTooLarge", str(exc)) from exc
        except aiohttp.ClientPayloadError as exc:
            raise ConnectionLost(f"the API server's stream was cut short: {exc}") from exc
        except aiohttp.ClientError as exc:
            if isinstance(exc, TimeoutError):  # aiohttp's read timeout
                raise
            raise ConnectionLost(f"the API server's stream was cut short: {exc}") from exc

    def close(self) -> None:
        self._response.close()


class ApiSession:
    """One API server through kubernetes-asyncio's ``ApiClient``: its configuration (address,
    TLS, credentials and how they are renewed) and its pool of connections."""

    def __init__(self, client: ApiClient, *, owned: bool = True) -> None:
        self.client = client
        self._owned = owned  # closed with the session; else its owner closes it

    @property
    def server(self) -> str:
        host: str | None = self.client.configuration.host
        return host or ""

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        body: Any,
        read_timeout: float | None,
    ) -> Answer:
        """One authenticated request; its answer's headers have come."""
        try:
            response = await self.client.call_api(
                path,
                method,
                query_params=list(query),
                header_params=dict(headers),
                # msgspec Structs among the values: kubernetes-asyncio serialises builtins.
                body=None if body is None else msgspec.to_builtins(body),
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=aiohttp.ClientTimeout(sock_read=read_timeout),
            )
        except aiohttp.ClientError as exc:
            if isinstance(exc, OSError | TimeoutError):  # refused, unreachable, timed out
                raise
            raise ConnectionLost(f"the API server did not answer: {exc}") from exc
        except ConfigException as exc:  # renewing the credentials failed: retried later
            raise KubeconfigError(f"credentials could not be renewed: {_why(exc)}") from exc
        return Answer(response)

    async def close(self) -> None:
        if self._owned:
            await self.client.close()

    async def __aenter__(self) -> ApiSession:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


async def api_client(kubeconfig: Path | None = None, connections: int = CONNECTIONS) -> ApiSession:
    """In-cluster credentials inside a pod, else the kubeconfig (given, else every file of
    ``$KUBECONFIG`` merged as kubectl merges them, else ``~/.kube/config``); at most
    ``connections`` open at once. KubeconfigError when they cannot be used."""
    configuration = Configuration()
    configuration.connection_pool_maxsize = connections
    if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
        source = f"in-cluster credentials ({SERVICE_ACCOUNT})"
        loading = _in_cluster(configuration)
    else:
        paths = str(kubeconfig or os.environ.get("KUBECONFIG") or Path.home() / ".kube/config")
        source = f"kubeconfig {paths}"
        loading = _from_kubeconfig(configuration, paths)
    try:
        await loading
    except (ConfigException, OSError, yaml.YAMLError, LookupError, TypeError, ValueError) as exc:
        raise KubeconfigError(f"{source}: cannot be used ({_why(exc)})") from None
    except AssertionError:  # kubernetes-asyncio's word for "no such context or cluster"
        raise KubeconfigError(f"{source}: cannot be used (no current context)") from None
    client = ApiClient(configuration)
    client.user_agent = "gangway"
    return ApiSession(client)


async def _in_cluster(configuration: Configuration) -> None:
    load_incluster_config(  # type: ignore[no-untyped-call]
        client_configuration=configuration,
        token_filename=str(SERVICE_ACCOUNT / "token"),
        cert_filename=str(SERVICE_ACCOUNT / "ca.crt"),
    )


def _any_file(paths: str) -> None:
    """kubernetes-asyncio reads a missing or empty kubeconfig as a broken one: say which."""
    found = [p for p in paths.split(os.pathsep) if p and os.path.isfile(p)]
    if not found:
        raise FileNotFoundError(f"no such file: {paths}")
    if not any(os.path.getsize(p) for p in found):
        raise ConfigException("empty")


async def _from_kubeconfig(configuration: Configuration, paths: str) -> None:
    _any_file(paths)
    loader = await load_kube_config(
        config_file=paths, client_configuration=configuration, persist_config=False
    )
    configuration.refresh_api_key_hook = _renewal(loader)


def _renewal(loader: KubeConfigLoader) -> Callable[[Configuration], Awaitable[None]]:
    """Before a request, the kubeconfig's credentials loaded again by kubernetes-asyncio
    once a minute, or at once when an exec plugin's token has expired: a rotated
    ``tokenFile`` is read again (kubectl's client does the same; kubernetes-asyncio reads it
    once), an exec plugin runs again, an OIDC token is refreshed."""
    due = time.monotonic() + CREDENTIALS_RELOAD_SECONDS
    lock = asyncio.Lock()

    def expired() -> bool:
        expiry = getattr(loader, "exec_plugin_expiry", None)
        return time.monotonic() >= due or (expiry is not None and expiry <= datetime.now(UTC))

    async def renew(configuration: Configuration) -> None:
        nonlocal due
        if not expired():
            return
        async with lock:
            if expired():
                await loader.load_and_set(configuration)
                due = time.monotonic() + CREDENTIALS_RELOAD_SECONDS

    return renew


def _why(exc: BaseException) -> str:
    """One line (a YAML error spans several), at most 200 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


class Kube:
    """Raw requests against the API server: JSON-able bodies in, undecoded bytes out."""

    def __init__(self, api: ApiSession) -> None:
        self.api = api

    async def __aenter__(self) -> Kube:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.api.close()

    async def _open(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        *,
        body: Any = None,
        content_type: str = "application/json",
        headers_within: float = REQUEST_TIMEOUT,
        read_timeout: float | None = None,
    ) -> Answer:
        """The answer, its headers come within ``headers_within`` s; a KubeError for a
        failure."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        resource = resource_of(path)
        started = time.monotonic()
        try:
            async with asyncio.timeout(headers_within):
                response = await self.api.send(
                    method, path, query=query, headers=headers, body=body, read_timeout=read_timeout
                )
        except (OSError, TimeoutError):
            REQUESTS.labels(method, resource, "error").inc()
            raise
        REQUESTS.labels(method, resource, str(response.status)).inc()
        REQUEST_SECONDS.labels(method, resource).observe(time.monotonic() - started)
        if response.status >= 300:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                body_bytes = await response.read()
            raise KubeError.from_body(response.status, body_bytes)
        return response

    async def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> bytes:
        response = await self._open(method, path, query, body=body, content_type=content_type)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                return await response.read()
        finally:
            response.close()

    async def lines(
        self, path: str, query: Sequence[tuple[str, str]], read_timeout: float
    ) -> AsyncIterator[bytes]:
        """A streaming GET (a watch), one newline-terminated JSON document at a time."""
        response = await self._open(
            "GET", path, query, headers_within=CONNECT_TIMEOUT, read_timeout=read_timeout
        )
        try:
            async for line in response.lines():
                if line.strip():
                    yield line
        finally:
            response.close()

    async def read(self, resource: ApiResource, namespace: str, name: str) -> dict[str, Any] | None:
        """One object, decoded; None when it does not exist."""
        try:
            body = await self.request("GET", resource.path(namespace, name))
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise
        found: dict[str, Any] = msgspec.json.decode(body)
        return found

    async def served_versions(self, group: str) -> list[str]:
        """Versions of an API group the server serves, preferred first; [] if none."""
        if not group:
            return ["v1"]
        try:
            body = await self.request("GET", f"/apis/{group}")
        except KubeError as exc:
            if exc.status == 404:
                return []
            raise
        decoded: dict[str, Any] = msgspec.json.decode(body)
        preferred = decoded.get("preferredVersion", {}).get("version")
        versions = [v["version"] for v in decoded.get("versions", [])]
        return sorted(versions, key=lambda v: v != preferred)

    async def serves(self, resource: ApiResource) -> bool:
        base = f"/apis/{resource.api_version}" if resource.group else f"/api/{resource.version}"
        try:
            body = await self.request("GET", base)
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise
        decoded: dict[str, Any] = msgspec.json.decode(body)
        return any(r.get("name") == resource.plural for r in decoded.get("resources", []))
