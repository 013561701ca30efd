"""Carrying out one :class:`~gangway_podgang.decide.Decision` against the API server.

Every write is safe to repeat and safe to lose: creates treat AlreadyExists as done, deletes
carry the uid they mean (a namesake created since is left alone), spec writes carry the
resourceVersion they were decided on, and a gate removal only ever removes our own gate.
Each write returns what the read model must show before the next decision
(:class:`Expectation`), so the next round does not repeat it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final, TypeVar

import msgspec

from gangway_contracts import events, labels
from gangway_contracts.codec import from_object, to_object
from gangway_contracts.grove import PodCliqueSet, PodGang, PodGangSpec
from gangway_contracts.incarnations import incarnation_of
from gangway_contracts.k8s import Condition
from gangway_contracts.services import Service
from gangway_contracts.subjects import TRACEPARENT_HEADER, Kind, Subjects
from gangway_podgang import metrics, startup
from gangway_podgang.cliques import CliqueDelete, CliqueWrite, StatusWrite
from gangway_podgang.compact import PodRecord
from gangway_podgang.decide import Decision, Placement, PodsToCreate, phase_now
from gangway_podgang.headless import ServiceWrite
from gangway_podgang.manifests import pod_manifest, podgang_manifest
from gangway_podgang.plan import PlannedGang
from gangway_podgang.readmodel import Workload
from gangway_podgang.report import Reporter
from gangway_runtime import tracing
from gangway_runtime.backends import BackendClient
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_runtime.objects import Recent, newer_or_same
from gangway_runtime.status import (
    AUTOSCALERS,
    PODCLIQUES,
    PODCLIQUESCALINGGROUPS,
    PODGANGS,
    PODS,
    SERVICES,
    now,
    set_podgang_condition,
    test_failed,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
MERGE_PATCH: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
# The Event when a replica's Service name is held by a Service Gangway did not make.
SERVICE_NAME_TAKEN: Final = "ServiceNameTaken"
# Our gate off a pod, and only ours: a strategic-merge delete of that one entry.
UNGATE: Final = {
    "spec": {
        "schedulingGates": [{"$patch": "delete", "name": labels.PODGANG_PENDING_CREATION_GATE}]
    }
}


# What the model holds of the kinds a decision waits on by name, besides PodGangs and pods.
_BY_NAME: Final[dict[str, Callable[[Workload], Mapping[str, Any]]]] = {
    Kind.SERVICE: lambda w: w.services,
    Kind.PODCLIQUE: lambda w: w.podcliques,
}
_RESOURCES: Final[dict[str, ApiResource]] = {
    Kind.PODGANG: PODGANGS,
    Kind.SERVICE: SERVICES,
    Kind.PODCLIQUE: PODCLIQUES,
    Kind.PODCLIQUESCALINGGROUP: PODCLIQUESCALINGGROUPS,
    Kind.HPA: AUTOSCALERS,
}


@dataclass(frozen=True)
class Expectation:
    """What the read model shows once a write is mirrored. ``resource_version``: the one
    written ("" when any will do); None: the object is gone or terminating."""

    kind: str
    name: str
    resource_version: str | None

    def met(self, workload: Workload) -> bool:
        # (resourceVersion, being deleted) of the object as the model shows it
        seen: tuple[str, bool] | None = None
        if self.kind == Kind.PODGANG:
            if (gang := workload.podgangs.get(self.name)) is not None:
                meta = gang.metadata
                seen = meta.resource_version, meta.deletion_timestamp is not None
        elif self.kind in _BY_NAME:
            if (found := _BY_NAME[self.kind](workload).get(self.name)) is not None:
                meta = found.metadata
                seen = meta.resource_version, meta.deletion_timestamp is not None
        elif (pod := workload.pods.get(self.name)) is not None:
            seen = pod.resource_version, pod.deleting
        if self.resource_version is None:
            return seen is None or seen[1]
        return seen is not None and newer_or_same(seen[0], self.resource_version)


def _told(live: PodGang, placement: Placement) -> list[tuple[Callable[..., Any], dict[str, Any]]]:
    """The journal entries a placement write makes (event, its fields but the common ones):
    the verdict, readiness and phase, each when it changed. Journal only: the scheduler's
    own events on the pods tell the cluster, and the PodCliqueSet's PodGangsScheduled
    condition (with its Event) sums the gangs up. A gang placed at the first try is told by
    its phase change alone."""
    told: list[tuple[Callable[..., Any], dict[str, Any]]] = []
    first_try = live.current_condition(labels.SCHEDULED) is None and placement.scheduled
    if placement.verdict_differs(live) and not first_try:
        verdict = {"reason": placement.reason, "message": placement.message}
        told.append((events.SchedulerVerdict, {"scheduled": placement.scheduled, **verdict}))
    was_ready = live.current_condition(labels.READY)
    if placement.ready != (was_ready is not None and was_ready.status == "True"):
        counts = {"ready_pods": placement.ready_pods, "pods": placement.pods}
        told.append((events.PodGangReadyChanged, {"ready": placement.ready, **counts}))
    if phase_now(live) != placement.phase:
        counts = {"bound": placement.bound, "running": placement.running}
        told.append((events.PodGangPhaseChanged, {"phase": placement.phase, **counts}))
    return told


def _condition(podgang: PodGang, type_: str, status: str, reason: str, message: str) -> Condition:
    """One of the PodGang's conditions as of now, observed at its generation."""
    return Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message[:32768],
        last_transition_time=now(),
        observed_generation=podgang.metadata.generation,
    )


def _initialized(podgang: PodGang, ready: bool) -> Condition:
    if ready:
        return _condition(
            podgang, labels.INITIALIZED, "True", "Ready", "every pod of the gang exists"
        )
    return _condition(
        podgang, labels.INITIALIZED, "False", "PodsPending", "pods not all created yet"
    )


def _unsynced(podgang: PodGang, backend: str) -> Condition:
    """BackendSynced before the backend says: Unknown."""
    return _condition(
        podgang, labels.BACKEND_SYNCED, "Unknown", "Pending", f"not synced by {backend} yet"
    )


def _traced(manifest: dict[str, Any]) -> dict[str, Any]:
    """The workload's trace rides on what we create, so the watcher's record (and every
    service that reads it) continues the same trace."""
    carrier: dict[str, str] = {}
    tracing.inject(carrier)
    if parent := carrier.get(TRACEPARENT_HEADER):
        meta = manifest["metadata"]
        meta["annotations"] = {**meta.get("annotations", {}), labels.TRACEPARENT_ANNOTATION: parent}
    return manifest


class Actuator:
    def __init__(
        self,
        kube: Kube,
        backends: BackendClient,
        subjects: Subjects,
        reporter: Reporter,
        *,
        write_concurrency: int,
        after_write: Callable[[str], None] | None = None,
        startup_image: str = startup.IMAGE,
    ) -> None:
        self.kube = kube
        self.startup_image = startup_image  # of the init container of pods that wait
        self.backends = backends
        self.subjects = subjects
        self.reporter = reporter
        self._slots = asyncio.Semaphore(write_concurrency)
        # A gang's gates come off together, outside the per-write bound (a half-ungated gang
        # makes the scheduler try it, fail and report "waiting for minCount"); this bounds
        # how many gangs do that at once instead.
        self._lifting = asyncio.Semaphore(max(1, write_concurrency // 2))
        # Writes per PodGang since this process first wrote it until its gates came off
        # (the writes-per-gang metric). Bounded: a gang whose PodCliqueSet is deleted before
        # its gates come off is never taken out.
        self._writes: Recent[str, int] = Recent(at_most=50_000)
        # Tests crash the service here, between two writes.
        self._after_write = after_write

    async def _write(
        self, kind: str, verb: str, gang: str, call: Awaitable[T], bounded: bool = True
    ) -> T | None:
        """One API write, under the concurrency bound unless told otherwise, counted (to
        ``gang``'s writes unless it is ""). None when the write found its work done: a create
        that already exists, a delete that is already gone."""
        started = False
        try:
            async with self._slots if bounded else contextlib.nullcontext():
                started = True
                try:
                    result = await call
                except KubeError as exc:
                    if (verb == "create" and exc.status == 409) or (
                        verb == "delete" and exc.status in (404, 409)
                    ):
                        return None
                    raise
                finally:
                    metrics.WRITES.labels(kind, verb).inc()
                    if gang:
                        self._writes[gang] = (self._writes.get(gang) or 0) + 1
        finally:
            if not started and inspect.iscoroutine(call):
                call.close()  # cancelled while waiting for a slot: the request never went
        if self._after_write is not None:
            self._after_write(f"{kind}:{verb}")
        return result

    async def _send(
        self, method: str, path: str, body: Any, content_type: str = "application/json"
    ) -> dict[str, Any]:
        answer = await self.kube.request(method, path, body=body, content_type=content_type)
        decoded: dict[str, Any] = msgspec.json.decode(answer) if answer else {}
        return decoded

    async def apply(
        self, decision: Decision, pcs: PodCliqueSet, backend: str, workload: Workload
    ) -> list[Expectation]:
        """Every write of the decision, in parallel under the bound; what to wait for.
        All of them run even when one fails (each is progress); then the first error
        is raised."""
        steps: list[Awaitable[list[Expectation]]] = [
            *[self._create_podgang(pcs, gang, backend) for gang in decision.create_podgangs],
            *[
                self._delete_podgang(pcs, workload.podgangs[name])
                for name in decision.delete_podgangs
            ],
            *[self._delete_clique(gone) for gone in decision.delete_cliques],
            *[self._update_spec(live, spec) for live, spec in decision.update_specs],
            *[self._incarnate(live, spec) for live, spec in decision.incarnate],
            *[self._create_pods(pcs, batch, backend) for batch in decision.create_pods],
            *[self._delete_pod(workload.pods[name]) for name in decision.delete_pods],
            *[self._set_initialized(pcs, live, ok) for live, ok in decision.set_initialized],
            *self._lift_gates(pcs, decision.lift_gates),
            *[self._set_placement(pcs, live, found) for live, found in decision.set_placement],
            *[self._write_service(pcs, service) for service in decision.write_services],
            *[self._delete_service(stale) for stale in decision.delete_services],
        ]
        results = await asyncio.gather(*steps, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]
        return [e for found in results if not isinstance(found, BaseException) for e in found]

    async def _create_podgang(
        self, pcs: PodCliqueSet, gang: PlannedGang, backend: str
    ) -> list[Expectation]:
        """The PodGang with empty references, then at once Initialized=False (PodsPending):
        the status subresource cannot be written on create."""
        manifest = _traced(podgang_manifest(gang, pcs, backend))
        path = PODGANGS.path(pcs.metadata.namespace)
        created = await self._write(
            Kind.PODGANG, "create", gang.name, self._send("POST", path, manifest)
        )
        if created is None:
            return [Expectation(Kind.PODGANG, gang.name, "")]
        live = from_object(created, PodGang)
        await self.reporter.report(
            pcs,
            events.PodGangCreated(**self.reporter.common(pcs), podgang=gang.name, backend=backend),
        )
        # BackendSynced in place from the start (Unknown): the backend replaces it, and its
        # write and Initialized turning True never collide.
        call = set_podgang_condition(
            self.kube, created, _initialized(live, False), placeholders=[_unsynced(live, backend)]
        )
        written = await self._write(Kind.PODGANG, "status", gang.name, call)
        return [Expectation(Kind.PODGANG, gang.name, _version(written or created))]

    async def _delete_podgang(self, pcs: PodCliqueSet, live: PodGang) -> list[Expectation]:
        meta = live.metadata
        await self._delete(Kind.PODGANG, meta.namespace, meta.name, meta.uid, gang=meta.name)
        self._writes.pop(meta.name)
        await self.reporter.report(
            pcs, events.PodGangDeleted(**self.reporter.common(pcs), podgang=meta.name)
        )
        return [Expectation(Kind.PODGANG, meta.name, None)]

    async def _delete_clique(self, gone: CliqueDelete) -> list[Expectation]:
        """A recycled gang's PodClique (its status starts again with the gang)."""
        await self._delete(gone.kind, gone.namespace, gone.name, gone.uid, gang=gone.gang)
        return [Expectation(gone.kind, gone.name, None)]

    async def _write_service(self, pcs: PodCliqueSet, service: ServiceWrite) -> list[Expectation]:
        """Create a replica's headless Service, or put back the spec fields Gangway sets
        (a merge patch of those alone: the API server's own, clusterIPs, stay)."""
        meta = service.desired["metadata"]
        name, path = meta["name"], SERVICES.path(meta["namespace"])
        if service.live is None:
            call = self._send("POST", path, _traced(service.desired))
            created = await self._write(Kind.SERVICE, "create", name, call)
            if created is None:  # someone else's of that name: not mirrored, never ours
                await self.reporter.kube_event(
                    pcs,
                    SERVICE_NAME_TAKEN,
                    f"Service {name} exists and Gangway did not make it: the pods of this "
                    "replica are not found by name (GROVE_HEADLESS_SERVICE) until it is "
                    "deleted (Gangway makes its own at its next resync)",
                    warning=True,
                    name=f"{name}.{SERVICE_NAME_TAKEN.lower()}",
                )
                return []
            return [Expectation(Kind.SERVICE, name, _version(created))]
        patch = {"spec": service.desired["spec"]}
        call = self._send(
            "PATCH", SERVICES.path(meta["namespace"], name), patch, "application/merge-patch+json"
        )
        return [
            Expectation(
                Kind.SERVICE, name, _version(await self._write(Kind.SERVICE, "update", name, call))
            )
        ]

    async def write_cliques(
        self,
        writes: Sequence[CliqueWrite],
        statuses: Sequence[StatusWrite],
        deletes: Sequence[CliqueDelete],
    ) -> tuple[list[tuple[CliqueWrite, str]], list[tuple[StatusWrite, str]]]:
        """PodCliques and scaling groups made or set back, statuses replaced whole (a JSON
        patch of /status), the stale deleted: all in parallel under the bound. What was
        written, with the resourceVersion each made; one gone meanwhile is left out (the
        next decision makes it again if it is still planned)."""
        made, said, _ = await asyncio.gather(
            asyncio.gather(*(self._write_clique(w) for w in writes)),
            asyncio.gather(*(self._write_status(w) for w in statuses)),
            asyncio.gather(
                *(self._delete(d.kind, d.namespace, d.name, d.uid, gang=d.gang) for d in deletes)
            ),
        )
        return (
            [found for found in made if found is not None],
            [found for found in said if found is not None],
        )

    async def _write_clique(self, write: CliqueWrite) -> tuple[CliqueWrite, str] | None:
        resource, kind = _RESOURCES[write.kind], write.kind
        try:
            if write.create is not None:
                call = self._send("POST", resource.path(write.namespace), _traced(write.create))
                written = await self._write(kind, "create", "", call)
            else:
                path = resource.path(write.namespace, write.name)
                written = await self._write(
                    kind, "update", "", self._send("PATCH", path, write.spec, MERGE_PATCH)
                )
        except KubeError as exc:
            if exc.status != HTTPStatus.NOT_FOUND:
                raise
            if write.create is not None:  # the CRD: an install that skipped deploy/crds
                log.warning("%s not served: install deploy/crds (%s)", resource.plural, exc)
            return None
        return write, _version(written)

    async def _write_status(self, write: StatusWrite) -> tuple[StatusWrite, str] | None:
        body = [{"op": "add", "path": "/status", "value": write.status}]
        path = _RESOURCES[write.kind].path(write.namespace, write.name, "status")
        try:
            call = self._send("PATCH", path, body, JSON_PATCH)
            written = await self._write(write.kind, "status", "", call)
        except KubeError as exc:
            if exc.status != HTTPStatus.NOT_FOUND:
                raise
            return None
        return write, _version(written)

    async def _delete_service(self, live: Service) -> list[Expectation]:
        meta = live.metadata
        await self._delete(Kind.SERVICE, meta.namespace, meta.name, meta.uid, gang=meta.name)
        return [Expectation(Kind.SERVICE, meta.name, None)]

    async def _delete_pod(self, live: PodRecord) -> list[Expectation]:
        await self._delete(Kind.POD, live.namespace, live.name, live.uid, gang=live.gang)
        return [Expectation(Kind.POD, live.name, None)]

    async def _delete(self, kind: str, namespace: str, name: str, uid: str, *, gang: str) -> None:
        """Delete the object we decided on, not a namesake created since (uid precondition)."""
        resource = _RESOURCES.get(kind, PODS)
        body = {"preconditions": {"uid": uid}, "propagationPolicy": "Background"}
        call = self._send("DELETE", resource.path(namespace, name), body)
        await self._write(kind, "delete", gang, call)

    async def _incarnate(self, live: PodGang, spec: PodGangSpec) -> list[Expectation]:
        """The gang made again: its next incarnation and its spec referencing no pod, in
        one write (a new generation, which its backend syncs, naming its objects for the
        new incarnation, before any gate of the new gang comes off)."""
        meta = live.metadata
        made = str(incarnation_of(meta.annotations) + 1)
        annotations = {**meta.annotations, labels.INCARNATION: made}
        add = {"op": "add", "path": "/metadata/annotations", "value": annotations}
        return await self._update_spec(live, spec, also=[add])

    async def _update_spec(
        self, live: PodGang, spec: PodGangSpec, also: Sequence[dict[str, Any]] = ()
    ) -> list[Expectation]:
        """The spec as planned, if it is still the generation it was decided on: a JSON
        patch testing metadata.generation, so the status writes of others (which move the
        resourceVersion, not the generation) never make it conflict. A failed test means
        the spec changed since: wait until the model shows that, then decide again.
        ``also``: more operations in the same patch."""
        meta = live.metadata
        ops = [
            {"op": "test", "path": "/metadata/generation", "value": meta.generation},
            {"op": "replace", "path": "/spec", "value": to_object(spec)},
            *also,
        ]
        call = self._send(
            "PATCH", PODGANGS.path(meta.namespace, meta.name), ops, "application/json-patch+json"
        )
        try:
            written = await self._write(Kind.PODGANG, "update", meta.name, call)
        except KubeError as exc:
            if not test_failed(exc):
                raise
            return [Expectation(Kind.PODGANG, meta.name, _newer_than(meta.resource_version))]
        return [Expectation(Kind.PODGANG, meta.name, _version(written))]

    async def _set_initialized(
        self, pcs: PodCliqueSet, live: PodGang, ready: bool
    ) -> list[Expectation]:
        name = live.metadata.name
        call = set_podgang_condition(self.kube, to_object(live), _initialized(live, ready))
        written = await self._write(Kind.PODGANG, "status", name, call)
        if ready and written is not None:
            await self.reporter.report(
                pcs,
                events.PodGangInitialized(**self.reporter.common(pcs), podgang=name),
            )
        return [Expectation(Kind.PODGANG, name, _version(written))]

    async def _create_pods(
        self, pcs: PodCliqueSet, batch: PodsToCreate, backend: str
    ) -> list[Expectation]:
        """Ask the backend to prepare the gang's missing pods, then create them, gated.
        Nothing is created unless the backend prepared it."""
        gang = batch.gang
        uid = batch.podgang.metadata.uid
        made = incarnation_of(batch.podgang.metadata.annotations)
        manifests = [
            _traced(
                pod_manifest(
                    gang, group, index, pcs, uid, startup_image=self.startup_image, incarnation=made
                )
            )
            for group, index in batch.pods
        ]
        prepared = await self.backends.prepare_pods(backend, batch.podgang, manifests)
        path = PODS.path(pcs.metadata.namespace)
        created = await asyncio.gather(
            *[
                self._write(Kind.POD, "create", gang.name, self._send("POST", path, pod))
                for pod in prepared
            ]
        )
        names = [pod["metadata"]["name"] for pod in prepared]
        await self.reporter.report(
            pcs,
            events.PodsCreated(**self.reporter.common(pcs), podgang=gang.name, pods=names),
        )
        return [
            Expectation(Kind.POD, name, _version(written))
            for name, written in zip(names, created, strict=True)
        ]

    async def _set_placement(
        self, pcs: PodCliqueSet, live: PodGang, placement: Placement
    ) -> list[Expectation]:
        """The phase and the Scheduled and Ready conditions (with when each last became
        True), in one status write."""
        meta = live.metadata
        status = "True" if placement.scheduled else "False"
        scheduled = _condition(live, labels.SCHEDULED, status, placement.reason, placement.message)
        ready = _condition(
            live,
            labels.READY,
            "True" if placement.ready else "False",
            "PodGangReady" if placement.ready else "PodGangNotReady",
            placement.ready_words,
        )
        call = set_podgang_condition(
            self.kube,
            to_object(live),
            scheduled,
            phase=placement.phase,
            also=(ready,),
            last_true=labels.LAST_TRUE,
        )
        # Not counted to the gang: its count ended when its gates came off.
        written = await self._write(Kind.PODGANG, "status", "", call)
        if written is None:
            return [Expectation(Kind.PODGANG, meta.name, "")]
        for event, fields in _told(live, placement):
            await self.reporter.journal(
                event(**self.reporter.common(pcs), podgang=meta.name, **fields)
            )
        return [Expectation(Kind.PODGANG, meta.name, _version(written))]

    def _lift_gates(
        self, pcs: PodCliqueSet, pods: Sequence[PodRecord]
    ) -> list[Awaitable[list[Expectation]]]:
        by_gang: dict[str, list[PodRecord]] = {}
        for pod in pods:
            by_gang.setdefault(pod.gang, []).append(pod)
        return [
            self._lift_gang(pcs, gang, gang_pods) for gang, gang_pods in sorted(by_gang.items())
        ]

    async def _lift_gang(
        self, pcs: PodCliqueSet, gang: str, pods: list[PodRecord]
    ) -> list[Expectation]:
        """Remove our gate, and only ours (a strategic-merge delete of that one entry), from
        every pod of the gang at once."""
        async with self._lifting:
            written = await asyncio.gather(
                *[
                    self._write(
                        Kind.POD,
                        "lift-gate",
                        gang,
                        self._send(
                            "PATCH",
                            PODS.path(pod.namespace, pod.name),
                            UNGATE,
                            "application/strategic-merge-patch+json",
                        ),
                        bounded=False,
                    )
                    for pod in pods
                ]
            )
        names = [pod.name for pod in pods]
        metrics.WRITES_PER_GANG.observe(self._writes.pop(gang) or 0)
        await self.reporter.report(
            pcs,
            events.GatesLifted(**self.reporter.common(pcs), podgang=gang, pods=names),
        )
        return [
            Expectation(Kind.POD, name, _version(found))
            for name, found in zip(names, written, strict=True)
        ]


def _newer_than(version: str) -> str:
    try:
        return str(int(version) + 1)
    except ValueError:
        return ""  # opaque: any version will do


def _version(obj: dict[str, Any] | None) -> str:
    return str((obj or {}).get("metadata", {}).get("resourceVersion", ""))
