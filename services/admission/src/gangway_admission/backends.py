"""Asking a backend to validate, over NATS: the request/reply every backend serves."""

from __future__ import annotations

import time

import msgspec
from nats.aio.client import Client as NatsClient
from nats.errors import NoRespondersError

from gangway_admission import metrics
from gangway_admission.verdict import BackendUnavailable
from gangway_contracts.codec import to_json
from gangway_contracts.rpc import ValidateReply, ValidateRequest
from gangway_contracts.subjects import BackendOperation, Subjects
from gangway_runtime import tracing

# nats.micro's error reply: a status in this header, the description in the next.
_ERROR_CODE = "Nats-Service-Error-Code"
_ERROR = "Nats-Service-Error"


class NatsBackends:
    """The :data:`~gangway_admission.verdict.AskBackend` of the webhook."""

    def __init__(self, nc: NatsClient, subjects: Subjects, timeout: float) -> None:
        self.nc = nc
        self.subjects = subjects
        self.timeout = timeout

    async def __call__(self, backend: str, request: ValidateRequest) -> ValidateReply:
        started = time.monotonic()
        outcome = "unavailable"
        try:
            reply = await self._ask(backend, request)
            outcome = "answered"
            return reply
        finally:
            elapsed = time.monotonic() - started
            metrics.BACKEND_SECONDS.labels(backend, outcome).observe(elapsed)

    async def _ask(self, backend: str, request: ValidateRequest) -> ValidateReply:
        subject = self.subjects.backend(backend, BackendOperation.VALIDATE)
        payload = to_json(request)
        if len(payload) > self.nc.max_payload and request.old is not None:
            # The old version is context, not required: drop it before giving up.
            payload = to_json(msgspec.structs.replace(request, old=None))
        if len(payload) > self.nc.max_payload:
            why = f"cannot be asked: the request is {len(payload)} bytes, over the bus's limit"
            raise BackendUnavailable(backend, f"{why} of {self.nc.max_payload}")
        headers: dict[str, str] = {}
        tracing.inject(headers)
        try:
            msg = await self.nc.request(subject, payload, timeout=self.timeout, headers=headers)
        except NoRespondersError:
            raise BackendUnavailable(backend, f"has no running replica ({subject})") from None
        except TimeoutError:
            why = f"did not answer within {self.timeout:g}s ({subject})"
            raise BackendUnavailable(backend, why) from None
        if msg.headers and _ERROR_CODE in msg.headers:
            why = f"failed: {msg.headers.get(_ERROR, msg.headers[_ERROR_CODE])}"
            raise BackendUnavailable(backend, why)
        try:
            return msgspec.json.decode(msg.data, type=ValidateReply)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise BackendUnavailable(backend, f"answered with no ValidateReply: {exc}") from None
