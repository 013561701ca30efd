"""One chaos scenario: Gangway's services each their own process (as ``gangway up`` runs
them: watcher, podgang, backend-default-scheduler with the Workload API), a real nats-server
with JetStream on disk, a control plane with kube-scheduler and kwok nodes; a workload
submitted, a fault injected once part of it is built, and what must hold afterwards:
converged, nothing duplicated, the journal complete, nothing left after delete.

The chaos tests assert it; ``bench/chaos.py`` times it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import nats
import yaml
from kubernetes_asyncio.client.api_client import ApiClient
from nats.errors import Error as NatsError

from gangway_cli.localbus import LocalBus
from gangway_cli.services import LocalServices, services_for
from gangway_contracts import events as ev
from gangway_contracts import labels
from gangway_contracts.config import load_operator_config, parse_scheduler_config
from gangway_contracts.kueue import STAGE as KUEUE_STAGE
from gangway_contracts.permissions import SETUP
from gangway_contracts.subjects import Kind, Subjects
from gangway_localcluster import processes
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.nats import NatsCluster, NatsServer
from gangway_runtime import journal
from gangway_runtime.kube import ApiResource, KubeError
from gangway_runtime.settings import ConsumerSettings, StreamSettings
from gangway_runtime.status import PODCLIQUESETS
from tests.support.kube import kube_of, server_side_apply
from tests.support.podgang import condition, gated, objects, podgangs, pods, workload

BACKEND: Final = "backend-default-scheduler"
CONFIG: Final = {
    "profiles": [{"name": "default-scheduler", "default": True, "config": {"gangScheduling": True}}]
}
# Messages a dead replica held move to a live one within the ack deadline: short here.
SETTINGS: Final = {
    "GANGWAY_LOG_LEVEL": "INFO",
    "GANGWAY_LOG_FORMAT": "json",
    "GANGWAY_ACK_WAIT_SECONDS": "5",
}
NAME: Final = "chaos"  # the workload's PodCliqueSet
CLUSTER_QUEUE: Final = "chaos"  # Kueue's, for the chaos workloads in a LocalQueue
TAS_CLUSTER_QUEUE: Final = "chaos-tas"  # the same, over a flavor Kueue chooses domains in
# Generous: deadlines, not measures (bench/chaos.py measures).
CONVERGED_WITHIN: Final = 180.0
JOURNAL_WITHIN: Final = 30.0


@dataclass
class System:
    cp: ControlPlane
    nats: NatsServer | NatsCluster
    services: LocalServices
    workdir: Path
    subjects: Subjects = field(default_factory=Subjects)

    def kill(self, name: str) -> None:
        """kill -9: no clean-up, messages left unacknowledged, a write perhaps half done."""
        self.services.kill(name)

    def restart(self, name: str) -> None:
        self.services.start_again(name)

    def replica(self, service: str, number: int) -> str:
        """Start replica ``number`` of ``service`` (same settings, same consumers)."""
        name = f"{service}-{number}"
        self.services.add(name, MODULES[service], settings_of=service)
        return name

    def stop(self) -> None:
        self.services.stop()
        self.nats.stop()


MODULES: Final = dict(services_for(load_operator_config(yaml.safe_dump({"scheduler": CONFIG}))))


def start_system(
    cp: ControlPlane,
    workdir: Path,
    cluster: bool = False,
    memory: bool = False,
    kueue: bool = False,
    kueue_topology: bool = False,
) -> System:
    """A fresh nats-server (its own store), or a fresh 3-node cluster with every stream
    replicated on all three as deploy/ runs it, and every service, ready. ``memory``: the
    streams in memory (GANGWAY_STREAMS__STORAGE=memory), and the bus keeper running (as
    deploy/'s gangway-bus-keeper): a restarted server has lost them all. ``kueue``: the
    Kueue stage too (Kueue's manager runs in ``cp``); ``kueue_topology``: Kueue choosing the
    gangs' domains as well."""
    config = workdir / "operator.yaml"
    operator: dict[str, Any] = {"scheduler": CONFIG}
    if kueue:
        operator["kueue"] = {"enabled": True, "topology": kueue_topology}
    config.write_text(yaml.safe_dump(operator))
    names = [(n, m) for n, m in MODULES.items() if n != "admission"]
    if kueue:
        names.append((KUEUE_STAGE, "gangway_stage_kueue"))
    users: LocalBus | None = None
    if memory:  # each service as its own NATS user, as deploy/ runs them
        stored = ConsumerSettings(streams=StreamSettings(storage="memory"))
        users = LocalBus.start(workdir / "bus", parse_scheduler_config(CONFIG), stored, False)
    server = users.server if users else NatsCluster.start() if cluster else NatsServer.start()
    replicas = {"GANGWAY_STREAMS__REPLICAS": "3"} if cluster else {}
    storage = {"GANGWAY_STREAMS__STORAGE": "memory"} if memory else {}
    settings = {
        **SETTINGS,
        **replicas,
        **storage,
        "GANGWAY_NATS_URL": server.url,
        "GANGWAY_KUBECONFIG": str(cp.kubeconfig),
        "GANGWAY_CONFIG_FILE": str(config),
    }
    own = {name: users.settings_of(name) for name, _ in names} if users else {}
    try:
        services = LocalServices.start(workdir / "logs", settings, names, own)
    except BaseException:
        server.stop()
        raise
    if users:  # deploy/'s gangway-bus-keeper; its log beside the services' JSON lines
        keeper = [sys.executable, "-m", "gangway_cli.main", "deploy", "bus", "--keep"]
        env = {**os.environ, **settings, **users.settings_of(SETUP)}
        log = workdir / "bus-keeper.log"
        child = processes.start("bus-keeper", [*keeper, f"--config={config}"], log, env)
        services.adopt(child)
        # Past its first provisioning (a fault before it would be mended by that, unseen).
        processes.wait_until(lambda: "kept:" in log.read_text(), child, "the keeper", 60)
    return System(cp=cp, nats=server, services=services, workdir=workdir)


def chaos_workload(namespace: str, name: str, gangs: int) -> dict[str, Any]:
    """``gangs`` gangs of two pods, both needed, each asking for a little CPU."""
    pcs = workload(namespace, name)
    pcs["spec"]["replicas"] = gangs
    [clique] = pcs["spec"]["template"]["cliques"]
    clique["spec"]["replicas"] = clique["spec"]["minAvailable"] = 2
    for container in clique["spec"]["podSpec"]["containers"]:
        container["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    return copy.deepcopy(pcs)


def workloads_api(cp: ControlPlane) -> ApiResource:
    return ApiResource("scheduling.k8s.io", cp.workload_api_version, "workloads")


@dataclass(frozen=True)
class State:
    """What the API server holds in a test's namespace, by name."""

    podgangs: dict[str, dict[str, Any]]
    pods: dict[str, dict[str, Any]]
    workloads: dict[str, dict[str, Any]]

    def lifted(self, gangs: int) -> bool:
        """Gangway's part done: every gang made once, synced by its backend and initialized,
        every pod ungated."""
        return (
            len(self.podgangs) == gangs
            and len(self.workloads) == gangs
            and len(self.pods) == 2 * gangs
            and all(
                condition(g, labels.BACKEND_SYNCED).get("status") == "True"
                and condition(g, labels.INITIALIZED).get("status") == "True"
                for g in self.podgangs.values()
            )
            and not any(map(gated, self.pods.values()))
        )

    def converged(self, gangs: int) -> bool:
        """:meth:`lifted`, and every pod bound by the scheduler."""
        return self.lifted(gangs) and all(p["spec"].get("nodeName") for p in self.pods.values())

    def missing(self) -> str:
        """What keeps it from converging: the counts, then the gangs not synced or not
        initialized (with the condition's reason), the pods still gated or not bound."""

        def said(gang: dict[str, Any], type_: str) -> str | None:
            found = condition(gang, type_)
            ok = found.get("status") == "True"
            return None if ok else f"{type_}={found.get('status')} {found.get('reason', '')}"

        gangs = {
            name: [w for t in (labels.BACKEND_SYNCED, labels.INITIALIZED) if (w := said(g, t))]
            for name, g in sorted(self.podgangs.items())
        }
        lines = [
            f"{len(self.podgangs)} PodGangs, {len(self.workloads)} Workloads, "
            f"{len(self.pods)} pods",
            *(f"  {name}: {'; '.join(why)}" for name, why in gangs.items() if why),
        ]
        held = sorted(name for name, pod in self.pods.items() if gated(pod))
        unbound = sorted(name for name, pod in self.pods.items() if not pod["spec"].get("nodeName"))
        if held:
            lines.append(f"  gated: {', '.join(held)}")
        if unbound:
            lines.append(f"  not bound: {', '.join(unbound)}")
        return "\n".join(lines)

    def empty(self) -> bool:
        return not (self.podgangs or self.pods or self.workloads)

    def owners_unique(self) -> bool:
        """No object made twice under another name: one Workload per PodGang, each pod
        owned by a PodGang of this workload."""
        gang_uids = {g["metadata"]["uid"] for g in self.podgangs.values()}
        workload_owners = [
            w["metadata"]["ownerReferences"][0]["uid"] for w in self.workloads.values()
        ]
        pod_owners = {p["metadata"]["ownerReferences"][0]["uid"] for p in self.pods.values()}
        return sorted(workload_owners) == sorted(gang_uids) and pod_owners <= gang_uids


async def state(api: ApiClient, cp: ControlPlane, namespace: str) -> State:
    return State(
        podgangs=await podgangs(api, namespace),
        pods=await pods(api, namespace),
        workloads=await objects(api, namespace, workloads_api(cp).path(namespace="{ns}")),
    )


async def until(
    probe: Callable[[], Awaitable[State]], done: Callable[[State], bool], within: float
) -> State:
    """The first state ``done`` accepts, or the last seen when ``within`` runs out (the
    caller's assertion then says what was missing). An API server just back may answer 429
    ("storage is (re)initializing") or 5xx a moment: looked at again, as a client would."""
    deadline = time.monotonic() + within
    while True:
        try:
            found = await probe()
        except KubeError as exc:
            if (exc.status != 429 and exc.status < 500) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)
            continue
        if done(found) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.25)


async def journal_gaps(system: System, namespace: str, name: str, gangs: int) -> list[str]:
    """What is wrong with each gang's journal: a step missing, a step journaled more than
    once, or one written by a service that does not own it (its writer as its subject names
    it). Every gang has each step exactly once, whatever failed on the way: a replica that
    makes up an entry another had not stored yet puts it under the same id, stored once."""
    nc = await nats.connect(servers=system.nats.url.split(","))
    try:
        found = await journal.read(nc.jetstream(), system.subjects, namespace, name)
    finally:
        await nc.close()
    steps = (
        ev.PodGangCreated,
        ev.PodsCreated,
        ev.PodGangInitialized,
        ev.BackendSynced,
        ev.GatesLifted,
    )
    podgang, backend = (
        system.subjects.service_name("podgang"),
        system.subjects.service_name(BACKEND),
    )
    counted = Counter((type(e).__name__, e.podgang) for e in found if isinstance(e, steps))
    wrong = [
        f"{e.podgang}: {type(e).__name__} written by {e.service}"
        for e in found
        if isinstance(e, steps)
        and e.service != (backend if isinstance(e, ev.BackendSynced) else podgang)
    ]
    return wrong + [
        f"{name}-{i}: {step.__name__} {times} times" if times else f"{name}-{i}: no {step.__name__}"
        for i in range(gangs)
        for step in steps
        if (times := counted[(step.__name__, f"{name}-{i}")]) != 1
    ]


# A fault: done to the system from the test's main thread (a child started from another
# thread would die with that thread: PR_SET_PDEATHSIG).
Fault = Callable[[System], None]


def kill_and_restart(name: str, after: float = 2.0) -> Fault:
    def fault(system: System) -> None:
        system.kill(name)
        time.sleep(after)
        system.restart(name)

    return fault


def restart_nats(system: System) -> None:
    assert isinstance(system.nats, NatsServer)
    system.nats.restart()


def objects_stream_deleted(system: System) -> None:
    """The OBJECTS stream deleted under the running services (a mistake, a store lost), and
    made again at once by whichever service notices first: each service finds it reset and
    starts again from the store (the watcher relists, podgang reloads, the backend
    resyncs), instead of reading on from where it was."""

    async def delete() -> None:
        nc = await nats.connect(system.nats.url)
        try:
            await nc.jetstream().delete_stream(system.subjects.objects_stream)
        finally:
            await nc.close()

    with concurrent.futures.ThreadPoolExecutor(1) as thread:  # the test's loop is busy
        thread.submit(asyncio.run, delete()).result()


def node_killed(consumer: str = "", reading: str = "") -> Fault:
    """kill -9 the cluster node leading the OBJECTS stream's replicas (or ``consumer``'s, or
    those of the consumer ``reading`` a subject filter), restarted 2 s later: the rest of the
    cluster elects a new leader meanwhile."""

    def fault(system: System) -> None:
        assert isinstance(system.nats, NatsCluster)
        node = system.nats.leader(system.subjects.objects_stream, consumer, reading=reading)
        system.nats.kill(node)
        time.sleep(2.0)
        system.nats.restart_and_wait(node)

    return fault


def api_server_down(system: System) -> None:
    system.cp.restart_apiserver(down_for=5.0)


def second_replicas(system: System) -> None:
    """A second replica of podgang and of the backend, sharing their consumers."""
    system.replica("podgang", 2)
    system.replica(BACKEND, 2)


def kill_the_first_replicas(system: System) -> None:
    """The first podgang and backend killed and not restarted: the second ones take over."""
    system.kill("podgang")
    system.kill(BACKEND)


# Each killed process is back 2 s later; kill -9, so nothing is cleaned up.
FAULTS: Final[dict[str, Fault]] = {
    "backend killed": kill_and_restart(BACKEND),
    "podgang killed": kill_and_restart("podgang"),
    "watcher killed": kill_and_restart("watcher"),
    "nats-server restarted": restart_nats,
    "objects stream deleted": objects_stream_deleted,
    "API server down 5 s": api_server_down,
}
# On a 3-node cluster.
NODE_FAULTS: Final[dict[str, Fault]] = {
    "stream leader killed": node_killed(),
    "backend's consumer leader killed": node_killed(
        Subjects().backend_service_name("default-scheduler")
    ),
    "podgang's consumer leader killed": node_killed(Subjects().service_name("podgang")),
    # Its read model's consumer is in memory on one node; lost with it, fetches just time out.
    "the node of podgang's read model killed": node_killed(
        reading=Subjects().objects_filter(Kind.CLUSTERTOPOLOGYBINDING)
    ),
}


@dataclass(frozen=True)
class Outcome:
    converged: State
    # Seconds from the faulted part being back to every gang's gates lifted (Gangway's
    # part), and to every pod bound too (the scheduler's).
    lifted_after: float
    recovered_after: float
    # Seconds from submitting to every gang converged.
    makespan: float
    journal_gaps: list[str]


async def part_built(system: System, api: ApiClient, namespace: str, gangs: int) -> None:
    """Submit ``gangs`` gangs; return once 40 % of their PodGangs exist."""
    await server_side_apply(api, chaos_workload(namespace, NAME, gangs), namespace)
    probe = partial(state, api, system.cp, namespace)
    await until(probe, lambda s: len(s.podgangs) >= 0.4 * gangs, CONVERGED_WITHIN)


async def workload_through(
    system: System, api: ApiClient, namespace: str, fault: Fault, gangs: int
) -> Outcome:
    """Submit ``gangs`` gangs, inject ``fault`` once 40 % of the PodGangs exist, and wait
    for convergence."""
    submitted = time.monotonic()
    await part_built(system, api, namespace, gangs)
    fault(system)
    back = time.monotonic()
    lifted = [float("inf")]

    async def probe() -> State:
        found = await state(api, system.cp, namespace)
        if found.lifted(gangs):
            lifted[0] = min(lifted[0], time.monotonic())
        return found

    converged = await until(probe, lambda s: s.converged(gangs), CONVERGED_WITHIN)
    end = time.monotonic()
    gaps = await journal_complete(system, namespace, gangs)
    return Outcome(converged, lifted[0] - back, end - back, end - submitted, gaps)


async def journal_complete(system: System, namespace: str, gangs: int) -> list[str]:
    """The journal's gaps once it has caught up: entries written through a failover may
    still be on their way (retried, with backoff) when the cluster has converged."""
    deadline = time.monotonic() + JOURNAL_WITHIN
    while True:
        try:
            gaps = await journal_gaps(system, namespace, NAME, gangs)
        except NatsError:  # the journal's stream still electing a leader after a node died
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
            continue
        if not gaps or time.monotonic() > deadline:
            return gaps
        await asyncio.sleep(0.5)


async def deleted(system: System, api: ApiClient, namespace: str) -> State:
    """Delete the workload; what is left once the garbage collector is done (or gave up)."""
    await kube_of(api).request("DELETE", PODCLIQUESETS.path(namespace, NAME))
    probe = partial(state, api, system.cp, namespace)
    return await until(probe, State.empty, CONVERGED_WITHIN)


def logged(system: System, name: str) -> tuple[list[dict[str, Any]], list[str]]:
    """A service's log (JSON by the chaos settings): the objects, and the lines that are
    not one. A line torn by a kill -9 is neither: it is left out."""
    found: list[dict[str, Any]] = []
    other: list[str] = []
    for line in (system.workdir / "logs" / f"{name}.log").read_text().splitlines():
        if not line.startswith("{"):
            other.append(line)
            continue
        with contextlib.suppress(json.JSONDecodeError):
            found.append(json.loads(line))
    return found, other
