"""What the PodCliqueSet CRD schema cannot say, checked without the cluster.

Every rule is a pure function of the PodCliqueSet (and, for updates, its previous version)
giving field errors in the apiserver's form. The webhook and ``gangway validate`` run the
same functions, so a user reads the same message from kubectl and offline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

import msgspec

from gangway_admission.grove_features import missing_features
from gangway_admission.update_strategy import positive_duration, update_strategy_errors
from gangway_contracts.config import canonical_name, scheduler_name_of
from gangway_contracts.errors import FieldError, dns_label_reason, field_path, not_dns_labels
from gangway_contracts.grove import (
    EMPTY_OBJECT,
    AutoScalingConfig,
    PodCliqueSet,
    TopologyConstraint,
    topology_names,
)
from gangway_contracts.k8s import is_dns_label, is_label_value, is_qualified_name
from gangway_contracts.limits import Limits, over_limits
from gangway_contracts.podspec import pod_spec_errors, priority_class_of

# Grove's topology domains, broadest first: the order used when no ClusterTopologyBinding
# says otherwise (offline, or a PodCliqueSet that names none).
GROVE_DOMAINS: Final = ("region", "zone", "datacenter", "block", "rack", "host", "numa")

_CLIQUES: Final = ("spec", "template", "cliques")
_GROUPS: Final = ("spec", "template", "podCliqueScalingGroups")


@dataclass
class Findings:
    """Errors found, and the checks that could not run (with why), for the caller to say."""

    errors: list[FieldError] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_podcliqueset(
    pcs: PodCliqueSet, levels: Sequence[str] | None = None, limits: Limits | None = None
) -> Findings:
    """Every structural rule. ``levels``: the topology levels broadest first, from the
    ClusterTopologyBinding the PodCliqueSet names; None: Grove's domains. ``limits``: what
    one PodCliqueSet may make (None: the defaults)."""
    findings = Findings()
    findings.errors += [
        *_cliques(pcs),
        *_scaling_groups(pcs),
        *_counts(pcs),
        *_termination_delay(pcs),
        *over_limits(pcs, limits or Limits()),
        *_template_metadata(pcs),
        *_clique_specs(pcs),
        *_podcliqueset_name(pcs),
        *_generated_names(pcs),
        *_topology_names(pcs),
        *missing_features(pcs),
        *update_strategy_errors(pcs),
    ]
    _topology(pcs, levels, findings)
    findings.warnings += _clique_priorities(pcs)
    return findings


def check_update(old: PodCliqueSet, new: PodCliqueSet) -> list[FieldError]:
    """What may not change: the clique names, every clique's scheduler, and the scaling
    groups' composition (as Grove's webhook holds them)."""
    errors = []
    old_names = [c.name for c in old.spec.template.cliques]
    new_names = [c.name for c in new.spec.template.cliques]
    if sorted(old_names) != sorted(new_names):
        errors.append(
            FieldError(
                field=field_path(*_CLIQUES),
                reason=f"clique names are immutable: were [{', '.join(old_names)}], "
                f"now [{', '.join(new_names)}]; create a new PodCliqueSet instead",
            )
        )
    errors += _scaling_groups_kept(old, new)
    before = {c.name: _scheduler(c.spec.pod_spec) for c in old.spec.template.cliques}
    for i, clique in enumerate(new.spec.template.cliques):
        was = before.get(clique.name)
        now = _scheduler(clique.spec.pod_spec)
        if clique.name in before and was != now:
            errors.append(
                FieldError(
                    field=field_path(*_CLIQUES, i, "spec", "podSpec", "schedulerName"),
                    reason=f"is immutable: was {_shown(was)}, now {_shown(now)}",
                )
            )
    return errors


def _scaling_groups_kept(old: PodCliqueSet, new: PodCliqueSet) -> Iterator[FieldError]:
    """A scaling group's name, cliques and minAvailable decide which gangs exist and what
    their pods are called: changing them would remake the workload. Its replicas may
    change (that is scaling)."""

    def composition(pcs: PodCliqueSet) -> dict[str, tuple[list[str], int]]:
        return {
            g.name: (sorted(g.clique_names), g.min_available)
            for g in pcs.spec.template.pod_clique_scaling_groups
        }

    was, now = composition(old), composition(new)
    if sorted(was) != sorted(now):
        yield FieldError(
            field=field_path(*_GROUPS),
            reason=f"scaling groups cannot be added or removed: were [{', '.join(was)}], now "
            f"[{', '.join(now)}]; create a new PodCliqueSet instead",
        )
        return
    for i, group in enumerate(new.spec.template.pod_clique_scaling_groups):
        cliques, min_available = was[group.name]
        if sorted(group.clique_names) != cliques:
            yield FieldError(
                field=field_path(*_GROUPS, i, "cliqueNames"),
                reason=f"is immutable: was [{', '.join(cliques)}]",
            )
        if group.min_available != min_available:
            yield FieldError(
                field=field_path(*_GROUPS, i, "minAvailable"),
                reason=f"is immutable: was {min_available}",
            )


def _shown(scheduler: str | None) -> str:
    return f'"{scheduler}"' if scheduler else "unset"


def _scheduler(pod_spec: msgspec.Raw) -> str:
    return canonical_name(scheduler_name_of(pod_spec) or "")


def _clique_priorities(pcs: PodCliqueSet) -> Iterator[str]:
    """A clique's own priority class is replaced by the PodCliqueSet's (or by none), as Grove
    replaces it: said, so that nobody counts on it."""
    given = pcs.spec.template.priority_class_name
    for i, clique in enumerate(pcs.spec.template.cliques):
        own = priority_class_of(clique.spec.pod_spec)
        if own and own != given:
            yield (
                f'{field_path(*_CLIQUES, i, "spec", "podSpec", "priorityClassName")}: "{own}" '
                f"is replaced, as Grove replaces it: every pod gets "
                + (f'spec.template.priorityClassName ("{given}")' if given else "no priority class")
                + "; set spec.template.priorityClassName instead"
            )


def _termination_delay(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """A gang is recycled once below its minimum this long: a duration above zero (as
    Grove's webhook holds it; zero would recycle every gang at its first lost pod)."""
    text = pcs.spec.template.termination_delay
    if text is not None:
        yield from positive_duration("spec.template.terminationDelay", text)


def _at_least(where: str, value: int, minimum: int) -> Iterator[FieldError]:
    if value < minimum:
        yield FieldError(field=where, reason=f"must be >= {minimum}, is {value}")


def _min_available(where: str, min_available: int, replicas: int) -> Iterator[FieldError]:
    yield from _at_least(f"{where}.minAvailable", min_available, 1)
    if min_available > replicas:
        yield FieldError(
            field=f"{where}.minAvailable",
            reason=f"must be <= replicas ({replicas}), is {min_available}",
        )


def _counts(pcs: PodCliqueSet) -> Iterator[FieldError]:
    template = pcs.spec.template
    yield from _at_least("spec.replicas", pcs.spec.replicas, 0)
    for i, clique in enumerate(template.cliques):
        where = field_path(*_CLIQUES, i, "spec")
        spec = clique.spec
        yield from _at_least(f"{where}.replicas", spec.replicas, 1)
        if spec.min_available is not None:
            yield from _min_available(where, spec.min_available, spec.replicas)
        if spec.auto_scaling_config is not None:
            yield from _autoscaling(
                f"{where}.autoScalingConfig",
                spec.auto_scaling_config,
                spec.replicas,
                spec.replicas if spec.min_available is None else spec.min_available,
            )
    grouped = {n for g in template.pod_clique_scaling_groups for n in g.clique_names}
    for i, clique in enumerate(template.cliques):
        if clique.name in grouped and clique.spec.auto_scaling_config is not None:
            yield FieldError(
                field=field_path(*_CLIQUES, i, "spec", "autoScalingConfig"),
                reason=f'must not be set: "{clique.name}" scales with its scaling group '
                "(set the group's scaleConfig instead)",
            )
    for i, group in enumerate(template.pod_clique_scaling_groups):
        where = field_path(*_GROUPS, i)
        yield from _at_least(f"{where}.replicas", group.replicas, 1)
        yield from _min_available(where, group.min_available, group.replicas)
        if group.scale_config is not None:
            yield from _autoscaling(
                f"{where}.scaleConfig", group.scale_config, group.replicas, group.min_available
            )


def _autoscaling(
    where: str, config: AutoScalingConfig, replicas: int, min_available: int
) -> Iterator[FieldError]:
    """An autoscaler's bounds as Grove's webhook holds them: never below what a gang needs
    (that would break the gang), and room for the configured replicas."""
    fewest = replicas if config.min_replicas is None else config.min_replicas
    if fewest < min_available:
        yield FieldError(
            field=f"{where}.minReplicas",
            reason=f"must be >= minAvailable ({min_available}), is {fewest}",
        )
    if config.max_replicas < max(fewest, replicas):
        yield FieldError(
            field=f"{where}.maxReplicas",
            reason=f"must be >= minReplicas ({fewest}) and replicas ({replicas}), "
            f"is {config.max_replicas}",
        )


def _unique_labels(what: str, named: Sequence[tuple[str, str]]) -> Iterator[FieldError]:
    """Each name a DNS label, and no name twice."""
    first: dict[str, str] = {}
    for where, name in named:
        if not is_dns_label(name):
            yield FieldError(
                field=where,
                reason=f'"{name}" must be a DNS-1123 label (lowercase letters, digits and '
                f"'-', at most 63 characters): {what} names become pod labels and hostnames",
            )
        if name in first:
            yield FieldError(field=where, reason=f'Duplicate value: "{name}" (also {first[name]})')
        first.setdefault(name, where)


def _cliques(pcs: PodCliqueSet) -> Iterator[FieldError]:
    cliques = pcs.spec.template.cliques
    if not cliques:
        yield FieldError(field=field_path(*_CLIQUES), reason="must hold at least one clique")
    named = [(field_path(*_CLIQUES, i, "name"), c.name) for i, c in enumerate(cliques)]
    yield from _unique_labels("clique", named)
    known = {c.name for c in cliques}
    for i, clique in enumerate(cliques):
        seen: set[str] = set()
        for j, before in enumerate(clique.spec.starts_after):
            where = field_path(*_CLIQUES, i, "spec", "startsAfter", j)
            if before == clique.name:
                yield FieldError(field=where, reason=f'"{before}" cannot start after itself')
            elif before not in known:
                yield FieldError(field=where, reason=f'Not found: "{before}" (no such clique)')
            elif before in seen:
                yield FieldError(field=where, reason=f'Duplicate value: "{before}"')
            seen.add(before)
    yield from _startup_cycles(pcs)


def _startup_cycles(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """Cliques that start after each other in a circle would never start (as Grove's webhook,
    whatever the startup type)."""
    cliques = pcs.spec.template.cliques
    after = {c.name: [b for b in c.spec.starts_after if b != c.name] for c in cliques}
    index = {c.name: i for i, c in enumerate(cliques)}
    reported: set[frozenset[str]] = set()

    def circle_from(start: str) -> list[str] | None:
        path, on_path = [start], {start}
        stack = [iter(after.get(start, ()))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                on_path.discard(path.pop())
            elif nxt == start:
                return path
            elif nxt not in on_path and nxt in after:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(after[nxt]))
        return None

    for clique in cliques:
        circle = circle_from(clique.name)
        if circle is None or frozenset(circle) in reported:
            continue
        reported.add(frozenset(circle))
        shown = " -> ".join([*circle, circle[0]])
        yield FieldError(
            field=field_path(*_CLIQUES, index[clique.name], "spec", "startsAfter"),
            reason=f"must not be circular: {shown} would never start",
        )


def _topology_names(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """One topology per PodCliqueSet, as Grove resolves it: constraints that name one must
    name the same."""
    named = list(topology_names(pcs))
    for where, name in named[1:]:
        if name != named[0][1]:
            yield FieldError(
                field=where,
                reason=f'"{name}" differs from "{named[0][1]}" ({named[0][0]}): a PodCliqueSet '
                "is placed within one topology",
            )


# A name that also reads as "<group>-<replica>" or "<group>-<replica>-<clique>" would
# collide with the names a scaling group gives its replicas' pod groups.
def _shadows(name: str, group: str) -> bool:
    return bool(re.match(rf"^{re.escape(group)}-[0-9]+(-|$)", name))


def _scaling_groups(pcs: PodCliqueSet) -> Iterator[FieldError]:
    template = pcs.spec.template
    groups = template.pod_clique_scaling_groups
    named = [(field_path(*_GROUPS, i, "name"), g.name) for i, g in enumerate(groups)]
    yield from _unique_labels("scaling group", named)
    cliques = {c.name for c in template.cliques}
    member_of: dict[str, str] = {}
    for i, group in enumerate(groups):
        where = field_path(*_GROUPS, i, "cliqueNames")
        if not group.clique_names:
            yield FieldError(field=where, reason="must name at least one clique")
        for j, name in enumerate(group.clique_names):
            if name not in cliques:
                reason = f'Not found: "{name}" (no clique of that name)'
                yield FieldError(field=f"{where}[{j}]", reason=reason)
            elif name in member_of:
                reason = (
                    f'clique "{name}" is already in {member_of[name]}: '
                    "a clique belongs to one scaling group at most"
                )
                yield FieldError(field=f"{where}[{j}]", reason=reason)
            else:
                member_of[name] = f'scaling group "{group.name}"'
    clique_names = [
        (field_path(*_CLIQUES, i, "name"), c.name) for i, c in enumerate(template.cliques)
    ]
    for where, name in [*named, *clique_names]:
        for group in groups:
            if name != group.name and _shadows(name, group.name):
                yield FieldError(
                    field=where,
                    reason=f'"{name}" collides with the names scaling group "{group.name}" '
                    f'gives its replicas ("{group.name}-<replica>-<clique>"); rename one',
                )


def _clique_specs(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """Each clique's spec as the API server would judge it (the CRD requires roleName; a
    manifest checked offline has not met the CRD) and the pods made from its podSpec."""
    for i, clique in enumerate(pcs.spec.template.cliques):
        if not clique.spec.role_name:
            yield FieldError(
                field=field_path(*_CLIQUES, i, "spec", "roleName"),
                reason="Required value: the clique's role (the PodCliqueSet CRD requires it)",
            )
        given = clique.spec.pod_spec
        # The view fills a missing podSpec with {}: say it is missing, not that it is empty.
        raw = b"" if given is EMPTY_OBJECT else bytes(given)
        yield from pod_spec_errors(raw, field_path(*_CLIQUES, i, "spec", "podSpec"))


def _template_metadata(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """Labels and annotations copied onto pods: wrong ones would fail every pod create."""
    template = pcs.spec.template
    owners: list[tuple[str, dict[str, str], dict[str, str]]] = [
        (field_path(*_CLIQUES, i), c.labels, c.annotations) for i, c in enumerate(template.cliques)
    ]
    owners += [
        (field_path(*_GROUPS, i), {}, g.annotations)
        for i, g in enumerate(template.pod_clique_scaling_groups)
    ]
    rule = "[prefix/]name, the name at most 63 letters, digits, '-', '_' or '.'"
    for where, labels, notes in owners:
        for key, value in labels.items():
            if not is_qualified_name(key):
                yield FieldError(field=f"{where}.labels", reason=f'key "{key}" must read {rule}')
            if not is_label_value(value):
                yield FieldError(
                    field=f"{where}.labels[{key}]",
                    reason=f'"{value}" must be at most 63 letters, digits, '
                    "'-', '_' or '.', beginning and ending with a letter or digit",
                )
        for key in notes:
            if not is_qualified_name(key):
                reason = f'key "{key}" must read {rule}'
                yield FieldError(field=f"{where}.annotations", reason=reason)


def _podcliqueset_name(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """The PodCliqueSet's name starts every pod's, gang's and Service's: a DNS label."""
    name = pcs.metadata.name
    if not is_dns_label(name):
        yield FieldError(field="metadata.name", reason=dns_label_reason(name))


def _generated_names(pcs: PodCliqueSet) -> Iterator[FieldError]:
    """Pod names at the highest replica indices: the longest name each clique gets, and the
    longest of everything named after it (PodGang, pod group). Pod names become label values
    and hostnames, so each must be a DNS label. Checked for at least one PodCliqueSet
    replica, since replicas can grow through the scale subresource."""
    template = pcs.spec.template
    if not is_dns_label(pcs.metadata.name):
        return  # said of metadata.name itself
    cliques = {c.name: c for c in template.cliques}
    prefix = f"{pcs.metadata.name}-{max(pcs.spec.replicas, 1) - 1}"
    grouped = {name for g in template.pod_clique_scaling_groups for name in g.clique_names}
    pods: list[tuple[str, str]] = [
        (field_path(*_CLIQUES, i, "name"), f"{prefix}-{c.name}-{max(c.spec.replicas, 1) - 1}")
        for i, c in enumerate(template.cliques)
        if c.name not in grouped and is_dns_label(c.name)
    ]
    for i, group in enumerate(template.pod_clique_scaling_groups):
        replica = f"{prefix}-{group.name}-{max(group.replicas, 1) - 1}"
        pods += [
            (
                field_path(*_GROUPS, i, "cliqueNames", j),
                f"{replica}-{name}-{max(cliques[name].spec.replicas, 1) - 1}",
            )
            for j, name in enumerate(group.clique_names)
            if name in cliques and is_dns_label(name) and is_dns_label(group.name)
        ]
    yield from not_dns_labels("pod name", pods)


def _topology(pcs: PodCliqueSet, levels: Sequence[str] | None, findings: Findings) -> None:
    """A child's required pack level may not be broader than its parent's: a clique inside
    a rack-packed gang cannot ask for a zone."""
    order = list(levels) if levels is not None else list(GROVE_DOMAINS)
    source = "the ClusterTopologyBinding's levels" if levels is not None else "Grove's domains"
    template = pcs.spec.template
    top = ("spec.template.topologyConstraint", template.topology_constraint)
    group_of: dict[str, tuple[str, TopologyConstraint | None]] = {}
    for i, group in enumerate(template.pod_clique_scaling_groups):
        here = (field_path(*_GROUPS, i, "topologyConstraint"), group.topology_constraint)
        _nested(here, top, order, source, findings)
        for name in group.clique_names:
            group_of.setdefault(name, here)
    for i, clique in enumerate(template.cliques):
        here = (field_path(*_CLIQUES, i, "topologyConstraint"), clique.topology_constraint)
        parent = group_of.get(clique.name, top)
        # A clique in a group with no constraint of its own is bounded by the PodCliqueSet's.
        _nested(here, parent if parent[1] is not None else top, order, source, findings)


def _nested(
    child: tuple[str, TopologyConstraint | None],
    parent: tuple[str, TopologyConstraint | None],
    order: list[str],
    source: str,
    findings: Findings,
) -> None:
    (child_field, child_constraint), (parent_field, parent_constraint) = child, parent
    inner = child_constraint.required if child_constraint else None
    outer = parent_constraint.required if parent_constraint else None
    if inner is None or outer is None:
        return
    unknown = [level for level in (inner, outer) if level not in order]
    if unknown:
        findings.skipped.append(
            f"{child_field}: nesting under {parent_field} not checked: level "
            f'"{unknown[0]}" is not among {source} ({", ".join(order) or "none"})'
        )
        return
    if order.index(inner) < order.index(outer):
        findings.errors.append(
            FieldError(
                field=f"{child_field}.pack.required",
                reason=f'"{inner}" is broader than "{outer}" required by {parent_field}: '
                "a part must be packed at least as tightly as the whole",
            )
        )
