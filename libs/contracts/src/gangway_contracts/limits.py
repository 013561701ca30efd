"""How much one PodCliqueSet may ask for: its gangs and pods, counted from its spec alone.

Admission refuses a PodCliqueSet over either ceiling, naming ``spec.replicas``; podgang
checks the same before it plans anything (a PodCliqueSet admitted by an older webhook, or
with the webhook failing open, must not make it build tens of thousands of PodGangs in
memory). Grove has no such ceiling; the defaults sit well above what this project measures
(bench/: 10 000 pods in one PodCliqueSet) and both are settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet

MAX_PODS: Final = 50_000
MAX_GANGS: Final = 25_000


@dataclass(frozen=True)
class Size:
    gangs: int
    pods: int


@dataclass(frozen=True)
class Limits:
    max_pods: int = MAX_PODS
    max_gangs: int = MAX_GANGS


def size_of(pcs: PodCliqueSet) -> Size:
    """The PodGangs and pods ``pcs`` asks for at its current replicas: per replica, a base
    gang and one gang per scaling-group replica beyond its minAvailable; every clique's pods,
    a grouped clique's once per scaling-group replica."""
    template = pcs.spec.template
    grouped = {name for g in template.pod_clique_scaling_groups for name in g.clique_names}
    replicas = {c.name: max(c.spec.replicas, 0) for c in template.cliques}
    pods = sum(n for name, n in replicas.items() if name not in grouped)
    gangs = 1
    for group in template.pod_clique_scaling_groups:
        count = max(group.replicas, 0)
        pods += count * sum(replicas.get(name, 0) for name in group.clique_names)
        gangs += max(count - max(group.min_available, 0), 0)
    copies = max(pcs.spec.replicas, 0)
    return Size(gangs=copies * gangs, pods=copies * pods)


def over_limits(pcs: PodCliqueSet, limits: Limits) -> list[FieldError]:
    """One error per ceiling ``pcs`` goes over, on ``spec.replicas``."""
    size = size_of(pcs)
    errors = []
    for what, count, ceiling, setting in (
        ("pods", size.pods, limits.max_pods, "GANGWAY_MAX_PODS_PER_PODCLIQUESET"),
        ("PodGangs", size.gangs, limits.max_gangs, "GANGWAY_MAX_GANGS_PER_PODCLIQUESET"),
    ):
        if count > ceiling:
            errors.append(
                FieldError(
                    field="spec.replicas",
                    reason=f"{pcs.spec.replicas} replicas make {count} {what}, over the "
                    f"{ceiling} one PodCliqueSet may make here ({setting}); lower the "
                    "replicas, or split the workload",
                )
            )
    return errors
