"""The volcano backend: one Volcano PodGroup per PodGang in the PodCliqueSet's queue, each
podgroup a task with its own minimum, pods handed to vc-scheduler."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangway_backend_volcano import translate, view
from gangway_backend_volcano.builtin import NAME, VOLCANO_PODGROUPS, VOLCANO_QUEUES, VolcanoConfig
from gangway_backend_volcano.translate import PODGROUPS, QUEUES
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import gang_object_name
from gangway_backendkit.keeps import KeepsResources, Write
from gangway_backendkit.pods import prepare_each
from gangway_backendkit.protocol import Capabilities, Manifest, SyncFailed
from gangway_contracts import why
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.rpc import (
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)
from gangway_contracts.subjects import ObjectKey
from gangway_runtime.kube import ApiResource


class VolcanoBackend(KeepsResources):
    name = NAME
    capabilities = Capabilities(gang=True, topology=False, queues=True)
    reads_podcliqueset = True

    def __init__(self, config: VolcanoConfig | None = None) -> None:
        self.config = config or VolcanoConfig()
        self._prepare = translate.prepare_pod(self.config.scheduler_name)

    @classmethod
    def from_config(cls, config: SchedulerConfig) -> VolcanoBackend:
        return cls(config.builtin_config(NAME, VolcanoConfig))

    async def init(self, ctx: BackendContext) -> None:
        await ctx.require(
            PODGROUPS,
            "install Volcano (its CRDs) and run vc-scheduler as "
            f"{self.config.scheduler_name} before enabling the {NAME} profile",
        )

    def _queue(self, podcliqueset: PodCliqueSet) -> str:
        queue = translate.resolve_queue(podcliqueset, self.config)
        if queue.name is None:
            raise SyncFailed("QueueInvalid", queue.problem)
        return queue.name

    def resources(self, podgang: PodGang, podcliqueset: PodCliqueSet | None) -> list[Manifest]:
        if podcliqueset is None:
            raise SyncFailed("PodCliqueSetMissing", "the queue comes from the PodCliqueSet")
        return [translate.podgroup(podgang, self._queue(podcliqueset), podcliqueset)]

    def write_as(self, manifest: Manifest) -> Write:
        return Write(PODGROUPS, keep=translate.keep_queue)

    def describe(self, podgang: PodGang, manifests: list[Manifest]) -> str:
        spec = manifests[0]["spec"]
        return (
            f"Volcano PodGroup in queue {spec['queue']}, minMember {spec['minMember']} "
            f"({len(spec['minTaskMember'])} tasks)"
        )

    def kept(self, podgang: PodGang) -> list[tuple[ApiResource, str]]:
        return [(PODGROUPS, gang_object_name(podgang, podgang.metadata.name))]

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        return prepare_each(request, self._prepare)

    def scheduler_view(
        self, podgang: PodGang, objects: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> why.Verdict | None:
        podgroups = objects.get(VOLCANO_PODGROUPS.kind)
        queues = objects.get(VOLCANO_QUEUES.kind)
        return view.view_of(podgroups[-1], queues[-1] if queues else None) if podgroups else None

    def view_also(
        self, podgang: PodGang, objects: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> list[ObjectKey]:
        """The Queue of a PodGroup not let into it: its capability tells quota from room
        (a read from the store for each such message; none for the others)."""
        podgroups = objects.get(VOLCANO_PODGROUPS.kind)
        if not podgroups or not view.kept_out(podgroups[-1]):
            return []
        queue = (podgroups[-1].get("spec") or {}).get("queue")
        return [ObjectKey(VOLCANO_QUEUES.kind, NAME, "", queue)] if queue else []

    async def validate_podcliqueset(
        self, request: ValidateRequest, ctx: BackendContext | None
    ) -> ValidateReply:
        pcs = request.podcliqueset
        errors, unsupported = translate.validate(pcs, self.config)
        warnings: list[str] = []
        queue = translate.resolve_queue(pcs, self.config)
        if queue.name is not None:
            if ctx is None:
                warnings.append(f'not checked offline: Volcano Queue "{queue.name}" is open')
            else:
                live = await ctx.kube.read(QUEUES, "", queue.name)
                if problem := translate.queue_problem(queue.name, live):
                    if queue.defaulted:
                        problem += f" (the profile's default queue: set {translate.QUEUE_KEY})"
                    errors.append(FieldError(field=queue.field, reason=problem))
        return ValidateReply(
            allowed=not errors, errors=errors, warnings=warnings, unsupported=unsupported
        )
