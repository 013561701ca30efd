"""What a PodCliqueSet's status says about its gangs. Pure: plan + read model in, status out.

Conditions (each observed at the PodCliqueSet's generation):

- ``PodGangsReady``: every planned PodGang exists, is Initialized, its backend synced it, and
  its gates are off; otherwise why not (``PodGangsPending``, ``WaitingForBackend``,
  ``WaitingForBaseGang``);
- ``PodGangsScheduled``: every planned PodGang has each podgroup's minReplicas pods on nodes;
  otherwise the verdict on the gangs not placed, in the PodGangs' vocabulary
  (``gangway_contracts.why``: the scheduler's, e.g. ``Unschedulable`` or ``OverQuota``, or the
  backend's ``BackendNotSynced``, in their own words, naming the gangs), or that it has not
  tried yet (``Gated``, ``AwaitingScheduler``);
- ``BackendAvailable``: the backend answered prepare-pods (``BackendUnavailable``,
  ``PreparePodsFailed`` otherwise) — set only once the service has asked it;
- ``BackendResolved``: the cliques name an enabled scheduler;
- ``TopologyResolved``: every pack constraint became a node-label key (only when the
  PodCliqueSet has constraints);
- ``FeaturesSupported``: the backend honours every feature the PodCliqueSet asks for;
- ``UpdateInProgress``: a template change is being rolled (``Progressing``), has gone past a
  component's progressDeadline (Unknown, ``ProgressDeadlineExceeded``), or not
  (``NoActiveUpdate``; ``StrategyNotRolled`` for Coherent), as Grove says it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from gangway_contracts import labels, why
from gangway_contracts.codec import to_object
from gangway_contracts.grove import (
    COHERENT,
    ON_DELETE,
    ROLLING_RECREATE,
    PodCliqueSet,
    PodGang,
    UpdateProgress,
    topology_constraints,
)
from gangway_contracts.k8s import Condition
from gangway_podgang.compact import PodRecord
from gangway_podgang.decide import (
    PASSING,
    initialized_status,
    most_given,
    placement_of,
    scheduled,
)
from gangway_podgang.plan import Plan, PlannedGang, PlannedPodGroup
from gangway_podgang.report import natural
from gangway_podgang.rolling import Stall, available, outdated
from gangway_runtime.conditions import merged_conditions
from gangway_runtime.status import StatusChange

PODGANGS_READY = "PodGangsReady"
PODGANGS_SCHEDULED = "PodGangsScheduled"
ALL_SCHEDULED: Final = "Scheduled"
VERDICTS_NAMED: Final = 3  # gangs a PodGangsScheduled message names with their verdict
BACKEND_AVAILABLE = "BackendAvailable"
BACKEND_RESOLVED = "BackendResolved"
TOPOLOGY_RESOLVED = "TopologyResolved"
FEATURES_SUPPORTED = "FeaturesSupported"
UPDATE_IN_PROGRESS = "UpdateInProgress"  # Grove's, with Grove's reasons


def condition(
    pcs: PodCliqueSet, type_: str, ok: bool | None, reason: str, message: str, *, at: str
) -> Condition:
    """``ok`` None: Unknown."""
    return Condition(
        type=type_,
        status="Unknown" if ok is None else "True" if ok else "False",
        reason=reason,
        message=message[:32768],
        last_transition_time=at,
        observed_generation=pcs.metadata.generation,
    )


def _gated(gang: PlannedGang, pods: Mapping[str, PodRecord]) -> bool:
    return any(
        pod in pods and pods[pod].is_gated(labels.PODGANG_PENDING_CREATION_GATE)
        for _, _, pod in gang.pods
    )


def gangs_ready(
    pcs: PodCliqueSet,
    plan: Plan,
    podgangs: Mapping[str, PodGang],
    pods: Mapping[str, PodRecord],
    *,
    backend: str,
    at: str,
) -> Condition:
    """``PodGangsReady``, with the first thing still in the way."""
    total = len(plan.gangs)
    missing = [
        g.name for g in plan.gangs if initialized_status_of(podgangs.get(g.name)) is not True
    ]
    if missing:
        return condition(
            pcs,
            PODGANGS_READY,
            False,
            "PodGangsPending",
            f"{len(missing)} of {total} PodGangs not initialized yet: {_few(missing)}",
            at=at,
        )
    unsynced = [g.name for g in plan.gangs if not podgangs[g.name].holds_now(labels.BACKEND_SYNCED)]
    if unsynced:
        found = podgangs[unsynced[0]].current_condition(labels.BACKEND_SYNCED)
        why = f" ({found.reason}: {found.message})" if found and found.status == "False" else ""
        return condition(
            pcs,
            PODGANGS_READY,
            False,
            "WaitingForBackend",
            f"{len(unsynced)} of {total} PodGangs not synced by {backend} yet: "
            f"{_few(unsynced)}{why}",
            at=at,
        )
    gated = [g.name for g in plan.gangs if _gated(g, pods)]
    if gated:
        bases = {g.base for g in plan.gangs if g.name in gated and not g.is_base}
        waiting = [b for b in sorted(bases) if not scheduled(_gang(plan, b), pods)]
        reason, what = (
            ("WaitingForBaseGang", f"base gangs not scheduled yet: {_few(waiting)}")
            if waiting
            else ("GatesPending", f"gates still on in {_few(gated)}")
        )
        return condition(pcs, PODGANGS_READY, False, reason, what, at=at)
    return condition(
        pcs,
        PODGANGS_READY,
        True,
        "Ready",
        f"{total} PodGangs initialized, synced by {backend}, gates lifted",
        at=at,
    )


def gangs_scheduled(
    pcs: PodCliqueSet,
    plan: Plan,
    pods: Mapping[str, PodRecord],
    *,
    at: str,
    podgangs: Mapping[str, PodGang] | None = None,
) -> Condition:
    """``PodGangsScheduled``: True once every gang is placed; else the verdict on those the
    scheduler tried and did not place, or the backend refused (most gangs' reason, each
    named with its words), or that it has not tried yet. Reasons are the PodGangs' own
    (``gangway_contracts.why``)."""
    total = len(plan.gangs)
    live = podgangs or {}
    waiting = {
        gang.name: placement
        for gang in plan.gangs
        if not (placement := placement_of(gang, pods, live.get(gang.name))).scheduled
    }
    if not waiting:
        return condition(
            pcs,
            PODGANGS_SCHEDULED,
            True,
            ALL_SCHEDULED,
            f"{total} of {total} PodGangs placed",
            at=at,
        )
    refused = {name: p for name, p in waiting.items() if p.reason not in PASSING}
    head = f"{len(waiting)} of {total} PodGangs not scheduled"
    if refused:
        reason = most_given(p.reason for p in refused.values())  # most gangs' reason
        named = sorted(refused, key=natural)[:VERDICTS_NAMED]
        words = "; ".join(f"{name}: {refused[name].message}" for name in named)
        more = f" (and {len(refused) - len(named)} more)" if len(refused) > len(named) else ""
        return condition(pcs, PODGANGS_SCHEDULED, False, reason, f"{head}: {words}{more}", at=at)
    gated = [name for name, p in waiting.items() if p.reason == why.GATED]
    reason, what = (
        (why.GATED, f"gates still on in {_few(gated)}")
        if gated
        else (why.AWAITING_SCHEDULER, f"the scheduler has not placed {_few(waiting)} yet")
    )
    return condition(pcs, PODGANGS_SCHEDULED, False, reason, f"{head}: {what}", at=at)


def initialized_status_of(podgang: PodGang | None) -> bool | None:
    return None if podgang is None else initialized_status(podgang)


def _gang(plan: Plan, name: str) -> PlannedGang:
    return next(g for g in plan.gangs if g.name == name)


def _few(names: Iterable[str], limit: int = 5) -> str:
    listed = sorted(names, key=natural)
    more = f" and {len(listed) - limit} more" if len(listed) > limit else ""
    return ", ".join(listed[:limit]) + more


def topology_resolved(pcs: PodCliqueSet, plan: Plan, at: str) -> Condition | None:
    if next(iter(topology_constraints(pcs)), None) is None:
        return None
    if not plan.unresolved_topology:
        return condition(
            pcs, TOPOLOGY_RESOLVED, True, "Resolved", "every pack level resolved", at=at
        )
    message = "; ".join(f"{u.field}: {u.reason}" for u in plan.unresolved_topology)
    return condition(pcs, TOPOLOGY_RESOLVED, False, "TopologyUnresolved", message, at=at)


def _by_replica(plan: Plan) -> dict[int, list[PlannedGang]]:
    found: dict[int, list[PlannedGang]] = {}
    for gang in plan.gangs:
        found.setdefault(gang.pcs_replica, []).append(gang)
    return found


def counts(
    pcs: PodCliqueSet,
    plan: Plan,
    podgangs: Mapping[str, PodGang],
    pods: Mapping[str, PodRecord],
    *,
    at: str,
    began: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """Replica counts and per-gang phases, as Grove's status reports them; ``at``: now,
    should an update start or end; ``began``: replicas a roll began on since the status was
    last written (:func:`update_timing`)."""
    by_replica = _by_replica(plan)
    available = sum(
        1 for gangs in by_replica.values() if any(g.is_base and scheduled(g, pods) for g in gangs)
    )
    updated = sum(
        1
        for gangs in by_replica.values()
        if all(
            initialized_status_of(podgangs.get(g.name)) is True
            and all(current(group, pods) for group in g.podgroups)
            for g in gangs
        )
    )
    return {
        "observedGeneration": pcs.metadata.generation,
        "replicas": pcs.spec.replicas,
        "hpaPodSelector": f"{labels.PART_OF}={pcs.metadata.name},"
        f"{labels.MANAGED_BY}={labels.MANAGED_BY_GANGWAY}",
        "availableReplicas": available,
        "updatedReplicas": updated,
        "updateProgress": {
            **update_progress(plan, pods),
            **update_timing(plan, pods, pcs, at=at, began=began),
        },
        "podGangStatuses": [
            {
                "name": gang.name,
                "phase": (live.status.phase if live.status else None) or "Pending",
            }
            for gang in plan.gangs
            if (live := podgangs.get(gang.name)) is not None
        ],
    }


def current(group: PlannedPodGroup, pods: Mapping[str, PodRecord]) -> bool:
    """Every pod of a clique instance exists, made from its current template."""
    return all(pod in pods and not outdated(group, pods[pod]) for pod in group.pods)


def update_progress(plan: Plan, pods: Mapping[str, PodRecord]) -> dict[str, int]:
    """Grove's PodClique and PodCliqueScalingGroup counts (the printer columns): one PodClique
    per clique instance, one scaling group per group and PodCliqueSet replica; "updated" when
    every pod of it exists, made from the current template (a rolling update counts up)."""
    cliques = [group for gang in plan.gangs for group in gang.podgroups]
    scaling: dict[str, list[PlannedPodGroup]] = {}
    for group in cliques:
        if group.scaling_group:
            scaling.setdefault(group.scaling_group, []).append(group)

    return {
        "totalPodCliquesCount": len(cliques),
        "updatedPodCliquesCount": sum(1 for group in cliques if current(group, pods)),
        "totalPodCliqueScalingGroupsCount": len(scaling),
        "updatedPodCliqueScalingGroupsCount": sum(
            1 for groups in scaling.values() if all(current(group, pods) for group in groups)
        ),
    }


def update_timing(
    plan: Plan,
    pods: Mapping[str, PodRecord],
    pcs: PodCliqueSet,
    *,
    at: str,
    began: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """When the template change under way began (``updateStartedAt``) and, once every pod
    is current and every gang scheduled again, ended (``updateEndedAt``); the replicas
    being replaced now (``currentlyUpdating``, RollingRecreate only, as Grove sets it).
    Level-triggered: the times come from the status as written, ``at`` only for what
    starts or ends now. ``began``: replicas whose gangs a roll made again since the last
    status write: updating although none of their pods is outdated any more (a small gang
    is deleted and made again before the status is written), and an update that began
    and ended in between is still recorded. None: absent (a merge patch removes it)."""
    by_replica = _by_replica(plan)
    was = (pcs.status.update_progress if pcs.status else None) or UpdateProgress()

    def settled(replica: int) -> bool:
        return all(
            available(g, pods) and all(current(group, pods) for group in g.podgroups)
            for g in by_replica[replica]
        )

    stale = sorted(
        replica
        for replica, gangs in by_replica.items()
        if any(outdated(group, pods.get(pod)) for g in gangs for group, _, pod in g.pods)
    )
    before = {u.replica_index: u.update_started_at for u in was.currently_updating}
    updating = {
        r: before.get(r) or at for r in before.keys() | began if r in by_replica and not settled(r)
    }
    # Then the lowest replica holding an outdated pod: decide rolls it once the one before
    # is back (its pods deleted, it holds none, and is updating until it is back).
    if stale and not updating and pcs.spec.rolls_updates:
        updating[stale[0]] = at
    ongoing = was.update_started_at is not None and was.update_ended_at is None
    if stale or updating:
        return {
            "updateStartedAt": was.update_started_at if ongoing else at,
            "updateEndedAt": None,
            "currentlyUpdating": [
                {"replicaIndex": r, "updateStartedAt": started}
                for r, started in sorted(updating.items())
            ],
        }
    if began and not ongoing:  # begun and done since the last status write
        return {"updateStartedAt": at, "updateEndedAt": at, "currentlyUpdating": None}
    ended = at if ongoing else was.update_ended_at
    return {
        "updateStartedAt": was.update_started_at,
        "updateEndedAt": ended,
        "currentlyUpdating": None,
    }


def update_in_progress(
    pcs: PodCliqueSet,
    plan: Plan,
    pods: Mapping[str, PodRecord],
    timing: Mapping[str, Any],
    stall: Stall,
    *,
    at: str,
) -> Condition:
    """``UpdateInProgress`` from the update timing this status write carries
    (:func:`update_timing`) and the roll's stall (``rolling.stall``)."""
    behind = sum(1 for g in plan.gangs for grp, _, pod in g.pods if outdated(grp, pods.get(pod)))
    strategy = pcs.spec.update_strategy.type if pcs.spec.update_strategy else ROLLING_RECREATE

    def said(ok: bool | None, reason: str, message: str) -> Condition:
        return condition(pcs, UPDATE_IN_PROGRESS, ok, reason, message, at=at)

    if strategy == COHERENT and behind:
        return said(
            False,
            "StrategyNotRolled",
            f"{behind} pods are of an older template: Gangway does not roll Coherent "
            "(still a draft in Grove); use RollingRecreate, or delete them to replace them",
        )
    if strategy == ON_DELETE and behind:
        return said(
            False, "NoActiveUpdate", f"OnDelete: {behind} older pods are replaced once deleted"
        )
    if timing.get("updateStartedAt") is None or timing.get("updateEndedAt") is not None:
        return said(False, "NoActiveUpdate", "No rolling update is in progress")
    if stall.stalled:
        return said(None, "ProgressDeadlineExceeded", "; ".join(stall.stalled))
    replicas = [u["replicaIndex"] for u in timing.get("currentlyUpdating") or []]
    where = f" (replica {', '.join(map(str, replicas))})" if replicas else ""
    return said(
        True, "Progressing", f"Rolling update is in progress{where}: {behind} older pods left"
    )


def status_change(fields: dict[str, Any], conditions: Iterable[Condition]) -> StatusChange:
    """The change a status patch applies: these counts and conditions, others' kept."""
    wanted_conditions = tuple(conditions)

    def change(status: dict[str, Any]) -> dict[str, Any] | None:
        merged = list(status.get("conditions") or [])
        changed = False
        for wanted in wanted_conditions:
            after = merged_conditions(merged, wanted)
            if after is not None:
                merged, changed = after, True
        if not changed and _patched_already(status, fields):
            return None
        return {**fields, "conditions": merged}

    return change


def _patched_already(found: Any, patch: Any) -> bool:
    """Applying ``patch`` as a JSON merge patch (RFC 7386) to ``found`` changes nothing:
    None removes a field, a mapping merges into one, anything else replaces. ``found`` is
    the read model's view written out, which leaves defaults out: a missing 0 or empty
    list is the 0 or empty list (else every status write repeated a count of 0)."""
    if patch is None:
        return found is None
    if isinstance(patch, dict):
        return isinstance(found, dict) and all(
            _patched_already(found.get(k), v) for k, v in patch.items()
        )
    if found is None:
        return patch in _DEFAULTS
    return bool(found == patch)


# What the views leave out when written (``omit_defaults``).
_DEFAULTS: Final[tuple[object, ...]] = (0, [], "", False)


def current_status(pcs: PodCliqueSet) -> dict[str, Any]:
    """The parts of a PodCliqueSet a status patch starts from."""
    return {
        "metadata": {
            "namespace": pcs.metadata.namespace,
            "name": pcs.metadata.name,
            "resourceVersion": pcs.metadata.resource_version,
        },
        "status": to_object(pcs.status) if pcs.status else {},
    }
