"""The default-scheduler backend: the Kubernetes Workload API when gang scheduling is on,
nothing but the scheduler's name when it is off."""

from __future__ import annotations

from gangway_backend_kube import translate
from gangway_backend_kube.builtin import KubeSchedulerConfig
from gangway_backend_kube.translate import (
    COMPOSITE_VERSIONS,
    GROUP,
    NAME,
    WITH_PODGROUPS,
    WORKLOAD_VERSIONS,
    CompositeVersion,
    WorkloadVersion,
    atomic,
    composites_of,
    podgroups_of,
)
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import gang_object_name
from gangway_backendkit.keeps import KeepsResources, Write
from gangway_backendkit.pods import prepare_each
from gangway_backendkit.protocol import Capabilities, Manifest, Synced, SyncFailed
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.rpc import (
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_runtime.startup import CannotStart


async def served_workload_version(kube: Kube) -> WorkloadVersion | None:
    """The newest Workload API version the API server serves whole (v1alpha2 and v1beta1
    need their PodGroups too), or None: gang scheduling cannot work there."""
    for version in WORKLOAD_VERSIONS:
        if await kube.serves(translate.workloads(version)):
            if version in WITH_PODGROUPS and not await kube.serves(podgroups_of(version)):
                continue
            return version
    return None


async def served_composite_version(
    kube: Kube, workload_version: WorkloadVersion | None
) -> CompositeVersion | None:
    """The newest CompositePodGroup version served beside a v1beta1 Workload (whose
    templates and PodGroups hold the tree), or None: each pod group is placed on its own."""
    if workload_version != "v1beta1":
        return None
    for version in COMPOSITE_VERSIONS:
        if await kube.serves(composites_of(version)):
            return version
    return None


class KubeBackend(KeepsResources):
    name = NAME
    capabilities = Capabilities(gang=True, topology=False, queues=False)

    def __init__(
        self,
        gang_scheduling: bool,
        workload_version: WorkloadVersion | None = None,
        composite_version: CompositeVersion | None = None,
    ) -> None:
        self.gang_scheduling = gang_scheduling
        # Found at init from what the API server serves; given for offline rendering.
        self.version: WorkloadVersion | None = workload_version if gang_scheduling else None
        self.composite: CompositeVersion | None = composite_version if self.version else None

    @classmethod
    def from_config(
        cls,
        config: SchedulerConfig,
        workload_version: WorkloadVersion | None = None,
        composite_version: CompositeVersion | None = None,
    ) -> KubeBackend:
        kube = config.builtin_config(NAME, KubeSchedulerConfig)
        gang = kube is not None and kube.gang_scheduling
        return cls(gang, workload_version, composite_version)

    async def init(self, ctx: BackendContext) -> None:
        if not self.gang_scheduling:
            return
        self.version = await served_workload_version(ctx.kube)
        self.composite = await served_composite_version(ctx.kube, self.version)
        if self.composite is not None:  # its gates bring topology-aware placement
            self.capabilities = Capabilities(gang=True, topology=True, queues=False)
        if self.version is not None:
            return
        raise CannotStart(
            f"gangScheduling is on but the API server serves no {GROUP} Workload API "
            f"({' or '.join(WORKLOAD_VERSIONS)}): start kube-apiserver and kube-scheduler with "
            "--feature-gates=GenericWorkload=true (1.35 and 1.36: also GangScheduling=true) "
            f"and kube-apiserver with --runtime-config={GROUP}/v1beta1=true (Kubernetes 1.37), "
            f"{GROUP}/v1alpha2=true (1.36) or {GROUP}/v1alpha1=true (1.35); "
            "or set gangScheduling: false"
        )

    def resources(self, podgang: PodGang, podcliqueset: PodCliqueSet | None) -> list[Manifest]:
        return translate.resources(podgang, self.version, self.composite) if self.version else []

    async def sync_podgang(self, podgang: PodGang, ctx: BackendContext) -> Synced:
        try:
            return await super().sync_podgang(podgang, ctx)
        except KubeError as exc:
            # The pod groups carry the PodCliqueSet's priority class; one the cluster lacks
            # is the user's to create (the periodic resync tries again), not a retry storm.
            if exc.status == 403 and "PriorityClass" in exc.message:
                raise SyncFailed("PriorityClassNotFound", exc.message) from None
            if exc.status == 422:
                # Refused as invalid: trying again changes nothing (e.g. a tree where
                # CompositePodGroup is served with its gate off): said, not dead-lettered.
                raise SyncFailed("Invalid", exc.message) from None
            raise

    def write_as(self, manifest: Manifest) -> Write:
        assert self.version is not None  # resources() lists nothing without it
        if manifest["kind"] == "Workload":
            return Write(translate.workloads(self.version), immutable_spec=True)
        if manifest["kind"] == "CompositePodGroup":
            assert self.composite is not None  # listed only when served
            return Write(composites_of(self.composite), immutable_spec=True)
        return Write(podgroups_of(self.version), immutable_spec=True)

    def describe(self, podgang: PodGang, manifests: list[Manifest]) -> str:
        if self.version is None:
            return "gang scheduling off: pods go to default-scheduler one by one"
        if self.composite is not None and atomic(podgang, self.composite):
            return f"Workload API {self.version}, one tree (CompositePodGroup {self.composite})"
        groups = len(podgang.spec.podgroups)
        if groups < 2:
            return f"Workload API {self.version}"
        why = (
            "a podgroup needs no pod (minReplicas 0)"
            if self.composite is not None
            else "CompositePodGroup is not served"
        )
        return (
            f"Workload API {self.version}: each of its {groups} podgroups is placed whole, "
            f"the PodGang not ({why})"
        )

    def kept(self, podgang: PodGang) -> list[tuple[ApiResource, str]]:
        if self.version is None:
            return []
        found = [(translate.workloads(self.version), podgang.metadata.name)]
        if self.composite is not None:
            composites = composites_of(self.composite)
            found += [(composites, n) for n in translate.composite_names(podgang, self.composite)]
        if self.version in WITH_PODGROUPS:
            found += [(podgroups_of(self.version), g.name) for g in podgang.spec.podgroups]
        return [(resource, gang_object_name(podgang, name)) for resource, name in found]

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        return prepare_each(request, translate.prepare_pod(self.version))

    async def validate_podcliqueset(
        self, request: ValidateRequest, ctx: BackendContext | None
    ) -> ValidateReply:
        errors, unsupported = translate.validate(
            request.podcliqueset, self.gang_scheduling, packs=self.composite is not None
        )
        return ValidateReply(allowed=not errors, errors=errors, unsupported=unsupported)
