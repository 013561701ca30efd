"""Which PodCliques and PodCliqueScalingGroups to write, and what their status says, as
Grove's operator keeps them. Pure.

- one PodClique per clique instance (a planned podgroup: ``<pcs>-<r>-<clique>``, or
  ``<pcs>-<r>-<group>-<g>-<clique>`` in scaling-group replica ``g``), owned by the
  PodCliqueSet, or by its scaling group when it is a member (made once the group is there);
- one PodCliqueScalingGroup per scaling group of each replica (``<pcs>-<r>-<group>``), owned
  by the PodCliqueSet;
- their spec follows the template (its hash in Grove's pod-template-hash label); made and
  set back with their gang's writes (:func:`cliques_to_write`);
- their status is counted from the pods the read model holds and written once a reconcile
  has done its writes (:func:`statuses_to_write`), when a count or a condition changed, a
  condition's transition time kept while its status holds: never in a gang's way;
- those of replicas or scaling-group replicas no longer planned are deleted.

Pods stay owned by their PodGang (deleting a PodClique takes no pod with it): the gang, not
the clique, is what Gangway creates and recycles whole.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from gangway_contracts import labels
from gangway_contracts.cliques import (
    CLIQUE_API_VERSION,
    COMPONENT_GROUP_PODCLIQUE,
    COMPONENT_PODCLIQUE,
    COMPONENT_SCALING_GROUP,
    INSUFFICIENT_AVAILABLE_REPLICAS,
    INSUFFICIENT_READY_PODS,
    INSUFFICIENT_SCHEDULED_PODS,
    MIN_AVAILABLE_BREACHED,
    PODCLIQUE_SCHEDULED,
    SCHEDULED_BELOW_MIN_AVAILABLE,
    SUFFICIENT_AVAILABLE_REPLICAS,
    SUFFICIENT_READY_PODS,
    SUFFICIENT_SCHEDULED_PODS,
    PodCliqueScalingGroupSpec,
    PodCliqueScalingGroupStatus,
    PodCliqueStatus,
)
from gangway_contracts.codec import to_object
from gangway_contracts.grove import PodCliqueScalingGroupConfig, PodCliqueSet
from gangway_contracts.k8s import Condition, ObjectMeta, Wire
from gangway_contracts.subjects import Kind
from gangway_podgang.compact import PodRecord
from gangway_podgang.manifests import (
    controlled_by,
    owner_reference,
    podcliqueset_owner,
    replica_labels,
)
from gangway_podgang.plan import Plan, PlannedPodGroup


class CliqueSpecView(Wire, frozen=True, kw_only=True):
    replicas: int = 0
    min_available: int | None = None


class PodCliqueView(Wire, frozen=True, kw_only=True):
    """A PodClique as podgang reads it: not its pod spec (its template hash label says
    which template it holds)."""

    metadata: ObjectMeta
    spec: CliqueSpecView = CliqueSpecView()
    status: PodCliqueStatus | None = None


class ScalingGroupView(Wire, frozen=True, kw_only=True):
    metadata: ObjectMeta
    spec: PodCliqueScalingGroupSpec = PodCliqueScalingGroupSpec()
    status: PodCliqueScalingGroupStatus | None = None


@dataclass(frozen=True)
class CliqueWrite:
    """One PodClique or scaling group to create or to set back to the template."""

    kind: str  # Kind.PODCLIQUE or Kind.PODCLIQUESCALINGGROUP
    name: str
    namespace: str
    create: dict[str, Any] | None = None  # the manifest, when it does not exist
    spec: dict[str, Any] | None = None  # a merge patch of labels and spec, when drifted


@dataclass(frozen=True)
class CliqueDelete:
    kind: str
    name: str
    namespace: str
    uid: str  # the one decided on: a namesake made since is left alone
    gang: str = ""  # the gang it goes with, when deleted in a gang's round


def _selector(pcs: PodCliqueSet, key: str, value: str) -> str:
    return (
        f"{labels.MANAGED_BY}={labels.MANAGED_BY_GANGWAY},"
        f"{labels.PART_OF}={pcs.metadata.name},{key}={value}"
    )


def _condition(
    type_: str, holds: bool, reason: str, message: str, *, live: list[Condition], now: str
) -> Condition:
    """A condition, its transition time kept from ``live`` while its status holds."""
    status = "True" if holds else "False"
    before = next((c for c in live if c.type == type_), None)
    since = before.last_transition_time if before and before.status == status else now
    return Condition(
        type=type_, status=status, reason=reason, message=message, last_transition_time=since
    )


def clique_status(
    pcs: PodCliqueSet,
    group: PlannedPodGroup,
    pods: Mapping[str, PodRecord],
    live: PodCliqueView | None,
    now: str,
) -> PodCliqueStatus:
    """Grove's counts and conditions for one clique instance, from its planned pods."""
    found = [p for name in group.pods if (p := pods.get(name)) is not None and not p.deleting]
    scheduled = sum(1 for p in found if p.is_scheduled)
    failed = sum(1 for p in found if p.unavailable)  # placed, yet neither ready nor starting
    minimum = group.min_replicas
    before = list(live.status.conditions) if live and live.status else []
    if scheduled < minimum:
        breach = (True, SCHEDULED_BELOW_MIN_AVAILABLE)
        said = f"Scheduled replicas ({scheduled}) below MinAvailable ({minimum})"
    elif scheduled - failed < minimum:
        breach = (True, INSUFFICIENT_READY_PODS)
        said = (
            "Insufficient ready or starting pods. expected at least: "
            f"{minimum}, found: {scheduled - failed}"
        )
    else:
        breach = (False, SUFFICIENT_READY_PODS)
        said = (
            "Either sufficient ready or starting pods found. expected at least: "
            f"{minimum}, found: {scheduled - failed}"
        )
    enough = scheduled >= minimum
    placed = (
        f"{'Sufficient' if enough else 'Insufficient'} scheduled pods"
        f"{' found' if enough else ''}. expected at least: {minimum}, found: {scheduled}"
    )
    return PodCliqueStatus(
        observed_generation=live.metadata.generation if live else None,
        replicas=len(found),
        ready_replicas=sum(1 for p in found if p.ready),
        updated_replicas=sum(1 for p in found if p.template_hash in (None, group.template_hash)),
        schedule_gated_replicas=sum(
            1 for p in found if p.is_gated(labels.PODGANG_PENDING_CREATION_GATE)
        ),
        scheduled_replicas=scheduled,
        hpa_pod_selector=_selector(pcs, labels.PODCLIQUE, group.name),
        current_pod_template_hash=group.template_hash,
        conditions=[
            _condition(
                PODCLIQUE_SCHEDULED,
                enough,
                SUFFICIENT_SCHEDULED_PODS if enough else INSUFFICIENT_SCHEDULED_PODS,
                placed,
                live=before,
                now=now,
            ),
            _condition(MIN_AVAILABLE_BREACHED, breach[0], breach[1], said, live=before, now=now),
        ],
    )


def _breached(status: PodCliqueStatus) -> bool:
    return any(c.type == MIN_AVAILABLE_BREACHED and c.status == "True" for c in status.conditions)


def _scheduled(status: PodCliqueStatus) -> bool:
    return any(c.type == PODCLIQUE_SCHEDULED and c.status == "True" for c in status.conditions)


def group_status(
    pcs: PodCliqueSet,
    name: str,
    spec: PodCliqueScalingGroupSpec,
    members: Mapping[int, list[tuple[PlannedPodGroup, PodCliqueStatus]]],
    *,
    live: ScalingGroupView | None,
    now: str,
) -> PodCliqueScalingGroupStatus:
    """Grove's counts and its MinAvailableBreached for one scaling group, from its members'
    statuses by scaling-group replica."""
    available = sum(1 for m in members.values() if not any(_breached(s) for _, s in m))
    enough = available >= spec.min_available
    before = list(live.status.conditions) if live and live.status else []
    said = (
        f"{'Sufficient' if enough else 'Insufficient'} PodCliqueScalingGroup ready replicas, "
        f"expected at least: {spec.min_available}, found: {available}"
    )
    reason = SUFFICIENT_AVAILABLE_REPLICAS if enough else INSUFFICIENT_AVAILABLE_REPLICAS
    return PodCliqueScalingGroupStatus(
        observed_generation=live.metadata.generation if live else None,
        replicas=spec.replicas,
        scheduled_replicas=sum(1 for m in members.values() if all(_scheduled(s) for _, s in m)),
        available_replicas=available,
        updated_replicas=sum(
            1 for m in members.values() if all(s.updated_replicas == len(g.pods) for g, s in m)
        ),
        selector=_selector(pcs, labels.SCALING_GROUP, name),
        conditions=[
            _condition(MIN_AVAILABLE_BREACHED, not enough, reason, said, live=before, now=now)
        ],
    )


def podclique_manifest(
    pcs: PodCliqueSet, gang: str, replica: int, group: PlannedPodGroup, owner: dict[str, Any]
) -> dict[str, Any]:
    """A clique instance's PodClique: Grove's labels (its gang, its template's hash, its
    scaling group), the template's spec (startup order is not provided: no startsAfter)."""
    component = COMPONENT_PODCLIQUE if group.scaling_group is None else COMPONENT_GROUP_PODCLIQUE
    own = {
        **replica_labels(pcs, replica, component),
        labels.PODGANG: gang,
        labels.POD_TEMPLATE_HASH: group.template_hash,
    }
    if group.scaling_group is not None:
        own[labels.SCALING_GROUP] = group.scaling_group
        own[labels.SCALING_GROUP_REPLICA_INDEX] = str(group.scaling_group_replica)
    template = group.clique.spec
    return {
        "apiVersion": CLIQUE_API_VERSION,
        "kind": "PodClique",
        "metadata": {
            "name": group.name,
            "namespace": pcs.metadata.namespace,
            "labels": own,
            "annotations": _made_from(template.replicas),
            "ownerReferences": [owner],
        },
        "spec": {
            "roleName": template.role_name,
            "replicas": len(group.pods),  # the template's, or what its /scale set
            "minAvailable": group.min_replicas,
            "podSpec": msgspec.json.decode(template.pod_spec),
        },
    }


def _made_from(template_replicas: int) -> dict[str, str]:
    """The annotation that tells a scale from the template (``scaling.py``)."""
    return {labels.TEMPLATE_REPLICAS_ANNOTATION: str(template_replicas)}


def scaling_group_manifest(
    pcs: PodCliqueSet, replica: int, name: str, spec: PodCliqueScalingGroupSpec
) -> dict[str, Any]:
    meta = pcs.metadata
    return {
        "apiVersion": CLIQUE_API_VERSION,
        "kind": "PodCliqueScalingGroup",
        "metadata": {
            "name": name,
            "namespace": meta.namespace,
            "labels": replica_labels(pcs, replica, COMPONENT_SCALING_GROUP),
            "annotations": _made_from(_group_config(pcs, name).replicas),
            "ownerReferences": [podcliqueset_owner(pcs)],
        },
        "spec": to_object(spec),
    }


def planned_objects(pcs: PodCliqueSet, plan: Plan, gang: str) -> list[dict[str, Any]]:
    """The scaling groups and PodCliques one planned gang brings, as ``gangway plan --pods``
    shows them (offline: the owners' uids are not known yet)."""
    found: list[dict[str, Any]] = []
    planned = next(g for g in plan.gangs if g.name == gang)
    if planned.is_base:
        for config in pcs.spec.template.pod_clique_scaling_groups:
            name = f"{gang}-{config.name}"
            spec = _group_spec(pcs, name, plan)
            found.append(scaling_group_manifest(pcs, planned.pcs_replica, name, spec))
    for group in planned.podgroups:
        if group.scaling_group is None:
            owner = podcliqueset_owner(pcs)
        else:
            kind = "PodCliqueScalingGroup"
            owner = owner_reference(CLIQUE_API_VERSION, kind, group.scaling_group, "")
        found.append(podclique_manifest(pcs, gang, planned.pcs_replica, group, owner))
    return found


def cliques_to_write(
    pcs: PodCliqueSet,
    plan: Plan,
    *,
    cliques: Mapping[str, PodCliqueView],
    groups: Mapping[str, ScalingGroupView],
) -> tuple[tuple[CliqueWrite, ...], tuple[CliqueDelete, ...]]:
    """(PodCliques and scaling groups to create or set back to the template; those no
    longer planned). Their status is not here: see :func:`statuses_to_write`."""
    rules = _Rules(pcs, plan, cliques, groups)
    wanted: set[str] = set()
    for gang in plan.gangs:
        for group in gang.podgroups:
            wanted.add(group.name)
            if group.scaling_group is not None:
                wanted.add(group.scaling_group)
            live = cliques.get(group.name)
            if live is not None and not rules.ours(live.metadata):
                continue  # a namesake of another PodCliqueSet, on its way out
            rules.clique(gang.name, gang.pcs_replica, group, live)
    groups_planned = {g.scaling_group for gang in plan.gangs for g in gang.podgroups}
    for name in sorted(n for n in groups_planned if n is not None):
        rules.scaling_group(name)
    rules.stale(wanted)
    return tuple(rules.writes), tuple(rules.deletes)


@dataclass(frozen=True)
class StatusWrite:
    kind: str
    name: str
    namespace: str
    status: dict[str, Any]


def statuses_to_write(
    pcs: PodCliqueSet,
    plan: Plan,
    *,
    cliques: Mapping[str, PodCliqueView],
    groups: Mapping[str, ScalingGroupView],
    pods: Mapping[str, PodRecord],
    now: str,
) -> list[StatusWrite]:
    """The status of every PodClique and scaling group the model holds for this
    PodCliqueSet whose counts or conditions moved: written once a reconcile has done its
    writes, never in a gang's way."""
    rules = _Rules(pcs, plan, cliques, groups)
    ns = pcs.metadata.namespace
    found: list[StatusWrite] = []
    members: dict[str, dict[int, list[tuple[PlannedPodGroup, PodCliqueStatus]]]] = {}
    for gang in plan.gangs:
        for group in gang.podgroups:
            live = cliques.get(group.name)
            status = clique_status(pcs, group, pods, live, now)
            if group.scaling_group is not None:
                by_replica = members.setdefault(group.scaling_group, {})
                by_replica.setdefault(group.scaling_group_replica or 0, []).append((group, status))
            if live is not None and rules.ours(live.metadata) and status != live.status:
                found.append(StatusWrite(Kind.PODCLIQUE, group.name, ns, to_object(status)))
    for name, by_replica in members.items():
        live_group = groups.get(name)
        if live_group is None or not controlled_by(live_group.metadata, pcs.metadata.uid):
            continue
        spec = _group_spec(pcs, name, plan)
        desired = group_status(pcs, name, spec, by_replica, live=live_group, now=now)
        if desired != live_group.status:
            found.append(StatusWrite(Kind.PODCLIQUESCALINGGROUP, name, ns, to_object(desired)))
    return found


def _base_of(pcs: PodCliqueSet, group_name: str) -> str:
    """``<pcs>-<r>`` of a scaling group's full name ``<pcs>-<r>-<group>``."""
    replica = group_name.removeprefix(f"{pcs.metadata.name}-").split("-", 1)[0]
    return f"{pcs.metadata.name}-{replica}"


def _group_config(pcs: PodCliqueSet, name: str) -> PodCliqueScalingGroupConfig:
    base = _base_of(pcs, name)
    return next(
        g for g in pcs.spec.template.pod_clique_scaling_groups if name == f"{base}-{g.name}"
    )


def _group_spec(pcs: PodCliqueSet, name: str, plan: Plan) -> PodCliqueScalingGroupSpec:
    """A scaling group's spec as planned: its replicas the template's, or its /scale's."""
    config = _group_config(pcs, name)
    return PodCliqueScalingGroupSpec(
        replicas=plan.scales.get(name, config.replicas),
        min_available=config.min_available,
        clique_names=list(config.clique_names),
    )


def _every_field(spec: PodCliqueScalingGroupSpec) -> dict[str, Any]:
    """The spec with its defaults named too: a merge patch changes only the fields it
    names, and a group scaled in to 1 replica (the default) would otherwise stay at 2."""
    return {
        "replicas": spec.replicas,
        "minAvailable": spec.min_available,
        "cliqueNames": list(spec.clique_names),
    }


@dataclass
class _Rules:
    pcs: PodCliqueSet
    plan: Plan
    cliques: Mapping[str, PodCliqueView]
    groups: Mapping[str, ScalingGroupView]
    writes: list[CliqueWrite] = field(default_factory=list)
    deletes: list[CliqueDelete] = field(default_factory=list)

    def __post_init__(self) -> None:
        uid = self.pcs.metadata.uid
        # Its scaling groups' uids, once: every PodClique of a group is checked against them.
        self._group_uids = {
            g.metadata.uid for g in self.groups.values() if controlled_by(g.metadata, uid)
        }

    def ours(self, meta: ObjectMeta) -> bool:
        """Made for this PodCliqueSet: controlled by it, or by one of its scaling groups."""
        if controlled_by(meta, self.pcs.metadata.uid):
            return True
        return any(ref.controller and ref.uid in self._group_uids for ref in meta.owner_references)

    def clique(
        self, gang: str, replica: int, group: PlannedPodGroup, live: PodCliqueView | None
    ) -> None:
        pcs, ns = self.pcs, self.pcs.metadata.namespace
        if live is None:
            owner = self._owner_of(group)
            if owner is None:
                return  # made once its scaling group is (it owns it)
            manifest = podclique_manifest(pcs, gang, replica, group, owner)
            self.writes.append(CliqueWrite(Kind.PODCLIQUE, group.name, ns, create=manifest))
            return
        made_from = _made_from(group.clique.spec.replicas)
        if (
            live.metadata.labels.get(labels.POD_TEMPLATE_HASH) != group.template_hash
            or live.spec.replicas != len(group.pods)
            or live.spec.min_available != group.min_replicas
            or not made_from.items() <= live.metadata.annotations.items()
        ):
            desired = podclique_manifest(pcs, gang, replica, group, {})
            changed = {
                "metadata": {
                    "labels": {labels.POD_TEMPLATE_HASH: group.template_hash},
                    "annotations": made_from,
                },
                "spec": desired["spec"],
            }
            self.writes.append(CliqueWrite(Kind.PODCLIQUE, group.name, ns, spec=changed))

    def _owner_of(self, group: PlannedPodGroup) -> dict[str, Any] | None:
        if group.scaling_group is None:
            return podcliqueset_owner(self.pcs)
        parent = self.groups.get(group.scaling_group)
        if parent is None:
            return None
        group_meta = parent.metadata
        kind = "PodCliqueScalingGroup"
        return owner_reference(CLIQUE_API_VERSION, kind, group_meta.name, group_meta.uid)

    def scaling_group(self, name: str) -> None:
        pcs = self.pcs
        meta = pcs.metadata
        base = _base_of(pcs, name)
        spec = _group_spec(pcs, name, self.plan)
        made_from = _made_from(_group_config(pcs, name).replicas)
        live = self.groups.get(name)
        kind, ns = Kind.PODCLIQUESCALINGGROUP, meta.namespace
        if live is None:
            replica = int(base.rsplit("-", 1)[1])
            manifest = scaling_group_manifest(pcs, replica, name, spec)
            self.writes.append(CliqueWrite(kind, name, ns, create=manifest))
        elif controlled_by(live.metadata, meta.uid) and (
            live.spec != spec or not made_from.items() <= live.metadata.annotations.items()
        ):
            changed = {"metadata": {"annotations": made_from}, "spec": _every_field(spec)}
            self.writes.append(CliqueWrite(kind, name, ns, spec=changed))

    def stale(self, wanted: Collection[str]) -> None:
        """Those of replicas, or scaling-group replicas, no longer planned."""
        ns = self.pcs.metadata.namespace
        found: list[tuple[str, PodCliqueView | ScalingGroupView]] = [
            *((Kind.PODCLIQUE, c) for c in self.cliques.values()),
            *((Kind.PODCLIQUESCALINGGROUP, g) for g in self.groups.values()),
        ]
        for kind, live in found:
            meta = live.metadata
            if meta.name in wanted or meta.deletion_timestamp or not self.ours(meta):
                continue
            self.deletes.append(CliqueDelete(kind, meta.name, ns, meta.uid))
