"""The promises a backend and its scheduler keep, one scenario each: what it promises (its
docstring, printed with ``--list``), the nodes it takes, the workloads it submits and what
must follow. Each gets nodes of its own (room counted in nodes that hold one of its pods:
``room.py``) and namespaces of its own, so one does not see another's pods. Read by backend
authors: a failure says which pods were bound where and what the scheduler said."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from gangway_cli.conformance.room import RACK_LABEL
from gangway_cli.conformance.stage import Stage, bound_by, clique, scaling_group
from gangway_cli.why import GangState, Workload
from gangway_contracts import labels
from gangway_contracts.grove import GROVE_GROUP, GROVE_VERSION
from gangway_runtime.kube import ApiResource

PRIORITY_CLASSES: Final = ApiResource("scheduling.k8s.io", "v1", "priorityclasses", False)
LOW, HIGH = "gangway-conformance-low", "gangway-conformance-high"
# Below 100, so KAI counts the lower gang preemptible (its classes of 100 and more are not).
PRIORITIES: Final = {LOW: 50, HIGH: 100_000}
TOPOLOGY: Final = "gangway-conformance"  # a ClusterTopologyBinding of racks only
TOPOLOGY_BINDINGS: Final = ApiResource(GROVE_GROUP, GROVE_VERSION, "clustertopologybindings", False)


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
    started = time.monotonic()
    if (placed := await stage.until_bound(pcs, 4)) < 4:
        return Outcome(False, f"room for 3: none bound; room for 4: only {placed} of 4 bound")
    took = time.monotonic() - started
    said = f"room for 3: none of 4 bound ({_said(gang)}); room for 4: all bound in {took:.0f} s"
    return Outcome(True, said)


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


def _leader_and_workers(stage: Stage, name: str, pool: str, workers: int) -> dict[str, Any]:
    """A leader (1 pod) and a scaling group of ``workers`` replicas of two workers each,
    one in the base gang: the base gang is 3 pods, each scaled gang 2."""
    return stage.workload(
        stage.namespace(),
        name,
        pool,
        clique("leader", 1, 1),
        clique("worker", 2, 2),
        groups=(scaling_group("workers", ["worker"], workers, 1),),
    )


def _counts(bound: dict[str, int]) -> str:
    return ", ".join(f"{gang} {count}" for gang, count in sorted(bound.items()))


async def base_gang_first(stage: Stage) -> Outcome:
    """A scaled gang waits for its base gang: a base gang of three pods and a scaled gang of
    two on room for two get no node (the scaled gang alone would fit, and would keep the
    base gang out); room for three, and the base gang is bound whole; room for five, all."""
    pool = await stage.nodes(2)
    pcs = _leader_and_workers(stage, "scaled", pool, workers=2)
    await stage.apply(pcs)
    await stage.verdict(pcs)
    early = await stage.bound(pcs, by=labels.PODGANG)
    if sum(early.values()):
        return Outcome(False, f"on room for 2, pods bound by gang: {_counts(early)}")
    await stage.nodes(1, pool=pool)
    await stage.until_bound(pcs, 3)
    base = await stage.bound(pcs, by=labels.PODGANG)
    if base.get("scaled-0") != 3:
        return Outcome(False, f"on room for 3, pods bound by gang: {_counts(base)}")
    await stage.nodes(2, pool=pool)
    if (placed := await stage.until_bound(pcs, 5)) < 5:
        return Outcome(False, f"on room for 5: {placed} of 5 pods bound")
    said = "room for 2: none bound; room for 3: the base gang's 3; room for 5: all 5"
    return Outcome(True, said)


async def scale_out_and_in(stage: Stage) -> Outcome:
    """Scaling out adds a gang that is placed whole or not at all (one of its two pods
    fits: none binds; room for both: both); scaling in takes that gang away whole, and
    the base gang's pods stay where they are."""
    pool = await stage.nodes(4)
    pcs = _leader_and_workers(stage, "elastic", pool, workers=1)
    await stage.apply(pcs)
    if (placed := await stage.until_bound(pcs, 3)) < 3:
        return Outcome(False, f"the base gang: {placed} of 3 pods bound on room for 4")
    base = {p["metadata"]["uid"] for p in await stage.pods(pcs)}
    await stage.apply(_leader_and_workers(stage, "elastic", pool, workers=2))
    await stage.verdict(pcs)
    out = await stage.bound(pcs, by=labels.PODGANG)
    if sum(out.values()) - out.get("elastic-0", 0):  # the scaled gang's
        return Outcome(False, f"scaled out on room for 1 more pod: {_counts(out)} bound")
    await stage.nodes(1, pool=pool)
    if (placed := await stage.until_bound(pcs, 5)) < 5:
        return Outcome(False, f"scaled out on room for 2 more: {placed} of 5 bound")
    await stage.apply(_leader_and_workers(stage, "elastic", pool, workers=1))
    left = await stage.until(pcs, lambda pods: {p["metadata"]["uid"] for p in pods} == base)
    if (kept := {p["metadata"]["uid"] for p in left}) != base:
        gone, more = len(base - kept), len(kept - base)
        return Outcome(False, f"scaled in: {gone} base pods gone, {more} other pods still there")
    said = "out, one pod's room: none bound; two: both; in: the scaled gang gone, base untouched"
    return Outcome(True, said)


async def roll_makes_a_new_gang(stage: Stage) -> Outcome:
    """Changing a running workload's pod template rolls it: on the same room, the new
    pods are placed whole once the old ones are gone — the scheduler does not take the new
    gang for the old one of the same name."""
    pool = await stage.nodes(4)
    pcs = stage.workload(stage.namespace(), "rolled", pool, clique("worker", 4, 4))
    await stage.apply(pcs)
    if (placed := await stage.until_bound(pcs, 4)) < 4:
        return Outcome(False, f"before the roll: {placed} of 4 pods bound on room for 4")
    old = {p["metadata"]["uid"] for p in await stage.pods(pcs)}
    changed = stage.workload(stage.namespace(), "rolled", pool, clique("worker", 4, 4))
    pod_spec = changed["spec"]["template"]["cliques"][0]["spec"]["podSpec"]
    pod_spec["containers"][0]["env"] = [{"name": "ROLLED", "value": "1"}]
    await stage.apply(changed)

    def new_and_bound(pods: list[dict[str, Any]]) -> bool:
        new = [p for p in pods if p["metadata"]["uid"] not in old]
        return len(new) == len(pods) == 4 and all(p["spec"].get("nodeName") for p in new)

    pods = await stage.until(pcs, new_and_bound)
    if not new_and_bound(pods):
        new = [p for p in pods if p["metadata"]["uid"] not in old]
        bound = sum(bool(p["spec"].get("nodeName")) for p in new)
        return Outcome(
            False,
            f"after the roll: {len(pods) - len(new)} old pods left, {bound} of "
            f"{len(new)} new bound ({_said(_first(await stage.verdict(pcs)))})",
        )
    gangs = sorted({p["metadata"]["labels"].get(labels.INCARNATION, "0") for p in pods})
    return Outcome(True, f"the new gang (incarnation {', '.join(gangs)}) bound whole: 4 of 4")


async def backend_killed(stage: Stage) -> Outcome:
    """The backend's process killed (SIGKILL: nothing written after) just as a workload
    arrives, and started again: the gang converges, placed whole, with its scheduler
    objects."""
    pool = await stage.nodes(4)
    pcs = stage.workload(stage.namespace(), "survivor", pool, clique("worker", 4, 4))
    await stage.apply(pcs)
    await stage.kill_backend()
    if (placed := await stage.until_bound(pcs, 4)) < 4:
        said = _said(_first(await stage.verdict(pcs)))
        return Outcome(False, f"after the restart: {placed} of 4 pods bound ({said})")
    made = await stage.backend_objects(stage.namespace())
    return Outcome(True, f"4 of 4 bound after the restart, with {', '.join(made) or 'nothing'}")


async def priority_moves_whole_gangs(stage: Stage) -> Outcome:
    """A gang of two placed on room for two, then one of a higher priority class: either
    the lower gang loses its room whole (none of its pods bound) and the higher one is
    placed whole, or nothing moves (a scheduler that does not preempt a gang at its
    minimum); never part of either."""
    for name, value in PRIORITIES.items():
        made = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": value}
        await stage.cluster_object(PRIORITY_CLASSES, {**made, "metadata": {"name": name}})
    pool = await stage.nodes(2)
    low, high = (
        _at(stage.workload(stage.namespace(), name, pool, clique("worker", 2, 2)), priority)
        for name, priority in (("low", LOW), ("high", HIGH))
    )
    await stage.apply(low)
    if (placed := await stage.until_bound(low, 2)) < 2:
        return Outcome(False, f"the lower gang: {placed} of 2 pods bound on room for 2")
    await stage.apply(high)
    waiting = _first(await stage.verdict(high))
    if sum((await stage.bound(high)).values()) == 0:
        still = sum((await stage.bound(low)).values())
        said = (
            f"nothing moved: the lower gang keeps {still} of 2, the higher waits ({_said(waiting)})"
        )
        return Outcome(still == 2, said)
    highs = await stage.until_bound(high, 2)
    lows = await stage.until(low, lambda pods: not any(bound_by(pods).values()))
    left = sum(bound_by(lows).values())
    lower = _first(await stage.verdict(low))
    said = f"the higher gang: {highs} of 2 bound; the lower: {left} of 2 ({_said(lower)})"
    return Outcome(highs == 2 and left == 0, said)


def _at(pcs: dict[str, Any], priority_class: str) -> dict[str, Any]:
    pcs["spec"]["template"]["priorityClassName"] = priority_class
    return pcs


async def packed_in_one_rack(stage: Stage) -> Outcome:
    """A gang packed by rack (required) lands in one rack: a rack of three nodes and one of
    four, a gang of four pods — all four in the rack of four, where spread over both they
    would fit too."""
    levels = [{"domain": "rack", "key": RACK_LABEL}]
    binding = {
        "apiVersion": TOPOLOGY_BINDINGS.api_version,
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": TOPOLOGY},
        "spec": {"levels": levels},
    }
    pool = await stage.nodes(3, rack="rack-3")
    await stage.nodes(4, pool=pool, rack="rack-4")
    await stage.cluster_object(TOPOLOGY_BINDINGS, binding)
    pcs = stage.workload(stage.namespace(), "packed", pool, clique("worker", 4, 4))
    pcs["spec"]["template"]["topologyConstraint"] = {
        "topologyName": TOPOLOGY,
        "pack": {"required": "rack"},
    }
    await stage.apply(pcs, refusal_declines=True)
    if (placed := await stage.until_bound(pcs, 4)) < 4:
        said = _said(_first(await stage.verdict(pcs)))
        return Outcome(False, f"{placed} of 4 pods bound on room for 4 in one rack ({said})")
    racks = await stage.racks(await stage.pods(pcs))
    said = f"4 of 4 bound, by rack: {_counts(racks)}"
    return Outcome(set(racks) == {"rack-4"}, said)


async def queue_holds_gangs_whole(stage: Stage) -> Outcome:
    """A queue capped at two pods' GPUs and two gangs of two in it, on room for four: the
    first is placed whole; the second waits whole (no pod bound, its reason said) until the
    first is deleted, then it is placed whole."""
    in_queue = await stage.queue(2 * stage.gpus_per_pod())
    pool = await stage.nodes(4)
    first, second = (
        _labelled(stage.workload(stage.namespace(), name, pool, clique("worker", 2, 2)), in_queue)
        for name in ("first", "second")
    )
    await stage.apply(first)
    if (placed := await stage.until_bound(first, 2)) < 2:
        return Outcome(False, f"the first gang: {placed} of 2 pods bound in its queue")
    await stage.apply(second)
    waiting = _first(await stage.verdict(second))
    if bound := sum((await stage.bound(second)).values()):
        return Outcome(False, f"the second gang, over the queue's cap: {bound} of 2 bound")
    await stage.delete(first)
    if (placed := await stage.until_bound(second, 2)) < 2:
        return Outcome(False, f"the first gone, the second: {placed} of 2 pods bound")
    said = f"the second waited whole ({_said(waiting)}), then was placed whole"
    return Outcome(True, said)


def _labelled(pcs: dict[str, Any], more: dict[str, str]) -> dict[str, Any]:
    pcs["metadata"]["labels"] = {**pcs["metadata"]["labels"], **more}
    return pcs


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
    "base-gang-first": base_gang_first,
    "scale-out-and-in": scale_out_and_in,
    "roll-makes-a-new-gang": roll_makes_a_new_gang,
    "backend-killed": backend_killed,
    "priority-moves-whole-gangs": priority_moves_whole_gangs,
    "packed-in-one-rack": packed_in_one_rack,
    "queue-holds-gangs-whole": queue_holds_gangs_whole,
    "delete-cleans-up": delete_cleans_up,
}


def promise(name: str) -> str:
    """A scenario's promise, in one line."""
    return " ".join((SCENARIOS[name].__doc__ or "").split())
