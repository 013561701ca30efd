"""Asking a backend to validate, over NATS: runtime's backend client, timed per backend."""

from __future__ import annotations

import time

from gangway_admission import metrics
from gangway_contracts.rpc import ValidateReply, ValidateRequest
from gangway_runtime.backends import BackendClient


class NatsBackends:
    """The :data:`~gangway_admission.verdict.AskBackend` of the webhook."""

    def __init__(self, client: BackendClient) -> None:
        self.client = client

    async def __call__(self, backend: str, request: ValidateRequest) -> ValidateReply:
        started = time.monotonic()
        outcome = "unavailable"
        try:
            reply = await self.client.validate(backend, request)
            outcome = "answered"
            return reply
        finally:
            elapsed = time.monotonic() - started
            metrics.BACKEND_SECONDS.labels(backend, outcome).observe(elapsed)
