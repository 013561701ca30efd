"""What the PodCliques' and scaling groups' ``/scale`` says: replicas that override the
template's, for the plan to build from. Pure.

A PodClique (pods of one clique instance) and a PodCliqueScalingGroup (replicas of one
scaling group of one PodCliqueSet replica) are made with the template's replicas, which
they also carry in an annotation (``gangway.dev/template-replicas``). When their
``spec.replicas`` differs from it, someone scaled them — the HPA made from
``autoScalingConfig`` / ``scaleConfig``, KEDA, ``kubectl scale`` — and the plan uses that
number. When the template's own replicas change, the template wins (the annotation no longer
matches; the object is set back and an autoscaler takes it from there), so editing the
PodCliqueSet still scales it, as a user expects.

A scale is not honoured, and the object is set back, when it is below what a gang needs
(the clique's ``minAvailable``, the group's ``minAvailable``) or above one PodCliqueSet's
ceilings (``GANGWAY_MAX_PODS_PER_PODCLIQUESET`` pods for a clique,
``GANGWAY_MAX_GANGS_PER_PODCLIQUESET`` replicas for a group).
"""

from __future__ import annotations

from collections.abc import Mapping

from gangway_contracts import labels
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import ObjectMeta
from gangway_contracts.limits import Limits
from gangway_podgang.cliques import PodCliqueView, ScalingGroupView
from gangway_podgang.manifests import controlled_by

# Full name of a PodClique or scaling group → the replicas it was scaled to.
Scales = Mapping[str, int]


def _as_made(meta: ObjectMeta, replicas: int) -> bool:
    return meta.annotations.get(labels.TEMPLATE_REPLICAS_ANNOTATION) == str(replicas)


def _scaled(meta: ObjectMeta, replicas: int, template: int) -> bool:
    """Scaled away from the template it was made from, and that template still holds."""
    made_from = meta.annotations.get(labels.TEMPLATE_REPLICAS_ANNOTATION)
    return not meta.deletion_timestamp and made_from == str(template) and replicas != template


def scales_of(
    pcs: PodCliqueSet,
    cliques: Mapping[str, PodCliqueView],
    groups: Mapping[str, ScalingGroupView],
    limits: Limits,
) -> dict[str, int]:
    """The honoured scales of this PodCliqueSet's PodCliques and scaling groups."""
    template = pcs.spec.template
    uid = pcs.metadata.uid
    name = pcs.metadata.name
    found: dict[str, int] = {}
    by_group = {g.name: g for g in template.pod_clique_scaling_groups}
    group_uids = {g.metadata.uid for g in groups.values() if controlled_by(g.metadata, uid)}
    for fqn, group in groups.items():
        if _as_made(group.metadata, group.spec.replicas):
            continue
        config = by_group.get(_in_replica(name, fqn, group.metadata))
        if config is None or not controlled_by(group.metadata, uid):
            continue
        replicas = group.spec.replicas
        if not config.min_available <= replicas <= limits.max_gangs:
            continue
        if _scaled(group.metadata, replicas, config.replicas):
            found[fqn] = replicas
    by_clique = {c.name: c for c in template.cliques}
    for fqn, clique in cliques.items():
        meta = clique.metadata
        if _as_made(meta, clique.spec.replicas):
            continue  # the common case, checked first: decided on every round
        owners = {ref.uid for ref in meta.owner_references if ref.controller}
        if uid not in owners and not owners & group_uids:
            continue  # another PodCliqueSet's namesake
        spec = by_clique.get(_clique_name(pcs, fqn, meta))
        if spec is None:
            continue
        made = spec.spec
        minimum = made.replicas if made.min_available is None else made.min_available
        replicas = clique.spec.replicas
        if not minimum <= replicas <= limits.max_pods:
            continue
        if _scaled(meta, replicas, made.replicas):
            found[fqn] = replicas
    return found


def _in_replica(pcs_name: str, fqn: str, meta: ObjectMeta) -> str:
    """What follows ``<pcs>-<r>-`` in a full name (``r`` from the object's label)."""
    replica = meta.labels.get(labels.PCS_REPLICA_INDEX, "")
    return fqn.removeprefix(f"{pcs_name}-{replica}-")


def _clique_name(pcs: PodCliqueSet, fqn: str, meta: ObjectMeta) -> str:
    """A PodClique's template clique: ``<pcs>-<r>-<clique>`` standalone,
    ``<pcs>-<r>-<group>-<g>-<clique>`` in a scaling group's replica ``g``."""
    rest = _in_replica(pcs.metadata.name, fqn, meta)
    for group in pcs.spec.template.pod_clique_scaling_groups:
        index, _, clique = rest.removeprefix(f"{group.name}-").partition("-")
        if rest.startswith(f"{group.name}-") and index.isdigit() and clique in group.clique_names:
            return clique
    return rest
