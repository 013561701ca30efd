"""The floor: the least API writes the same gangs need, sent straight to the API server as
fast as it accepts them, with no bus, no read model and no waiting on a watch. What a
perfect operator that knew everything at once could do; bench/e2e.py --floor runs it on the
same control plane and scheduler as Gangway, and reports Gangway's times as a ratio of it.

Each gang, in the plan's order, at most ``gangs_in_flight`` at once, every write of a gang as
soon as the writes it depends on are answered:

    PodGang (empty references) → its status Initialized=False
      ├─ the backend's objects (Workload, PodGroup…) → BackendSynced=True
      └─ the gang's pods, gated, prepared by the backend's own pure function
           → the pod references → Initialized=True
    both branches done → every pod's gate removed

The same objects Gangway makes (the podgang service's and the backend's pure functions),
so the scheduler has the same work. Left out of the least: the two status writes per gang
that follow placement (Scheduled with Starting, Running); they come after a gang is bound,
so the floor's times are, if anything, lower than a perfect operator's.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from gangway_backendkit.protocol import Backend
from gangway_contracts import labels
from gangway_contracts.codec import from_object, to_object
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.k8s import Condition
from gangway_contracts.rpc import PodsPrepared, PreparePodsRequest
from gangway_podgang.manifests import (
    all_references,
    headless_service,
    pod_manifest,
    podgang_manifest,
    podgang_spec,
)
from gangway_podgang.plan import PlannedGang, plan_podgangs
from gangway_podgang.writes import UNGATE
from gangway_runtime.kube import Kube
from gangway_runtime.status import PODGANGS, PODS

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"


@dataclass
class FloorTimes:
    """Epoch seconds of each gang's last pod created and its gates removed."""

    created: dict[str, float]
    lifted: dict[str, float]
    writes: int


def _condition(type_: str, ok: bool, reason: str, generation: int) -> dict[str, Any]:
    found: dict[str, Any] = to_object(
        Condition(
            type=type_,
            status="True" if ok else "False",
            reason=reason,
            message="the floor",
            last_transition_time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            observed_generation=generation,
        )
    )
    return found


def _path(manifest: dict[str, Any], namespace: str) -> str:
    """The collection a backend object is created in (the backends' kinds pluralise by s)."""
    version = manifest["apiVersion"]
    root = "/api/v1" if version == "v1" else f"/apis/{version}"
    return f"{root}/namespaces/{namespace}/{manifest['kind'].lower()}s"


class Floor:
    def __init__(self, kube: Kube, backend: Backend, backend_name: str) -> None:
        self.kube = kube
        self.backend = backend
        self.backend_name = backend_name
        self.writes = 0

    async def _send(
        self, method: str, path: str, body: Any, content_type: str = "application/json"
    ) -> dict[str, Any]:
        self.writes += 1
        answer = await self.kube.request(method, path, body=body, content_type=content_type)
        found: dict[str, Any] = msgspec.json.decode(answer)
        return found

    async def gang(self, gang: PlannedGang, pcs: PodCliqueSet, times: FloorTimes) -> None:
        ns = pcs.metadata.namespace
        manifest = podgang_manifest(gang, pcs, self.backend_name)
        made = [self._send("POST", PODGANGS.path(ns), manifest)]
        if gang.is_base:  # the replica's headless Service, as podgang makes it
            made.append(
                self._send(
                    "POST",
                    f"/api/v1/namespaces/{ns}/services",
                    headless_service(pcs, gang.pcs_replica),
                )
            )
        created, *_ = await asyncio.gather(*made)
        live = from_object(created, PodGang)
        name, generation = gang.name, live.metadata.generation
        status = PODGANGS.path(ns, name, "status")
        initial = {
            "phase": "Pending",
            "conditions": [_condition(labels.INITIALIZED, False, "PodsPending", generation)],
        }
        await self._send("PATCH", status, {"status": initial}, MERGE_PATCH)
        await asyncio.gather(self._backend(live, pcs, status), self._pods(gang, pcs, live, times))
        await asyncio.gather(
            *(
                self._send("PATCH", PODS.path(ns, pod), UNGATE, STRATEGIC_MERGE_PATCH)
                for _, _, pod in gang.pods
            )
        )
        times.lifted[name] = time.time()

    async def _backend(self, live: PodGang, pcs: PodCliqueSet, status: str) -> None:
        ns = live.metadata.namespace
        for manifest in self.backend.resources(live, pcs):  # a Workload before its PodGroups
            await self._send("POST", _path(manifest, ns), manifest)
        synced = _condition(labels.BACKEND_SYNCED, True, "Synced", live.metadata.generation)
        await self._send(
            "PATCH",
            status,
            [{"op": "add", "path": "/status/conditions/-", "value": synced}],
            JSON_PATCH,
        )

    async def _pods(
        self, gang: PlannedGang, pcs: PodCliqueSet, live: PodGang, times: FloorTimes
    ) -> None:
        ns = live.metadata.namespace
        pods = [pod_manifest(gang, group, i, pcs, live.metadata.uid) for group, i, _ in gang.pods]
        reply = self.backend.prepare_pods(PreparePodsRequest(podgang=live, pods=pods))
        assert isinstance(reply, PodsPrepared), reply
        await asyncio.gather(*(self._send("POST", PODS.path(ns), pod) for pod in reply.pods))
        times.created[gang.name] = time.time()
        spec = to_object(
            podgang_spec(gang, ns, pcs.spec.template.priority_class_name, all_references(gang, ns))
        )
        refs = [{"op": "replace", "path": "/spec", "value": spec}]
        updated = await self._send("PATCH", PODGANGS.path(ns, gang.name), refs, JSON_PATCH)
        ready = _condition(labels.INITIALIZED, True, "Ready", updated["metadata"]["generation"])
        await self._send(
            "PATCH",
            PODGANGS.path(ns, gang.name, "status"),
            [{"op": "replace", "path": "/status/conditions/0", "value": ready}],
            JSON_PATCH,
        )


async def run_floor(
    kube: Kube,
    config: SchedulerConfig,
    backend: Backend,
    podcliquesets: list[dict[str, Any]],
    gangs_in_flight: int,
) -> FloorTimes:
    """Every gang of ``podcliquesets`` (manifests, never created: the floor has no owner),
    earliest first, at most ``gangs_in_flight`` at once."""
    times = FloorTimes(created={}, lifted={}, writes=0)
    work: list[tuple[PlannedGang, PodCliqueSet]] = []
    for i, manifest in enumerate(podcliquesets):
        meta = {**manifest["metadata"], "uid": f"floor-{i}", "generation": 1}
        pcs = from_object({**manifest, "metadata": meta}, PodCliqueSet)
        work += [(gang, pcs) for gang in plan_podgangs(pcs).gangs]
    floor = Floor(kube, backend, config.backend_for(work[0][1]))
    slots = asyncio.Semaphore(gangs_in_flight)

    async def one(gang: PlannedGang, pcs: PodCliqueSet) -> None:
        async with slots:
            await floor.gang(gang, pcs, times)

    await asyncio.gather(*(one(gang, pcs) for gang, pcs in work))
    times.writes = floor.writes
    return times
