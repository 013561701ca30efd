"""The HorizontalPodAutoscalers of ``autoScalingConfig`` and ``scaleConfig``, as Grove makes
them. Pure.

One per PodCliqueSet replica and autoscaled standalone clique, named as its PodClique and
scaling its ``/scale``; one per replica and scaling group with a ``scaleConfig``, named as
the group and scaling its replicas. ``minReplicas`` defaults to the template's replicas (as
Grove's defaulting webhook sets it); ``maxReplicas`` and ``metrics`` as given. Owned by the
PodCliqueSet, written after the gangs with the PodCliques, set back when the spec podgang
wrote is not the one asked for (its digest in an annotation: the API server defaults an
HPA's spec, so the live spec is not compared), deleted when no longer asked for.

What the HPA sets, podgang builds (``scaling.py``): kube-controller-manager's HPA
controller, KEDA or anything else that writes ``/scale`` scales one clique or one scaling
group of one replica, and its gangs follow, each whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from gangway_contracts import labels
from gangway_contracts.cliques import CLIQUE_API_VERSION
from gangway_contracts.grove import AutoScalingConfig, PodCliqueSet
from gangway_contracts.k8s import ObjectMeta, Wire
from gangway_contracts.subjects import Kind
from gangway_podgang.cliques import CliqueDelete, CliqueWrite
from gangway_podgang.manifests import controlled_by, podcliqueset_owner, replica_labels

COMPONENT_HPA: Final = "pcs-hpa"  # Grove's app.kubernetes.io/component of its HPAs


class AutoscalerView(Wire, frozen=True, kw_only=True):
    """An HPA as podgang reads it: what it is, and the digest of the spec written."""

    metadata: ObjectMeta


def autoscaler_manifest(
    pcs: PodCliqueSet, replica: int, target: tuple[str, str], config: AutoScalingConfig, made: int
) -> dict[str, Any]:
    """The HPA of one clique or scaling group of one replica. ``target``: (kind, name);
    ``made``: the template's replicas (the default ``minReplicas``)."""
    kind, name = target
    spec = {
        "scaleTargetRef": {"apiVersion": CLIQUE_API_VERSION, "kind": kind, "name": name},
        "minReplicas": made if config.min_replicas is None else config.min_replicas,
        "maxReplicas": config.max_replicas,
        "metrics": [msgspec.json.decode(metric) for metric in config.metrics],
    }
    digest = hashlib.sha256(msgspec.json.encode(spec, order="sorted")).hexdigest()[:16]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": name,
            "namespace": pcs.metadata.namespace,
            "labels": {**replica_labels(pcs, replica, COMPONENT_HPA), labels.APP_NAME: name},
            "annotations": {labels.SPEC_DIGEST_ANNOTATION: digest},
            "ownerReferences": [podcliqueset_owner(pcs)],
        },
        "spec": spec,
    }


def autoscalers_wanted(pcs: PodCliqueSet) -> dict[str, dict[str, Any]]:
    """Every HPA the PodCliqueSet asks for, by name."""
    template = pcs.spec.template
    grouped = {n for g in template.pod_clique_scaling_groups for n in g.clique_names}
    found: dict[str, dict[str, Any]] = {}
    for r in range(pcs.spec.replicas):
        prefix = f"{pcs.metadata.name}-{r}"
        for clique in template.cliques:
            config = clique.spec.auto_scaling_config
            if config is not None and clique.name not in grouped:  # a member scales with it
                target = ("PodClique", f"{prefix}-{clique.name}")
                made = clique.spec.replicas
                found[target[1]] = autoscaler_manifest(pcs, r, target, config, made)
        for group in template.pod_clique_scaling_groups:
            if group.scale_config is not None:
                target = ("PodCliqueScalingGroup", f"{prefix}-{group.name}")
                made = group.replicas
                found[target[1]] = autoscaler_manifest(pcs, r, target, group.scale_config, made)
    return found


def autoscalers_to_write(
    pcs: PodCliqueSet, live: Mapping[str, AutoscalerView]
) -> tuple[list[CliqueWrite], list[CliqueDelete]]:
    """(HPAs to create or set back, HPAs no longer asked for)."""
    ns, uid = pcs.metadata.namespace, pcs.metadata.uid
    wanted = autoscalers_wanted(pcs)
    writes: list[CliqueWrite] = []
    for name, desired in wanted.items():
        found = live.get(name)
        if found is None:
            writes.append(CliqueWrite(Kind.HPA, name, ns, create=desired))
            continue
        meta = found.metadata
        if meta.deletion_timestamp or not controlled_by(meta, uid):
            continue  # going, or another PodCliqueSet's namesake
        digest = desired["metadata"]["annotations"]
        if not digest.items() <= meta.annotations.items():
            changed = {"metadata": {"annotations": digest}, "spec": desired["spec"]}
            writes.append(CliqueWrite(Kind.HPA, name, ns, spec=changed))
    deletes = [
        CliqueDelete(Kind.HPA, name, ns, found.metadata.uid)
        for name, found in sorted(live.items())
        if name not in wanted
        and not found.metadata.deletion_timestamp
        and controlled_by(found.metadata, uid)
    ]
    return writes, deletes
