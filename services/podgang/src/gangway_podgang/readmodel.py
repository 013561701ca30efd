"""The podgang service's read model: every PodCliqueSet, PodGang, Pod, headless Service,
PodClique, scaling group and topology binding, kept in memory from the OBJECTS stream and
grouped by the PodCliqueSet they belong to (pods and PodGangs as
:mod:`gangway_podgang.compact` keeps them).

A consumer of its own replays the stream from the start and then follows it, so the model is
the store's state as of the last stream sequence applied. A handler that took a message with
sequence ``s`` waits for :meth:`ReadModel.caught_up` to reach ``s`` before it decides: it then
sees at least what the message said. After writing, the reconciler waits for its own writes
to come back (:meth:`ReadModel.wait_until`), so its next decision does not repeat them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from gangway_contracts import labels, why
from gangway_contracts.codec import MALFORMED
from gangway_contracts.durables import PODGANG_KINDS
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet, PodGang
from gangway_contracts.pods import Pod
from gangway_contracts.records import ObjectRecord
from gangway_contracts.services import Service
from gangway_contracts.subjects import Kind, Subjects
from gangway_podgang.autoscalers import AutoscalerView
from gangway_podgang.cliques import PodCliqueView, ScalingGroupView
from gangway_podgang.compact import PodRecord, compact_pod, compact_podgang
from gangway_runtime.consumer import fetch_ready

log = logging.getLogger(__name__)

# The PodCliqueSet a workload is about: (namespace, name).
WorkloadKey = tuple[str, str]
# What podgang acts on, and the topology bindings its plans read.
KINDS = (*PODGANG_KINDS, Kind.CLUSTERTOPOLOGYBINDING)
# What each kind's records decode into; anything else is malformed.
Object = (
    PodCliqueSet
    | PodGang
    | Pod
    | Service
    | PodCliqueView
    | ScalingGroupView
    | AutoscalerView
    | ClusterTopologyBinding
)
VIEWS: dict[str, type[Object]] = {
    Kind.PODCLIQUESET: PodCliqueSet,
    Kind.PODGANG: PodGang,
    Kind.POD: Pod,
    Kind.SERVICE: Service,
    Kind.PODCLIQUE: PodCliqueView,
    Kind.PODCLIQUESCALINGGROUP: ScalingGroupView,
    Kind.HPA: AutoscalerView,
    Kind.CLUSTERTOPOLOGYBINDING: ClusterTopologyBinding,
}
# The kinds clique_writes.py writes and remembers: their deletes are kept as ``gone``.
_REMEMBERED_GONE = frozenset({Kind.PODCLIQUE, Kind.PODCLIQUESCALINGGROUP, Kind.HPA})
# Deletes kept per PodCliqueSet; one forgotten costs one create answered 409.
_GONE_AT_MOST = 1000
_PREEMPTED_AT_MOST = 1000
_BATCH = 1000
# The server drops the consumer this long after the service stops asking.
_INACTIVE_SECONDS = 60.0
# Empty fetches (a second each) before the read model asks whether its consumer still exists.
_QUIET_FETCHES = 5


@dataclass
class Workload:
    """One PodCliqueSet and the PodGangs and pods that say they are part of it."""

    podcliqueset: PodCliqueSet | None = None
    podgangs: dict[str, PodGang] = field(default_factory=dict)
    pods: dict[str, PodRecord] = field(default_factory=dict)
    # Its replicas' headless Services, by name (a replica's base gang's name too).
    services: dict[str, Service] = field(default_factory=dict)
    podcliques: dict[str, PodCliqueView] = field(default_factory=dict)
    scaling_groups: dict[str, ScalingGroupView] = field(default_factory=dict)
    autoscalers: dict[str, AutoscalerView] = field(default_factory=dict)
    # The resourceVersion of each PodClique, scaling group and HPA mirrored as deleted, by
    # (kind, name), until it is made again: a write of this process remembered as "not shown
    # yet" is known to be past (a create and its delete mirrored before a reconcile ran would
    # otherwise read as still on its way, and the object would never be made again).
    gone: dict[tuple[str, str], str] = field(default_factory=dict)
    # The last pod of each gang a scheduler evicted for another (its record, with the
    # scheduler's words), until the PodGang says Preempted itself or the pod's replacement
    # is bound: a victim's delete is mirrored right after its mark, often before a
    # reconcile reads the pods.
    preempted: dict[str, PodRecord] = field(default_factory=dict)
    # The gangs whose PodGang, pods or Service changed since the reconciler last took them.
    touched: set[str] = field(default_factory=set)
    # Its key in the model: every object filed under it refers to this one tuple.
    key: WorkloadKey = ("", "")

    def copy(self) -> Workload:
        return Workload(
            self.podcliqueset,
            dict(self.podgangs),
            dict(self.pods),
            dict(self.services),
            dict(self.podcliques),
            dict(self.scaling_groups),
            dict(self.autoscalers),
            gone=dict(self.gone),
            preempted=dict(self.preempted),
            key=self.key,
        )


def workload_of(kind: str, namespace: str, obj_labels: dict[str, str], name: str) -> WorkloadKey:
    """A PodGang, pod, Service, PodClique or scaling group belongs to the PodCliqueSet its
    part-of label names."""
    if kind == Kind.PODCLIQUESET:
        return namespace, name
    return namespace, obj_labels.get(labels.PART_OF, "")


def decode_object(kind: str, record: ObjectRecord) -> Object:
    """A record's object as the view of its kind; raises one of MALFORMED when it is not
    one (or ValueError for a kind podgang does not read)."""
    if kind not in VIEWS:
        raise ValueError(f"podgang reads no {kind} records")
    return msgspec.json.decode(record.object, type=VIEWS[kind])


def _add(workload: Workload, name: str, obj: Object) -> None:
    """Put one object (no topology binding: those are the model's own) in its workload."""
    if isinstance(obj, PodCliqueSet):
        workload.podcliqueset = obj
    elif isinstance(obj, PodGang):
        podgang = workload.podgangs[name] = compact_podgang(obj)
        workload.touched.add(name)
        if name in workload.preempted and _says_preempted(podgang):
            del workload.preempted[name]
    elif isinstance(obj, Service):
        workload.services[name] = obj
        workload.touched.add(name)
    # No gang waits for a PodClique or scaling group (clique_writes.py): not touched.
    elif isinstance(obj, PodCliqueView):
        workload.podcliques[name] = obj
    elif isinstance(obj, ScalingGroupView):
        workload.scaling_groups[name] = obj
    elif isinstance(obj, AutoscalerView):
        workload.autoscalers[name] = obj
    elif isinstance(obj, Pod):
        pod = workload.pods[name] = compact_pod(obj)
        workload.touched.add(pod.gang)
        if pod.gang:
            _remember_preemption(workload.preempted, pod)


def _remember_preemption(preempted: dict[str, PodRecord], pod: PodRecord) -> None:
    """Keep a victim by its gang; forget it once its replacement is on a node."""
    if pod.preempted:
        if len(preempted) >= _PREEMPTED_AT_MOST:  # the oldest first
            del preempted[next(iter(preempted))]
        preempted[pod.gang] = pod
        return
    victim = preempted.get(pod.gang)
    replaced = victim is not None and victim.name == pod.name and victim.uid != pod.uid
    if replaced and pod.is_scheduled:
        del preempted[pod.gang]


def _says_preempted(podgang: PodGang) -> bool:
    found = podgang.condition(labels.SCHEDULED)
    return found is not None and found.reason == why.PREEMPTED


class ReadModel:
    def __init__(self, js: JetStreamContext, subjects: Subjects) -> None:
        self._js = js
        self._subjects = subjects
        self._workloads: dict[WorkloadKey, Workload] = {}
        self._bindings: dict[str, ClusterTopologyBinding] = {}
        # Where each object was filed, so a delete (or a changed label) finds it: by kind
        # and namespace, then by name (15 000 objects, no key tuple each).
        self._filed: dict[tuple[str, str], dict[str, WorkloadKey]] = {}
        self._changed = asyncio.Event()
        self.sequence = 0  # the last stream sequence applied
        # Once true, the model has held everything the stream held for its subjects when
        # it started. Not "reached the stream's last sequence": that may be a subject it does
        # not follow (a backend's Workload), and then it would wait for a change of its own.
        self._loaded = False

    def filter_subjects(self) -> list[str]:
        return [self._subjects.objects_filter(kind) for kind in KINDS]

    async def follow(self) -> None:
        """Read the stream in order, for ever. The consumer is ours alone (no acks, in
        memory); if it is lost (a server restart, a network cut), a new one resumes right
        after the last sequence applied, so nothing is skipped or applied twice."""
        while True:
            start = (
                {
                    "deliver_policy": DeliverPolicy.BY_START_SEQUENCE,
                    "opt_start_seq": self.sequence + 1,
                }
                if self.sequence
                else {"deliver_policy": DeliverPolicy.ALL}
            )
            config = ConsumerConfig(
                ack_policy=AckPolicy.NONE,
                filter_subjects=self.filter_subjects(),
                inactive_threshold=_INACTIVE_SECONDS,
                mem_storage=True,
                **start,
            )
            try:
                sub = await self._js.pull_subscribe(
                    self._subjects.objects_root + ".>",
                    stream=self._subjects.objects_stream,
                    config=config,
                )
                if not self._loaded and (await sub.consumer_info()).num_pending == 0:
                    self._loaded = True  # nothing of ours in the stream yet
                    self._notify()
                try:
                    quiet = 0
                    while True:
                        try:
                            batch = await fetch_ready(sub, _BATCH, wait=1)
                        except TimeoutError:  # nats-py's, or asyncio's on a late reply
                            quiet += 1
                            if quiet % _QUIET_FETCHES == 0:
                                # A quiet stream, or our consumer lost with the node that
                                # held it: a fetch then just times out, for ever. Ask; a
                                # consumer gone raises, and a new one resumes below.
                                await sub.consumer_info()
                            continue
                        quiet = 0
                        for msg in batch:
                            self._on_message(msg)
                        self._notify()
                finally:
                    with contextlib.suppress(Exception):
                        await sub.unsubscribe()
            except (NatsError, OSError) as exc:
                log.warning("read model: %s; resuming after sequence %d", exc, self.sequence)
                await asyncio.sleep(1)

    def _notify(self) -> None:
        # Waiters look once per batch, not once per message: a wait for a thousand pods
        # would otherwise check them a thousand times.
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def loaded(self) -> bool:
        """Everything the stream held at start has been applied (the readiness probe)."""
        return self._loaded

    def _on_message(self, msg: Msg) -> None:
        try:
            key = self._subjects.parse_object(msg.subject)
            record = msgspec.json.decode(msg.data, type=ObjectRecord)
            self.apply(key.kind, record)
        except MALFORMED as exc:
            # The work consumer dead-letters the same message with its error; the object
            # filed under that key before stays (never hidden by a forged record).
            log.warning("read model: skipping %s: %s", msg.subject, exc)
        self.sequence = max(self.sequence, msg.metadata.sequence.stream)
        if msg.metadata.num_pending == 0:
            self._loaded = True  # caught up with the stream as it stood

    def apply(self, kind: str, record: ObjectRecord) -> None:
        """File one record (an object or its tombstone) where it belongs. Decoded before
        anything is filed or unfiled: a record that does not decode changes nothing."""
        obj = None if record.deleted else decode_object(kind, record)
        if kind == Kind.CLUSTERTOPOLOGYBINDING:
            if isinstance(obj, ClusterTopologyBinding):
                self._bindings[record.name] = obj
            else:
                self._bindings.pop(record.name, None)
            return
        # Interned: 15 000 keys would otherwise each hold their own copy of the name the
        # object holds already.
        name = sys.intern(record.name)
        group = (str(kind), record.namespace)
        filed = self._filed.get(group)
        if filed is None:  # not setdefault: that makes an empty dict for every record
            filed = self._filed[group] = {}
        previous = filed.pop(name, None)
        if previous is not None:
            self._remove(kind, previous, name, gone_at=None if obj else record.resource_version)
        if obj is None or isinstance(obj, ClusterTopologyBinding):
            return
        key = workload_of(kind, record.namespace, obj.metadata.labels, name)
        if not key[1]:
            return  # a PodGang or pod no PodCliqueSet claims: not ours to drive
        workload = self._workloads.get(key)
        if workload is None:
            key = (sys.intern(key[0]), sys.intern(key[1]))
            workload = self._workloads[key] = Workload(key=key)
        _add(workload, name, obj)
        if workload.gone:
            workload.gone.pop((kind, name), None)  # made again
        filed[name] = workload.key

    def _remove(self, kind: str, key: WorkloadKey, name: str, gone_at: str | None) -> None:
        """Unfile one object; ``gone_at``: the version its delete was mirrored at."""
        workload = self._workloads.get(key)
        if workload is None:
            return
        if gone_at is not None and kind in _REMEMBERED_GONE:
            if len(workload.gone) >= _GONE_AT_MOST:  # the oldest first (a dict keeps order)
                del workload.gone[next(iter(workload.gone))]
            workload.gone[kind, name] = gone_at
        if kind == Kind.PODCLIQUESET:
            workload.podcliqueset = None
        elif kind == Kind.PODGANG:
            workload.podgangs.pop(name, None)
            workload.touched.add(name)
        elif kind == Kind.SERVICE:
            workload.services.pop(name, None)
            workload.touched.add(name)
        elif kind == Kind.PODCLIQUE:
            workload.podcliques.pop(name, None)
        elif kind == Kind.PODCLIQUESCALINGGROUP:
            workload.scaling_groups.pop(name, None)
        elif kind == Kind.HPA:
            workload.autoscalers.pop(name, None)
        elif (pod := workload.pods.pop(name, None)) is not None:
            workload.touched.add(pod.gang)
        if not (
            workload.podcliqueset
            or workload.podgangs
            or workload.pods
            or workload.services
            or workload.podcliques
            or workload.scaling_groups
            or workload.autoscalers
        ):
            del self._workloads[key]

    def workload(self, key: WorkloadKey) -> Workload:
        """A copy of what the model holds for one PodCliqueSet: later messages do not
        change a decision being made."""
        found = self._workloads.get(key)
        return found.copy() if found else Workload()

    def take_touched(self, key: WorkloadKey) -> set[str]:
        """The gangs whose PodGang or pods changed since the last call, and forget them."""
        found = self._workloads.get(key)
        if found is None:
            return set()
        touched, found.touched = found.touched, set()
        return touched

    def peek(self, key: WorkloadKey) -> Workload | None:
        """The model's own entry, not a copy: for quick checks that do not await."""
        return self._workloads.get(key)

    def podcliqueset(self, key: WorkloadKey, uid: str) -> PodCliqueSet | None:
        """The PodCliqueSet of this uid as the model holds it now; None when it holds none,
        or another of the same name."""
        found = self._workloads.get(key)
        pcs = found.podcliqueset if found else None
        return pcs if pcs is not None and pcs.metadata.uid == uid else None

    def binding(self, name: str | None) -> ClusterTopologyBinding | None:
        return self._bindings.get(name) if name else None

    def workload_keys(self) -> list[WorkloadKey]:
        return sorted(self._workloads)

    async def wait_until(self, done: Callable[[], bool], within: float) -> bool:
        """Wait until ``done()`` holds after some applied batch; False after ``within`` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not done():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                async with asyncio.timeout(remaining):
                    await self._changed.wait()
            except TimeoutError:
                return done()
        return True

    async def caught_up(self, sequence: int, within: float) -> bool:
        return await self.wait_until(lambda: self.sequence >= sequence, within)
