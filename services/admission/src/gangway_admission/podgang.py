"""Asking podgang whether the API server would take a PodCliqueSet's pods, over NATS
(podgang's ``dry-run-pods``): the webhook holds no right to create pods, podgang does."""

from __future__ import annotations

import time

from nats.aio.client import Client as NatsClient

from gangway_admission import metrics
from gangway_contracts.codec import to_json
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.rpc import DryRunPodsReply, DryRunPodsRequest
from gangway_contracts.subjects import PodgangOperation, Subjects
from gangway_runtime.consumer import Transient
from gangway_runtime.micro import request_reply


class PodgangUnavailable(Transient):
    """podgang did not answer (no replica, no answer in time, an error reply)."""

    def __init__(self, why: str) -> None:
        super().__init__(f"podgang {why}")


class NatsPodgang:
    """The :data:`~gangway_admission.verdict.DryRunPods` of the webhook."""

    def __init__(self, nc: NatsClient, subjects: Subjects, timeout: float) -> None:
        self.nc = nc
        self.subject = subjects.podgang(PodgangOperation.DRY_RUN_PODS)
        self.timeout = timeout

    async def __call__(self, pcs: PodCliqueSet) -> DryRunPodsReply:
        started = time.monotonic()
        outcome = "unavailable"

        def botched(reason: str, message: str) -> Exception:
            return PodgangUnavailable(f"{message} ({reason})")

        try:
            payload = to_json(DryRunPodsRequest(podcliqueset=pcs))
            reply: DryRunPodsReply = await request_reply(
                self.nc,
                self.subject,
                payload,
                reply=DryRunPodsReply,
                wait_seconds=self.timeout,
                unavailable=PodgangUnavailable,
                botched=botched,
            )
            outcome = "answered"
            return reply
        finally:
            metrics.DRY_RUN_SECONDS.labels(outcome).observe(time.monotonic() - started)
