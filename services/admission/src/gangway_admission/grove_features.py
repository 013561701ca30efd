"""Grove features Gangway does not provide, said by field: a PodCliqueSet that asks for one is
refused with what is missing (it would run differently than under Grove's operator).

docs/admission.md keeps the same list for readers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from gangway_contracts.errors import FieldError, field_path
from gangway_contracts.grove import PodCliqueSet

_CLIQUES: Final = ("spec", "template", "cliques")
_GROUPS: Final = ("spec", "template", "podCliqueScalingGroups")

MNNVL_GROUP: Final = "grove.io/mnnvl-group"  # Grove's auto-MNNVL opt-in/out annotation
MNNVL_NONE: Final = "none"

_SHARING: Final = (
    "Gangway does not create shared ResourceClaims (Grove's resource sharing); give the "
    "podSpec its own resourceClaims or leave this PodCliqueSet to Grove's operator"
)
_MNNVL: Final = (
    "Gangway does not create ComputeDomains (Grove's auto-MNNVL); remove the annotation, set "
    f'it to "{MNNVL_NONE}", or leave this PodCliqueSet to Grove\'s operator'
)


def missing_features(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """A field error for every Grove feature the PodCliqueSet asks for that Gangway lacks."""
    template = pcs.spec.template
    if template.resource_claim_templates:
        yield FieldError(field="spec.template.resourceClaimTemplates", reason=_SHARING)
    if template.resource_sharing:
        yield FieldError(field="spec.template.resourceSharing", reason=_SHARING)
    yield from _mnnvl("metadata.annotations", pcs.metadata.annotations)
    for i, clique in enumerate(template.cliques):
        if clique.resource_sharing:
            yield FieldError(field=field_path(*_CLIQUES, i, "resourceSharing"), reason=_SHARING)
        yield from _mnnvl(field_path(*_CLIQUES, i, "annotations"), clique.annotations)
    for i, group in enumerate(template.pod_clique_scaling_groups):
        if group.resource_sharing:
            yield FieldError(field=field_path(*_GROUPS, i, "resourceSharing"), reason=_SHARING)
        yield from _mnnvl(field_path(*_GROUPS, i, "annotations"), group.annotations)


def _mnnvl(where: str, annotations: dict[str, str]) -> Iterator[FieldError]:
    value = annotations.get(MNNVL_GROUP)
    if value is not None and value != MNNVL_NONE:
        yield FieldError(field=f"{where}[{MNNVL_GROUP}]", reason=_MNNVL)
