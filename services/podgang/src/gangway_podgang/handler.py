"""What podgang takes from the bus: any message about a PodCliqueSet, one of its PodGangs or
one of its pods asks for that PodCliqueSet to be reconciled.

The runtime's consumer kit (:mod:`gangway_runtime.consumer`) does the taking: one durable
consumer shared by replicas, a burst of a thousand pod events for one PodCliqueSet coalesced
into a reconcile or two, one retry policy, every PodCliqueSet again at start and every
``resync_seconds``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from gangway_contracts import durables
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Subjects
from gangway_podgang import metrics
from gangway_podgang.readmodel import ReadModel, WorkloadKey, decode_object, workload_of
from gangway_podgang.reconcile import Outcome
from gangway_podgang.settings import PodgangSettings
from gangway_runtime.consumer import Consumer, Route

log = logging.getLogger(__name__)

Reconcile = Callable[[WorkloadKey], Awaitable[Outcome]]


class PodgangHandler:
    def __init__(
        self, subjects: Subjects, model: ReadModel, reconcile: Reconcile, wait_seconds: float
    ) -> None:
        self.subjects = subjects
        self.model = model
        self.reconcile = reconcile
        self.wait_seconds = wait_seconds

    def route(self, msg: Msg) -> Route[WorkloadKey] | None:
        key = self.subjects.parse_object(msg.subject)
        record = msgspec.json.decode(msg.data, type=ObjectRecord)
        # The whole view, as the read model decodes it: a record of the wrong shape is
        # dead-lettered here, not skipped there with a warning.
        meta = decode_object(key.kind, record).metadata
        workload = workload_of(key.kind, key.namespace, meta.labels, key.name)
        if not workload[1]:
            return None  # a PodGang or pod no PodCliqueSet claims
        return Route(workload)

    async def handle(self, key: WorkloadKey, msgs: Sequence[Msg]) -> float | None:
        # Decide on a model that holds at least what the newest message said.
        newest = max((msg.metadata.sequence.stream for msg in msgs), default=0)
        if newest and not await self.model.caught_up(newest, self.wait_seconds):
            log.warning("%s/%s: read model behind the message; deciding anyway", *key)
        outcome = await self.reconcile(key)
        metrics.RECONCILES.labels("converged" if outcome.converged else "waiting").inc()
        return outcome.wake_in  # a gang's terminationDelay running out

    async def keys(self) -> AsyncIterator[WorkloadKey]:
        """Every PodCliqueSet, once the read model holds what the stream held at start."""
        await self.model.wait_until(lambda: self.model.loaded, float("inf"))
        for key in self.model.workload_keys():
            yield key


def consumer(
    js: JetStreamContext, subjects: Subjects, handler: PodgangHandler, settings: PodgangSettings
) -> Consumer[WorkloadKey]:
    return Consumer(js, subjects, handler, settings, durables.podgang(subjects))
