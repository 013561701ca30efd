"""One decision and everything it was made from: what the reconcile's rooms hand each other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet
from gangway_podgang.decide import Decision
from gangway_podgang.plan import Plan
from gangway_podgang.readmodel import Workload
from gangway_podgang.rolling import Stall
from gangway_podgang.termination import Recycling


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
    recycling: Recycling = field(default_factory=Recycling)  # gang termination, if due
    rolled: tuple[str, ...] = ()  # gangs a rolling update replaces in this decision
    stall: Stall = field(default_factory=Stall)  # a roll past a progressDeadline
    # PodCliqueSet replicas whose gangs this reconcile made again for a roll: the status
    # says they are updating even if the roll is over by the time it is written.
    rolls_began: frozenset[int] = frozenset()

    @property
    def wake_in(self) -> float | None:
        """Seconds until a decision is due with nothing changed: a gang's terminationDelay
        running out, a roll reaching its progressDeadline."""
        waits = [w for w in (self.recycling.wake_in, self.stall.wake_in) if w is not None]
        return min(waits) if waits else None

    def same_spec(
        self,
        pcs: PodCliqueSet,
        binding: ClusterTopologyBinding | None,
        scales: Mapping[str, int],
    ) -> bool:
        """The plan this step holds is still this PodCliqueSet's: same object, same spec
        generation, same topology binding, same scales."""
        was = self.pcs.metadata
        now = pcs.metadata
        same = (was.uid, was.generation) == (now.uid, now.generation)
        return same and self.binding is binding and self.plan.scales == scales


class Refused(Exception):
    """The API server found invalid what podgang made from the spec (422): no retry helps
    until the PodCliqueSet changes; said on it instead."""


class Phantom(Exception):
    """What podgang writes does not stay: the PodCliqueSet is not on the API server."""
