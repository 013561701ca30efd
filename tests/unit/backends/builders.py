"""Small PodGangs and PodCliqueSets for translation tables."""

from __future__ import annotations

from typing import Any

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodGang


def podgang(
    *groups: tuple[str, int],
    name: str = "pcs-0",
    configs: list[dict[str, Any]] | None = None,
    topology: dict[str, Any] | None = None,
    group_topology: dict[str, dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    extra_labels: dict[str, str] | None = None,
    priority: str | None = None,
) -> PodGang:
    """A PodGang of (podgroup, minReplicas); ``group_topology`` gives podgroups a constraint."""
    constraints = group_topology or {}
    spec: dict[str, Any] = {
        "podgroups": [
            {
                "name": n,
                "minReplicas": m,
                "podReferences": [],
                **({"topologyConstraint": constraints[n]} if n in constraints else {}),
            }
            for n, m in groups
        ]
    }
    if configs:
        spec["topologyConstraintGroupConfigs"] = configs
    if topology:
        spec["topologyConstraint"] = topology
    if priority:
        spec["priorityClassName"] = priority
    return from_object(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": "gang-uid",
                "labels": {labels.PART_OF: "pcs", **(extra_labels or {})},
                "annotations": annotations or {},
            },
            "spec": spec,
        },
        PodGang,
    )


def podcliqueset(
    cliques: list[dict[str, Any]],
    *,
    groups: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    topology: dict[str, Any] | None = None,
    replicas: int = 1,
) -> PodCliqueSet:
    template: dict[str, Any] = {
        "cliques": [
            {
                "spec": {"replicas": c.get("replicas", 1)},
                **{k: v for k, v in c.items() if k != "replicas"},
            }
            for c in cliques
        ]
    }
    if groups:
        template["podCliqueScalingGroups"] = groups
    if topology:
        template["topologyConstraint"] = topology
    return from_object(
        {
            "metadata": {"name": "pcs", "namespace": "ns", **(meta or {})},
            "spec": {"replicas": replicas, "template": template},
        },
        PodCliqueSet,
    )


def pod(name: str, podgang: str, podclique: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {labels.PODGANG: podgang, labels.PODCLIQUE: podclique},
        },
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


def with_pods(gang: PodGang, counts: dict[str, int]) -> PodGang:
    """``gang`` with ``counts[podgroup]`` pod references in each podgroup."""
    spec = gang.spec
    groups = [
        {
            "name": g.name,
            "minReplicas": g.min_replicas,
            "podReferences": [
                {"namespace": "ns", "name": f"{g.name}-{i}"} for i in range(counts[g.name])
            ],
        }
        for g in spec.podgroups
    ]
    meta = gang.metadata
    return from_object(
        {
            "metadata": {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid},
            "spec": {"podgroups": groups},
        },
        PodGang,
    )
