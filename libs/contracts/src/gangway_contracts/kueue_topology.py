"""Kueue's topology-aware scheduling for whole gangs: what the Kueue stage, podgang and
admission agree on when ``kueue.topology`` is on.

Kueue then chooses *where* as well as *whether now*: each podSet of a gang's Workload asks
for the domain its pack constraint names, Kueue admits the Workload only where a domain has
room, and the stage writes Kueue's choice onto each gated pod (the node labels of its
domain as a nodeSelector, and Kueue's topology annotation, which keeps Kueue from counting
the pod a second time as usage outside its Workloads) before it says ``QueueAdmitted``
with :data:`TOPOLOGY_ASSIGNED`. podgang keeps a pod of such a gang gated until it carries
its domain (a pod made again later waits for the stage).

Kueue keeps podSets in one domain only as a leader and its workers: a ``podSetGroupName``
joins at most two podSets, one of them a single pod. So a pack constraint over one podgroup
is always expressible, over two when one of them is a single pod (a leader clique and its
workers, Dynamo's multinode shape), and over more not at all: :func:`requests` says which,
and admission refuses the rest by field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from gangway_contracts.errors import FieldError
from gangway_contracts.grove import (
    PackConstraint,
    PodCliqueSet,
    PodGang,
    PodGangTopologyConstraint,
    TopologyConstraint,
)

# QueueAdmitted's reason when Kueue admitted the gang and chose its domains.
TOPOLOGY_ASSIGNED: Final = "TopologyAssigned"
# Kueue's annotations of a pod it placed on a domain, by the kind of request.
REQUIRED: Final = "kueue.x-k8s.io/podset-required-topology"
PREFERRED: Final = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED: Final = "kueue.x-k8s.io/podset-unconstrained-topology"
ANNOTATIONS: Final = (REQUIRED, PREFERRED, UNCONSTRAINED)
# The podSetGroupName of a whole gang's pack constraint (a group config's is its name).
GANG: Final = "gang"


class Unexpressible(ValueError):
    """A gang's packing Kueue cannot be asked for; ``field`` says where it comes from."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class Request:
    """One podSet's topology request: the level (a node label key once written on a
    PodGang; a level name in a PodCliqueSet) its pods must, or should, share, and the
    podSet group it is kept in one domain with."""

    level: str
    required: bool
    group: str | None = None

    def annotation(self) -> tuple[str, str]:
        """Kueue's annotation for a pod placed under this request."""
        return (REQUIRED if self.required else PREFERRED), self.level


@dataclass(frozen=True)
class Pack:
    """One pack constraint of a gang: its podgroups, the level, where it comes from."""

    name: str
    members: tuple[str, ...]
    level: str
    required: bool
    field: str


def given(annotations: Mapping[str, str]) -> bool:
    """The pod carries the domain Kueue chose for it (the stage wrote both at once)."""
    return any(name in annotations for name in ANNOTATIONS)


def requests(counts: Mapping[str, int], packs: Sequence[Pack]) -> dict[str, Request]:
    """Podgroup name → its podSet's request, for a gang of ``counts`` pods per podgroup
    packed by ``packs``; Unexpressible when Kueue cannot keep a pack in one domain, or a
    podgroup would need two requests."""
    found: dict[str, Request] = {}
    for pack in packs:
        members = [m for m in pack.members if m in counts]
        if len(members) > 2 or (len(members) == 2 and min(counts[m] for m in members) > 1):
            shape = ", ".join(f"{m} ({counts[m]} pods)" for m in members)
            raise Unexpressible(
                pack.field,
                f"packs {shape} into one {pack.level}: Kueue keeps podSets in one domain "
                "only as a leader of one pod and its workers (turn kueue.topology off to "
                "have the scheduler pack them)",
            )
        group = pack.name if len(members) == 2 else None
        for member in members:
            before = found.get(member)
            if before is None:
                found[member] = Request(pack.level, pack.required, group)
                continue
            if before.level != pack.level:
                raise Unexpressible(
                    pack.field,
                    f"podgroup {member} is packed into both {before.level} and {pack.level}: "
                    "Kueue takes one topology request per podSet",
                )
            # Two packs at one level: required if either is, kept with its podSet group.
            found[member] = Request(
                pack.level, before.required or pack.required, before.group or group
            )
    return found


def _pack(
    name: str,
    members: tuple[str, ...],
    levels: PackConstraint | TopologyConstraint | None,
    field: str,
) -> list[Pack]:
    """The pack constraint over ``members`` as a Pack, if it names a level: a PodGang's
    (node label keys) or a PodCliqueSet's (level names); required wins over preferred."""
    level = (levels.required or levels.preferred) if levels else None
    if levels is None or level is None:
        return []
    return [Pack(name, members, level, levels.required is not None, field)]


def _pack_constraint(constraint: PodGangTopologyConstraint | None) -> PackConstraint | None:
    return constraint.pack_constraint if constraint else None


def podgang_requests(podgang: PodGang) -> dict[str, Request]:
    """Podgroup name → its podSet's request, from the PodGang's pack constraints (node
    label keys); Unexpressible as :func:`requests`."""
    spec = podgang.spec
    counts = {g.name: len(g.pod_references) for g in spec.podgroups}
    packs = [
        *(
            p
            for g in spec.podgroups
            for p in _pack(
                g.name,
                (g.name,),
                _pack_constraint(g.topology_constraint),
                f"spec.podgroups[{g.name}]",
            )
        ),
        *(
            p
            for c in spec.topology_constraint_group_configs
            for p in _pack(
                c.name,
                tuple(c.pod_group_names),
                _pack_constraint(c.topology_constraint),
                f"spec.topologyConstraintGroupConfigs[{c.name}]",
            )
        ),
        *_pack(
            GANG,
            tuple(counts),
            _pack_constraint(spec.topology_constraint),
            "spec.topologyConstraint",
        ),
    ]
    return requests(counts, packs)


def pcs_problems(pcs: PodCliqueSet) -> list[FieldError]:
    """Why Kueue cannot pack this PodCliqueSet's gangs as it asks, by field (admission's
    check; the stage checks each PodGang again, as the replicas it was scaled to give it)."""
    template = pcs.spec.template
    cliques = {c.name: (i, c) for i, c in enumerate(template.cliques)}
    grouped = {n for g in template.pod_clique_scaling_groups for n in g.clique_names}
    gang_field = "spec.template.topologyConstraint"

    def clique_packs(podgroup: str, clique: str) -> list[Pack]:
        i, found = cliques[clique]
        field = f"spec.template.cliques[{i}].topologyConstraint"
        return _pack(podgroup, (podgroup,), found.topology_constraint, field)

    def replica(g: int, r: int) -> tuple[dict[str, int], list[Pack]]:
        group = template.pod_clique_scaling_groups[g]
        names = {f"{group.name}-{r}-{n}": n for n in group.clique_names if n in cliques}
        counts = {podgroup: cliques[n][1].spec.replicas for podgroup, n in names.items()}
        field = f"spec.template.podCliqueScalingGroups[{g}].topologyConstraint"
        packs = [p for podgroup, n in names.items() for p in clique_packs(podgroup, n)]
        packs += _pack(f"{group.name}-{r}", tuple(names), group.topology_constraint, field)
        return counts, packs

    shapes: list[tuple[dict[str, int], list[Pack]]] = []
    base = {n: c.spec.replicas for n, (_, c) in cliques.items() if n not in grouped}
    base_packs = [p for n in base for p in clique_packs(n, n)]
    for g, group in enumerate(template.pod_clique_scaling_groups):
        for r in range(group.min_available):
            counts, packs = replica(g, r)
            base.update(counts)
            base_packs += packs
        if group.replicas > group.min_available:
            shapes.append(replica(g, group.min_available))
    shapes.insert(0, (base, base_packs))
    errors: dict[str, str] = {}
    for counts, packs in shapes:
        whole = _pack(GANG, tuple(counts), template.topology_constraint, gang_field)
        try:
            requests(counts, [*packs, *whole])
        except Unexpressible as exc:
            errors.setdefault(exc.field, exc.reason)
    return [FieldError(field=f, reason=r) for f, r in errors.items()]
