"""What the Kueue stage takes from the bus, and how it converges one PodGang.

A message says which PodGang to look at: the PodGang itself (any backend's), or one of the
stage's Workloads (Kueue wrote its decision), which names its PodGang by owner reference
and carries its backend's label. The handler reads the current state from the mirror and
converges, level-triggered:

1. a PodGang naming a LocalQueue whose pods are all referenced (Initialized at its
   generation) has its Workload (``workload.py``), made again when the gang changed;
2. what Kueue decided is written on the PodGang as ``QueueAdmitted`` at its generation (the
   gates wait for it), and journaled when it changes;
3. a gang Kueue evicted is stopped by podgang (its placed pods deleted, made again gated);
   once none of its pods is past its gate, the Workload's reservation is cleared, as
   Kueue's own integrations do, and Kueue queues it again.

With Kueue's topology assignment on (``kueue.topology``), the Workload asks for the domains
the gang's pack constraints name, and an admission's domains are written onto the gated
pods (``domains.py``) before ``QueueAdmitted`` says ``TopologyAssigned``; a pod made again
later is routed here by its own message. A gated pod still carrying the domain of an
admission Kueue took back is deleted (podgang makes it again, bare) before the quota is
handed back.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
from nats.aio.msg import Msg
from opentelemetry import trace

from gangway_backendkit.context import BackendContext
from gangway_backendkit.protocol import NotYet
from gangway_contracts import kueue, kueue_topology, labels, why
from gangway_contracts.codec import MALFORMED
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.events import QueueAdmitted, QueueHeld
from gangway_contracts.grove import PodGang, PodGroup, podcliqueset_of
from gangway_contracts.k8s import Condition, NamespacedName
from gangway_contracts.pods import Pod
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Kind, ObjectKey
from gangway_runtime import tracing
from gangway_runtime.consumer import Route
from gangway_runtime.journal import JournalWriter
from gangway_runtime.kube import KubeError
from gangway_runtime.objects import OwnWrites, last_per_subject
from gangway_runtime.status import PODS, now, set_podgang_condition
from gangway_stage_kueue import domains, workload
from gangway_stage_kueue.workload import PRIORITY_CLASSES, WORKLOADS, Verdict

log = logging.getLogger(__name__)
tracer = trace.get_tracer("gangway.stage_kueue")
# How soon an evicted gang is looked at again while podgang stops it.
STOPPING_RECHECK_SECONDS = 1.0


class _Owner(msgspec.Struct):
    kind: str = ""
    name: str = ""


class _Meta(msgspec.Struct, rename="camel"):
    labels: dict[str, str] = {}
    owner_references: list[_Owner] = []


class _Labelled(msgspec.Struct):
    """Just enough of an object to find the PodGang it is about."""

    metadata: _Meta = msgspec.field(default_factory=_Meta)


def _workload_of(podgang: PodGang) -> NamespacedName:
    meta = podgang.metadata
    return NamespacedName(namespace=meta.namespace, name=podcliqueset_of(meta) or meta.name)


def _step_id(podgang: PodGang, said: Condition) -> str:
    """The id a decision's entry is stored under: one per PodGang, decision and time it was
    made, whichever replica writes it or makes it up."""
    return f"queue/{podgang.metadata.uid}/{said.status}/{said.reason}/{said.last_transition_time}"


def _same(said: Condition | None, verdict: Verdict) -> bool:
    return (
        said is not None
        and (said.status == "True") == verdict.admitted
        and said.reason == verdict.reason
        and said.message == verdict.message
    )


class StageHandler:
    def __init__(self, ctx: BackendContext, config: SchedulerConfig) -> None:
        self.ctx = ctx
        self.config = config
        self.journal = JournalWriter(ctx.js, ctx.subjects, kueue.STAGE)
        # The QueueAdmitted this replica last wrote to each PodGang, until the mirror shows it.
        self.said: OwnWrites[ObjectKey, Condition] = OwnWrites()
        # PriorityClass name → value: the API server refuses a change of a class's value.
        self.priorities: dict[str, int] = {}

    def route(self, msg: Msg) -> Route[ObjectKey] | None:
        """The PodGang; a Workload, or a pod waiting gated for its domain, in a slot of its
        own. PodGangs naming no queue, and other pods, are dropped here (decoded as far as
        their labels)."""
        key = self.ctx.subjects.parse_object(msg.subject)
        record = msgspec.json.decode(msg.data, type=ObjectRecord)
        if key.kind == Kind.POD:
            return None if record.deleted else self._route_pod(key, record)
        found = msgspec.json.decode(record.object, type=_Labelled).metadata
        if key.kind == Kind.PODGANG:
            return Route(key) if kueue.queue_of(found.labels) else None
        owner = next((o.name for o in found.owner_references if o.kind == "PodGang"), "")
        backend = found.labels.get(labels.SCHEDULER_NAME, "")
        if not owner or not backend:
            return None  # not one of the stage's: nothing to converge
        return Route(ObjectKey(Kind.PODGANG, backend, key.namespace, owner), slot=msg.subject)

    def _route_pod(self, key: ObjectKey, record: ObjectRecord) -> Route[ObjectKey] | None:
        pod = msgspec.json.decode(record.object, type=Pod)
        gang = pod.metadata.labels.get(labels.PODGANG)
        backend = self.config.resolve(pod.spec.scheduler_name)
        waits = pod.is_gated(labels.PODGANG_PENDING_CREATION_GATE) and not kueue_topology.given(
            pod.metadata.annotations
        )
        if not gang or backend is None or not waits:
            return None
        return Route(ObjectKey(Kind.PODGANG, backend, key.namespace, gang))

    async def handle(self, key: ObjectKey, msgs: Sequence[Msg]) -> float | None:
        parent = tracing.context_from_headers(msgs[-1].headers) if msgs else None
        with tracer.start_as_current_span("stage-kueue admit podgang", context=parent):
            return await self.reconcile(key)

    async def keys(self) -> AsyncIterator[ObjectKey]:
        """Every PodGang naming a queue that Kueue does not admit at its generation: one
        waiting for Kueue's word, held back, or evicted (its quota is handed back once it
        stopped: a stage killed while it waited for that finds it here)."""
        subjects = self.ctx.subjects
        stored = subjects.objects_filter(Kind.PODGANG)
        async for msg in last_per_subject(self.ctx.js, subjects.objects_stream, stored):
            try:
                record = msgspec.json.decode(msg.data, type=ObjectRecord)
                podgang = msgspec.json.decode(record.object, type=PodGang)
            except MALFORMED:
                continue
            if (
                not record.deleted
                and kueue.queue_of(podgang.metadata.labels)
                and not podgang.holds_now(kueue.QUEUE_ADMITTED)
            ):
                yield subjects.parse_object(msg.subject)

    async def reconcile(self, key: ObjectKey) -> float | None:
        record = await self.ctx.record(key)
        if record is None or record.deleted:
            return None  # its Workload goes with it (owner reference)
        podgang = msgspec.json.decode(record.object, type=PodGang)
        queue = kueue.queue_of(podgang.metadata.labels)
        groves = podgang.metadata.labels.get(labels.MANAGED_BY) == labels.MANAGED_BY_GROVE
        if queue is None or groves or not podgang.holds_now(labels.INITIALIZED):
            return None  # the pods' counts come with the references
        meta = podgang.metadata
        pcs = await self.ctx.podcliqueset(meta.namespace, podcliqueset_of(meta))
        if pcs is None:
            raise NotYet(f"PodCliqueSet of PodGang {meta.namespace}/{meta.name} not mirrored yet")
        priority = await self._priority(podgang.spec.priority_class_name)
        current = msgspec.json.decode(record.object)
        try:
            topology = self.config.kueue_topology
            requests = kueue_topology.podgang_requests(podgang) if topology else {}
            desired = workload.workload(podgang, pcs, queue, priority, requests)
        except KeyError:
            return None  # a podgroup of no clique: a PodGang podgang did not plan
        except kueue_topology.Unexpressible as exc:
            refused = Verdict(False, why.BACKEND_NOT_SYNCED, f"{exc.field}: {exc.reason}")
            await self._report(key, podgang, current, record, refused)
            return None
        await self.ctx.ensure(WORKLOADS, desired, immutable_spec=True)
        live = await self._live(desired)
        verdict = workload.verdict_of(live)
        again = None
        if verdict.admitted and live is not None and (assigned := workload.assignments(live)):
            again = await self._give_domains(podgang, assigned, requests)
            verdict = workload.placed(verdict, podgang, assigned, requests)
        await self._report(key, podgang, current, record, verdict)
        if verdict.evicted and live is not None:
            if not await self._stopped(podgang):
                return STOPPING_RECHECK_SECONDS
            await self._unreserve(live)
        return again

    async def _priority(self, name: str | None) -> int | None:
        if not name:
            return None
        if name not in self.priorities:
            found = await self.ctx.kube.read(PRIORITY_CLASSES, "", name)
            if found is None:
                raise NotYet(f"PriorityClass {name} does not exist (yet)", after=5.0)
            self.priorities[name] = int(found.get("value", 0))
        return self.priorities[name]

    async def _live(self, desired: dict[str, Any]) -> dict[str, Any] | None:
        """The Workload as mirrored; None until the mirror shows it (its message follows)."""
        meta = desired["metadata"]
        key = ObjectKey(kueue.WORKLOADS.kind, kueue.STAGE, meta["namespace"], meta["name"])
        record = await self.ctx.record(key)
        if record is None or record.deleted:
            return None
        found: dict[str, Any] = msgspec.json.decode(record.object)
        return found

    async def _pods(self, podgang: PodGang, group: PodGroup) -> list[Pod]:
        """The podgroup's pods as mirrored (those not made yet, or gone, left out)."""
        found = []
        for ref in group.pod_references:
            record = await self.ctx.record(ObjectKey(Kind.POD, "", ref.namespace, ref.name))
            if record is not None and not record.deleted:
                found.append(msgspec.json.decode(record.object, type=Pod))
        return found

    async def _stopped(self, podgang: PodGang) -> bool:
        """None of the gang's pods is past its gate (podgang deletes them and makes them
        again, gated, once the gang is no longer admitted), nor carries a domain of the
        admission Kueue took back (deleted here: made again bare)."""
        stopped = True
        for group in podgang.spec.podgroups:
            for pod in await self._pods(podgang, group):
                if not pod.is_gated(labels.PODGANG_PENDING_CREATION_GATE):
                    stopped = False
                elif kueue_topology.given(pod.metadata.annotations):
                    await self._remake(pod)
                    stopped = False
        return stopped

    async def _give_domains(
        self,
        podgang: PodGang,
        assigned: dict[str, dict[str, Any]],
        requests: Mapping[str, kueue_topology.Request],
    ) -> float | None:
        """Each gated pod without a domain gets the one Kueue's assignment has room for, with
        Kueue's annotation for its podgroup's request; a pod holding a domain the assignment
        has no room in is made again. A time to look again when a write did not take."""
        again = None
        for group in podgang.spec.podgroups:
            podset = workload.podset_name(podgang, group.name)
            pods = await self._pods(podgang, group)
            placement = domains.place(pods, domains.domains(assigned.get(podset, {})))
            request = requests.get(group.name)
            annotation = request.annotation() if request else (kueue_topology.UNCONSTRAINED, "true")
            by_name = {pod.metadata.name: pod for pod in pods}
            for name, domain in placement.given.items():
                if not await self._write_domain(by_name[name], domain, annotation):
                    again = STOPPING_RECHECK_SECONDS
            for pod in placement.stale:
                await self._remake(pod)
        return again

    async def _write_domain(
        self, pod: Pod, domain: dict[str, str], annotation: tuple[str, str]
    ) -> bool:
        """The domain as the pod's nodeSelector (it can only grow while gated) and Kueue's
        annotation, in one write, to this very pod (its uid); False when it changed since."""
        meta = pod.metadata
        body = {
            "metadata": {"uid": meta.uid, "annotations": dict([annotation])},
            "spec": {"nodeSelector": domain},
        }
        try:
            await self.ctx.kube.request(
                "PATCH",
                PODS.path(meta.namespace, meta.name),
                [("fieldManager", self.ctx.field_manager)],
                body=body,
                content_type="application/merge-patch+json",
            )
        except KubeError as exc:
            if exc.status in (404, 409, 422):
                return False  # gone, made again, or past its gate: its next message says
            raise
        return True

    async def _remake(self, pod: Pod) -> None:
        """Delete a gated pod holding a domain no admission gives it (podgang makes it
        again): this very pod, not one made since under its name."""
        meta = pod.metadata
        log.info("%s/%s: holds a domain Kueue took back; made again", meta.namespace, meta.name)
        body = {"preconditions": {"uid": meta.uid}, "propagationPolicy": "Background"}
        try:
            await self.ctx.kube.request("DELETE", PODS.path(meta.namespace, meta.name), body=body)
        except KubeError as exc:
            if exc.status not in (404, 409):
                raise

    async def _unreserve(self, live: dict[str, Any]) -> None:
        meta = live["metadata"]
        path = WORKLOADS.path(meta["namespace"], meta["name"], "status")
        await self.ctx.kube.request(
            "PATCH",
            path,
            [("fieldManager", self.ctx.field_manager)],
            body=workload.unreserved(live, now()),
            content_type="application/merge-patch+json",
        )
        log.info("%s/%s: evicted gang stopped; quota handed back", meta["namespace"], meta["name"])

    async def _report(
        self,
        key: ObjectKey,
        podgang: PodGang,
        current: dict[str, Any],
        record: ObjectRecord,
        verdict: Verdict,
    ) -> None:
        """QueueAdmitted at the PodGang's generation, written when it says something else
        (not before Kueue has said anything: the gates wait on it anyway); journaled when
        Kueue's decision changed (not for a new generation alone), an admission lost to a
        crash between the write and the journal made up for."""
        now_said = podgang.current_condition(kueue.QUEUE_ADMITTED)
        if _same(now_said, verdict):
            assert now_said is not None
            await self._journaled(podgang, verdict, now_said)
            return
        unshown = self.said.unshown(key, record.resource_version)
        if (
            _same(unshown, verdict)
            and unshown is not None
            and unshown.observed_generation == podgang.metadata.generation
        ):
            return
        before = podgang.condition(kueue.QUEUE_ADMITTED)
        if before is None and verdict.reason == why.GATED:
            return
        status = "True" if verdict.admitted else "False"
        # As Kubernetes keeps it: the time the status last changed, not the last write.
        kept = before.last_transition_time if before and before.status == status else None
        condition = Condition(
            type=kueue.QUEUE_ADMITTED,
            status=status,
            reason=verdict.reason,
            message=verdict.message,
            last_transition_time=kept or now(),
            observed_generation=podgang.metadata.generation,
        )
        written = await set_podgang_condition(self.ctx.kube, current, condition)
        if written is None:
            return
        self.said.remember(key, written["metadata"]["resourceVersion"], condition)
        if _same(before, verdict):
            return  # the same decision, at a new generation
        meta = podgang.metadata
        log.info("%s/%s: %s: %s", meta.namespace, meta.name, verdict.reason, verdict.message)
        await self.journal.store(self._event(podgang, verdict), _step_id(podgang, condition))

    async def _journaled(self, podgang: PodGang, verdict: Verdict, said: Condition) -> None:
        """The admission the PodGang shows has its journal entry: one lost to a crash
        between the condition write and the journal is made up for here."""
        if not (verdict.admitted and said.last_transition_time):
            return
        if self.journal.missing(QueueAdmitted, _workload_of(podgang), podgang.metadata.name):
            since = datetime.fromisoformat(said.last_transition_time)
            await self.journal.ensure(self._event(podgang, verdict), since, _step_id(podgang, said))

    def _event(self, podgang: PodGang, verdict: Verdict) -> QueueAdmitted | QueueHeld:
        common: dict[str, Any] = {
            "workload": _workload_of(podgang),
            "at": datetime.now(UTC),
            "service": self.ctx.field_manager,
            "trace_id": tracing.trace_id_hex(),
            "podgang": podgang.metadata.name,
            "message": verdict.message,
        }
        if verdict.admitted:
            return QueueAdmitted(cluster_queue=verdict.cluster_queue, **common)
        return QueueHeld(reason=verdict.reason, **common)
