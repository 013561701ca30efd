"""The scheduler's view of a gang, from its own objects as mirrored, told on the PodGang: the
``SchedulerBlocked`` condition (``gangway_contracts.why``), which podgang folds into the
PodGang's ``Scheduled`` reason. Written only when it changes, and absent until a scheduler
first holds a gang back: a gang placed at once costs no write."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import msgspec

from gangway_backendkit import metrics
from gangway_backendkit.protocol import Backend, ViewsMore
from gangway_contracts import labels, why
from gangway_contracts.grove import PodGang
from gangway_contracts.k8s import Condition
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import ObjectKey
from gangway_runtime.kube import Kube
from gangway_runtime.objects import OwnWrites
from gangway_runtime.status import now, set_podgang_condition

log = logging.getLogger(__name__)

_MESSAGE_LIMIT: Final = 1024  # the scheduler's words, shortest useful form
CLEARED: Final = "the scheduler's objects no longer hold the gang back"


def wanted(podgang: PodGang, view: why.Verdict | None) -> Condition | None:
    """The SchedulerBlocked condition to write for ``view``; None: the PodGang says it
    already (or nothing was ever said and nothing is now)."""
    found = podgang.condition(why.SCHEDULER_BLOCKED)
    if view is None:
        if found is None or found.status == "False":
            return None
        candidate = _blocked(podgang, "False", why.NOT_BLOCKED, CLEARED)
    else:
        candidate = _blocked(podgang, "True", view.reason, view.message[:_MESSAGE_LIMIT])
    return None if found is not None and _same(found, candidate) else candidate


def _blocked(podgang: PodGang, status: str, reason: str, message: str) -> Condition:
    return Condition(
        type=why.SCHEDULER_BLOCKED,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=now(),
        observed_generation=podgang.metadata.generation,
    )


def _same(said: Condition, wanted: Condition) -> bool:
    """The same words: when it was said is not a change."""
    return (said.status, said.reason, said.message) == (
        wanted.status,
        wanted.reason,
        wanted.message,
    )


class SchedulerViews:
    """Tells each PodGang what its scheduler's objects say, once per change."""

    def __init__(
        self,
        backend: Backend,
        kube: Kube,
        read: Callable[[ObjectKey], Awaitable[ObjectRecord | None]],
    ) -> None:
        self.backend = backend
        self.kube = kube
        self.read = read  # a mirrored object, from the store (no API read)
        # The condition last written to each PodGang, until the store shows it: a second
        # message about the same objects before then writes nothing again.
        self.told: OwnWrites[ObjectKey, Condition] = OwnWrites()

    async def tell(
        self,
        key: ObjectKey,
        podgang: PodGang,
        version: str,
        current: dict[str, Any],
        mirrored: Sequence[ObjectRecord],
    ) -> None:
        objects: dict[str, list[dict[str, Any]]] = {}
        for record in mirrored:
            if not record.deleted:
                objects.setdefault(record.kind, []).append(msgspec.json.decode(record.object))
        placed = podgang.condition(labels.SCHEDULED)
        if placed is not None and placed.status == "True":
            view = None  # whatever a scheduler's objects still say (KAI keeps its last)
        elif objects:
            await self._also(podgang, objects)
            view = self.backend.scheduler_view(podgang, objects)
        else:
            return  # nothing new from the scheduler
        condition = wanted(podgang, view)
        if condition is None:
            return
        said = self.told.unshown(key, version)
        if said is not None and _same(said, condition):
            return
        written = await set_podgang_condition(self.kube, current, condition)
        if written is None:
            return
        self.told.remember(key, written["metadata"]["resourceVersion"], condition)
        metrics.VIEWS.labels(self.backend.name, condition.reason).inc()
        meta = podgang.metadata
        log.info(
            "%s/%s: scheduler says %s: %s",
            meta.namespace,
            meta.name,
            condition.reason,
            condition.message,
        )

    async def _also(self, podgang: PodGang, objects: dict[str, list[dict[str, Any]]]) -> None:
        """What else the backend's view reads (``ViewsMore``), as the store holds it."""
        if not isinstance(self.backend, ViewsMore):
            return
        for key in self.backend.view_also(podgang, objects):
            record = await self.read(key)
            if record is not None and not record.deleted:
                objects.setdefault(key.kind, []).append(msgspec.json.decode(record.object))
