"""NATS micro services, both ends: one request and its decoded reply (the backends' and
podgang's clients), and one endpoint that decodes a request, answers it and says how it
went (the backend kit's and podgang's services)."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, TypeVar

import msgspec
from nats.aio.client import Client as NatsClient
from nats.errors import NoRespondersError
from nats.micro.request import Request
from opentelemetry.trace import Tracer

from gangway_contracts.codec import MALFORMED, to_json
from gangway_runtime import tasks, tracing

log = logging.getLogger(__name__)
R = TypeVar("R")

# nats.micro's error reply: a status code in this header, the description in the next.
SERVICE_ERROR_CODE: Final = "Nats-Service-Error-Code"
SERVICE_ERROR: Final = "Nats-Service-Error"


async def request_reply(
    nc: NatsClient,
    subject: str,
    payload: bytes,
    *,
    reply: Any,  # a reply type, or a tagged union of them
    wait_seconds: float,
    unavailable: Callable[[str], Exception],
    botched: Callable[[str, str], Exception],
) -> Any:
    """One request to a NATS micro service, traced, its reply decoded as ``reply``.
    ``unavailable(why)`` is raised when nobody answers in time, ``botched(reason,
    message)`` when the answer is an error or not a ``reply``."""
    headers: dict[str, str] = {}
    tracing.inject(headers)
    try:
        msg = await nc.request(subject, payload, timeout=wait_seconds, headers=headers)
    except NoRespondersError:
        raise unavailable(f"has no running replica ({subject})") from None
    except TimeoutError:
        raise unavailable(f"did not answer within {wait_seconds:g}s ({subject})") from None
    if msg.headers and (SERVICE_ERROR_CODE in msg.headers or SERVICE_ERROR in msg.headers):
        error = msg.headers.get(SERVICE_ERROR) or msg.headers[SERVICE_ERROR_CODE]
        raise botched("BackendError", f"failed: {error}")
    try:
        return msgspec.json.decode(msg.data, type=reply)
    except MALFORMED as exc:
        operation = subject.rsplit(".", 1)[-1]
        raise botched("InvalidReply", f"answered with no {operation} reply: {exc}") from None


def endpoint(
    name: str,
    request_type: type[R],
    answer: Callable[[R], Any | Awaitable[Any]],
    *,
    tracer: Tracer,
    counted: Callable[[str], None] = lambda _: None,
) -> Callable[[Request], Coroutine[Any, Any, None]]:
    """A micro service handler: the request decoded as ``request_type`` (400 if it is not
    one), ``answer``'s reply sent (500, logged, if it raises: the caller decides what then),
    in a span ``name`` under the caller's trace; ``counted`` told the outcome (malformed,
    error, ok)."""

    async def handle(request: Request) -> None:
        parent = tracing.context_from_headers(request.headers)
        with tracer.start_as_current_span(name, context=parent):
            try:
                decoded = msgspec.json.decode(request.data, type=request_type)
            except MALFORMED as exc:
                counted("malformed")
                await request.respond_error("400", f"malformed request: {exc}")
                return
            try:
                reply = answer(decoded)
                if inspect.isawaitable(reply):
                    reply = await reply
            except Exception as exc:  # the caller retries; the service goes on
                log.exception("%s failed", name)
                counted("error")
                await request.respond_error("500", f"{type(exc).__name__}: {exc}")
                return
            counted("ok")
            await request.respond(to_json(reply))

    return handle


class SideBySide:
    """A micro service handler whose requests are answered side by side, at most
    ``at_most`` at once (then the subscription waits): nats-py hands a subscription's
    messages to its handler one after another, so an answer waiting on the API server held
    every request behind it (admission's dry runs timed out behind each other when ten
    thousand PodCliqueSets came at once). The answers under way are this object's:
    :meth:`stop` ends them."""

    def __init__(
        self, handler: Callable[[Request], Coroutine[Any, Any, None]], at_most: int
    ) -> None:
        self._handler = handler
        self._slots = asyncio.Semaphore(at_most)
        self._answering: set[asyncio.Task[None]] = set()

    async def __call__(self, request: Request) -> None:
        await self._slots.acquire()
        answering = asyncio.create_task(self._handler(request))
        self._answering.add(answering)
        answering.add_done_callback(self._done)

    def _done(self, answering: asyncio.Task[None]) -> None:
        # A callback, not a finally: a task stopped before it started runs no finally.
        self._answering.discard(answering)
        self._slots.release()

    async def stop(self) -> None:
        for answering in list(self._answering):
            await tasks.stop(answering)
