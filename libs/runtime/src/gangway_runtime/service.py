"""What a service's ``__main__`` needs: connections opened and closed in order, and ``run()``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from gangway_runtime import bus, tasks
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import Kube
from gangway_runtime.logs import configure_logging
from gangway_runtime.probes import Probes
from gangway_runtime.settings import ServiceSettings, load_settings
from gangway_runtime.startup import CannotStart
from gangway_runtime.streams import StreamReset, ensure_streams, until_made, watch_for_reset
from gangway_runtime.tracing import TracingSettingError, setup_tracing

log = logging.getLogger(__name__)


@dataclass
class Connections:
    nc: NatsClient
    js: JetStreamContext
    kube: Kube
    probes: Probes


@contextlib.asynccontextmanager
async def connections(name: str, settings: ServiceSettings) -> AsyncIterator[Connections]:
    """Probes first (so a slow dependency shows as not ready, not as a dead pod), then NATS
    with the streams provisioned, then the API server; closed in reverse."""
    try:
        setup_tracing(name)
    except TracingSettingError as exc:
        raise CannotStart(str(exc)) from None
    probes = Probes()
    await probes.start(settings.http_host, settings.http_port)
    connected: list[NatsClient] = []  # not ready before NATS answers, nor while it is gone
    probes.ready_when("nats", lambda: bool(connected) and connected[0].is_connected)
    try:
        nc = await bus.connect(settings, name)
        connected.append(nc)
        try:
            js = nc.jetstream()
            provisioned = asyncio.Event()
            probes.ready_when("streams", provisioned.is_set)
            await wait_for_streams(js, settings)
            provisioned.set()
            api_session = await api_client(settings.kubeconfig, settings.api_connections)
            async with api_session as api, _reset_ends(js, settings):
                yield Connections(nc=nc, js=js, kube=Kube(api), probes=probes)
        finally:
            with contextlib.suppress(Exception):  # already closed or never connected
                await nc.drain()
    finally:
        await probes.stop()


@contextlib.asynccontextmanager
async def _reset_ends(js: JetStreamContext, settings: ServiceSettings) -> AsyncIterator[None]:
    """While the service runs inside, watch the objects stream; if it is reset, end the
    service's work (a cancellation of its task) with :class:`StreamReset`, which ``run``
    answers by starting it again from the store."""
    owner = asyncio.current_task()
    assert owner is not None
    found: list[StreamReset] = []

    async def guard() -> None:
        try:
            await watch_for_reset(js, settings.subjects.objects_stream)
        except StreamReset as exc:
            found.append(exc)
            owner.cancel()

    guarding = tasks.spawn(guard(), "objects stream watch")
    try:
        yield
    except asyncio.CancelledError:
        if found and owner.uncancel() == 0:  # cancelled for the reset alone
            raise found[0] from None
        raise
    finally:
        await tasks.stop(guarding)


async def wait_for_streams(js: JetStreamContext, settings: ServiceSettings) -> None:
    """The streams exist as configured: made by the setup step, or by this service where
    its NATS user may. Until then (a user that may not, before the setup step has run) the
    service waits, not ready, saying why."""
    await until_made("streams", partial(ensure_streams, js, settings.subjects, settings.streams))


def run(
    main: Callable[[], Coroutine[Any, Any, None]], settings: ServiceSettings | None = None
) -> None:
    """Run ``main`` until it returns or SIGTERM/SIGINT arrives; then cancel it, which lets
    every ``async with`` and task group inside it close in order. Logs as ``settings`` say."""
    configure_logging(settings or load_settings(ServiceSettings))

    async def supervise() -> None:
        asked_to_stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, asked_to_stop.set)
        waiting = asyncio.create_task(asked_to_stop.wait())
        while True:
            task = asyncio.create_task(main())
            await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
            reset = task.exception() if task.done() and not task.cancelled() else None
            if not isinstance(reset, StreamReset):
                break
            # Rebuilt, not exited: relisted, reloaded, resynced; not ready meanwhile.
            log.warning("%s: starting again from the store", reset)
        waiting.cancel()
        await tasks.stop(task)
        if not task.cancelled():
            task.result()  # CannotStart, or the failure that ended it
        log.info("stopped")

    try:
        asyncio.run(supervise())
    except CannotStart as exc:
        log.error("cannot start: %s", exc)
        raise SystemExit(2) from None
    except Exception:  # a bug or a dependency gone for good: said once, at ERROR, then exit
        log.exception("stopped by an unexpected failure")
        raise SystemExit(1) from None
