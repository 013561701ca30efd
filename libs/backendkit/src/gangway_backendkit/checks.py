"""Admission checks more than one backend makes."""

from __future__ import annotations

from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet, topology_constraints
from gangway_contracts.rpc import UnsupportedFeature


def without_topology(
    pcs: PodCliqueSet, scheduler: str
) -> tuple[list[FieldError], list[UnsupportedFeature]]:
    """For a scheduler with no topology-aware placement: required packing is refused with
    its field named (it cannot be honoured), preferred packing admitted and reported."""
    errors: list[FieldError] = []
    unsupported: list[UnsupportedFeature] = []
    for field, constraint in topology_constraints(pcs):
        if constraint.required:
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
