"""/healthz, /readyz and /metrics on one small HTTP server per service.

Three GETs, answered and closed: asyncio's server and httptools' parser, no web framework
(aiohttp's is 10 MiB of a service's memory, see :mod:`gangway_runtime.http`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from http import HTTPStatus
from typing import Final

import httptools
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

TEXT: Final = "text/plain; charset=utf-8"
REQUEST_AT_MOST: Final = 8 << 10  # a probe's GET is a few hundred bytes
READ_SECONDS: Final = 10.0


class _Request:
    """httptools' callbacks: the target, and whether the whole request has come."""

    def __init__(self) -> None:
        self.url = b""
        self.complete = False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_message_complete(self) -> None:
        self.complete = True


class Probes:
    """Liveness is the event loop answering; readiness is every registered check passing."""

    def __init__(self) -> None:
        self._checks: dict[str, Callable[[], bool]] = {}
        self._server: asyncio.Server | None = None
        self.port = 0

    def ready_when(self, name: str, check: Callable[[], bool]) -> None:
        self._checks[name] = check

    def not_ready(self) -> list[str]:
        return [name for name, check in self._checks.items() if not check()]

    def answer(self, method: str, path: str) -> tuple[HTTPStatus, str, bytes]:
        """Status, content type and body for a request."""
        if method != "GET":
            return HTTPStatus.METHOD_NOT_ALLOWED, TEXT, b"GET only\n"
        if path == "/healthz":
            return HTTPStatus.OK, TEXT, b"ok\n"
        if path == "/readyz":
            if failing := self.not_ready():
                text = "".join(f"not ready: {name}\n" for name in failing)
                return HTTPStatus.SERVICE_UNAVAILABLE, TEXT, text.encode()
            return HTTPStatus.OK, TEXT, b"ok\n"
        if path == "/metrics":
            return HTTPStatus.OK, CONTENT_TYPE_LATEST, generate_latest(REGISTRY)
        return HTTPStatus.NOT_FOUND, TEXT, b"not found\n"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = _Request()
        parser = httptools.HttpRequestParser(request)
        status, kind, body = HTTPStatus.BAD_REQUEST, TEXT, b"bad request\n"
        try:
            async with asyncio.timeout(READ_SECONDS):
                received = 0
                while not request.complete and received <= REQUEST_AT_MOST:
                    data = await reader.read(4096)
                    if not data:
                        return
                    received += len(data)
                    parser.feed_data(data)
            if request.complete:
                path = httptools.parse_url(request.url).path.decode(errors="replace")
                status, kind, body = self.answer(parser.get_method().decode(), path)
            head = (
                f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: {kind}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (OSError, TimeoutError, httptools.HttpParserError):
            pass  # a probe that went away or never spoke HTTP: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
