"""The koordinator backend: one Koordinator gang (PodGroup) per podgroup of a PodGang, the
PodGang's gangs one GangGroup, pods handed to koord-scheduler."""

from __future__ import annotations

from gangway_backend_koordinator import translate
from gangway_backend_koordinator.builtin import NAME, KoordinatorConfig
from gangway_backend_koordinator.translate import PODGROUPS
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


class KoordinatorBackend(KeepsResources):
    name = NAME
    capabilities = Capabilities(gang=True, topology=False, queues=False)

    def __init__(self, config: KoordinatorConfig | None = None) -> None:
        self.config = config or KoordinatorConfig()
        self._prepare = translate.prepare_pod(self.config.scheduler_name)

    @classmethod
    def from_config(cls, config: SchedulerConfig) -> KoordinatorBackend:
        return cls(config.builtin_config(NAME, KoordinatorConfig))

    async def init(self, ctx: BackendContext) -> None:
        await ctx.require(
            PODGROUPS,
            "install Koordinator (its CRDs) and run koord-scheduler as "
            f"{self.config.scheduler_name} before enabling the {NAME} profile",
        )

    def resources(self, podgang: PodGang, podcliqueset: PodCliqueSet | None) -> list[Manifest]:
        return translate.podgroups(podgang, self.config)

    def write_as(self, manifest: Manifest) -> Write:
        return Write(PODGROUPS)

    def describe(self, podgang: PodGang, manifests: list[Manifest]) -> str:
        return f"Koordinator GangGroup of {len(manifests)} gangs, {self.config.mode}"

    def kept(self, podgang: PodGang) -> list[tuple[ApiResource, str]]:
        return [(PODGROUPS, gang_object_name(podgang, g.name)) for g in podgang.spec.podgroups]

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        return prepare_each(request, self._prepare)

    async def validate_podcliqueset(
        self, request: ValidateRequest, ctx: BackendContext | None
    ) -> ValidateReply:
        errors, unsupported = translate.validate(request.podcliqueset)
        return ValidateReply(allowed=not errors, errors=errors, unsupported=unsupported)
