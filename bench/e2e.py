"""End-to-end benchmark: PodCliqueSets submitted where every Gangway service runs as its own
process (as ``gangway up`` runs them), measured from outside the services.

    uv run python bench/e2e.py                       # ScaleTest_1000, default-scheduler, gang on,
                                                     # kube-scheduler on 100 kwok nodes
    uv run python bench/e2e.py --no-gang             # default-scheduler, gang scheduling off
    uv run python bench/e2e.py --nodes 0             # no scheduler: ends at gates lifted
    uv run python bench/e2e.py --scheduler kai-scheduler          # ScaleTest_1000, KAI's
                                                     # scheduler and binder on 100 kwok nodes
    uv run python bench/e2e.py --scheduler coscheduling           # ScaleTest_1000,
                                                     # scheduler-plugins' Coscheduling
    uv run python bench/e2e.py --scheduler koordinator            # ScaleTest_1000,
                                                     # Koordinator's koord-scheduler
    uv run python bench/e2e.py --scheduler volcano                # ScaleTest_1000,
                                                     # Volcano's vc-scheduler
    uv run python bench/e2e.py --podcliquesets 100 --replicas 5   # 100 submitted at once
    uv run python bench/e2e.py --no-gang --podcliquesets 4 --replicas 10000 --small 10000 \
        --nodes 500 --no-default-spreading           # 100 000 pods: 4 large, 10 000 small

Its own control plane (etcd + kube-apiserver with Gangway's and KAI's CRDs, no controller
manager; with ``--nodes`` > 0 kube-scheduler and kwok with that many nodes, for
kai-scheduler KAI's scheduler and binder, the gangs in an unlimited queue, for
coscheduling scheduler-plugins' scheduler, for koordinator koord-scheduler, for volcano
vc-scheduler, the gangs in its default queue) and
nats-server; watcher, podgang, the backends and admission (registered as the webhook) as
their own processes. Grove's ScaleTest_1000 shape: each PodCliqueSet has ``--replicas``
gangs of one clique of 2 pods (minAvailable 2). All PodCliqueSets are created at once; the
report gives
- submit → every pod created, → every gate lifted, and with a scheduler → every pod bound,
  → every pod Running (the journal's own times, and the pods' bind times from the API
  server's LIST; the end state checked once through the API server);
- per gang, PodCliqueSet observed → gates lifted (and → Running), p50/p99/max (the journal,
  as ``gangway trace``), and submit → all its pods bound;
- API writes the flow made (kube-apiserver's own request counter), per gang, against the least
  the flow needs; API reads (GET, LIST, WATCH) per gang, less the benchmark's own polls;
- NATS messages each service sent, and stream messages stored, per gang (nats-server's
  monitor; the benchmark's own progress polls are a handful per second);
- CPU seconds and peak RSS of every process (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import msgspec
import nats
import yaml
from floor import run_floor  # bench/floor.py, beside this script
from measure import proc_usage  # bench/measure.py, beside this script
from prometheus_client.parser import text_string_to_metric_families

from gangway_backend_coscheduling.builtin import NAME as COSCHEDULING
from gangway_backend_kai.builtin import NAME as KAI_SCHEDULER
from gangway_backend_kai.translate import QUEUE_LABEL
from gangway_backend_koordinator.builtin import NAME as KOORDINATOR
from gangway_backend_volcano.builtin import NAME as VOLCANO
from gangway_cli import cluster
from gangway_cli.backends import builtin_backend
from gangway_cli.services import LocalServices, services_for
from gangway_cli.timeline import gang_latencies, percentile
from gangway_cli.up import LocalWebhook
from gangway_contracts import events as ev
from gangway_contracts import labels
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.config import DEFAULT_SCHEDULER, SchedulerConfig, load_operator_config
from gangway_contracts.events import AnyJournalEvent
from gangway_contracts.subjects import Subjects
from gangway_localcluster import kai
from gangway_localcluster.controlplane import LOCAL_SCHEDULERS, ControlPlane
from gangway_localcluster.crds import crd_files
from gangway_localcluster.nats import NatsServer
from gangway_localcluster.nodes import NodePool
from gangway_runtime import journal
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import Kube
from gangway_runtime.status import PODCLIQUESETS, PODS

ROOT: Final = Path(__file__).resolve().parent.parent
FIXTURE: Final = ROOT / "tests" / "fixtures" / "podcliquesets" / "scaletest-1000.yaml"
NAMESPACE: Final = "bench"
DEPARTMENT: Final = "bench-department"  # KAI schedules only from a queue with a parent
PODS_PER_GANG: Final = 2
WRITE_VERBS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# What Gangway writes for each gang (resource/subresource); the PodCliqueSet's status and
# Events are counted apart (per PodCliqueSet, and in all). pods/status and podgroups/status
# are the scheduler's and kwok's (binding, Running), not Gangway's.
GANG_RESOURCES: Final = frozenset(
    {"pods", "podgangs", "podgangs/status", "workloads", "podgroups", "compositepodgroups"}
)
PODCLIQUESET_STATUS: Final = "podcliquesets/status"
SERVICES: Final = "services"
CLIQUE_RESOURCES: Final = frozenset(
    {
        "podcliques",
        "podcliques/status",
        "podcliquescalinggroups",
        "podcliquescalinggroups/status",
    }
)
EVENTS: Final = "events"
READ_VERBS: Final = frozenset({"GET", "LIST", "WATCH"})
DONE_WITHIN: Final = 900.0
POLL_EVERY: Final = 0.5
PROGRESS_EVERY: Final = 300.0  # a long run says how far it has got, on stderr
LIST_PAGE: Final = 2000
SUBMITTING_AT_ONCE: Final = 100  # aiohttp's connections per client
FLOOR_NAMESPACE: Final = "bench-floor"
FLOOR_GANGS_IN_FLIGHT: Final = 64
# A gang's steps in the journal, in the order GREP-375 takes them (where a gang's time goes).
STEPS: Final = (
    "PodGangCreated",
    "PodsCreated",
    "PodGangInitialized",
    "BackendSynced",
    "GatesLifted",
)
BOUND_KEY: Final = "submit → every pod bound (PodScheduled, whole seconds), s"


def least_writes_per_gang(scheduler: str, gang: bool, placed: bool) -> dict[str, int]:
    """The API writes one gang of PODS_PER_GANG pods cannot do without, by who makes them."""
    podgang = 4 + 2 * PODS_PER_GANG  # PodGang; Initialized=False; pod references;
    # Initialized=True; per pod its create and its gate's removal; once placed, its status
    # Scheduled (with phase Starting) and Running
    podgang += 2 if placed else 0
    # KAI: PodGroup, the PodGang's skip-podgrouper mark, BackendSynced; coscheduling,
    # koordinator (one podgroup a gang here) and volcano: PodGroup, BackendSynced;
    # default-scheduler: (Workload, its PodGroup,) BackendSynced.
    seconds = {COSCHEDULING: 2, KOORDINATOR: 2, VOLCANO: 2}
    backend = {KAI_SCHEDULER: 3, **seconds}.get(scheduler, 3 if gang else 1)
    return {"podgang": podgang, "backend": backend}


@dataclass(frozen=True)
class Run:
    scheduler: str
    gang: bool
    podcliquesets: int
    replicas: int
    nodes: int = 0
    small: int = 0  # and this many PodCliqueSets of one gang each
    interval: float = 0.0  # seconds between two PodCliqueSets' submissions (0: all at once)
    floor: bool = False  # then the floor, on the same control plane (bench/floor.py)
    default_spreading: bool = True  # kube-scheduler's system-default topology spreading

    @property
    def placed(self) -> bool:
        """A scheduler here binds the pods (there are nodes to bind them to)."""
        return self.nodes > 0

    @property
    def gangs(self) -> int:
        return self.podcliquesets * self.replicas + self.small

    @property
    def submitted(self) -> int:
        """PodCliqueSets submitted."""
        return self.podcliquesets + self.small

    @property
    def done_within(self) -> float:
        """How long the run may take: 15 minutes, more for a run of tens of thousands (50 000
        gangs on this machine's two cores took over 80 minutes: 0.15 s a gang)."""
        return max(DONE_WITHIN, self.gangs * 0.15)

    @property
    def poll_every(self) -> float:
        """Between two progress polls: each counts every gang's journal subject."""
        return max(0.2, self.gangs / 25_000)

    @property
    def pods(self) -> int:
        return self.gangs * PODS_PER_GANG

    @property
    def pods_per_node(self) -> int:
        """Room for every pod, the floor's too, on the nodes."""
        wanted = -(-self.pods * (2 if self.floor else 1) // max(self.nodes, 1)) + 10
        return max(110, wanted)

    def config(self) -> dict[str, Any]:
        """default-scheduler and KAI, as ``gangway up`` runs them, and Coscheduling,
        Koordinator or Volcano when measured; the one measured is the default."""
        profiles: dict[str, dict[str, Any]] = {
            DEFAULT_SCHEDULER: {"name": DEFAULT_SCHEDULER, "config": {"gangScheduling": self.gang}},
            KAI_SCHEDULER: {"name": KAI_SCHEDULER},
        }
        if self.scheduler in (COSCHEDULING, KOORDINATOR, VOLCANO):
            profiles[self.scheduler] = {"name": self.scheduler}
        profiles[self.scheduler]["default"] = True
        return {"scheduler": {"profiles": list(profiles.values())}}

    def podcliquesets_to_submit(self) -> list[dict[str, Any]]:
        found = []
        fixture = FIXTURE.read_text()
        shapes = [(f"scaletest-{i}", self.replicas) for i in range(self.podcliquesets)]
        shapes += [(f"small-{i}", 1) for i in range(self.small)]
        for name, replicas in shapes:
            pcs = yaml.safe_load(fixture)
            pcs["metadata"] = {"name": name, "namespace": NAMESPACE, "labels": {}}
            pcs["spec"]["replicas"] = replicas
            if self.scheduler == KAI_SCHEDULER:
                pcs["metadata"]["labels"][QUEUE_LABEL] = NAMESPACE
            for clique in pcs["spec"]["template"]["cliques"]:
                clique["spec"]["podSpec"]["schedulerName"] = self.scheduler
            found.append(pcs)
        return found


def api_requests(metrics_text: str, verbs: frozenset[str], by_verb: bool = False) -> Counter[str]:
    """kube-apiserver's requests of ``verbs`` so far, by resource[/subresource] and code (or,
    ``by_verb``, by verb and resource)."""
    writes: Counter[str] = Counter()
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            labels = sample.labels
            if sample.name != "apiserver_request_total" or labels.get("verb") not in verbs:
                continue
            resource = labels["resource"] + (
                f"/{labels['subresource']}" if labels.get("subresource") else ""
            )
            key = f"{labels['verb']} {resource}" if by_verb else f"{resource} {labels['code']}"
            writes[key] += int(sample.value)
    return writes


def monitor(url: str, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}{path}") as response:
        found: dict[str, Any] = json.loads(response.read())
    return found


def stream_messages(url: str) -> Counter[str]:
    jsz = monitor(url, "/jsz?streams=true")
    return Counter(
        {
            stream["name"]: stream["state"]["messages"]
            for account in jsz.get("account_details", [])
            for stream in account.get("stream_detail", [])
        }
    )


def messages_sent(url: str) -> Counter[str]:
    """Messages each open connection has sent to the server, by its name (the service's)."""
    sent: Counter[str] = Counter()
    for connection in monitor(url, "/connz?limit=1024")["connections"]:
        sent[connection.get("name") or "unnamed"] += connection["in_msgs"]
    return sent


@dataclass(frozen=True)
class Measured:
    submitted: float  # epoch seconds
    submit_times: dict[str, float]  # PodCliqueSet → epoch seconds its create was sent
    journals: list[list[AnyJournalEvent]]  # one per PodCliqueSet
    writes: Counter[str]  # "resource[/subresource] code" → API write requests
    reads: Counter[str]  # "VERB resource" → API reads (the benchmark's polls are LIST pods)
    own_reads: int  # the benchmark's: its polls of the pods
    bound: dict[tuple[str, str], float]  # (PodCliqueSet, gang) → its last pod bound, epoch s
    sent: Counter[str]  # connection name → NATS messages sent
    stored: Counter[str]  # stream → messages stored
    usage: dict[str, tuple[float, int]]  # process → CPU s in the run, peak RSS MiB
    controllers: list[str]  # Gangway's processes and nats-server


class Snapshot:
    """The counters a run is measured by, read before and after it."""

    def __init__(
        self, writes: Counter[str], reads: Counter[str], sent: Counter[str], stored: Counter[str]
    ) -> None:
        self.writes, self.reads, self.sent, self.stored = writes, reads, sent, stored

    @classmethod
    async def take(cls, kube: Kube, server: NatsServer) -> Snapshot:
        metrics = (await kube.request("GET", "/metrics")).decode()
        url = server.monitor_url
        reads = api_requests(metrics, READ_VERBS, by_verb=True)
        return cls(
            api_requests(metrics, WRITE_VERBS), reads, messages_sent(url), stream_messages(url)
        )


async def journal_count(js: Any, subjects: Subjects, step: str) -> int:
    """Journal entries of one step across the bench namespace (a server-side count)."""
    pattern = f"{subjects.journal_root}.{NAMESPACE}.*.{step}.>"  # PodGang, writer
    info = await js.stream_info(subjects.journal_stream, subjects_filter=pattern)
    return sum((info.state.subjects or {}).values())


def last_at(events: list[AnyJournalEvent], kind: type[ev.JournalEvent]) -> datetime:
    found: datetime = max(e.at for e in events if isinstance(e, kind))
    return found


async def bench(run: Run) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="gangway-bench-"))
    config_file = work / "operator-config.yaml"
    config_file.write_text(yaml.safe_dump(run.config()))
    config = load_operator_config(config_file.read_text())
    local = LOCAL_SCHEDULERS.get(run.scheduler) if run.placed else None
    with (
        ControlPlane.start(
            controller_manager=False,
            crds=crd_files(schedulers=True),
            scheduling=run.placed,
            schedulers={local.backend: local.scheduler_name} if local else {},
            default_spreading=run.default_spreading,
        ) as cp,
        NatsServer.start() as server,
    ):
        if run.placed:
            pool = NodePool(count=run.nodes, max_pods=run.pods_per_node)
            cp.add_nodes(pool, ready_within=300)
        webhook = LocalWebhook.make(work / "admission", "127.0.0.1")
        settings = {
            "GANGWAY_NATS_URL": server.url,
            "GANGWAY_KUBECONFIG": str(cp.kubeconfig),
            "GANGWAY_CONFIG_FILE": str(config_file),
            "GANGWAY_LOG_LEVEL": "WARNING",
        }
        services = LocalServices.start(
            work / "logs", settings, services_for(config), {"admission": webhook.settings}
        )
        try:
            await cluster.register(cp.kubeconfig, webhook.registration())
            report = await _measure(run, cp, server, services)
        finally:
            services.stop()
        if run.floor:
            report |= await _floor(run, cp, config, report)
        return report


async def _measure(
    run: Run, cp: ControlPlane, server: NatsServer, services: LocalServices
) -> dict[str, Any]:
    async with Kube(await api_client(cp.kubeconfig)) as kube:
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
        if run.scheduler == KAI_SCHEDULER:
            for queue in kai.queues(NAMESPACE, DEPARTMENT):
                await kube.request("POST", kai.QUEUES_PATH, body=queue)
        submissions = run.podcliquesets_to_submit()
        nc = await nats.connect(server.url)
        js, subjects = nc.jetstream(), Subjects()
        controllers = {**services.pids(), **server.pids()}  # Gangway's processes, nats-server
        processes = {**controllers, **cp.pids()}
        # CPU from submit on, as Grove's figure is: not the imports and the first lists.
        started = {name: proc_usage(pid)[0] for name, pid in processes.items()}
        before = await Snapshot.take(kube, server)
        submitted = time.time()
        submit_times = await _submit(kube, submissions, run.interval)
        deadline = time.monotonic() + run.done_within
        progress_at = time.monotonic() + PROGRESS_EVERY
        while (lifted := await journal_count(js, subjects, "GatesLifted")) < run.gangs:
            if time.monotonic() > deadline:
                raise TimeoutError(f"gates not all lifted after {run.done_within:.0f} s")
            if time.monotonic() > progress_at:
                minutes = (time.time() - submitted) / 60
                print(
                    f"{minutes:.0f} min: {lifted} of {run.gangs} gangs' gates lifted",
                    file=sys.stderr,
                    flush=True,
                )
                progress_at += PROGRESS_EVERY
            await asyncio.sleep(run.poll_every)
        polls = await _until_running(kube, NAMESPACE, deadline) if run.placed else 0
        await asyncio.sleep(3)  # the last status writes after the last gate or phase
        after = await Snapshot.take(kube, server)
        usage: dict[str, tuple[float, int]] = {}
        for name, pid in processes.items():
            cpu, rss = proc_usage(pid)
            usage[name] = (cpu - started[name], rss)
        pods = await _every_pod(kube, NAMESPACE)
        assert len(pods) == run.pods, "not every pod was created"
        assert not [p for p in pods if p["spec"].get("schedulingGates")], "pods still gated"
        bound = _bound(pods) if run.placed else {}
        journals = [
            await journal.read(js, subjects, NAMESPACE, p["metadata"]["name"]) for p in submissions
        ]
        await nc.close()
    return _report(
        run,
        Measured(
            submitted=submitted,
            submit_times=submit_times,
            journals=journals,
            writes=after.writes - before.writes,
            reads=after.reads - before.reads,
            own_reads=polls,  # the final LIST comes after the last snapshot
            bound=bound,
            sent=after.sent - before.sent,
            stored=after.stored - before.stored,
            usage=usage,
            controllers=list(controllers),
        ),
    )


async def _until_running(kube: Kube, namespace: str, deadline: float) -> int:
    """Poll until no pod of the namespace is other than Running (each poll asks for one
    such pod, so a large run's polls stay small); how many polls it took."""
    polls = 0
    path = PODS.path(namespace) + "?fieldSelector=status.phase!%3DRunning&limit=1"
    while True:
        polls += 1
        if not msgspec.json.decode(await kube.request("GET", path))["items"]:
            return polls
        if time.monotonic() > deadline:
            raise TimeoutError("pods not all Running in the time the run allows")
        await asyncio.sleep(POLL_EVERY)


async def _every_pod(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    """Every pod of the namespace, a page at a time (100 000 pods in one answer are
    gigabytes once decoded)."""
    pods: list[dict[str, Any]] = []
    token = ""
    while True:
        query = f"?limit={LIST_PAGE}" + (f"&continue={token}" if token else "")
        page = msgspec.json.decode(await kube.request("GET", PODS.path(namespace) + query))
        pods += page["items"]
        if not (token := page["metadata"].get("continue", "")):
            return pods


async def _floor(
    run: Run, cp: ControlPlane, config: SchedulerConfig, gangway: dict[str, Any]
) -> dict[str, Any]:
    """The floor for the same gangs on the same control plane and scheduler, once Gangway's
    services are stopped (bench/floor.py), and Gangway's times as ratios of it."""
    async with Kube(await api_client(cp.kubeconfig)) as kube:
        body = {"metadata": {"name": FLOOR_NAMESPACE}}
        await kube.request("POST", "/api/v1/namespaces", body=body)
        manifests = [
            {**pcs, "metadata": {**pcs["metadata"], "namespace": FLOOR_NAMESPACE}}
            for pcs in run.podcliquesets_to_submit()
        ]
        backend = builtin_backend(run.scheduler, config)
        started = time.time()
        times = await run_floor(kube, config, backend, manifests, FLOOR_GANGS_IN_FLIGHT)
        if run.placed:
            await _until_running(kube, FLOOR_NAMESPACE, time.monotonic() + DONE_WITHIN)
        running = time.time()
        pods = msgspec.json.decode(await kube.request("GET", PODS.path(FLOOR_NAMESPACE)))["items"]
    assert len(pods) == run.pods, "the floor did not create every pod"
    lifted = max(times.lifted.values()) - started
    report: dict[str, Any] = {
        "floor: API writes per gang": round(times.writes / run.gangs, 2),
        "floor: start → every pod created, s": round(max(times.created.values()) - started, 2),
        "floor: start → every gate lifted, s": round(lifted, 2),
        "floor: per gang, start → gates lifted, p50 / p99 / max, s": _spread(
            [at - started for at in times.lifted.values()]
        ),
    }
    ratios = {"gates lifted": gangway["submit → every gate lifted, s"] / lifted}
    if run.placed:
        bound = max(_bound(pods).values()) - started
        report["floor: start → every pod bound (PodScheduled, whole seconds), s"] = round(bound, 1)
        report["floor: start → every pod Running (seen by a poll), s"] = round(running - started, 1)
        ratios["pods bound"] = gangway[BOUND_KEY] / bound
        ratios["pods Running"] = gangway["submit → every pod Running, s"] / (running - started)
    report["Gangway ÷ floor"] = {what: f"{ratio:.2f}" for what, ratio in ratios.items()}
    return report


async def _submit(
    kube: Kube, submissions: list[dict[str, Any]], interval: float
) -> dict[str, float]:
    """Create the PodCliqueSets, all at once (as many in flight as the client has
    connections: ten thousand requests queued behind them would time out) or one every
    ``interval`` s; when each was sent."""
    sent: dict[str, float] = {}
    connections = asyncio.Semaphore(SUBMITTING_AT_ONCE)

    async def one(pcs: dict[str, Any], delay: float) -> None:
        await asyncio.sleep(delay)
        async with connections:
            sent[pcs["metadata"]["name"]] = time.time()
            await kube.request("POST", PODCLIQUESETS.path(pcs["metadata"]["namespace"]), body=pcs)

    await asyncio.gather(*(one(pcs, i * interval) for i, pcs in enumerate(submissions)))
    return sent


def _bound(pods: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """(PodCliqueSet, gang) → when its last pod was bound."""
    bound: dict[tuple[str, str], float] = {}
    for pod in pods:
        found = pod["metadata"]["labels"]
        key = (found[labels.PART_OF], found[labels.PODGANG])
        bound[key] = max(bound.get(key, 0.0), bound_at(pod))
    return bound


def bound_at(pod: dict[str, Any]) -> float:
    """When the scheduler bound the pod: its PodScheduled=True transition (whole seconds)."""
    for found in pod["status"].get("conditions") or []:
        if found["type"] == "PodScheduled" and found["status"] == "True":
            return datetime.fromisoformat(found["lastTransitionTime"]).timestamp()
    raise AssertionError(f"pod {pod['metadata']['name']} not bound")


def _spread(values: list[float]) -> str:
    return " / ".join(
        f"{v:.2f}" for v in (percentile(values, 50), percentile(values, 99), max(values))
    )


def _running(event: AnyJournalEvent) -> bool:
    return isinstance(event, ev.PodGangPhaseChanged) and event.phase == "Running"


def _report(run: Run, m: Measured) -> dict[str, Any]:
    every = [e for events in m.journals for e in events]
    latencies = [
        seconds
        for events in m.journals
        for seconds in gang_latencies(events, "GatesLifted").values()
    ]

    def writes_to(resources: Collection[str]) -> int:
        return sum(n for key, n in m.writes.items() if key.split()[0] in resources)

    least = least_writes_per_gang(run.scheduler, run.gang, run.placed)
    gang_on = run.gang and run.scheduler == DEFAULT_SCHEDULER

    def since_submit(kind: type[ev.JournalEvent]) -> float:
        return round(last_at(every, kind).timestamp() - m.submitted, 2)

    def per_gang(counts: Counter[str]) -> dict[str, float]:
        return {name: round(n / run.gangs, 2) for name, n in sorted(counts.items())}

    placed: dict[str, Any] = {}
    if run.placed:
        # Each gang's first PodGangPhaseChanged once its Pending/Starting ones are left out.
        running = [
            seconds
            for events in m.journals
            for seconds in gang_latencies(
                [e for e in events if _running(e) or not isinstance(e, ev.PodGangPhaseChanged)],
                "PodGangPhaseChanged",
            ).values()
        ]
        placed = {
            BOUND_KEY: round(max(m.bound.values()) - m.submitted, 1),
            "per gang, its PodCliqueSet submitted → its pods bound, p50 / p99 / max, s": _spread(
                [at - m.submit_times[pcs] for (pcs, _), at in m.bound.items()]
            ),
            "submit → every pod Running, s": round(
                max(e.at.timestamp() for e in every if _running(e)) - m.submitted, 2
            ),
            "per gang, observed → Running, p50 / p99 / max, s": _spread(running),
        }
    return {
        "scheduler": run.scheduler + (" (Workload API)" if gang_on else ""),
        "kwok nodes": run.nodes if run.placed else "none: no scheduler, ends at gates lifted",
        "kube-scheduler's default spreading": "on" if run.default_spreading else "off",
        "PodCliqueSets × gangs each": f"{run.podcliquesets} × {run.replicas}"
        + (f" + {run.small} × 1" if run.small else ""),
        "gangs / pods": f"{run.gangs} / {run.pods}",
        "submit → every pod created, s": since_submit(ev.PodsCreated),
        "submit → every gate lifted, s": since_submit(ev.GatesLifted),
        **placed,
        "per gang, observed → gates lifted, p50 / p99 / max, s": _spread(latencies),
        "per gang, observed → each step, p50 / p99 / max, s": {
            step: _spread(
                [s for events in m.journals for s in gang_latencies(events, step).values()]
            )
            for step in STEPS
        },
        "API writes for the gangs, per gang": round(writes_to(GANG_RESOURCES) / run.gangs, 2),
        "least a gang needs": (
            f"{sum(least.values())} ({least['podgang']} podgang + {least['backend']} backend)"
        ),
        # One per PodCliqueSet replica (pods find each other by name through it).
        "API writes for the replicas' headless Services, per replica": round(
            writes_to({SERVICES}) / run.gangs, 2
        ),
        # Grove's objects beside the gangs: their creates, spec and status writes.
        "API writes for PodCliques and scaling groups, per gang": round(
            writes_to(CLIQUE_RESOURCES) / run.gangs, 2
        ),
        "PodCliqueSet status writes, per PodCliqueSet": round(
            writes_to({PODCLIQUESET_STATUS}) / run.submitted, 2
        ),
        "answered 409 Conflict (counted above), in all": sum(
            n for key, n in m.writes.items() if key.endswith(" 409")
        ),
        "Events written, in all": writes_to({EVENTS}),
        "API reads (GET, LIST, WATCH) by the services, per gang": round(
            (sum(m.reads.values()) - m.own_reads) / run.gangs, 2
        ),
        "API reads by verb and resource, in all (LIST pods includes the benchmark's "
        f"{m.own_reads})": dict(sorted(m.reads.items())),
        "API writes by resource and code, in all": dict(sorted(m.writes.items())),
        "NATS messages sent, per gang": round(sum(m.sent.values()) / run.gangs, 1),
        "NATS messages sent by connection, per gang": per_gang(m.sent),
        "stream messages kept, per gang (OBJECTS: the latest per object)": per_gang(m.stored),
        "CPU s from submit to the end / peak RSS MiB": {
            name: f"{cpu:.1f} / {rss}" for name, (cpu, rss) in m.usage.items()
        },
        # Grove's operator: 14.8 s on ScaleTest_1000, gang scheduling off (bench/RESULTS.md).
        "controller CPU s from submit to the end (Gangway's processes and nats-server)": round(
            sum(m.usage[name][0] for name in m.controllers), 1
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--scheduler",
        choices=tuple(builtin_backends()),
        default=DEFAULT_SCHEDULER,
    )
    parser.add_argument(
        "--gang",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="default-scheduler's gangScheduling (Workload API); default on",
    )
    parser.add_argument("--podcliquesets", type=int, default=1)
    parser.add_argument("--replicas", type=int, default=500, help="gangs per PodCliqueSet")
    parser.add_argument(
        "--small", type=int, default=0, help="and this many PodCliqueSets of one gang each"
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=0.0,
        help="seconds between two PodCliqueSets' submissions (default 0: all at once)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="then, on the same control plane, the least writes for the same gangs sent "
        "straight to the API server (bench/floor.py); Gangway's times as ratios of its",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=100,
        help="kwok nodes for the scheduler to place on (0: no scheduler, end at gates lifted)",
    )
    parser.add_argument(
        "--default-spreading",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="kube-scheduler's system-default topology spreading; off for 100 000 pods, where "
        "it lists every Service of a pod's namespace for each pod (bench/RESULTS.md)",
    )
    args = parser.parse_args()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    run = Run(
        args.scheduler,
        args.gang,
        args.podcliquesets,
        args.replicas,
        args.nodes,
        small=args.small,
        interval=args.interval,
        floor=args.floor,
        default_spreading=args.default_spreading,
    )
    for key, value in asyncio.run(bench(run)).items():
        if isinstance(value, dict):
            print(f"{key}:")
            for name, item in value.items():
                print(f"  {name}: {item}")
        else:
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
