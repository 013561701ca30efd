"""Startup order, with Grove's meaning (``cliqueStartupType``, ``startsAfter``). Pure.

A clique's containers start once each clique it starts after has its minimum of ready pods
*in the same gang*; the gang is still placed whole (the order is about starting, not
placing):

- ``CliqueStartupTypeAnyOrder``: nothing waits;
- ``CliqueStartupTypeInOrder``: each clique after the one listed before it;
- ``CliqueStartupTypeExplicit``: each clique after those its ``startsAfter`` names.

Named in a base gang, a scaling group's clique means that clique in each of the group's
replicas the base gang holds (below ``minAvailable``); in a scaled gang only the group's own
cliques of that replica count (Grove's rule: the base gang is not waited on from there).

How a pod waits (Grove uses an init container with an API token of a per-PodCliqueSet
ServiceAccount; Gangway gives pods no credentials): every clique some pod waits on gets a
headless Service of its own name that lists only its *ready* pods
(``publishNotReadyAddresses: false``). A waiting pod's init container, Gangway's image
running :mod:`gangway_podgang.wait_ready`, asks the cluster's DNS for each such Service until
it returns at least the clique's minimum of addresses. The endpoint-slice controller keeps
the Service exactly as ready as the pods are; no Gangway process is in the pod's way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gangway_contracts.grove import (
    EXPLICIT,
    IN_ORDER,
    PodCliqueScalingGroupConfig,
    PodCliqueSetTemplateSpec,
)
from gangway_contracts.services import CLUSTER_DOMAIN

# The image deploy/ runs Gangway from; podgang's ``startup_image`` setting names another.
IMAGE: Final = "gangway:0.1.0"
# The init container's name (Grove's is grove-initc) and what it runs in Gangway's image.
INIT_CONTAINER: Final = "gangway-startup-order"
PROGRAM: Final = ("python", "-m", "gangway_podgang.wait_ready")
# Small and unprivileged: it only asks the DNS.
_RESOURCES: Final = {"requests": {"cpu": "10m", "memory": "48Mi"}, "limits": {"memory": "96Mi"}}
_SECURITY: Final = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}

# What one pod waits on: (the PodClique's full name, ready pods it must have).
Waits = tuple[tuple[str, int], ...]


def starts_after(template: PodCliqueSetTemplateSpec) -> dict[str, tuple[str, ...]]:
    """Each clique's template name → the cliques it starts after (template names)."""
    cliques = template.cliques
    if template.clique_startup_type == IN_ORDER:
        return {c.name: (cliques[i - 1].name,) if i else () for i, c in enumerate(cliques)}
    if template.clique_startup_type == EXPLICIT:
        return {c.name: tuple(c.spec.starts_after) for c in cliques}
    return {c.name: () for c in cliques}


def minimums(template: PodCliqueSetTemplateSpec) -> dict[str, int]:
    """Each clique's minimum of ready pods, the number those after it wait for."""
    return {
        c.name: c.spec.replicas if c.spec.min_available is None else c.spec.min_available
        for c in template.cliques
    }


def waits_on(
    prefix: str,
    parents: Sequence[str],
    minimum: Mapping[str, int],
    groups: Mapping[str, PodCliqueScalingGroupConfig],
    scaled: tuple[str, int, PodCliqueScalingGroupConfig] | None = None,
) -> Waits:
    """The PodCliques one clique instance waits on. ``prefix``: its PodCliqueSet replica
    (``<pcs>-<r>``); ``groups``: the scaling group of each grouped clique (template names);
    ``scaled``: (group full name, its replica, its config) when the instance is in a scaled
    gang."""
    found: list[tuple[str, int]] = []
    for parent in parents:
        if parent not in minimum:
            continue  # no such clique: admission's error to report
        if scaled is not None:
            group_fqn, replica, config = scaled
            if parent in config.clique_names:
                found.append((f"{group_fqn}-{replica}-{parent}", minimum[parent]))
            continue  # the base gang is not waited on from a scaled gang
        group = groups.get(parent)
        if group is None:
            found.append((f"{prefix}-{parent}", minimum[parent]))
            continue
        for g in range(group.min_available):  # the group's replicas in the base gang
            found.append((f"{prefix}-{group.name}-{g}-{parent}", minimum[parent]))
    return tuple(found)


def ready_address(podclique: str, namespace: str) -> str:
    """The name under which a waited-on clique's ready pods resolve (its Service's)."""
    return f"{podclique}.{namespace}.svc.{CLUSTER_DOMAIN}"


def init_container(waits: Waits, namespace: str, image: str) -> dict[str, Any]:
    """The init container that holds a pod's own containers back until ``waits`` hold."""
    return {
        "name": INIT_CONTAINER,
        "image": image,
        "command": list(PROGRAM),
        "args": [f"{ready_address(name, namespace)}={count}" for name, count in waits],
        "resources": _RESOURCES,
        "securityContext": _SECURITY,
    }
