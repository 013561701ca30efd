"""Kueue's topology assignment → each gated pod's domain. Pure.

Kueue admits a Workload of a topology-aware flavor with an assignment per podSet:
``levels`` (node label keys, highest first) and ``slices``, each a run of domains with
their values per level (one value for all, or a prefix, roots and suffix each) and the pods
in each. :func:`domains` unrolls it into (node labels, pods) pairs; :func:`place` gives each
of a podgroup's pods one of them, as Kueue's own topology ungater does for its pods: pods
that carry a domain already keep it, the others take the first with room, in name order (so
a second pass over the same pods gives the same answer, whatever part of the first it
sees). A gated pod whose domain has no room left in the assignment was given it by an
admission Kueue took back: it is made again (its nodeSelector can only grow while gated).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangway_contracts import kueue_topology, labels
from gangway_contracts.pods import Pod

Domain = dict[str, str]  # node label key → value, each level of the assignment


def _values(level: dict[str, Any], count: int) -> list[str]:
    if "universal" in level:
        return [level["universal"]] * count
    each = level["individual"]
    prefix, suffix = each.get("prefix") or "", each.get("suffix") or ""
    return [f"{prefix}{root}{suffix}" for root in each["roots"]]


def domains(assignment: dict[str, Any]) -> list[tuple[Domain, int]]:
    """The assignment's domains in Kueue's order, each with its pod count."""
    levels: list[str] = assignment.get("levels") or []
    found = []
    for run in assignment.get("slices") or []:
        count = run["domainCount"]
        values = [_values(level, count) for level in run["valuesPerLevel"]]
        pods = run["podCounts"]
        per_domain = [pods["universal"]] * count if "universal" in pods else pods["individual"]
        for i in range(count):
            found.append(({key: values[n][i] for n, key in enumerate(levels)}, per_domain[i]))
    return found


@dataclass
class Placement:
    """What the pods of one podSet need: node labels to add to gated pods, by name; the
    gated pods carrying a domain the assignment has no room in (made again)."""

    given: dict[str, Domain] = field(default_factory=dict)
    stale: list[Pod] = field(default_factory=list)


def _agrees(pod: Pod, domain: Domain) -> bool:
    selector = pod.spec.node_selector
    return all(selector.get(key, value) == value for key, value in domain.items())


def _carries(pod: Pod, domain: Domain) -> bool:
    selector = pod.spec.node_selector
    return all(selector.get(key) == value for key, value in domain.items())


def place(pods: Sequence[Pod], assigned: list[tuple[Domain, int]]) -> Placement:
    """Each gated pod of ``pods`` (one podSet's) without a domain gets one with room."""
    room = [count for _, count in assigned]
    placement = Placement()

    def take(pod: Pod, fits: Callable[[Pod, Domain], bool]) -> Domain | None:
        for i, (domain, _) in enumerate(assigned):
            if room[i] > 0 and fits(pod, domain):
                room[i] -= 1
                return dict(domain)
        return None

    def gated(pod: Pod) -> bool:
        return pod.is_gated(labels.PODGANG_PENDING_CREATION_GATE)

    ordered = sorted(pods, key=lambda p: p.metadata.name)
    holding = [p for p in ordered if kueue_topology.given(p.metadata.annotations)]
    bare = [p for p in ordered if not kueue_topology.given(p.metadata.annotations)]
    for pod in holding:
        if take(pod, _carries) is None and gated(pod):
            placement.stale.append(pod)
    for pod in bare:
        if gated(pod) and (domain := take(pod, _agrees)) is not None:
            placement.given[pod.metadata.name] = domain
    return placement


def where(assignments: Mapping[str, dict[str, Any]], asked: Mapping[str, str]) -> str:
    """Where the gang went, in words, for the QueueAdmitted message: each podSet's domains
    at the level it asked for (``asked``: podSet name → node label key), else at the
    highest level its assignment has (Kueue gives the nodes alone when its Topology ends
    at the hostname): ``gangway.dev/rack rack-1``, ``kubernetes.io/hostname n-4, n-5``."""
    values: dict[str, set[str]] = {}
    for podset, assignment in assignments.items():
        for domain, _ in domains(assignment):
            key = asked.get(podset, "")
            key = key if key in domain else next(iter(domain), "")
            if key:
                values.setdefault(key, set()).add(domain[key])
    return "; ".join(
        f"{key} {', '.join(_at_most(sorted(found)))}" for key, found in sorted(values.items())
    )


def _at_most(values: list[str], shown: int = 8) -> list[str]:
    if len(values) <= shown:
        return values
    return [*values[:shown], f"and {len(values) - shown} more"]
