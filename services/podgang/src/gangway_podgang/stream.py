"""Writing a PodCliqueSet's gangs as a stream: each gang moves on as soon as its own last
writes are mirrored, not once every gang's are, so a large PodCliqueSet releases its first
gangs while its last are still being made.

At most ``gangs_in_flight`` gangs are being written at once, earlier gangs (in the plan's
order) first. Each gang takes at most ``max_rounds`` steps in one reconcile (what keeps
changing is left to later events). The first error stops new steps; the steps under way
finish, then it is raised. Everything this room needs from the reconcile is handed in: how
to decide again, how to ask whether the owner exists, and what to do when the backend is in
the way.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Final

from gangway_contracts import events
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import Condition
from gangway_podgang import progress
from gangway_podgang.decide import Decision
from gangway_podgang.readmodel import ReadModel, WorkloadKey
from gangway_podgang.report import Reporter
from gangway_podgang.step import Phantom, Refused, Step
from gangway_podgang.writes import Actuator, Expectation
from gangway_runtime import tasks
from gangway_runtime.backends import BackendUnavailable, PrepareFailed
from gangway_runtime.kube import KubeError
from gangway_runtime.status import now

log = logging.getLogger(__name__)

SAY_EVERY: Final = 5.0  # seconds between a streaming reconcile's Events of its steps
WHOLE_EVERY: Final = 5.0  # seconds between a streaming reconcile's looks at every gang
# ... and more for a larger workload: a look at every gang costs time in proportion (half a
# second at 10 000 gangs, holding the loop), so it comes no more often than this many gangs
# a second (every 25 s at 10 000: a tenth of the loop at most for four such workloads);
# partial looks at the gangs that changed fill the time between.
WHOLE_GANGS_A_SECOND: Final = 400

# Decide again for this PodCliqueSet: the plan of ``before`` kept while its spec is the
# same; ``focus``: only these gangs (None: every gang).
Decide = Callable[[WorkloadKey, Step | None, set[str] | None], Step | None]
OwnerMissing = Callable[[WorkloadKey, PodCliqueSet], Awaitable[bool]]
BackendTrouble = Callable[[WorkloadKey, Step, BackendUnavailable | PrepareFailed], Awaitable[None]]


@dataclass(frozen=True)
class Streamed:
    step: Step | None  # the last decision (None: the PodCliqueSet went away meanwhile)
    rounds: int  # decide-write rounds taken


class GangStream:
    def __init__(
        self,
        model: ReadModel,
        actuator: Actuator,
        reporter: Reporter,
        *,
        decide: Decide,
        owner_missing: OwnerMissing,
        backend_trouble: BackendTrouble,
        gangs_in_flight: int,
        max_rounds: int,
        wait_seconds: float,
    ) -> None:
        self.model = model
        self.actuator = actuator
        self.reporter = reporter
        self.decide = decide
        self.owner_missing = owner_missing
        self.backend_trouble = backend_trouble
        self.gangs_in_flight = gangs_in_flight
        self.max_rounds = max_rounds
        self.wait_seconds = wait_seconds

    async def run(self, key: WorkloadKey, step: Step, learned: list[Condition]) -> Streamed:
        """Stream the gangs, unless the PodCliqueSet is deleted meanwhile: then stop at
        once. A huge workload deleted mid-creation is not built on for minutes only for the
        garbage collector to take it away. What is learned of the backend on the way goes
        into ``learned``. Raises Phantom when what was written does not stay."""
        uid = step.pcs.metadata.uid

        def deleted() -> bool:
            pcs = self.model.podcliqueset(key, uid)
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
            return Streamed(None, 0)
        return streaming.result()

    async def _stream(self, key: WorkloadKey, first: Step, learned: list[Condition]) -> Streamed:
        step: Step | None = first
        flying: dict[asyncio.Task[bool], str] = {}
        steps: Counter[str] = Counter()
        failure: BaseException | None = None
        loop = asyncio.get_running_loop()
        decisions, said, whole_at = 0, loop.time(), loop.time()
        whole = True  # the step decides for every gang (else for those that changed)
        began: set[int] = set()  # replicas whose gangs a roll made again
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
                    if gang in step.rolled and part.incarnate:
                        began.add(await self._rolled(step, gang))
                    flying[asyncio.create_task(self._move(key, step, part, learned))] = gang
                decisions += started
                if not flying:
                    if whole:
                        break  # nothing any gang can do now: done, or others must act
                    whole = True  # only the changed gangs were looked at: now all
                    step = self.decide(key, step, None)
                    continue
                failure = await self._land(key, step, flying)
                if loop.time() - said >= SAY_EVERY:
                    said = loop.time()
                    await self.reporter.say(step.pcs)  # what the gangs did, as they go
                # A look at every gang now and then, and while a roll is under way;
                # otherwise at the gangs whose objects changed and the next to start.
                every = max(WHOLE_EVERY, len(step.plan.gangs) / WHOLE_GANGS_A_SECOND)
                whole = bool(step.decision.delete_pods) or loop.time() - whole_at >= every
                if whole:
                    whole_at = loop.time()
                step = self.decide(key, step, None if whole else self._focus(key, step))
            if flying:  # decided writes under way: let them land
                done = await asyncio.gather(*flying, return_exceptions=True)
                failure = failure or next((d for d in done if isinstance(d, BaseException)), None)
        finally:
            for task in flying:
                task.cancel()  # cancelled: the PodCliqueSet was deleted, or we shut down
            await asyncio.gather(*flying, return_exceptions=True)
            await self.reporter.say(first.pcs)
        if step is not None and began:
            step = replace(step, rolls_began=frozenset(began))
        return await self._outcome(key, first, step, failure, decisions)

    async def _outcome(
        self,
        key: WorkloadKey,
        first: Step,
        step: Step | None,
        failure: BaseException | None,
        decisions: int,
    ) -> Streamed:
        """The last step, or why the writes stopped: said on the PodCliqueSet when the API
        server refused them or the backend is in the way, raised otherwise."""
        if isinstance(failure, Refused):
            return Streamed(replace(step, refused=str(failure)) if step else None, decisions)
        if isinstance(failure, BackendUnavailable | PrepareFailed):
            await self.backend_trouble(key, step or first, failure)
        if failure is not None:
            raise failure
        return Streamed(step, decisions)

    async def _rolled(self, step: Step, gang: str) -> int:
        """A gang a rolling update replaces, in the journal (``gangway trace``) and an Event,
        as it is made again (once: its older pods go after); its PodCliqueSet replica."""
        planned = next(g for g in step.plan.gangs if g.name == gang)
        pods = [pod for _, _, pod in planned.pods if pod in step.workload.pods]
        common = self.reporter.common(step.pcs)
        event = events.GangRolled(**common, podgang=gang, pods=pods)
        await self.reporter.report(step.pcs, event)
        return planned.pcs_replica

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
        on a small machine); the first error met. Raises Phantom if what was written did
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
        if unmirrored:
            # Own writes not shown within the wait: what was made may be collected as fast
            # as it is made. A phantom when there is no owner.
            log.warning("%s/%s: own writes not mirrored after %.0fs", *key, self.wait_seconds)
            if await self.owner_missing(key, step.pcs):
                raise Phantom()
        return failure

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
                progress.condition(
                    step.pcs, progress.BACKEND_AVAILABLE, True, "Answering", answered, at=now()
                )
            )
        return expected

    async def _mirrored(self, key: WorkloadKey, expected: list[Expectation]) -> bool:
        def shown() -> bool:
            found = self.model.peek(key)
            return found is not None and all(e.met(found) for e in expected)

        return await self.model.wait_until(shown, self.wait_seconds)
