"""The kai-scheduler backend: one KAI PodGroup per PodGang, KAI's Topology from the
ClusterTopologyBinding a packed PodGang names, pods handed to KAI."""

from __future__ import annotations

from typing import Any

import msgspec

from gangway_backend_kai import translate
from gangway_backend_kai.translate import NAME, PODGROUPS, QUEUES, TOPOLOGIES
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import delete_owned, ensure
from gangway_backendkit.pods import prepare_each
from gangway_backendkit.protocol import Capabilities, NotYet, Synced, SyncFailed
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet, PodGang, podcliqueset_of
from gangway_contracts.records import ObjectRecord
from gangway_contracts.rpc import (
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)
from gangway_contracts.subjects import Kind, ObjectKey
from gangway_runtime.status import PODGANGS


class KaiBackend:
    name = NAME
    capabilities = Capabilities(gang=True, topology=True, queues=True)

    @classmethod
    def from_config(cls, config: SchedulerConfig) -> KaiBackend:
        """Its profile has no options yet."""
        return cls()

    async def init(self, ctx: BackendContext) -> None:
        await ctx.require(
            PODGROUPS,
            f"install the KAI scheduler (its PodGroup CRD) before enabling the {NAME} profile",
        )

    def resources(
        self, podgang: PodGang, podcliqueset: PodCliqueSet | None
    ) -> list[dict[str, Any]]:
        if podcliqueset is None:
            raise SyncFailed("PodCliqueSetMissing", "the queue comes from the PodCliqueSet")
        queue = translate.resolve_queue(podcliqueset)
        if queue.name is None:
            raise SyncFailed("QueueMissing", queue.problem)
        return [translate.podgroup(podgang, queue.name)]

    async def sync_podgang(self, podgang: PodGang, ctx: BackendContext) -> Synced:
        meta = podgang.metadata
        pcs = await ctx.podcliqueset(meta.namespace, podcliqueset_of(meta))
        resolved = translate.resolve_queue(pcs) if pcs else None
        queue = resolved.name if resolved else None
        if queue is None:
            # Fixed at creation: an existing PodGroup keeps the queue it was made with.
            live = await ctx.kube.read(PODGROUPS, meta.namespace, meta.name)
            queue = (live or {}).get("spec", {}).get("queue")
        if queue is None:
            if resolved is None:  # not in the store yet: the watcher mirrors it shortly
                raise NotYet(f"PodCliqueSet of {meta.namespace}/{meta.name} not in the store yet")
            raise SyncFailed("QueueMissing", resolved.problem)
        await _mark_skip_podgrouper(ctx, podgang)
        await _ensure_topology(ctx, podgang)
        desired = translate.podgroup(podgang, queue)
        change = await ctx.ensure(PODGROUPS, desired, keep=translate.keep_kai_managed)
        return Synced(
            resources=[f"PodGroup {meta.namespace}/{meta.name}"],
            message=f"KAI PodGroup {meta.name} in queue {queue} ({change})",
        )

    async def on_podgang_delete(self, last: ObjectRecord, ctx: BackendContext) -> None:
        await delete_owned(ctx.kube, PODGROUPS, last.namespace, last.name, last.uid)

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        return prepare_each(request, translate.prepare_pod)

    async def validate_podcliqueset(
        self, request: ValidateRequest, ctx: BackendContext | None
    ) -> ValidateReply:
        pcs = request.podcliqueset
        errors = translate.validate(pcs)
        warnings: list[str] = []
        queue = translate.resolve_queue(pcs)
        if queue.name is not None:
            if ctx is None:
                warnings.append(f'not checked offline: KAI Queue "{queue.name}" exists')
            elif await ctx.kube.read(QUEUES, "", queue.name) is None:
                errors.append(
                    FieldError(
                        field=queue.field,
                        reason=f'KAI Queue "{queue.name}" does not exist in the cluster',
                    )
                )
        return ValidateReply(allowed=not errors, errors=errors, warnings=warnings)


async def _mark_skip_podgrouper(ctx: BackendContext, podgang: PodGang) -> None:
    """KAI's podgrouper builds PodGroups for pods' top owners unless told not to; the PodGang
    is such an owner. One merge patch, once (metadata only: the generation stays)."""
    if podgang.metadata.annotations.get(translate.SKIP_PODGROUPER) == "true":
        return
    meta = podgang.metadata
    path = PODGANGS.path(meta.namespace, meta.name)
    patch = {"metadata": {"annotations": {translate.SKIP_PODGROUPER: "true"}}}
    await ctx.kube.request("PATCH", path, body=patch, content_type="application/merge-patch+json")


async def _ensure_topology(ctx: BackendContext, podgang: PodGang) -> None:
    """KAI packs by a Topology object; Grove describes the same levels in the
    ClusterTopologyBinding the PodGang names. Make KAI's from the binding the store holds,
    and replace it when the levels change (KAI's are immutable). A Topology of that name
    that Gangway did not make is the cluster's own: left as it is."""
    name = translate.topology_name(podgang)
    if not name or not translate.packs(podgang):
        return
    record = await ctx.record(ObjectKey(Kind.CLUSTERTOPOLOGYBINDING, "", "", name))
    if record is None or record.deleted:
        return  # KAI then says the Topology is missing, on the pods and the PodGang
    binding = msgspec.json.decode(record.object, type=ClusterTopologyBinding)
    await ensure(
        ctx.kube,
        TOPOLOGIES,
        translate.kai_topology(binding),
        field_manager=ctx.field_manager,
        immutable_spec=True,
        only_ours=True,
    )
