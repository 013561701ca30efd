"""One PodCliqueSet's plan and what exists now → the writes that move it one step on. Pure.

The service reads the current state from its read model, asks :func:`decide`, performs the
writes, and comes back when their results are mirrored. Deciding from current state alone
makes every write safe to lose (a crash) or to repeat (a redelivery): the next decision
simply asks for what is still missing.

The order GREP-375 wants falls out of the rules:

1. PodGangs first, with empty pod references and ``Initialized=False`` (``PodsPending``);
2. pods of an existing PodGang, gated, prepared by its backend;
3. once every pod of a gang exists: its pod references, then ``Initialized=True``;
4. a pod's gate comes off when its gang is Initialized and its backend says BackendSynced,
   both at the gang's current generation, and — for a scaled gang — when the base gang of the
   same PodCliqueSet replica is scheduled (each podgroup has ≥ minReplicas pods on nodes);
5. once every pod exists, the PodGang's ``status.phase`` and ``Scheduled`` condition follow
   what the scheduler did with its pods, as Grove's do: Pending (none bound), Starting (some
   bound), Running (every pod Running); Scheduled once each podgroup has minReplicas bound,
   else why not, in the one vocabulary of ``gangway_contracts.why`` (gated and on what, the
   backend's refusal, the scheduler's verdict from its own objects or the pods', or not
   tried yet).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from gangway_contracts import kueue, kueue_topology, labels, why
from gangway_contracts.grove import PodGang, PodGangSpec
from gangway_contracts.incarnations import incarnation_of
from gangway_contracts.k8s import Condition, NamespacedName
from gangway_contracts.services import Service
from gangway_podgang.cliques import CliqueDelete
from gangway_podgang.compact import PodRecord
from gangway_podgang.headless import ServiceWrite
from gangway_podgang.manifests import all_references, controlled_by, podgang_spec
from gangway_podgang.plan import PlannedGang, PlannedPodGroup
from gangway_podgang.rolling import available, outdated


@dataclass(frozen=True)
class Observed:
    """What the read model holds of one PodCliqueSet's objects (tombstones left out)."""

    podgangs: Mapping[str, PodGang]
    pods: Mapping[str, PodRecord]
    # By gang, the last pod its scheduler evicted for another, though it may be gone
    # (ReadModel.preempted).
    preempted: Mapping[str, PodRecord] = field(default_factory=dict)


@dataclass(frozen=True)
class PodsToCreate:
    gang: PlannedGang
    podgang: PodGang  # the live PodGang: its uid owns the pods
    pods: tuple[tuple[PlannedPodGroup, int], ...]


@dataclass(frozen=True)
class Decision:
    create_podgangs: tuple[PlannedGang, ...] = ()
    delete_podgangs: tuple[str, ...] = ()
    # The PodCliques of gangs past terminationDelay, deleted with the gang's pods, so the
    # cliques' status starts again with the gang (termination.py).
    delete_cliques: tuple[CliqueDelete, ...] = ()
    update_specs: tuple[tuple[PodGang, PodGangSpec], ...] = ()
    # Gangs made again (a roll, a recycle): the PodGang's next incarnation, with its spec
    # referencing no pod, in one write; its pods of the earlier one are deleted after.
    incarnate: tuple[tuple[PodGang, PodGangSpec], ...] = ()
    create_pods: tuple[PodsToCreate, ...] = ()
    delete_pods: tuple[str, ...] = ()
    # (PodGang, desired Initialized status) where the condition must change.
    set_initialized: tuple[tuple[PodGang, bool], ...] = ()
    lift_gates: tuple[PodRecord, ...] = ()
    set_placement: tuple[tuple[PodGang, Placement], ...] = ()
    # A replica's headless Services travel with its base gang.
    write_services: tuple[ServiceWrite, ...] = ()
    delete_services: tuple[Service, ...] = ()

    @property
    def done(self) -> bool:
        return not any(
            (
                self.write_services,
                self.delete_services,
                self.create_podgangs,
                self.delete_podgangs,
                self.delete_cliques,
                self.update_specs,
                self.incarnate,
                self.create_pods,
                self.delete_pods,
                self.set_initialized,
                self.lift_gates,
                self.set_placement,
            )
        )

    def per_gang(
        self, pods: Mapping[str, PodRecord], order: Sequence[str]
    ) -> list[tuple[str, Decision]]:
        """The writes split by the gang they move, in ``order`` (the plan's; a gang no longer
        planned, whose PodGang or pods are deleted, first): each part can be written and
        waited for on its own, so one gang moves on while others are still being written.
        ``pods``: the observed pods, for the gang of a pod to delete."""
        parts: dict[str, dict[str, list[Any]]] = {}

        def add(gang: str, what: str, item: Any) -> None:
            parts.setdefault(gang, {}).setdefault(what, []).append(item)

        for planned in self.create_podgangs:
            add(planned.name, "create_podgangs", planned)
        for name in self.delete_podgangs:
            add(name, "delete_podgangs", name)
        for gone in self.delete_cliques:
            add(gone.gang, "delete_cliques", gone)
        for live, spec in self.update_specs:
            add(live.metadata.name, "update_specs", (live, spec))
        for live, spec in self.incarnate:
            add(live.metadata.name, "incarnate", (live, spec))
        for batch in self.create_pods:
            add(batch.gang.name, "create_pods", batch)
        for name in self.delete_pods:
            add(pods[name].gang, "delete_pods", name)
        for live, ok in self.set_initialized:
            add(live.metadata.name, "set_initialized", (live, ok))
        for pod in self.lift_gates:
            add(pod.gang, "lift_gates", pod)
        for live, placement in self.set_placement:
            add(live.metadata.name, "set_placement", (live, placement))
        for service in self.write_services:
            add(service.travels_with, "write_services", service)
        for stale in self.delete_services:
            add(stale.metadata.name, "delete_services", stale)
        rank = {name: i for i, name in enumerate(order)}
        return [
            (gang, Decision(**{what: tuple(items) for what, items in part.items()}))
            for gang, part in sorted(parts.items(), key=lambda kv: rank.get(kv[0], -1))
        ]


def initialized_status(podgang: PodGang) -> bool | None:
    """The Initialized condition's status at the current generation; None if unset or stale."""
    return podgang.current_status(labels.INITIALIZED)


PENDING: Final = "Pending"
STARTING: Final = "Starting"
RUNNING: Final = "Running"
MAX_VERDICTS: Final = 3  # distinct scheduler messages a Scheduled condition carries
# Not worth a write of their own: a gang passes through them on its way in the common
# case; the first thing worth saying is the scheduler's verdict (or the backend's refusal).
PASSING: Final = frozenset({why.GATED, why.AWAITING_SCHEDULER})


def most_given(reasons: Iterable[str]) -> str:
    """The reason given most often; a tie goes to the first by name."""
    given = Counter(reasons)
    return max(sorted(given), key=given.__getitem__)


@dataclass(frozen=True)
class Placement:
    """What the scheduler made of a gang, read off its pods and its PodGang: Grove's phase
    and its Scheduled condition, the reason in Gangway's vocabulary (``gangway_contracts.why``)
    and the message in the scheduler's words when it gave any."""

    phase: str
    bound: int
    running: int
    reason: str
    message: str
    ready: bool = False  # every podgroup has minReplicas ready pods (Grove's Ready)
    pods: int = 0  # the gang's pods, as planned
    ready_pods: int = 0

    @property
    def ready_words(self) -> str:
        """The Ready condition's message: the gang's health, counted (its status says
        whether every podgroup has its minReplicas of them)."""
        return f"{self.ready_pods} of {self.pods} pods ready"

    @property
    def scheduled(self) -> bool:
        return self.reason == why.SCHEDULED

    @property
    def worth_saying(self) -> bool:
        """The scheduler has acted on the gang (bound a pod, or said why not), or the
        backend refused it: more than the PodGang's Pending and Initialized say."""
        return self.bound > 0 or self.reason not in PASSING

    def to_write(self, podgang: PodGang) -> bool:
        """Written once worth saying, and afterwards whenever it changes."""
        reported = podgang.status is not None and any(
            c.type == labels.SCHEDULED for c in podgang.status.conditions
        )
        return (self.worth_saying or reported) and self.differs_from(podgang)

    def differs_from(self, podgang: PodGang) -> bool:
        """A Ready condition the PodGang lacks is no difference by itself: a gang placed
        before Gangway wrote one gets it with its next change, not a write of its own."""
        ready = podgang.current_condition(labels.READY)
        return (
            phase_now(podgang) != self.phase
            or self.verdict_differs(podgang)
            or (
                ready is not None
                and ((ready.status == "True") != self.ready or ready.message != self.ready_words)
            )
        )

    def verdict_differs(self, podgang: PodGang) -> bool:
        """The PodGang's Scheduled condition says something else, or nothing."""
        found = podgang.current_condition(labels.SCHEDULED)
        return (
            found is None
            or (found.status == "True") != self.scheduled
            or found.reason != self.reason
            or found.message != self.message
        )


def placement_of(
    gang: PlannedGang,
    pods: Mapping[str, PodRecord],
    live: PodGang | None = None,
    held: str | None = None,
    preempted: str | None = None,
) -> Placement:
    """Pending until the scheduler binds a pod of the gang, Starting while some are bound,
    Running once every pod is Running; Scheduled once every podgroup has minReplicas bound,
    else why not, first cause first: the backend's refusal (gates on), the scheduler's
    eviction of the gang for another (``preempted``: the words, until the gang is placed
    again), gated (``held``: on what), the scheduler's own objects (the backend's
    SchedulerBlocked on ``live``), the pods' verdicts, or nothing said yet."""
    planned = [name for _, _, name in gang.pods]
    found = [pods[name] for name in planned if name in pods]
    bound = sum(1 for pod in found if pod.is_scheduled)
    running = sum(1 for pod in found if pod.phase == RUNNING)
    phase = RUNNING if found and running == len(planned) else STARTING if bound else PENDING
    gated = any(pod.is_gated(labels.PODGANG_PENDING_CREATION_GATE) for pod in found)
    evicted = preempted or _preemption(found, live)
    if scheduled(gang, pods) and not any(pod.preempted for pod in found):
        reason, message = why.SCHEDULED, f"{bound} of {len(planned)} pods on nodes"
    elif gated and (refusal := _refusal(live)):
        reason, message = why.BACKEND_NOT_SYNCED, refusal
    elif evicted:
        reason, message = why.PREEMPTED, evicted
    elif gated and (refused := kueue_refused(live)):
        reason, message = refused.reason, refused.message
    elif gated:
        reason = why.GATED
        message = f"scheduling gates on: {held}" if held else "scheduling gates coming off"
    else:
        reason, message = _scheduler_verdict(gang, pods, live, found)
    ready = sum(1 for pod in found if pod.ready and not pod.deleting)
    return Placement(
        phase,
        bound,
        running,
        reason,
        message,
        ready=available(gang, pods),
        pods=len(planned),
        ready_pods=ready,
    )


def _refusal(live: PodGang | None) -> str | None:
    """The backend's words when it refused the gang's generation."""
    refused = live.current_condition(labels.BACKEND_SYNCED) if live is not None else None
    if refused is None or refused.status != "False":
        return None
    return f"{refused.reason}: {refused.message}"


def kueue_refused(live: PodGang | None) -> Condition | None:
    """What the Kueue stage last said of a gang in a queue that Kueue does not admit (not
    yet, or no longer): ``OverQuota``, ``QueueClosed``, ``Preempted``, in Kueue's words.
    None for a gang in no queue, or one Kueue has said nothing of yet."""
    if live is None or not kueue.queue_of(live.metadata.labels):
        return None
    said = live.condition(kueue.QUEUE_ADMITTED)
    return said if said is not None and said.status == "False" else None


def _preemption(found: list[PodRecord], live: PodGang | None) -> str | None:
    """The words of a pod of the gang marked evicted for another, else those the PodGang
    said Preempted with: it stays so until it is placed again (its victims' replacements
    pass through their gates and the scheduler's verdict on the way back)."""
    marked = next((words for pod in found if (words := pod.preemption())), None)
    if marked is not None:
        return marked
    said = live.condition(labels.SCHEDULED) if live is not None else None
    return said.message if said is not None and said.reason == why.PREEMPTED else None


def _scheduler_verdict(
    gang: PlannedGang, pods: Mapping[str, PodRecord], live: PodGang | None, found: list[PodRecord]
) -> tuple[str, str]:
    """Why the scheduler has not placed a gang it may place: its own objects (the backend's
    SchedulerBlocked, most specific), else its pods' verdicts. No counts in messages but
    for a gang partly placed: a count in them would be a status write per bound pod."""
    blocked = live.condition(why.SCHEDULER_BLOCKED) if live is not None else None
    if blocked is not None and blocked.status == "True":
        return blocked.reason, blocked.message
    verdicts = [pod.verdict for pod in found if pod.verdict is not None]
    if not verdicts:
        return why.AWAITING_SCHEDULER, "the scheduler has not placed the gang yet"
    # The scheduler's own words, each once: one pod may say why it fits nowhere
    # ("Insufficient example.com/fpga"), another only that the gang has no quorum.
    words = "; ".join(sorted({m for _, m in verdicts})[:MAX_VERDICTS])
    short = [group for group in gang.podgroups if _bound(group, pods) < group.min_replicas]
    if short and any(pod.is_scheduled for pod in found):
        counts = ", ".join(
            f"{g.name} {_bound(g, pods)} of minimum {g.min_replicas} placed" for g in short
        )
        return why.BELOW_MIN_COUNT, f"{counts}: {words}"
    return why.reason_of_pod(most_given(r for r, _ in verdicts)), words


def _bound(group: PlannedPodGroup, pods: Mapping[str, PodRecord]) -> int:
    return sum(1 for pod in group.pods if pod in pods and pods[pod].is_scheduled)


def phase_now(podgang: PodGang) -> str:
    """The phase the PodGang reports; Grove requires one, and nothing placed is Pending."""
    return (podgang.status.phase if podgang.status else None) or PENDING


def scheduled(gang: PlannedGang, pods: Mapping[str, PodRecord]) -> bool:
    """Every podgroup has at least minReplicas of its pods bound to a node."""
    return all(_bound(group, pods) >= group.min_replicas for group in gang.podgroups)


def _references(
    gang: PlannedGang, live: PodGang, namespace: str, *, complete: bool
) -> list[list[NamespacedName]]:
    """Pod references per podgroup: every planned pod once all exist in the PodGang's
    incarnation (``complete``: one write, GREP-375's "fill when complete"); until then what
    is already referenced and still planned."""
    if complete:
        return all_references(gang, namespace)
    current = {group.name: group.pod_references for group in live.spec.podgroups}
    return [[ref for ref in current.get(g.name, []) if ref.name in g.pods] for g in gang.podgroups]


def _present(incarnation: int, pod: PodRecord | None) -> bool:
    """The pod exists and is of its PodGang's ``incarnation`` (not an old gang's)."""
    return pod is not None and pod.incarnation >= incarnation


def _holding_older(observed: Observed, by_gang: Mapping[str, list[PodRecord]]) -> set[str]:
    """The gangs a pod of an earlier incarnation of is still there (made again, their old
    pods going)."""
    found = set()
    for name, pods in by_gang.items():
        live = observed.podgangs.get(name)
        now = incarnation_of(live.metadata.annotations) if live is not None else 0
        if now and any(pod.incarnation < now for pod in pods):
            found.add(name)
    return found


def _unreferenced(gang: PlannedGang, namespace: str, priority_class: str | None) -> PodGangSpec:
    """The gang's spec referencing no pod, as a PodGang is created (GREP-375)."""
    return podgang_spec(gang, namespace, priority_class, [[] for _ in gang.podgroups])


def _to_incarnate(
    roll: Collection[str],
    recycle: Collection[str],
    planned: Mapping[str, PlannedGang],
    observed: Observed,
) -> list[PodGang]:
    """The PodGangs of these gangs (to replace whole) not made again yet: a pod of their
    incarnation is there, not on its way out, and — for a gang rolled — of an older
    template, or of any for a gang recycled. Once made again, its older pods go
    (``GangRules``), and the gang is not made again a second time for the same reason: a
    rolled gang's new pods, made while an older one still terminates, are current."""
    found = []
    for name in sorted({*roll, *recycle}):
        live = observed.podgangs.get(name)
        gang = planned.get(name)
        if live is None or gang is None or live.metadata.deletion_timestamp:
            continue
        if _of_this_incarnation(gang, live, observed.pods, any_pod=name in recycle):
            found.append(live)
    return found


def _of_this_incarnation(
    gang: PlannedGang, live: PodGang, pods: Mapping[str, PodRecord], *, any_pod: bool
) -> bool:
    """A pod of the gang in the PodGang's incarnation is there, not on its way out: any
    (``any_pod``), or one of an older template."""
    now = incarnation_of(live.metadata.annotations)
    return any(
        not pod.deleting
        and pod.incarnation == now
        and pod.controller_uid == live.metadata.uid
        and (any_pod or outdated(group, pod))
        for group, _, name in gang.pods
        if (pod := pods.get(name)) is not None
    )


def decide(
    gangs: tuple[PlannedGang, ...],
    namespace: str,
    priority_class: str | None,
    observed: Observed,
    owner_uid: str,
    *,
    focus: Collection[str] | None = None,
    roll: Collection[str] = (),
    recycle: Collection[str] = (),
) -> Decision:
    """``owner_uid``: the PodCliqueSet's; a PodGang it does not control is never deleted,
    even if it says it is part of the PodCliqueSet. ``focus``: decide for these gangs
    alone, deleting nothing and rolling nothing (a part of the decision, for the gangs whose objects
    changed since the whole was decided, and only while the whole rolled nothing).
    ``roll``: gangs a rolling update replaces now (``rolling.to_roll``) and ``recycle``:
    gangs to terminate whole (``termination.py``): each is made again as a new gang to its
    scheduler (its PodGang's next incarnation, ``gangway_contracts.incarnations``), its pods
    of the earlier one deleted and made again, gated. Both are acted on only in a whole
    decision."""
    planned = {gang.name: gang for gang in gangs}
    by_gang: dict[str, list[PodRecord]] = {}
    for pod in observed.pods.values() if focus is None else ():
        by_gang.setdefault(pod.gang, []).append(pod)
    if focus is not None:
        gangs = tuple(g for g in gangs if g.name in focus)
    again = _to_incarnate(roll, recycle, planned, observed) if focus is None else []
    incarnate = tuple(
        (live, _unreferenced(planned[live.metadata.name], namespace, priority_class))
        for live in again
    )
    made_again = {live.metadata.name for live in again}
    # A gang being replaced (made again, or its older pods going), and a scaled gang whose
    # base is, is not lifted in the same round: the deletes may land and the lift not.
    replaced = made_again | _holding_older(observed, by_gang)
    rules = GangRules(namespace, priority_class, observed, planned, replaced)
    per_gang = [
        rules.writes(gang, live, by_gang.get(gang.name, []))
        for gang in gangs
        if (live := observed.podgangs.get(gang.name)) is not None
        and not live.metadata.deletion_timestamp
        and gang.name not in made_again  # made again this round: nothing else of it
    ]
    return Decision(
        create_podgangs=tuple(g for g in gangs if g.name not in observed.podgangs),
        delete_podgangs=_podgangs_to_delete(observed, planned, owner_uid) if focus is None else (),
        update_specs=tuple(w for d in per_gang for w in d.update_specs),
        incarnate=incarnate,
        create_pods=tuple(w for d in per_gang for w in d.create_pods),
        delete_pods=tuple(w for d in per_gang for w in d.delete_pods),
        set_initialized=tuple(w for d in per_gang for w in d.set_initialized),
        lift_gates=tuple(w for d in per_gang for w in d.lift_gates),
        set_placement=tuple(w for d in per_gang for w in d.set_placement),
    )


def _podgangs_to_delete(
    observed: Observed, planned: Mapping[str, PlannedGang], owner_uid: str
) -> tuple[str, ...]:
    """PodGangs no longer planned (a scale-down), of those the PodCliqueSet controls."""
    return tuple(
        sorted(
            name
            for name, live in observed.podgangs.items()
            if name not in planned
            and not live.metadata.deletion_timestamp
            and controlled_by(live.metadata, owner_uid)
        )
    )


@dataclass(frozen=True)
class GangRules:
    """GREP-375's order for one gang whose PodGang exists, a rule at a time: its missing
    pods and the pods it no longer has; then its spec; then its Initialized condition; then
    (all its pods there) its placement and its gates."""

    namespace: str
    priority_class: str | None
    observed: Observed
    planned: Mapping[str, PlannedGang]
    replaced: Collection[str]  # gangs whose pods this decision deletes (a roll)

    def writes(self, gang: PlannedGang, live: PodGang, pods_of_gang: list[PodRecord]) -> Decision:
        pods = self.observed.pods
        absent = tuple((g, i) for g, i, pod in gang.pods if pod not in pods)
        first = Decision(
            create_pods=(PodsToCreate(gang=gang, podgang=live, pods=absent),) if absent else (),
            delete_pods=tuple(
                sorted({*stray_pods(gang, live, pods_of_gang), *unadmitted_pods(gang, live, pods)})
            ),
        )
        # A pod of an earlier incarnation is an old gang's: made again once it is gone.
        now = incarnation_of(live.metadata.annotations)
        missing = [pod for _, _, pod in gang.pods if not _present(now, pods.get(pod))]
        refs = _references(gang, live, self.namespace, complete=not missing)
        spec = podgang_spec(gang, self.namespace, self.priority_class, refs)
        if spec != live.spec:
            # The status follows the spec it describes, on the next round.
            return replace(first, update_specs=((live, spec),))
        complete = not missing
        if initialized_status(live) != complete:
            return replace(first, set_initialized=((live, complete),))
        if not complete:
            return first
        held = gates_held_by(gang, live, self.planned, pods, self.replaced)
        victim = self.observed.preempted.get(gang.name)
        evicted = victim.preemption() if victim is not None else None
        placement = placement_of(gang, pods, live, held, evicted)
        placed = ((live, placement),) if placement.to_write(live) else ()
        return replace(first, set_placement=placed, lift_gates=() if held else gated(gang, pods))


def stray_pods(gang: PlannedGang, live: PodGang, pods_of_gang: list[PodRecord]) -> tuple[str, ...]:
    """Pods the PodGang controls that its gang no longer plans (a smaller podgroup), or of
    its earlier incarnation (the gang is made again), not on their way out already."""
    expected = {pod for _, _, pod in gang.pods}
    now = incarnation_of(live.metadata.annotations)
    return tuple(
        sorted(
            p.name
            for p in pods_of_gang
            if (p.name not in expected or not _present(now, p))
            and p.controller_uid == live.metadata.uid
            and not p.deleting
        )
    )


def unadmitted_pods(
    gang: PlannedGang, live: PodGang, pods: Mapping[str, PodRecord]
) -> tuple[str, ...]:
    """The pods of a gang whose Kueue admission is gone (evicted, preempted) that its gates
    no longer hold back: deleted together, and made again gated, so the gang stops whole
    and waits whole until Kueue admits it again (gates can only be removed from a pod,
    never put back)."""
    if kueue_refused(live) is None:
        return ()
    return tuple(
        sorted(
            name
            for _, _, name in gang.pods
            if (pod := pods.get(name)) is not None
            and not pod.deleting
            and not pod.is_gated(labels.PODGANG_PENDING_CREATION_GATE)
            and pod.controller_uid == live.metadata.uid
        )
    )


def gates_held_by(
    gang: PlannedGang,
    live: PodGang,
    planned: Mapping[str, PlannedGang],
    pods: Mapping[str, PodRecord],
    replaced: Collection[str],
) -> str | None:
    """Why a complete, Initialized gang's gates stay on; None when they may come off."""
    if not live.holds_now(labels.BACKEND_SYNCED):
        return "its backend has not synced this generation"
    if kueue.queue_of(live.metadata.labels):
        said = live.condition(kueue.QUEUE_ADMITTED)
        if not live.holds_now(kueue.QUEUE_ADMITTED):
            return "Kueue has not admitted it" + (f": {said.message}" if said else "")
        assert said is not None
        placed_by_kueue = said.reason == kueue_topology.TOPOLOGY_ASSIGNED
        if placed_by_kueue and any(not pod.domain_given for pod in gated(gang, pods)):
            return "the domains Kueue chose are not on every pod yet"
    base = planned.get(gang.base)
    if not gang.is_base and (base is None or not scheduled(base, pods)):
        # extra capacity waits for the gang that runs
        return f"its base gang {gang.base} is not scheduled"
    if gang.name in replaced or gang.base in replaced:
        return "it is being replaced"
    return None


def gated(gang: PlannedGang, pods: Mapping[str, PodRecord]) -> tuple[PodRecord, ...]:
    """The gang's pods that still carry our gate."""
    return tuple(
        pods[pod]
        for _, _, pod in gang.pods
        if pods[pod].is_gated(labels.PODGANG_PENDING_CREATION_GATE)
    )
