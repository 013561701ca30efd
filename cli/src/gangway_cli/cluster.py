"""What ``gangway up`` needs from the cluster it runs against, local or existing: Gangway's
CRDs served, what the schedulers there serve, and the admission webhook registered by URL
while ``up`` runs (and removed when it stops, so no dead webhook refuses PodCliqueSets)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec
import yaml

from gangway_backend_kube.backend import served_composite_version, served_workload_version
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.config import DEFAULT_SCHEDULER
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_stage_kueue.workload import WORKLOADS as KUEUE_WORKLOADS

CRDS: Final = ApiResource("apiextensions.k8s.io", "v1", "customresourcedefinitions", False)
WEBHOOK_CONFIGURATIONS: Final = ApiResource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", namespaced=False
)
WEBHOOK_NAME: Final = "gangway-admission"  # Service, Secret and webhook configuration
# Marks the registration ``up`` made, so a later ``up`` may replace it and nothing else.
REGISTERED_BY: Final = "gangway.dev/registered-by"
UP: Final = "gangway-up"
ESTABLISHED_WITHIN: Final = 60.0


async def apply(kube: Kube, resource: ApiResource, doc: dict[str, Any], field_manager: str) -> None:
    """Server-side apply of one object as ``field_manager``, taking its fields over."""
    meta = doc["metadata"]
    await kube.request(
        "PATCH",
        resource.path(meta.get("namespace", "") if resource.namespaced else "", meta["name"]),
        [("fieldManager", field_manager), ("force", "true")],
        body=doc,
        content_type="application/apply-patch+yaml",
    )


class ClusterInUse(Exception):
    """Gangway already runs in the cluster: a second copy would act on the same objects."""


@dataclass(frozen=True)
class Found:
    """What the cluster is and serves, once Gangway's CRDs are there."""

    server: str
    version: str
    installed: list[str]  # Gangway's CRDs ``up`` had to install (the others were there)
    # The built-in backends besides default-scheduler whose resources the cluster serves (their
    # schedulers' CRDs are installed): those the embedded configuration enables.
    served: frozenset[str]
    workload_api: str | None
    composite: str | None  # CompositePodGroup's version: a PodGang of podgroups placed whole
    kueue: bool = False  # Kueue's Workloads are served: the Kueue stage can run


async def prepare(kubeconfig: Path, gangway_crds: list[Path]) -> Found:
    """Install the Gangway CRDs the cluster does not serve yet (never replacing one that is
    there: Grove may own it) and say what the cluster serves; refuse a cluster where a
    Gangway admission webhook that ``up`` did not register exists."""
    session = await api_client(kubeconfig)
    async with Kube(session) as kube:
        version = msgspec.json.decode(await kube.request("GET", "/version"))["gitVersion"]
        existing = await kube.read(WEBHOOK_CONFIGURATIONS, "", WEBHOOK_NAME)
        if existing is not None and _annotations(existing).get(REGISTERED_BY) != UP:
            raise ClusterInUse(
                f"ValidatingWebhookConfiguration {WEBHOOK_NAME} exists and was not made by "
                "gangway up: Gangway seems installed in this cluster already, and a second "
                "copy would act on the same PodCliqueSets"
            )
        installed = [
            name for doc in _crds(gangway_crds) if (name := await _install_missing(kube, doc))
        ]
        return Found(
            server=session.server,
            version=version,
            installed=installed,
            served=await _served_backends(kube),
            workload_api=(workload_api := await served_workload_version(kube)),
            composite=await served_composite_version(kube, workload_api),
            kueue=await kube.serves(KUEUE_WORKLOADS),
        )


async def _served_backends(kube: Kube) -> frozenset[str]:
    """The built-in backends (default-scheduler aside: the Workload API says for it) every
    resource of which the cluster serves."""
    served = set()
    for name, backend in builtin_backends().items():
        if name == DEFAULT_SCHEDULER:
            continue
        resources = [
            ApiResource(r.group, r.versions[0], r.plural, r.namespaced)
            for r in backend.mirrored(backend.config())
        ]
        if resources and all([await kube.serves(resource) for resource in resources]):
            served.add(name)
    return frozenset(served)


async def register(kubeconfig: Path, registration: dict[str, Any]) -> None:
    """Register the webhook, replacing one an earlier ``up`` left behind."""
    name = registration["metadata"]["name"]
    registration["metadata"].setdefault("annotations", {})[REGISTERED_BY] = UP
    kube = Kube(await api_client(kubeconfig))
    async with kube:
        await _delete_ours(kube, name)
        await kube.request("POST", WEBHOOK_CONFIGURATIONS.path(), body=registration)


async def deregister(kubeconfig: Path) -> None:
    kube = Kube(await api_client(kubeconfig))
    async with kube:
        await _delete_ours(kube, WEBHOOK_NAME)


async def _delete_ours(kube: Kube, name: str) -> None:
    found = await kube.read(WEBHOOK_CONFIGURATIONS, "", name)
    if found is None or _annotations(found).get(REGISTERED_BY) != UP:
        return
    try:
        await kube.request("DELETE", WEBHOOK_CONFIGURATIONS.path("", name))
    except KubeError as exc:
        if exc.status != 404:
            raise


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = obj.get("metadata", {}).get("annotations") or {}
    return found


def _crds(paths: list[Path]) -> list[dict[str, Any]]:
    return [
        doc
        for path in paths
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == "CustomResourceDefinition"
    ]


async def _install_missing(kube: Kube, crd: dict[str, Any]) -> str | None:
    """Create ``crd`` unless its resource is served; its name once it serves, if created."""
    spec = crd["spec"]
    storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
    resource = ApiResource(spec["group"], storage, spec["names"]["plural"])
    if await kube.serves(resource):
        return None
    try:
        await kube.request("POST", CRDS.path(), body=crd)
    except KubeError as exc:
        if exc.status != 409:  # made but not served yet: wait for it below
            raise
    deadline = time.monotonic() + ESTABLISHED_WITHIN
    while not await kube.serves(resource):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{crd['metadata']['name']} not served after {ESTABLISHED_WITHIN}s")
        await asyncio.sleep(0.2)
    name: str = crd["metadata"]["name"]
    return name
