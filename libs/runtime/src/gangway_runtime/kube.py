"""Raw requests to the API server: JSON-able bodies in, undecoded bytes out (decoded by the
caller with msgspec), each timed and counted; a failure is one KubeError.

The session underneath is kubernetes-asyncio's ``ApiClient`` (:mod:`gangway_runtime.apiclient`:
its configuration loading and transport). This module imports no client library, so what only
names resources (the backends' translations, the offline commands) does not load one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import msgspec
from prometheus_client import Counter, Histogram

if TYPE_CHECKING:
    from gangway_runtime.apiclient import Answer, ApiSession

__all__ = ["ApiResource", "Kube", "KubeError"]

REQUEST_TIMEOUT: Final = 60.0  # to an answer's headers, then again to its whole body
CONNECT_TIMEOUT: Final = 30.0  # to a watch's headers; then each read waits its own timeout

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


class StatusCause(msgspec.Struct, frozen=True):
    """One field the API server found invalid, and why."""

    field: str = ""
    message: str = ""
    reason: str = ""


class StatusDetails(msgspec.Struct):
    causes: list[StatusCause] = []


class Status(msgspec.Struct):
    """The API server's ``Status`` body of a failed request."""

    message: str = ""
    reason: str = ""
    code: int = 0
    details: StatusDetails | None = None


class KubeError(Exception):
    def __init__(
        self, status: int, reason: str, message: str, causes: tuple[StatusCause, ...] = ()
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.causes = causes  # of an Invalid (422): each field and why
        super().__init__(f"HTTP {status} {reason}: {message}")

    @classmethod
    def from_body(cls, status: int, body: bytes) -> KubeError:
        try:
            decoded = msgspec.json.decode(body, type=Status)
        except msgspec.DecodeError:
            decoded = Status(message=body[:500].decode(errors="replace"))
        causes = tuple(decoded.details.causes) if decoded.details else ()
        return cls(status, decoded.reason, decoded.message, causes)

    @property
    def transient(self) -> bool:
        """Worth retrying: throttled, conflicting, or the server is having a bad moment."""
        return self.status in (409, 429) or self.status >= 500


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
