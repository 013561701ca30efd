"""Gang termination, with Grove's meaning (``terminationDelay``). Pure.

podgang writes each PodClique's ``MinAvailableBreached`` from its pods (fewer scheduled than
``minAvailable``, or fewer ready or starting: ``cliques.clique_status``). A clique is a
candidate once that breach holds *after it ran* — Grove's gate: its ``PodCliqueScheduled`` is
True, or turned False after the first moments of its life (a transition, not its first
word), so a gang that never got placed is left to the scheduler, not churned. When a
candidate's breach has lasted ``terminationDelay`` (4 h when unset, as Grove defaults it),
its gang is recycled whole:

- a clique of a base gang (standalone, or of a scaling-group replica the base gang holds):
  every gang of that PodCliqueSet replica, as Grove deletes the replica's every PodClique
  (the scaled gangs are extra capacity of a base that is being replaced);
- a clique of a scaled gang: that gang.

Recycling deletes the gangs' pods (podgang makes them again, gated, and the scheduler
places the gang afresh) and their PodCliques, so their status starts again: a gang just
recycled is no candidate until it has run again. Where Grove recycles a base-gang
scaling-group replica alone while the group keeps its minimum, Gangway recycles the base
gang: the gang is what is placed all or nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from gangway_contracts import durations
from gangway_contracts.cliques import MIN_AVAILABLE_BREACHED, PODCLIQUE_SCHEDULED
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.k8s import Condition
from gangway_contracts.subjects import Kind
from gangway_podgang.cliques import CliqueDelete, PodCliqueView
from gangway_podgang.plan import Plan

DEFAULT_DELAY_TEXT: Final = "4h"  # Grove's default terminationDelay
DEFAULT_DELAY: Final = durations.seconds(DEFAULT_DELAY_TEXT)
# How soon after a PodClique is made its first status is written: a PodCliqueScheduled=False
# from then is its first word, not a transition (Grove's InitialScheduleGrace is 5 s;
# podgang writes statuses after a reconcile's gang writes, so it allows more).
FIRST_WORD_GRACE: Final = timedelta(seconds=30)


@dataclass(frozen=True)
class Recycling:
    """What to recycle now, why, and when to look again."""

    gangs: tuple[str, ...] = ()  # the gangs to recycle, whole
    # The gang (a replica's base gang for all of the replica) → the cliques past the delay.
    breached: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    wake_in: float | None = None  # seconds until the next candidate's delay ends


def delay_of(pcs: PodCliqueSet) -> float:
    """The PodCliqueSet's terminationDelay in seconds (admission refuses one that is not a
    positive duration; one admitted anyway counts as the default)."""
    text = pcs.spec.template.termination_delay
    if text is None:
        return DEFAULT_DELAY
    try:
        found = durations.seconds(text)
    except ValueError:
        return DEFAULT_DELAY
    return found if found > 0 else DEFAULT_DELAY


def _at(timestamp: str | None) -> datetime | None:
    return datetime.fromisoformat(timestamp) if timestamp else None


def _condition(clique: PodCliqueView, type_: str) -> Condition | None:
    status = clique.status
    return next((c for c in status.conditions if c.type == type_), None) if status else None


def breached_since(clique: PodCliqueView) -> datetime | None:
    """When a clique that ran began to breach its minimum; None when it does not, or never
    ran since it was made."""
    if clique.metadata.deletion_timestamp:
        return None
    breach = _condition(clique, MIN_AVAILABLE_BREACHED)
    if breach is None or breach.status != "True":
        return None
    scheduled = _condition(clique, PODCLIQUE_SCHEDULED)
    if scheduled is None:
        return None
    if scheduled.status != "True":
        made, turned = _at(clique.metadata.creation_timestamp), _at(scheduled.last_transition_time)
        if made is None or turned is None or turned <= made + FIRST_WORD_GRACE:
            return None  # its first word: it never ran
    return _at(breach.last_transition_time)


def recycling(
    pcs: PodCliqueSet,
    plan: Plan,
    cliques: Mapping[str, PodCliqueView],
    podgangs: Mapping[str, PodGang],
    now: datetime,
) -> Recycling:
    """The gangs whose breach has lasted the PodCliqueSet's terminationDelay."""
    delay = delay_of(pcs)
    due: dict[str, list[str]] = {}  # gang → its cliques past the delay
    waits: list[float] = []
    for gang in plan.gangs:
        for group in gang.podgroups:
            live = cliques.get(group.name)
            since = breached_since(live) if live is not None else None
            if since is None:
                continue
            at = since + timedelta(seconds=delay)
            if at > now:
                waits.append((at - now).total_seconds())
                continue
            due.setdefault(gang.name, []).append(group.name)
    gangs: list[str] = []
    for gang in plan.gangs:  # a replica's base gang takes every gang of the replica along
        podgang = podgangs.get(gang.name)
        if (gang.name in due or gang.base in due) and podgang is not None:
            gangs.append(gang.name)
    return Recycling(
        gangs=tuple(gangs),
        breached={name: tuple(found) for name, found in due.items()},
        wake_in=min(waits) if waits else None,
    )


def cliques_of(
    found: Recycling, plan: Plan, cliques: Mapping[str, PodCliqueView]
) -> tuple[CliqueDelete, ...]:
    """Every PodClique of the recycled gangs: deleted with their pods, in the same round, so
    no later decision takes them for candidates again (made again fresh, they are none until
    the new gang has run)."""
    recycled = set(found.gangs)
    return tuple(
        CliqueDelete(
            Kind.PODCLIQUE, group.name, live.metadata.namespace, live.metadata.uid, gang.name
        )
        for gang in plan.gangs
        if gang.name in recycled
        for group in gang.podgroups
        if (live := cliques.get(group.name)) is not None and not live.metadata.deletion_timestamp
    )
