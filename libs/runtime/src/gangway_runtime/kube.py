"""A small Kubernetes client: raw requests over one pool of connections
(:mod:`gangway_runtime.http`), bodies decoded with msgspec by the caller.

Generated client models are too slow for every pod of a large workload, lose the API's
field names, and (kubernetes_asyncio's) cost a third of a service's memory to import; the
credentials come from ``kubeconfig`` (in-cluster or a kubeconfig file).
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol

import msgspec
from prometheus_client import Counter, Histogram

from gangway_runtime.http import Pool
from gangway_runtime.kubeconfig import Credentials, KubeconfigError, from_kubeconfig, in_cluster

__all__ = ["ApiResource", "ApiSession", "Kube", "KubeError", "KubeconfigError", "api_client"]

# etcd refuses values over 1.5 MiB, so one watch line (one object) is never larger than this.
MAX_EVENT_BYTES: Final = 8 << 20
REQUEST_TIMEOUT: Final = 60.0  # to an answer's headers, then again to its whole body
CONNECT_TIMEOUT: Final = 30.0  # to a watch's headers; then each read waits its own timeout
CONNECTIONS: Final = 100  # per session by default, as kubernetes_asyncio's pool

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


class Answer(Protocol):
    """An answer whose headers have come: its body is read whole or as it arrives, either
    way once, and it is closed after (:class:`gangway_runtime.http.Response`)."""

    status: int

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...

    def close(self) -> None: ...


class Transport(Protocol):
    """Sends one authenticated request; the answer is the caller's to read and close. A
    connection lost or refused raises an OSError (HttpError), here or in reading."""

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        body: Any,
        read_timeout: float | None,
    ) -> Answer: ...

    async def close(self) -> None: ...


class ApiSession:
    """One API server, its credentials and one pool of connections to it."""

    def __init__(self, credentials: Credentials, connections: int = CONNECTIONS) -> None:
        self.credentials = credentials
        self._pool = Pool(
            credentials.server,
            credentials.tls,
            server_name=credentials.server_name,
            limit=connections,
        )

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
        if self.credentials.token is not None:
            headers = {**headers, "Authorization": f"Bearer {await self.credentials.token.get()}"}
        data = None if body is None else msgspec.json.encode(body)
        return await self._pool.request(
            method, path, query=query, headers=headers, body=data, read_timeout=read_timeout
        )

    async def close(self) -> None:
        await self._pool.close()

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
    """In-cluster credentials inside a pod, else the kubeconfig (given, $KUBECONFIG, ~/.kube);
    at most ``connections`` open at once."""
    if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
        return ApiSession(in_cluster(), connections)
    return ApiSession(from_kubeconfig(kubeconfig), connections)


class Kube:
    """Raw requests against the API server: JSON-able bodies in, undecoded bytes out."""

    def __init__(self, api: Transport) -> None:
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
            buffer = bytearray()
            async for chunk in response.chunks():
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    if line.strip():
                        yield line
                if len(buffer) > MAX_EVENT_BYTES:
                    raise KubeError(0, "EventTooLarge", f"over {MAX_EVENT_BYTES} bytes")
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
