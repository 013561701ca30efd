"""/healthz, /readyz and /metrics on one small HTTP server per service (aiohttp's, already
in every process as kubernetes-asyncio's transport)."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Final

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

TEXT: Final = "text/plain; charset=utf-8"


class Probes:
    """Liveness is the event loop answering; readiness is every registered check passing."""

    def __init__(self) -> None:
        self._checks: dict[str, Callable[[], bool]] = {}
        self._runner: web.AppRunner | None = None
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

    async def _serve(self, request: web.Request) -> web.Response:
        status, kind, body = self.answer(request.method, request.path)
        return web.Response(status=status, body=body, headers={"Content-Type": kind})

    async def start(self, host: str, port: int) -> None:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._serve)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        self.port = self._runner.addresses[0][1]  # the one chosen, when asked for port 0

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
