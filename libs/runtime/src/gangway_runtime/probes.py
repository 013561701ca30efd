"""/healthz, /readyz and /metrics on one small HTTP server per service."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest


def bound_port(site: web.TCPSite, asked: int) -> int:
    """The port a started site listens on: the one the OS chose when 0 was asked for."""
    sockets = getattr(site._server, "sockets", None) or []
    port: int = sockets[0].getsockname()[1] if sockets else asked
    return port


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

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        failing = self.not_ready()
        if failing:
            return web.Response(status=503, text="".join(f"not ready: {n}\n" for n in failing))
        return web.Response(text="ok\n")

    async def _metrics(self, _: web.Request) -> web.Response:
        body = generate_latest(REGISTRY)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self, host: str, port: int) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.port = bound_port(site, port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
