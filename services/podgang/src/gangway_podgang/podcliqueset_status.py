"""The PodCliqueSet's status: computed from the step alone (no request to anyone), written
only when it changes, under the version this process last wrote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import Condition, find_condition
from gangway_podgang import metrics, progress
from gangway_podgang.decide import PASSING
from gangway_podgang.owners import Owners
from gangway_podgang.readmodel import ReadModel, WorkloadKey
from gangway_podgang.report import Reporter
from gangway_podgang.step import Step
from gangway_runtime.backends import BackendUnavailable, PrepareFailed
from gangway_runtime.kube import Kube, KubeError
from gangway_runtime.objects import OwnWrites
from gangway_runtime.status import PODCLIQUESETS, now, patch_status

REFUSED: Final = "Refused"  # PodGangsReady's reason when the API server refuses a write
# The Event when every gang is placed (again).
GANGS_SCHEDULED: Final = "PodGangsScheduled"


def conditions_of(
    step: Step, learned: list[Condition], timing: Mapping[str, Any]
) -> list[Condition]:
    """The conditions this step says, with what the reconcile learned of the backend (the
    status keeps those it does not say again); ``timing``: the update's, as this status
    write carries it."""
    pcs = step.pcs

    def make(type_: str, ok: bool, reason: str, message: str) -> Condition:
        return progress.condition(pcs, type_, ok, reason, message, at=now())

    if step.unresolved:
        return [make(progress.BACKEND_RESOLVED, False, "UnknownScheduler", step.unresolved)]
    conditions = [make(progress.BACKEND_RESOLVED, True, "Resolved", f"backend {step.backend}")]
    if step.too_large:
        conditions.append(make(progress.PODGANGS_READY, False, "OverLimit", step.too_large))
    elif step.refused:
        conditions.append(make(progress.PODGANGS_READY, False, REFUSED, step.refused))
    else:
        workload = step.workload
        conditions.append(
            progress.gangs_ready(
                pcs, step.plan, workload.podgangs, workload.pods, backend=step.backend, at=now()
            )
        )
        conditions.append(
            progress.gangs_scheduled(
                pcs, step.plan, workload.pods, at=now(), podgangs=workload.podgangs
            )
        )
    if (topology := progress.topology_resolved(pcs, step.plan, at=now())) is not None:
        conditions.append(topology)
    pods = step.workload.pods
    conditions.append(
        progress.update_in_progress(pcs, step.plan, pods, timing, step.stall, at=now())
    )
    return conditions + learned


class StatusWriter:
    def __init__(
        self, kube: Kube, model: ReadModel, reporter: Reporter, owners: Owners, wait_seconds: float
    ) -> None:
        self.kube = kube
        self.model = model
        self.reporter = reporter
        self.owners = owners
        self.wait_seconds = wait_seconds
        # This process's last status write to each PodCliqueSet, until the read model shows
        # it (``_own_status_shown``). Bounded: one forgotten costs a 409 and a read.
        self._written: OwnWrites[WorkloadKey, str] = OwnWrites(at_most=10_000)

    async def write(self, key: WorkloadKey, step: Step, learned: list[Condition]) -> None:
        pcs = step.pcs
        workload = step.workload
        fields = progress.counts(
            pcs, step.plan, workload.podgangs, workload.pods, at=now(), began=step.rolls_began
        )
        said = conditions_of(step, learned, fields["updateProgress"])
        change = progress.status_change(fields, said)
        seen: list[dict[str, Any]] = []  # the status the written change was made from

        def change_seen(status: dict[str, Any]) -> dict[str, Any] | None:
            seen[:] = [status]
            return change(status)

        current = progress.current_status(await self._own_status_shown(key, pcs))
        try:
            written = await patch_status(
                self.kube, PODCLIQUESETS, current, change_seen, missing_ok=False
            )
        except KubeError as exc:
            if exc.status != 404 or not await self.owners.missing(key, pcs):
                raise
            return
        if written is not None:
            metrics.WRITES.labels("podcliqueset", "status").inc()
            self._written.remember(key, written, written)
            await self._tell_scheduling(pcs, seen[0], said)

    async def _tell_scheduling(
        self, pcs: PodCliqueSet, before: dict[str, Any], said: list[Condition]
    ) -> None:
        """An Event when the write just made turned PodGangsScheduled to the scheduler's
        verdict (Warning) or to True (Normal: every gang placed, told once per transition,
        the story GatesLifted began). The write was made under the version it changed, so
        of any number of replicas one tells each transition, once."""
        after = find_condition(said, progress.PODGANGS_SCHEDULED)
        if after is None:
            return
        was: dict[str, Any] = next(
            (c for c in before.get("conditions") or [] if c.get("type") == after.type), {}
        )
        refused = after.status == "False" and after.reason not in PASSING
        if refused and (was.get("status"), was.get("reason")) != ("False", after.reason):
            await self.reporter.kube_event(pcs, after.reason, after.message, warning=True)
        elif after.status == "True" and was.get("status") != "True":
            await self.reporter.kube_event(pcs, GANGS_SCHEDULED, after.message, warning=False)

    async def backend_trouble(
        self, key: WorkloadKey, step: Step, failure: BackendUnavailable | PrepareFailed
    ) -> None:
        """Say on the PodCliqueSet that its backend is in the way: the condition, and an
        Event when it was not already saying so."""
        reason = (
            "BackendUnavailable"
            if isinstance(failure, BackendUnavailable)
            else ("PreparePodsFailed")
        )
        status = step.pcs.status
        before = find_condition(status.conditions if status else [], progress.BACKEND_AVAILABLE)
        if before is None or before.status != "False":
            await self.reporter.kube_event(step.pcs, reason, str(failure), warning=True)
        trouble = progress.condition(
            step.pcs, progress.BACKEND_AVAILABLE, False, reason, str(failure), at=now()
        )
        await self.write(key, step, [trouble])

    async def _own_status_shown(self, key: WorkloadKey, pcs: PodCliqueSet) -> PodCliqueSet:
        """The PodCliqueSet as the read model shows it once it shows this process's last
        status write to it: a reconcile woken by an older event would otherwise patch under
        a resourceVersion the API server has passed (409, read again, write again: most of
        a small PodCliqueSet's status writes when a thousand arrive at once). Waits at most
        the read model's wait; ``pcs`` when the model holds another or none."""
        uid = pcs.metadata.uid

        def written_shown() -> bool:
            live = self.model.podcliqueset(key, uid)
            return (
                live is None or self._written.unshown(key, live.metadata.resource_version) is None
            )

        await self.model.wait_until(written_shown, self.wait_seconds)
        self._written.forget(key)  # waited for once: a 409 and a read, if still not
        return self.model.podcliqueset(key, uid) or pcs
