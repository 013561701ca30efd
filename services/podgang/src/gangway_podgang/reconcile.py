"""Reconciling one PodCliqueSet: read model → plan → decide → write → wait for the writes
to come back → decide again, until nothing is left that this service can do alone (the
backend has to sync, the scheduler has to place the base gang). Then the status.

One key in, converge, return — the way a controller-runtime reconciler works. Every input
comes from the read model, so a redelivered, late or reordered message changes nothing: the
decision depends on the current state alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from opentelemetry import trace

from gangway_contracts import events, labels
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldErrors
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet
from gangway_contracts.k8s import Condition, NamespacedName, find_condition
from gangway_contracts.limits import Limits, over_limits
from gangway_contracts.rpc import ValidateReply, ValidateRequest
from gangway_contracts.subjects import Subjects
from gangway_podgang import metrics, progress
from gangway_podgang.decide import Decision, Observed, decide
from gangway_podgang.plan import Plan, plan_podgangs
from gangway_podgang.readmodel import ReadModel, Workload, WorkloadKey
from gangway_podgang.report import Reporter
from gangway_podgang.writes import Actuator, Expectation
from gangway_runtime import tasks, tracing
from gangway_runtime.backends import BackendClient, BackendUnavailable, PrepareFailed
from gangway_runtime.kube import Kube, KubeError
from gangway_runtime.objects import Recent, newer_or_same
from gangway_runtime.status import PODCLIQUESETS, now, patch_status

log = logging.getLogger(__name__)
GATE = labels.PODGANG_PENDING_CREATION_GATE
REFUSED: Final = "Refused"  # PodGangsReady's reason when the API server refuses a write
tracer = trace.get_tracer("gangway.podgang")


@dataclass(frozen=True)
class Step:
    """One decision and everything it was made from."""

    pcs: PodCliqueSet
    workload: Workload
    backend: str = ""
    plan: Plan = field(default_factory=lambda: Plan(gangs=()))
    decision: Decision = field(default_factory=Decision)
    unresolved: str = ""  # why no backend could be chosen (the cliques' schedulerName)
    too_large: str = ""  # why nothing is planned: more gangs or pods than one may make
    refused: str = ""  # the API server refused what this PodCliqueSet makes, and why
    by_grove: bool = False  # Grove's operator drives it: nothing decided, left alone
    binding: ClusterTopologyBinding | None = None  # the topology the plan was made with


def _same_spec(before: Step, pcs: PodCliqueSet, binding: ClusterTopologyBinding | None) -> bool:
    """The plan ``before`` holds is still this PodCliqueSet's: same object, same spec
    generation, same topology binding."""
    was = before.pcs.metadata
    return (was.uid, was.generation) == (
        pcs.metadata.uid,
        pcs.metadata.generation,
    ) and before.binding is binding


def _trouble(error: BackendUnavailable | PrepareFailed) -> str:
    """BackendAvailable's reason for what the backend did."""
    return "BackendUnavailable" if isinstance(error, BackendUnavailable) else "PreparePodsFailed"


class _Phantom(Exception):
    """What podgang writes does not stay: the PodCliqueSet is not on the API server."""


GROVE_DRIVEN: Final = "DrivenByGrove"
SAY_EVERY: Final = 5.0  # seconds between a streaming reconcile's Events of its steps
WHOLE_EVERY: Final = 5.0  # seconds between a streaming reconcile's looks at every gang


class Refused(Exception):
    """The API server found invalid what podgang made from the spec (422): no retry helps
    until the PodCliqueSet changes; said on it instead."""


@dataclass(frozen=True)
class Outcome:
    converged: bool  # nothing left to do; else waiting on the backend or the scheduler
    rounds: int  # decide-write rounds taken


class Reconciler:
    def __init__(
        self,
        model: ReadModel,
        actuator: Actuator,
        reporter: Reporter,
        config: SchedulerConfig,
        *,
        max_rounds: int,
        wait_seconds: float,
        gangs_in_flight: int = 64,
        limits: Limits | None = None,
    ) -> None:
        self.model = model
        self.actuator = actuator
        self.reporter = reporter
        self.kube: Kube = actuator.kube
        self.subjects: Subjects = actuator.subjects
        self.backends: BackendClient = actuator.backends
        self.config = config
        self.max_rounds = max_rounds
        self.gangs_in_flight = gangs_in_flight
        self.wait_seconds = wait_seconds
        self.limits = limits or Limits()
        # PodCliqueSets the store holds and the API server does not (``_owner_missing``).
        # In memory and bounded: after a restart, or once forgotten, the first status write
        # finds one again, with one read.
        self.phantoms: Recent[str, bool] = Recent(at_most=10_000)
        # The resourceVersion of this process's last status write to each PodCliqueSet,
        # until the read model shows it (``_status``).
        self._status_written: dict[WorkloadKey, str] = {}

    async def reconcile(self, key: WorkloadKey) -> Outcome:
        found = self.model.peek(key)
        pcs = found.podcliqueset if found else None
        # Every span of a workload hangs from one trace derived from its uid.
        parent = tracing.workload_context(pcs.metadata.uid) if pcs else None
        with (
            tracer.start_as_current_span("podgang reconcile", context=parent) as span,
            metrics.RECONCILE_SECONDS.time(),
        ):
            span.set_attribute("gangway.workload", f"{key[0]}/{key[1]}")
            outcome = await self._reconcile(key)
            # One line per reconcile that wrote something, with the trace to follow it by
            # (`gangway trace`); the ones that found nothing to do only at DEBUG.
            state = "converged" if outcome.converged else "waiting on the backend or scheduler"
            log.log(
                logging.INFO if outcome.rounds else logging.DEBUG,
                "%s/%s: %s after %d write rounds (trace %s)",
                *key,
                state,
                outcome.rounds,
                tracing.trace_id_hex(),
            )
            return outcome

    def _decide(
        self, key: WorkloadKey, before: Step | None = None, focus: set[str] | None = None
    ) -> Step | None:
        """What to write now. The plan ``before`` was made from is used again while the
        PodCliqueSet and its topology binding are the same (planning a large PodCliqueSet
        costs more than deciding); ``focus``: only for these gangs, while the plan holds
        (a new plan is decided whole)."""
        workload = self.model.workload(key)
        pcs = workload.podcliqueset
        if pcs is None or pcs.metadata.deletion_timestamp:
            return None  # deleting a PodCliqueSet cascades through owner references
        if pcs.metadata.uid in self.phantoms:
            return None
        if labels.GROVE_FINALIZER in pcs.metadata.finalizers:
            return Step(pcs=pcs, workload=workload, by_grove=True)
        try:
            backend = self.config.backend_for(pcs)
        except FieldErrors as exc:
            return Step(pcs=pcs, workload=workload, unresolved=str(exc))
        # Counted before planning: a PodCliqueSet asking for 100 000 replicas is refused
        # here, not built in memory (admission refuses it too, unless it failed open).
        if too_large := over_limits(pcs, self.limits):
            why = "; ".join(map(str, too_large))
            return Step(pcs=pcs, workload=workload, backend=backend, too_large=why)
        binding = self.model.binding(pcs.topology_name)
        if before is not None and _same_spec(before, pcs, binding):
            plan = before.plan
        else:
            plan, focus = plan_podgangs(pcs, binding), None
        decision = decide(
            plan.gangs,
            pcs.metadata.namespace,
            pcs.spec.template.priority_class_name,
            Observed(podgangs=workload.podgangs, pods=workload.pods),
            owner_uid=pcs.metadata.uid,
            rolling=pcs.spec.rolls_updates,
            focus=focus,
        )
        return Step(pcs, workload, backend, plan, decision, binding=binding)

    async def _reconcile(self, key: WorkloadKey) -> Outcome:
        # What this reconcile learned of the backend, for the status (which keeps it).
        learned: list[Condition] = []
        step = self._decide(key)
        log.debug("%s/%s: reconcile, done=%s", *key, step and step.decision.done)
        rounds = 0
        if step is not None and not step.by_grove and not step.decision.done:
            await self._planned(step)
            try:
                step, rounds = await self._stream_while_wanted(key, step, learned)
            except _Phantom:
                return Outcome(converged=True, rounds=rounds)
        if step is None:
            return Outcome(converged=True, rounds=rounds)
        if step.by_grove:  # claimed before this reconcile, or during it: nothing more
            await self._left_to_grove(step.pcs)
            return Outcome(converged=True, rounds=rounds)
        if step.refused:
            await self._refused(step)
        await self._journal_what_is_done(step)
        await self._status(key, step, learned)
        return Outcome(converged=step.decision.done, rounds=rounds)

    async def _stream_while_wanted(
        self, key: WorkloadKey, step: Step, learned: list[Condition]
    ) -> tuple[Step | None, int]:
        """Stream the gangs, unless the PodCliqueSet is deleted meanwhile: then stop at
        once. A huge workload deleted mid-creation is not built on for minutes only for the
        garbage collector to take it away."""
        uid = step.pcs.metadata.uid

        def deleted() -> bool:
            pcs = self._shown(key, uid)
            return pcs is None or bool(pcs.metadata.deletion_timestamp)

        streaming = asyncio.create_task(self._stream(key, step, learned))
        watching = asyncio.create_task(self.model.wait_until(deleted, float("inf")))
        try:
            await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await tasks.stop(watching)
            if not streaming.done():
                log.info("%s/%s: deleted while being written: writes stopped", *key)
                await tasks.stop(streaming)
        if streaming.cancelled():
            return None, 0
        return streaming.result()

    async def _stream(
        self, key: WorkloadKey, first: Step, learned: list[Condition]
    ) -> tuple[Step | None, int]:
        """Move every gang on as soon as its own last writes are mirrored, not once every
        gang's are: a large PodCliqueSet streams its gangs instead of moving them in batches.
        At most ``gangs_in_flight`` gangs are being written at once, earlier gangs (in the
        plan's order) first, so the first gangs are done while the last are still being
        made. Each gang takes at most ``max_rounds`` steps in one reconcile (what keeps
        changing is left to later events). The first error stops new steps; the steps under
        way finish, then it is raised."""
        step: Step | None = first
        flying: dict[asyncio.Task[bool], str] = {}
        steps: Counter[str] = Counter()
        failure: BaseException | None = None
        loop = asyncio.get_running_loop()
        decisions, said, whole_at = 0, loop.time(), loop.time()
        whole = True  # the step decides for every gang (else for those that changed)
        self.model.take_touched(key)  # what changes from here on
        try:
            while step is not None and not step.by_grove and failure is None:
                busy = set(flying.values())
                order = [gang.name for gang in step.plan.gangs]
                started = False
                for gang, part in step.decision.per_gang(step.workload.pods, order):
                    if len(flying) >= self.gangs_in_flight:
                        break
                    if gang in busy or steps[gang] >= self.max_rounds:
                        continue
                    steps[gang] += 1
                    started = True
                    flying[asyncio.create_task(self._move(key, step, part, learned))] = gang
                decisions += started
                if not flying:
                    if whole:
                        break  # nothing any gang can do now: done, or others must act
                    whole = True  # only the changed gangs were looked at: now all
                    step = self._decide(key, before=step)
                    continue
                failure = await self._land(key, step, flying)
                if loop.time() - said >= SAY_EVERY:
                    said = loop.time()
                    await self.reporter.say(step.pcs)  # what the gangs did, as they go
                # A look at every gang now and then, and while a roll is under way;
                # otherwise at the gangs whose objects changed and the next to start.
                whole = bool(step.decision.delete_pods) or loop.time() - whole_at >= WHOLE_EVERY
                if whole:
                    whole_at = loop.time()
                step = self._decide(
                    key, before=step, focus=None if whole else self._focus(key, step)
                )
            if flying:  # decided writes under way: let them land
                done = await asyncio.gather(*flying, return_exceptions=True)
                failure = failure or next((d for d in done if isinstance(d, BaseException)), None)
        finally:
            for task in flying:
                task.cancel()  # cancelled: the PodCliqueSet was deleted, or we shut down
            await asyncio.gather(*flying, return_exceptions=True)
            await self.reporter.say(first.pcs)
        if isinstance(failure, Refused):
            return (replace(step, refused=str(failure)) if step else None), decisions
        if isinstance(failure, BackendUnavailable | PrepareFailed):
            await self._backend_trouble(key, step or first, _trouble(failure), str(failure))
        if failure is not None:
            raise failure
        return step, decisions

    def _focus(self, key: WorkloadKey, step: Step) -> set[str]:
        """The gangs a partial decision looks at: those whose PodGang or pods changed, the
        scaled gangs of a changed base, and the next gangs not made yet (as many as may be
        in flight)."""
        touched = self.model.take_touched(key)
        found = self.model.peek(key)
        made = found.podgangs if found else {}
        gangs = step.plan.gangs
        scaled = {g.name for g in gangs if not g.is_base and g.base in touched}
        unmade = [g.name for g in gangs if g.name not in made][: self.gangs_in_flight]
        return touched | scaled | set(unmade)

    async def _land(
        self, key: WorkloadKey, step: Step, flying: dict[asyncio.Task[bool], str]
    ) -> BaseException | None:
        """Wait until a gang is done and at most half the window is busy (deciding again
        after every single landing measured slower: the decisions' CPU is the API server's
        on a small machine); the first error met. Raises _Phantom if what was written did
        not stay."""
        failure: BaseException | None = None
        unmirrored = False
        while True:
            finished, _ = await asyncio.wait(flying, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                flying.pop(task)
                if (error := task.exception()) is not None:
                    failure = failure or error
                else:
                    unmirrored = unmirrored or not task.result()
            if len(flying) <= self.gangs_in_flight // 2:
                break
        if unmirrored and await self._unmirrored(key, step):
            raise _Phantom()
        return failure

    async def _unmirrored(self, key: WorkloadKey, step: Step) -> bool:
        """Own writes not shown within the wait: what was made may be collected as fast as
        it is made. True when there is no owner (a phantom)."""
        log.warning("%s/%s: own writes not mirrored after %.0fs", *key, self.wait_seconds)
        return await self._owner_missing(key, step.pcs)

    async def _move(
        self, key: WorkloadKey, step: Step, part: Decision, learned: list[Condition]
    ) -> bool:
        """One gang's writes, then wait until the read model shows them; False if it does
        not within the wait."""
        expected = await self._apply(step, part, learned)
        return await self._mirrored(key, expected)

    async def _apply(
        self, step: Step, part: Decision, learned: list[Condition]
    ) -> list[Expectation]:
        try:
            expected = await self.actuator.apply(part, step.pcs, step.backend, step.workload)
        except KubeError as exc:
            if exc.status != 422:
                raise
            raise Refused(f"the API server refuses what this PodCliqueSet makes: {exc}") from exc
        if part.create_pods and not any(c.type == progress.BACKEND_AVAILABLE for c in learned):
            answered = f"{step.backend} prepared the pods"
            learned.append(
                self._condition(step, progress.BACKEND_AVAILABLE, True, "Answering", answered)
            )
        return expected

    async def _mirrored(self, key: WorkloadKey, expected: list[Expectation]) -> bool:
        def shown() -> bool:
            found = self.model.peek(key)
            return found is not None and all(e.met(found) for e in expected)

        return await self.model.wait_until(shown, self.wait_seconds)

    def _condition(self, step: Step, type_: str, ok: bool, reason: str, message: str) -> Condition:
        return progress.condition(step.pcs, type_, ok, reason, message, at=now())

    async def _planned(self, step: Step) -> None:
        """Journal the plan once per generation: the status says a generation was seen, and
        the journal stores the entry once under its generation (a retry or a replica that
        planned it too within the duplicate window adds nothing)."""
        meta = step.pcs.metadata
        status = step.pcs.status
        if status is not None and status.observed_generation == meta.generation:
            return
        names = [gang.name for gang in step.plan.gangs]
        event = events.PodGangPlanned(**self.reporter.common(step.pcs), podgangs=names)
        await self.reporter.journal(event, once=f"planned/{meta.uid}/{meta.generation}")

    async def _journal_what_is_done(self, step: Step) -> None:
        """Every step the cluster shows done for a gang has its journal entry: one lost to a
        crash between a write and its entry is made up for here (journaled, once, when
        found). Entries this process put or found cost a set lookup, no event built."""
        writer = self.reporter.journal_writer
        common = self.reporter.common(step.pcs)
        workload: NamespacedName = common["workload"]
        found: list[Awaitable[None]] = []
        for gang in step.plan.gangs:
            live = step.workload.podgangs.get(gang.name)
            if live is None or not live.metadata.creation_timestamp:
                continue
            names = [name for _, _, name in gang.pods]
            pods = [step.workload.pods.get(name) for name in names]
            about = {**common, "podgang": gang.name}
            done: list[tuple[type[events.JournalEvent], dict[str, Any]]] = [
                (events.PodGangCreated, {**about, "backend": step.backend})
            ]
            if all(pods):
                done.append((events.PodsCreated, {**about, "pods": names}))
            if progress.initialized_status_of(live) is True:
                done.append((events.PodGangInitialized, about))
            if all(pod is not None and not pod.is_gated(GATE) for pod in pods):
                done.append((events.GatesLifted, {**about, "pods": names}))
            since = datetime.fromisoformat(live.metadata.creation_timestamp)
            found += [
                writer.ensure(kind(**fields), since)
                for kind, fields in done
                if writer.missing(kind, workload, gang.name)
            ]
        await asyncio.gather(*found)

    async def _left_to_grove(self, pcs: PodCliqueSet) -> None:
        """One PodCliqueSet, one driver: Grove's operator claimed this one (its finalizer),
        so Gangway writes nothing to it — not even its status, which is Grove's — and says
        so in an Event of a fixed name (once while the Event lives)."""
        meta = pcs.metadata
        log.info("%s/%s: driven by Grove's operator: left alone", meta.namespace, meta.name)
        await self.reporter.kube_event(
            pcs,
            GROVE_DRIVEN,
            f"Grove's operator drives this PodCliqueSet (finalizer {labels.GROVE_FINALIZER}): "
            "Gangway leaves it alone; docs/operations.md says how to move it to Gangway",
            warning=False,
            name=f"{pcs.metadata.name}.{GROVE_DRIVEN.lower()}",
        )

    async def _refused(self, step: Step) -> None:
        """An Event when the PodCliqueSet was not already saying so (the status, written
        next, keeps saying it); taken up again when the PodCliqueSet changes."""
        status = step.pcs.status
        before = find_condition(status.conditions if status else [], progress.PODGANGS_READY)
        if before is None or before.reason != REFUSED:
            await self.reporter.kube_event(step.pcs, REFUSED, step.refused, warning=True)
        log.warning("%s/%s: %s", step.pcs.metadata.namespace, step.pcs.metadata.name, step.refused)

    async def _backend_trouble(self, key: WorkloadKey, step: Step, reason: str, why: str) -> None:
        """Say on the PodCliqueSet that its backend is in the way: the condition, and an
        Event when it was not already saying so."""
        status = step.pcs.status
        before = find_condition(status.conditions if status else [], progress.BACKEND_AVAILABLE)
        if before is None or before.status != "False":
            await self.reporter.kube_event(step.pcs, reason, why, warning=True)
        trouble = self._condition(step, progress.BACKEND_AVAILABLE, False, reason, why)
        await self._status(key, step, [trouble])

    async def _status(self, key: WorkloadKey, step: Step, learned: list[Condition]) -> None:
        pcs = step.pcs
        conditions: list[Condition] = []
        if step.unresolved:
            conditions.append(
                self._condition(
                    step, progress.BACKEND_RESOLVED, False, "UnknownScheduler", step.unresolved
                )
            )
        else:
            conditions.append(
                self._condition(
                    step, progress.BACKEND_RESOLVED, True, "Resolved", f"backend {step.backend}"
                )
            )
            conditions.append(self._gangs_ready(step))
            if (topology := progress.topology_resolved(pcs, step.plan, at=now())) is not None:
                conditions.append(topology)
            conditions += learned  # others, written before, the status keeps
            if (features := await self._features(key, step)) is not None:
                conditions.append(features)
        workload = step.workload
        fields = progress.counts(pcs, step.plan, workload.podgangs, workload.pods, at=now())
        change = progress.status_change(fields, conditions)
        current = progress.current_status(await self._own_status_shown(key, pcs))
        try:
            written = await patch_status(
                self.kube, PODCLIQUESETS, current, change, missing_ok=False
            )
        except KubeError as exc:
            if exc.status != 404 or not await self._owner_missing(key, pcs):
                raise
            return
        if written is not None:
            metrics.WRITES.labels("podcliqueset", "status").inc()
            self._status_written[key] = written

    async def _own_status_shown(self, key: WorkloadKey, pcs: PodCliqueSet) -> PodCliqueSet:
        """The PodCliqueSet as the read model shows it once it shows this process's last
        status write to it: a reconcile woken by an older event would otherwise patch under
        a resourceVersion the API server has passed (409, read again, write again: most of
        a small PodCliqueSet's status writes when a thousand arrive at once). Waits at most
        the read model's wait; ``pcs`` when the model holds another or none."""
        uid = pcs.metadata.uid

        def written_shown() -> bool:
            live = self._shown(key, uid)
            written = self._status_written.get(key, "")
            return live is None or newer_or_same(live.metadata.resource_version, written)

        await self.model.wait_until(written_shown, self.wait_seconds)
        self._status_written.pop(key, None)  # waited for once: a 409 and a read, if still not
        return self._shown(key, uid) or pcs

    def _shown(self, key: WorkloadKey, uid: str) -> PodCliqueSet | None:
        """The PodCliqueSet of this uid as the read model holds it now; None when it holds
        none, or another of the same name."""
        found = self.model.peek(key)
        pcs = found.podcliqueset if found else None
        return pcs if pcs is not None and pcs.metadata.uid == uid else None

    def _gangs_ready(self, step: Step) -> Condition:
        """PodGangsReady: False for a PodCliqueSet over the ceiling or whose writes the API
        server refuses; else as its gangs stand."""
        if step.too_large:
            return self._condition(
                step, progress.PODGANGS_READY, False, "OverLimit", step.too_large
            )
        if step.refused:
            return self._condition(step, progress.PODGANGS_READY, False, REFUSED, step.refused)
        workload = step.workload
        return progress.gangs_ready(
            step.pcs, step.plan, workload.podgangs, workload.pods, backend=step.backend, at=now()
        )

    async def _owner_missing(self, key: WorkloadKey, pcs: PodCliqueSet) -> bool:
        """The API server has no status for a PodCliqueSet the store holds, or what podgang
        made for it does not stay: is there one at all? If not (a record forged onto the bus,
        or a deletion the store has not shown yet), its uid is a phantom: nothing more is made
        for it, and what was made, owned by a uid that does not exist, the garbage collector
        takes away. Asked once per phantom."""
        live = await self.kube.read(PODCLIQUESETS, pcs.metadata.namespace, pcs.metadata.name)
        if live is not None and live["metadata"]["uid"] == pcs.metadata.uid:
            return False
        self.phantoms[pcs.metadata.uid] = True
        log.warning(
            "%s/%s: the API server has no PodCliqueSet of uid %s, which the store holds: "
            "nothing more is made for it",
            *key,
            pcs.metadata.uid,
        )
        metrics.PHANTOMS.inc()
        return True

    async def _features(self, key: WorkloadKey, step: Step) -> Condition | None:
        """The backend's verdict on what this generation asks for, asked once per
        generation (the status holds the answer); None when the status has it already or
        the backend does not answer."""
        generation = step.pcs.metadata.generation
        status = step.pcs.status
        judged = find_condition(status.conditions if status else [], progress.FEATURES_SUPPORTED)
        if judged is not None and judged.observed_generation == generation:
            return None
        request = ValidateRequest(operation="UPDATE", podcliqueset=step.pcs)
        try:
            verdict = await self.backends.validate(step.backend, request)
        except BackendUnavailable as exc:
            log.info("%s/%s: no feature verdict: %s", *key, exc)
            return None
        return self._verdict(step, verdict)

    def _verdict(self, step: Step, verdict: ValidateReply) -> Condition:
        make = self._condition
        if verdict.unsupported:
            message = "; ".join(f"{u.field}: {u.feature}: {u.message}" for u in verdict.unsupported)
            return make(step, progress.FEATURES_SUPPORTED, False, "UnsupportedFeature", message)
        if not verdict.allowed:
            message = "; ".join(map(str, verdict.errors))
            return make(step, progress.FEATURES_SUPPORTED, False, "Rejected", message)
        supported = f"{step.backend} supports everything it asks for"
        return make(step, progress.FEATURES_SUPPORTED, True, "Supported", supported)
