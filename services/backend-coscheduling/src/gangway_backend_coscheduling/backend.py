"""The coscheduling backend: one scheduler-plugins PodGroup per PodGang, pods handed to the
scheduler whose profile enables the Coscheduling plugin."""

from __future__ import annotations

from gangway_backend_coscheduling import translate
from gangway_backend_coscheduling.builtin import NAME, CoschedulingConfig
from gangway_backend_coscheduling.translate import PODGROUPS
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import gang_object_name
from gangway_backendkit.keeps import KeepsResources, Write
from gangway_backendkit.pods import prepare_each
from gangway_backendkit.protocol import Capabilities, Manifest
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.rpc import (
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)
from gangway_runtime.kube import ApiResource


class CoschedulingBackend(KeepsResources):
    name = NAME
    capabilities = Capabilities(gang=True, topology=False, queues=False)

    def __init__(self, config: CoschedulingConfig | None = None) -> None:
        self.config = config or CoschedulingConfig()
        self._prepare = translate.prepare_pod(self.config.scheduler_name)

    @classmethod
    def from_config(cls, config: SchedulerConfig) -> CoschedulingBackend:
        return cls(config.builtin_config(NAME, CoschedulingConfig))

    async def init(self, ctx: BackendContext) -> None:
        await ctx.require(
            PODGROUPS,
            f"install scheduler-plugins (its PodGroup CRD) and run its scheduler as "
            f"{self.config.scheduler_name} before enabling the {NAME} profile",
        )

    def resources(self, podgang: PodGang, podcliqueset: PodCliqueSet | None) -> list[Manifest]:
        return [translate.podgroup(podgang, self.config)]

    def write_as(self, manifest: Manifest) -> Write:
        return Write(PODGROUPS)

    def describe(self, podgang: PodGang, manifests: list[Manifest]) -> str:
        said = f"minMember {manifests[0]['spec']['minMember']}"
        if spare := translate.spare_pods(podgang):
            said += (
                f"; one minimum for the whole PodGang: spare pods of {', '.join(spare)} "
                "may count towards another podgroup's minimum"
            )
        return said

    def kept(self, podgang: PodGang) -> list[tuple[ApiResource, str]]:
        return [(PODGROUPS, gang_object_name(podgang, podgang.metadata.name))]

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        return prepare_each(request, self._prepare)

    async def validate_podcliqueset(
        self, request: ValidateRequest, ctx: BackendContext | None
    ) -> ValidateReply:
        errors, unsupported = translate.validate(request.podcliqueset)
        return ValidateReply(allowed=not errors, errors=errors, unsupported=unsupported)
