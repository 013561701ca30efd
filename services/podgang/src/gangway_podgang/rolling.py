"""Grove's RollingRecreate, gang by gang: which outdated gangs are replaced now, and whether
the roll still moves. Pure.

A roll works on one PodCliqueSet replica at a time: the lowest that holds an outdated pod,
once every gang of the replicas below it is available again (each podgroup has minReplicas
ready pods). Within it, outdated gangs are replaced whole (every pod deleted, made again
gated, released as on creation) — the base gang first, then the scaled gangs in order — as
many at once as each component's ``rollingUpdate.maxUnavailable`` allows, counted as Grove
counts it: pods of a standalone clique, replicas of a scaling group, each unit down while
it is not ready (whatever the reason: a roll, a scale-up, a crash). Two rules keep a roll
moving where a budget alone would stop it:

- an outdated gang that is down already costs nothing to replace (Grove #840: an update may
  be what makes it available);
- when nothing of the replica is down, one gang is replaced even if it holds more units
  than a budget allows (a gang cannot be replaced in parts: the base gang holds every pod
  of each standalone clique).

A component with a ``progressDeadline`` that goes that long without progress — a pod of its
made or become ready, since the replica's update began — is reported stalled: the
PodCliqueSet's ``UpdateInProgress`` condition turns Unknown, ``ProgressDeadlineExceeded``,
as Grove's does. The roll itself goes on waiting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from gangway_contracts import durations
from gangway_contracts.grove import PodCliqueSet, RollingUpdateConfiguration
from gangway_podgang.compact import PodRecord
from gangway_podgang.plan import PlannedGang, PlannedPodGroup

CLIQUE: Final = "clique"  # a standalone clique: its units are pods
GROUP: Final = "scaling group"  # a scaling group: its units are its replicas

# (CLIQUE or GROUP, the clique's or group's name in the template)
Component = tuple[str, str]
_DEFAULT: Final = RollingUpdateConfiguration()


@dataclass(frozen=True)
class RollPolicy:
    """How a template change reaches running gangs, from the PodCliqueSet's spec."""

    rolls: bool = True  # False: OnDelete (and Coherent, which Gangway does not roll)
    configs: Mapping[Component, RollingUpdateConfiguration] = field(default_factory=dict)

    def allowed_down(self, component: Component, desired: int) -> int:
        return self.configs.get(component, _DEFAULT).allowed_down(desired)

    def deadline(self, component: Component) -> float | None:
        """Seconds its roll may go without progress; None: no deadline."""
        text = self.configs.get(component, _DEFAULT).progress_deadline
        if text is None:
            return None
        try:
            found = durations.seconds(text)
        except ValueError:
            return None  # admission refuses it; admitted anyway (failed open), none
        return found if found > 0 else None


ROLLING_RECREATE: Final = RollPolicy()  # Grove's default: every maxUnavailable 1


def roll_policy(pcs: PodCliqueSet) -> RollPolicy:
    template = pcs.spec.template
    configs: dict[Component, RollingUpdateConfiguration] = {}
    for clique in template.cliques:
        if clique.rolling_update is not None:
            configs[CLIQUE, clique.name] = clique.rolling_update
    for group in template.pod_clique_scaling_groups:
        if group.rolling_update is not None:
            configs[GROUP, group.name] = group.rolling_update
    return RollPolicy(rolls=pcs.spec.rolls_updates, configs=configs)


def outdated(group: PlannedPodGroup, pod: PodRecord | None) -> bool:
    """The pod was made from an older template of its clique (a pod without the label, made
    before Gangway labelled them, is taken as current: an upgrade rolls nothing)."""
    if pod is None:
        return False
    return pod.template_hash is not None and pod.template_hash != group.template_hash


def stale(gang: PlannedGang, pods: Mapping[str, PodRecord]) -> bool:
    """The gang holds a pod made from an older template."""
    return any(outdated(group, pods.get(pod)) for group, _, pod in gang.pods)


def _ready(pod: PodRecord | None) -> bool:
    return pod is not None and pod.ready and not pod.deleting


def _enough_ready(group: PlannedPodGroup, pods: Mapping[str, PodRecord]) -> bool:
    return sum(1 for pod in group.pods if _ready(pods.get(pod))) >= group.min_replicas


def available(gang: PlannedGang, pods: Mapping[str, PodRecord]) -> bool:
    """Every podgroup has minReplicas ready pods (none of them on its way out)."""
    return all(_enough_ready(group, pods) for group in gang.podgroups)


@dataclass(frozen=True)
class _Unit:
    component: Component
    available: bool
    pods: tuple[tuple[PlannedPodGroup, str], ...]  # each with the clique instance it is of

    def outdated(self, pods: Mapping[str, PodRecord]) -> bool:
        return any(outdated(group, pods.get(pod)) for group, pod in self.pods)


def _units(gang: PlannedGang, pods: Mapping[str, PodRecord]) -> list[_Unit]:
    """What the gang holds of each component: pods of standalone cliques, replicas of
    scaling groups (every clique instance of one group replica)."""
    found: list[_Unit] = []
    replicas: dict[tuple[str, int], list[PlannedPodGroup]] = {}
    for group in gang.podgroups:
        if group.scaling_group is None:
            component = (CLIQUE, group.clique.name)
            found += [_Unit(component, _ready(pods.get(p)), ((group, p),)) for p in group.pods]
        else:
            key = (group.scaling_group, group.scaling_group_replica or 0)
            replicas.setdefault(key, []).append(group)
    for (name, _), members in replicas.items():
        component = (GROUP, name.removeprefix(f"{gang.base}-"))
        ok = all(_enough_ready(m, pods) for m in members)
        found.append(_Unit(component, ok, tuple((m, p) for m in members for p in m.pods)))
    return found


def rolling_replica(
    gangs: Iterable[PlannedGang], pods: Mapping[str, PodRecord]
) -> tuple[int, list[PlannedGang]] | None:
    """The PodCliqueSet replica a roll works on now, with its gangs: the lowest holding an
    outdated pod. None when no gang is outdated."""
    by_replica: dict[int, list[PlannedGang]] = {}
    for gang in gangs:
        by_replica.setdefault(gang.pcs_replica, []).append(gang)
    outdated_replicas = [r for r, found in by_replica.items() if any(stale(g, pods) for g in found)]
    if not outdated_replicas:
        return None
    replica = min(outdated_replicas)
    return replica, by_replica[replica]


def to_roll(
    gangs: tuple[PlannedGang, ...],
    pods: Mapping[str, PodRecord],
    policy: RollPolicy,
    incarnations: Mapping[str, int] | None = None,
) -> list[str]:
    """The outdated gangs to replace now (their names), base gang first. ``incarnations``:
    each PodGang's (``gangway_contracts.incarnations``): a pod of an earlier one is an old
    gang's, down already (the gang is made again)."""
    if incarnations and any(incarnations.values()):
        pods = {
            name: pod
            for name, pod in pods.items()
            if pod.incarnation >= incarnations.get(pod.gang, 0)
        }
    if not policy.rolls:
        return []
    found = rolling_replica(gangs, pods)
    if found is None:
        return []
    replica, in_replica = found
    if not all(available(g, pods) for g in gangs if g.pcs_replica < replica):
        return []  # the replica rolled before is not back yet
    units = {g.name: _units(g, pods) for g in in_replica}
    desired = Counter(u.component for held in units.values() for u in held)
    down = Counter(u.component for held in units.values() for u in held if not u.available)
    quiet = not down
    chosen: list[str] = []
    order = sorted(in_replica, key=lambda g: not g.is_base)  # stable: scaled gangs in order
    for gang in order:
        if not stale(gang, pods):
            continue
        cost = Counter(u.component for u in units[gang.name] if u.available)
        fits = all(down[c] + n <= policy.allowed_down(c, desired[c]) for c, n in cost.items())
        if fits or (quiet and not chosen):
            chosen.append(gang.name)
            down.update(cost)
    return chosen


@dataclass(frozen=True)
class Stall:
    """The components of the replica being rolled that went past their progressDeadline,
    and when the next one would (seconds from now; None: none will)."""

    stalled: tuple[str, ...] = ()
    wake_in: float | None = None


def update_started(pcs: PodCliqueSet) -> dict[int, datetime]:
    """When each replica being rolled began, as the status says (``progress.update_timing``
    writes it)."""
    progress = pcs.status.update_progress if pcs.status else None
    if progress is None:
        return {}
    return {
        u.replica_index: datetime.fromisoformat(u.update_started_at)
        for u in progress.currently_updating
        if u.update_started_at
    }


def stall(
    gangs: tuple[PlannedGang, ...],
    pods: Mapping[str, PodRecord],
    policy: RollPolicy,
    started: Mapping[int, datetime],
    now: datetime,
) -> Stall:
    """``started``: when each replica's update began (the status's ``currentlyUpdating``).
    A component's progress is the last time one of its current pods in the replica was
    made or changed readiness, or the replica's start, whichever is later."""
    if not policy.rolls or not policy.configs:
        return Stall()
    by_replica: dict[int, list[PlannedGang]] = {}
    for gang in gangs:
        by_replica.setdefault(gang.pcs_replica, []).append(gang)
    stalled: list[str] = []
    wake_in: float | None = None
    for replica, began in sorted(started.items()):
        units = [u for g in by_replica.get(replica, []) for u in _units(g, pods)]
        components = {u.component for u in units}
        for component in sorted(components):
            deadline = policy.deadline(component)
            if deadline is None:
                continue
            mine = [u for u in units if u.component == component]
            if all(u.available and not u.outdated(pods) for u in mine):
                continue  # done with this one
            last = max([began, *_changes(mine, pods)])
            elapsed = (now - last).total_seconds()
            if elapsed >= deadline:
                kind, name = component
                ready = sum(1 for u in mine if u.available)
                text = policy.configs[component].progress_deadline
                stalled.append(
                    f"replica {replica} {kind} {name}: no progress within its "
                    f"progressDeadline {text} ({ready} of {len(mine)} available)"
                )
            else:
                left = deadline - elapsed
                wake_in = left if wake_in is None else min(wake_in, left)
    return Stall(tuple(stalled), wake_in)


def _changes(units: Iterable[_Unit], pods: Mapping[str, PodRecord]) -> list[datetime]:
    found = []
    for unit in units:
        for _, name in unit.pods:
            pod = pods.get(name)
            if pod is not None and pod.changed_at:
                found.append(datetime.fromisoformat(pod.changed_at))
    return found
