"""The promises a backend and its scheduler keep, one scenario each: what it promises (its
docstring, printed with ``--list``), the nodes it takes, the workloads it submits and what
must follow. Each gets nodes of its own (kwok: room counted in 4-GPU nodes) and namespaces
of its own, so one does not see another's pods. Read by backend authors: a failure says
which pods were bound where and what the scheduler said."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from gangway_cli.conformance.stage import Stage, clique
from gangway_cli.why import GangState, Workload


@dataclass(frozen=True)
class Outcome:
    passed: bool
    evidence: str


def _first(workload: Workload) -> GangState | None:
    return workload.gangs[0] if workload.gangs else None


def _said(gang: GangState | None) -> str:
    if gang is None:
        return "no PodGang"
    return f"{gang.reason}: {gang.message[:160]}" if gang.message else gang.reason


async def all_or_nothing(stage: Stage) -> Outcome:
    """A gang of four pods, all needed, on room for three gets no node at all (and says
    why); a fourth node, and all four are bound."""
    pool = await stage.nodes(3)
    pcs = stage.workload(stage.namespace(), "whole", pool, clique("worker", 4, 4))
    await stage.apply(pcs)
    gang = _first(await stage.verdict(pcs))
    bound = sum((await stage.bound(pcs)).values())
    if bound:
        return Outcome(False, f"{bound} of 4 pods bound on room for 3 ({_said(gang)})")
    await stage.nodes(1, pool=pool)
    if (placed := await stage.until_bound(pcs, 4)) < 4:
        return Outcome(False, f"room for 3: none bound; room for 4: only {placed} of 4 bound")
    return Outcome(True, f"room for 3: none of 4 bound ({_said(gang)}); room for 4: all bound")


async def podgroup_minimums(stage: Stage) -> Outcome:
    """Each podgroup keeps its own minimum: a leader role (3 pods, 1 needed) and a worker
    role (2 pods, both needed) on room for 3 get one leader and both workers, not three
    pods of one role."""
    pool = await stage.nodes(3)
    pcs = stage.workload(
        stage.namespace(), "roles", pool, clique("leader", 3, 1), clique("worker", 2, 2)
    )
    await stage.apply(pcs)
    gang = _first(await stage.verdict(pcs))
    bound = await stage.bound(pcs)
    leaders, workers = bound.get("roles-0-leader", 0), bound.get("roles-0-worker", 0)
    said = f"leaders {leaders} of 3 (1 needed), workers {workers} of 2 (2 needed); {_said(gang)}"
    return Outcome(leaders >= 1 and workers == 2, said)


async def same_name_two_namespaces(stage: Stage) -> Outcome:
    """Two workloads of one name in two namespaces are two gangs: the first runs whole on
    four nodes, the second, with three nodes left, gets none (a scheduler that keys gangs by
    name alone counts the first one's pods for the second)."""
    pool = await stage.nodes(7)
    first = stage.workload(stage.namespace("a"), "twin", pool, clique("worker", 4, 4))
    await stage.apply(first)
    if (placed := await stage.until_bound(first, 4)) < 4:
        return Outcome(False, f"the first workload: {placed} of 4 pods bound on room for 7")
    second = stage.workload(stage.namespace("b"), "twin", pool, clique("worker", 4, 4))
    await stage.apply(second)
    gang = _first(await stage.verdict(second))
    bound = sum((await stage.bound(second)).values())
    said = f"the first: 4 of 4 bound; the second, on room for 3: {bound} of 4 bound ({_said(gang)})"
    return Outcome(bound == 0, said)


async def delete_cleans_up(stage: Stage) -> Outcome:
    """Deleting a running workload leaves nothing of it: no pod, no PodGang, none of the
    backend's objects."""
    pool = await stage.nodes(2)
    pcs = stage.workload(stage.namespace(), "gone", pool, clique("worker", 2, 2))
    await stage.apply(pcs)
    if (placed := await stage.until_bound(pcs, 2)) < 2:
        return Outcome(False, f"{placed} of 2 pods bound on room for 2: nothing to delete")
    made = [resource.kind for resource in stage.own]
    await stage.delete(pcs)
    left = await stage.until_gone(pcs)
    if left:
        return Outcome(False, f"after {stage.timeout:.0f} s still there: {', '.join(left)}")
    return Outcome(True, f"pods, PodGang and the backend's {', '.join(made) or 'objects'} gone")


Check = Callable[[Stage], Awaitable[Outcome]]

# In the order they run; the name is what --scenarios takes.
SCENARIOS: Final[dict[str, Check]] = {
    "all-or-nothing": all_or_nothing,
    "podgroup-minimums": podgroup_minimums,
    "same-name-two-namespaces": same_name_two_namespaces,
    "delete-cleans-up": delete_cleans_up,
}


def promise(name: str) -> str:
    """A scenario's promise, in one line."""
    return " ".join((SCENARIOS[name].__doc__ or "").split())
