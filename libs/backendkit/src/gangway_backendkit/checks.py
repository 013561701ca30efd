"""Admission checks more than one backend makes."""

from __future__ import annotations

from collections.abc import Iterator

from gangway_contracts.errors import FieldError, field_path
from gangway_contracts.grove import PodCliqueSet, topology_constraints
from gangway_contracts.rpc import UnsupportedFeature


def without_topology(
    pcs: PodCliqueSet, scheduler: str, *, honours_required: bool = False
) -> tuple[list[FieldError], list[UnsupportedFeature]]:
    """For a scheduler with no topology-aware placement: required packing is refused with
    its field named (it cannot be honoured), preferred packing admitted and reported.
    ``honours_required``: it packs by required constraints, not by preferred ones."""
    errors: list[FieldError] = []
    unsupported: list[UnsupportedFeature] = []
    for field, constraint in topology_constraints(pcs):
        if constraint.required and not honours_required:
            errors.append(
                FieldError(
                    field=f"{field}.pack.required",
                    reason=f"{scheduler} has no topology-aware gang placement, so required "
                    "packing cannot be honoured; use preferred, or a topology-aware scheduler "
                    "such as kai-scheduler",
                )
            )
        if constraint.preferred:
            unsupported.append(
                UnsupportedFeature(
                    field=f"{field}.pack.preferred",
                    feature="TopologyPreferredPacking",
                    message=f"{scheduler} ignores preferred topology packing",
                )
            )
    return errors, unsupported


def spare_pods_in_shared_gangs(pcs: PodCliqueSet) -> Iterator[tuple[str, str, str]]:
    """(field, clique, which gang) for each clique with spare pods in a gang of several
    podgroups: the base gang (ungrouped cliques and each scaling group's first
    minAvailable replicas) or a scaled gang (one scaling-group replica)."""
    template = pcs.spec.template
    groups = template.pod_clique_scaling_groups
    member_of = {name: g for g in groups for name in g.clique_names}
    base_podgroups = sum(c.name not in member_of for c in template.cliques) + sum(
        g.min_available * len(g.clique_names) for g in groups
    )
    for i, clique in enumerate(template.cliques):
        spec = clique.spec
        if spec.min_available is None or spec.min_available >= spec.replicas:
            continue
        group = member_of.get(clique.name)
        in_base = group is None or group.min_available > 0
        in_scaled = group is not None and group.replicas > group.min_available
        shared = (in_base and base_podgroups > 1) or (
            in_scaled and group is not None and len(group.clique_names) > 1
        )
        if shared:
            field = field_path("spec", "template", "cliques", i, "spec", "minAvailable")
            gang = "the base PodGang" if in_base and base_podgroups > 1 else "a scaled PodGang"
            yield field, clique.name, gang
