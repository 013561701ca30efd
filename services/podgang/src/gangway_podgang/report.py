"""Saying what happened: a journal event on the bus for every step of every gang, and on the
PodCliqueSet one Kubernetes Event per kind of step a write round took (a 500-gang workload
gets a handful, not 2 000: the journal keeps each gang's, `gangway trace` shows them).

Both are best effort: losing one must never undo or repeat a write, so failures are logged
and the reconcile goes on.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import socket
from datetime import UTC, datetime
from typing import Any, Final

from gangway_contracts import events
from gangway_contracts.events import JournalEvent, event_type
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import NamespacedName
from gangway_runtime import tracing
from gangway_runtime.journal import JournalWriter
from gangway_runtime.kube import ApiResource, Kube, KubeError

log = logging.getLogger(__name__)

EVENTS = ApiResource("events.k8s.io", "v1", "events")
REPORTING_CONTROLLER = "gangway.dev/podgang"
NOTE_LIMIT = 1024  # events.k8s.io/v1 refuses a longer note
# Steps told as Warning Events: something went wrong with the workload.
WARNINGS: Final = frozenset({events.GangTerminated.__name__})


class Reporter:
    def __init__(self, kube: Kube, journal: JournalWriter, service: str) -> None:
        self.kube = kube
        self.journal_writer = journal
        self.service = service
        self.instance = socket.gethostname()
        # What a write round did and has not said yet: by PodCliqueSet uid, then by reason.
        # One reconcile of a workload runs at a time, so a round fills and says its own.
        self._unsaid: dict[str, dict[str, list[JournalEvent]]] = {}

    def common(self, pcs: PodCliqueSet) -> dict[str, Any]:
        """The fields every journal event of this workload carries."""
        return {
            "workload": NamespacedName(namespace=pcs.metadata.namespace, name=pcs.metadata.name),
            "at": datetime.now(UTC),
            "service": self.service,
            "trace_id": tracing.trace_id_hex(),
        }

    async def report(self, pcs: PodCliqueSet, event: JournalEvent) -> None:
        """Journal the step now; tell it on the PodCliqueSet with the round's others (`say`)."""
        await self.journal(event)
        unsaid = self._unsaid.setdefault(pcs.metadata.uid, {})
        unsaid.setdefault(event_type(event), []).append(event)

    async def say(self, pcs: PodCliqueSet) -> None:
        """One Event per kind of step reported for this workload since the last call."""
        unsaid = self._unsaid.pop(pcs.metadata.uid, {})
        await asyncio.gather(
            *(
                self.kube_event(pcs, reason, note(steps), reason in WARNINGS)
                for reason, steps in unsaid.items()
            )
        )

    async def journal(self, event: JournalEvent, once: str = "") -> None:
        # Buffered and stored in order, retried through a failover: never waited for here.
        self.journal_writer.put(event, once)

    async def kube_event(
        self, pcs: PodCliqueSet, reason: str, note: str, warning: bool, name: str = ""
    ) -> None:
        """An Event about the PodCliqueSet; ``name``: a fixed one, so it is made once while
        it lives (the API server answers 409 to the next)."""
        meta = pcs.metadata
        event = {
            "apiVersion": EVENTS.api_version,
            "kind": "Event",
            "metadata": {
                "name": name or f"{meta.name}.{secrets.token_hex(8)}",
                "namespace": meta.namespace,
            },
            "eventTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self.instance,
            "action": reason,
            "reason": reason,
            "note": note[:1024],
            "type": "Warning" if warning else "Normal",
            "regarding": {
                "apiVersion": pcs.api_version,
                "kind": pcs.kind,
                "namespace": meta.namespace,
                "name": meta.name,
                "uid": meta.uid,
            },
        }
        try:
            await self.kube.request("POST", EVENTS.path(meta.namespace), body=event)
        except KubeError as exc:
            if name and exc.status == 409:
                return
            log.warning("event %s on %s/%s: %s", reason, meta.namespace, meta.name, exc)


def note(steps: list[JournalEvent]) -> str:
    """What one kind of step did to how many gangs and pods, naming as many gangs as fit."""
    first = steps[0]
    pods = sum(len(getattr(step, "pods", ())) for step in steps)
    gangs = sorted((str(getattr(step, "podgang", "")) for step in steps), key=natural)
    noun = "PodGang" if len(gangs) == 1 else f"{len(gangs)} PodGangs"
    match first:
        case events.PodGangCreated(backend=backend):
            said = f"{noun} created for {backend}"
        case events.PodGangDeleted():
            said = f"{noun} deleted: no longer planned"
        case events.GangTerminated(delay=delay):
            said = f"{noun} recycled whole: below minAvailable for terminationDelay ({delay})"
        case events.GangRolled():
            said = f"{noun} replaced whole: {pods} pods of an older template (RollingRecreate)"
        case events.PodGangInitialized():
            said = f"{noun} initialized: every pod exists"
        case events.PodsCreated():
            said = f"{pods} pods created, gated, for {noun}"
        case events.GatesLifted():
            said = f"scheduling gates lifted on {pods} pods of {noun}"
        case _:
            said = f"{event_type(first)} for {noun}"
    return f"{said}: {named(gangs, NOTE_LIMIT - len(said) - 2)}"


def named(names: list[str], room: int) -> str:
    """The names, comma-separated, as many as fit in ``room``, then "and N more"."""
    reserve = len(f" and {len(names)} more")
    shown: list[str] = []
    used = 0
    for i, name in enumerate(names):
        last = i == len(names) - 1
        if used + len(name) + (0 if last else reserve) > room:
            return f"{', '.join(shown)} and {len(names) - i} more"
        shown.append(name)
        used += len(name) + 2
    return ", ".join(shown)


def natural(name: str) -> list[str | int]:  # a sort key
    """fleet-2 before fleet-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
