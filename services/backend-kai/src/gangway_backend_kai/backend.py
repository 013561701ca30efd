"""The kai-scheduler backend: one KAI PodGroup per PodGang, KAI's Topology from the
ClusterTopologyBinding a packed PodGang names, pods handed to KAI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from gangway_backend_kai import translate, view
from gangway_backend_kai.builtin import KAI_PODGROUPS, NAME
from gangway_backend_kai.translate import PODGROUPS, QUEUES, TOPOLOGIES
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import ensure, gang_object_name
from gangway_backendkit.keeps import KeepsResources, Write
from gangway_backendkit.pods import prepare_each
from gangway_backendkit.protocol import Capabilities, Manifest, SyncFailed
from gangway_contracts import why
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet, PodGang
from gangway_contracts.rpc import (
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)
from gangway_contracts.subjects import Kind, ObjectKey
from gangway_runtime.kube import ApiResource
from gangway_runtime.status import PODGANGS


class KaiBackend(KeepsResources):
    name = NAME
    capabilities = Capabilities(gang=True, topology=True, queues=True)
    reads_podcliqueset = True

    @classmethod
    def from_config(cls, config: SchedulerConfig) -> KaiBackend:
        """Its profile has no options yet."""
        return cls()

    async def init(self, ctx: BackendContext) -> None:
        await ctx.require(
            PODGROUPS,
            f"install the KAI scheduler (its PodGroup CRD) before enabling the {NAME} profile",
        )

    def resources(self, podgang: PodGang, podcliqueset: PodCliqueSet | None) -> list[Manifest]:
        if podcliqueset is None:
            raise SyncFailed("PodCliqueSetMissing", "the queue comes from the PodCliqueSet")
        queue = translate.resolve_queue(podcliqueset)
        if queue.name is None:
            raise SyncFailed("QueueMissing", queue.problem)
        return [translate.podgroup(podgang, queue.name)]

    def write_as(self, manifest: Manifest) -> Write:
        return Write(PODGROUPS, keep=translate.keep_kai_managed)

    def describe(self, podgang: PodGang, manifests: list[Manifest]) -> str:
        return f"KAI PodGroup in queue {manifests[0]['spec']['queue']}"

    async def before_ensure(self, podgang: PodGang, ctx: BackendContext) -> None:
        await _mark_skip_podgrouper(ctx, podgang)
        await _ensure_topology(ctx, podgang)

    def kept(self, podgang: PodGang) -> list[tuple[ApiResource, str]]:
        return [(PODGROUPS, gang_object_name(podgang, podgang.metadata.name))]

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        return prepare_each(request, translate.prepare_pod)

    def scheduler_view(
        self, podgang: PodGang, objects: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> why.Verdict | None:
        podgroups = objects.get(KAI_PODGROUPS.kind)
        return view.view_of(podgroups[-1]) if podgroups else None

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
