"""Grove's update API, held as Grove's webhook holds it, plus what Gangway does not roll.

- ``Coherent`` is in Grove's API, but its behaviour is still a draft there (Grove #649, epic
  #776): the CRD stores it, admission refuses it by field, and podgang never rolls it as
  something else.
- ``rollingUpdate`` belongs to a standalone clique or to a scaling group (a grouped clique is
  rolled as its group says), and to the rolling strategies only (not OnDelete).
- ``maxUnavailable`` is a count of at least 1 or a percentage; ``progressDeadline`` a
  duration above zero.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from gangway_contracts import durations
from gangway_contracts.errors import FieldError, field_path
from gangway_contracts.grove import (
    COHERENT,
    ON_DELETE,
    PodCliqueSet,
    RollingUpdateConfiguration,
    max_unavailable_error,
)

_CLIQUES: Final = ("spec", "template", "cliques")
_GROUPS: Final = ("spec", "template", "podCliqueScalingGroups")

_COHERENT: Final = (
    "Coherent is stored but not rolled: Grove has not settled how it behaves (Grove #649, "
    "epic #776); use RollingRecreate (rolled gang by gang within each component's "
    "rollingUpdate.maxUnavailable) or OnDelete"
)
_ON_DELETE: Final = (
    "applies to RollingRecreate only; remove it under OnDelete (as Grove's webhook requires)"
)


def update_strategy_errors(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """A field error for every update setting that Grove refuses or Gangway does not roll."""
    strategy = pcs.spec.update_strategy
    kind = strategy.type if strategy else None
    if kind == COHERENT:
        yield FieldError(field="spec.updateStrategy.type", reason=_COHERENT)
    template = pcs.spec.template
    grouped = {
        name: group.name
        for group in template.pod_clique_scaling_groups
        for name in group.clique_names
    }
    for i, clique in enumerate(template.cliques):
        if clique.rolling_update is None:
            continue
        where = field_path(*_CLIQUES, i, "rollingUpdate")
        if clique.name in grouped:
            yield FieldError(
                field=where,
                reason=f"clique {clique.name} is rolled as its scaling group "
                f"{grouped[clique.name]} says: set rollingUpdate on the group",
            )
        yield from _configuration(where, clique.rolling_update, kind)
    for i, group in enumerate(template.pod_clique_scaling_groups):
        if group.rolling_update is not None:
            where = field_path(*_GROUPS, i, "rollingUpdate")
            yield from _configuration(where, group.rolling_update, kind)


def _configuration(
    where: str, config: RollingUpdateConfiguration, kind: str | None
) -> Iterator[FieldError]:
    if kind == ON_DELETE:
        yield FieldError(field=where, reason=_ON_DELETE)
    if config.max_unavailable is not None:
        why = max_unavailable_error(config.max_unavailable)
        if why is not None:
            yield FieldError(field=f"{where}.maxUnavailable", reason=why)
    if config.progress_deadline is not None:
        yield from positive_duration(f"{where}.progressDeadline", config.progress_deadline)


def positive_duration(where: str, text: str) -> Iterator[FieldError]:
    """A duration above zero (``4h``, ``90s``), or why not."""
    try:
        found = durations.seconds(text)
    except ValueError as exc:
        yield FieldError(field=where, reason=str(exc))
        return
    if found <= 0:
        yield FieldError(field=where, reason=f'must be greater than 0 (such as "4h"), is "{text}"')
