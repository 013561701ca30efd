"""Reconciling one PodCliqueSet, the way a controller-runtime reconciler works: key in, read
the model, decide, act, report.

Every input comes from the read model, so a redelivered, late or reordered message changes
nothing: the decision depends on the current state alone. Each question has a room of its
own: what to write (``decide.py``, from ``plan.py``), writing it gang by gang (``stream.py``,
through ``writes.py``), what the backend says of the features asked for (``features.py``),
the journal's catch-up (``journal_steps.py``), the replicas' headless Services
(``headless.py``), the PodCliques and scaling groups (``cliques.py``, written by
``clique_writes.py`` once the gangs' writes are done), the status
(``podcliqueset_status.py``), and whether the PodCliqueSet exists at all (``owners.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final

from opentelemetry import trace

from gangway_contracts import events, labels
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldErrors
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.incarnations import incarnation_of
from gangway_contracts.k8s import Condition, find_condition
from gangway_contracts.limits import Limits, over_limits
from gangway_podgang import metrics, progress
from gangway_podgang.clique_writes import CliqueWriter
from gangway_podgang.decide import Observed, decide
from gangway_podgang.features import FeatureVerdicts
from gangway_podgang.headless import services_to_write
from gangway_podgang.journal_steps import journal_plan, journal_what_is_done
from gangway_podgang.owners import Owners
from gangway_podgang.plan import plan_podgangs
from gangway_podgang.podcliqueset_status import REFUSED, StatusWriter
from gangway_podgang.readmodel import ReadModel, WorkloadKey
from gangway_podgang.report import Reporter
from gangway_podgang.rolling import roll_policy, stall, to_roll, update_started
from gangway_podgang.scaling import scales_of
from gangway_podgang.step import Phantom, Step
from gangway_podgang.stream import GangStream
from gangway_podgang.termination import DEFAULT_DELAY_TEXT, Recycling, cliques_of, recycling
from gangway_podgang.writes import Actuator
from gangway_runtime import tracing

log = logging.getLogger(__name__)
tracer = trace.get_tracer("gangway.podgang")

GROVE_DRIVEN: Final = "DrivenByGrove"


@dataclass(frozen=True)
class Outcome:
    converged: bool  # nothing left to do; else waiting on the backend or the scheduler
    rounds: int  # decide-write rounds taken
    wake_in: float | None = None  # look again then, with no message (terminationDelay)


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
        self.reporter = reporter
        self.config = config
        self.limits = limits or Limits()
        self.owners = Owners(actuator.kube)
        self.features = FeatureVerdicts(actuator.backends)
        self.status = StatusWriter(actuator.kube, model, reporter, self.owners, wait_seconds)
        self.cliques = CliqueWriter(actuator)
        self.stream = GangStream(
            model,
            actuator,
            reporter,
            decide=self._decide,
            owner_missing=self.owners.missing,
            backend_trouble=self.status.backend_trouble,
            gangs_in_flight=gangs_in_flight,
            max_rounds=max_rounds,
            wait_seconds=wait_seconds,
        )

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

    async def _reconcile(self, key: WorkloadKey) -> Outcome:
        # Read the model and decide.
        step = self._decide(key)
        log.debug("%s/%s: reconcile, done=%s", *key, step and step.decision.done)
        # Act: write gang by gang; what is learned of the backend, the status keeps.
        learned: list[Condition] = []
        rounds = 0
        if step is not None and not step.by_grove and not step.decision.done:
            await journal_plan(self.reporter, step)
            await self._terminating(step)
            try:
                streamed = await self.stream.run(key, step, learned)
            except Phantom:
                return Outcome(converged=True, rounds=0)
            step, rounds = streamed.step, streamed.rounds
        if step is None:
            return Outcome(converged=True, rounds=rounds)
        if step.by_grove:  # claimed before this reconcile, or during it: nothing more
            await self._left_to_grove(step.pcs)
            return Outcome(converged=True, rounds=rounds)
        if not step.unresolved and (verdict := await self.features.ask(key, step)) is not None:
            learned.append(verdict)
        # Report.
        if step.refused:
            await self._refused(step)
        await journal_what_is_done(self.reporter, step)
        await self.cliques.write(step)
        await self.status.write(key, step, learned)
        return Outcome(step.decision.done, rounds, wake_in=step.wake_in)

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
        if self.owners.is_phantom(pcs):
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
        scales = scales_of(pcs, workload.podcliques, workload.scaling_groups, self.limits)
        if before is not None and before.same_spec(pcs, binding, scales):
            plan = before.plan
        else:
            plan, focus = plan_podgangs(pcs, binding, scales), None
        policy = roll_policy(pcs)
        if focus is None:  # looked at whole: which gangs are past terminationDelay, rolled
            due = recycling(pcs, plan, workload.podcliques, workload.podgangs, datetime.now(UTC))
            recycled = cliques_of(due, plan, workload.podcliques)
            incarnations = {
                name: incarnation_of(live.metadata.annotations)
                for name, live in workload.podgangs.items()
            }
            rolled = tuple(to_roll(plan.gangs, workload.pods, policy, incarnations))
        else:  # a partial decision recycles and rolls nothing; it keeps the whole one's word
            due, recycled = before.recycling if before is not None else Recycling(), ()
            rolled = ()
        decision = decide(
            plan.gangs,
            pcs.metadata.namespace,
            pcs.spec.template.priority_class_name,
            Observed(workload.podgangs, workload.pods, workload.preempted),
            owner_uid=pcs.metadata.uid,
            focus=focus,
            roll=rolled,  # both acted on only in a whole decision
            recycle=due.gangs,
        )
        services, stale = services_to_write(pcs, plan, workload.services, focus)
        decision = replace(
            decision,
            write_services=services,
            delete_services=stale,
            delete_cliques=recycled,
        )
        stalled = stall(plan.gangs, workload.pods, policy, update_started(pcs), datetime.now(UTC))
        return Step(
            pcs,
            workload,
            backend,
            plan,
            decision,
            binding=binding,
            recycling=due,
            rolled=rolled,
            stall=stalled,
        )

    async def _terminating(self, step: Step) -> None:
        """The gangs recycled now, in the journal (``gangway trace``) and a Warning Event."""
        found = step.recycling
        if not found.gangs:
            return
        meta = step.pcs.metadata
        delay = step.pcs.spec.template.termination_delay or DEFAULT_DELAY_TEXT
        bases = {g.name: g.base for g in step.plan.gangs}
        for gang in found.gangs:
            # A scaled gang goes for its own cliques, or with its base gang.
            cliques = found.breached.get(gang) or found.breached.get(bases[gang], ())
            said = ", ".join(cliques)
            log.warning(
                "%s/%s: recycling %s: %s below minAvailable for %s",
                meta.namespace,
                meta.name,
                gang,
                said,
                delay,
            )
            common = self.reporter.common(step.pcs)
            event = events.GangTerminated(**common, podgang=gang, cliques=[*cliques], delay=delay)
            await self.reporter.report(step.pcs, event)

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
