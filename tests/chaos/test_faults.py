"""Faults in the middle of a workload, on real servers with every service its own process:
whatever fails, the workload converges — every gang made once, synced, its pods bound by the
real kube-scheduler —, the journal is complete, and deleting it leaves nothing behind.

Timing is not asserted (a generous deadline only); bench/chaos.py records it.
"""

from __future__ import annotations

import asyncio
import re
import urllib.request
from functools import partial
from typing import Any, Final

import nats
import pytest
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import events as ev
from gangway_contracts import kueue, kueue_topology
from gangway_localcluster.kueue import local_queue
from gangway_localcluster.nodes import HOSTNAME_LABEL
from gangway_runtime import journal
from gangway_runtime.status import PODCLIQUESETS
from gangway_stage_kueue.workload import WORKLOADS
from tests.chaos.scenario import (
    BACKEND,
    CLUSTER_QUEUE,
    CONVERGED_WITHIN,
    FAULTS,
    NAME,
    NODE_FAULTS,
    TAS_CLUSTER_QUEUE,
    Fault,
    State,
    System,
    chaos_workload,
    deleted,
    journal_complete,
    kill_and_restart,
    kill_the_first_replicas,
    logged,
    part_built,
    restart_nats,
    second_replicas,
    state,
    until,
    workload_through,
)
from tests.support.kube import merge_patch, server_side_apply
from tests.support.podgang import condition, objects, podgangs, pods
from tests.support.store import eventually

GANGS: Final = 30
# How long a restarted service is watched making nothing of a deleted workload.
AFTERMATH: Final = 5.0
LOGGED_WITHIN: Final = 60.0


async def admitted(api: ApiClient, namespace: str) -> int:
    """The gangs whose QueueAdmitted is True."""
    found = await podgangs(api, namespace)
    return sum(condition(g, kueue.QUEUE_ADMITTED).get("status") == "True" for g in found.values())


async def queue_entries(system: System, namespace: str) -> list[str]:
    """The gangs of the journal's admitted decisions, once each entry."""
    nc = await nats.connect(servers=system.nats.url.split(","))
    try:
        found = await journal.read(nc.jetstream(), system.subjects, namespace, NAME)
    finally:
        await nc.close()
    return [e.podgang for e in found if isinstance(e, ev.QueueAdmitted)]


async def _converges_and_cleans_up(
    system: System, api: ApiClient, namespace: str, fault: Fault
) -> None:
    outcome = await workload_through(system, api, namespace, fault, GANGS)
    found = outcome.converged
    assert found.converged(GANGS), f"after the fault: {found.missing()}"
    assert found.owners_unique()
    assert outcome.journal_gaps == []
    # A reconcile logs its line when it ends: the one streaming the last gangs may still be
    # writing their phases (Starting, Running) when the cluster shows them bound.
    await eventually(partial(_reconciles_logged, system), bool, LOGGED_WITHIN)
    _logged_with_key_and_trace(system, f"{namespace}/{NAME}")
    left = await deleted(system, api, namespace)
    assert left.empty(), (sorted(left.podgangs), sorted(left.pods), sorted(left.workloads))


async def _reconciles_logged(system: System) -> bool:
    return any(
        "write rounds" in line["message"]
        for log in (system.workdir / "logs").glob("podgang*.log")
        for line in logged(system, log.stem)[0]
    )


def _logged_with_key_and_trace(system: System, key: str) -> None:
    """Every service logs JSON, and podgang's line for each reconcile that wrote (in any
    replica's log) names the workload and its trace."""
    lines: list[dict[str, Any]] = []
    for log in (system.workdir / "logs").glob("*.log"):
        found, other = logged(system, log.stem)
        assert other == [], (log.name, other[:5])
        lines += found if log.stem.startswith("podgang") else []
    reconciled = [line for line in lines if "write rounds" in line["message"]]
    assert reconciled, lines[-5:]
    for line in reconciled:
        assert line["key"] == key, line
        assert re.fullmatch("[0-9a-f]{32}", line["trace_id"]), line


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_fault_mid_workload_converges_and_loses_nothing(
    system: System, api: ApiClient, namespace: str, fault: str
) -> None:
    await _converges_and_cleans_up(system, api, namespace, FAULTS[fault])


async def test_a_bus_restarted_on_memory_storage_loses_nothing_the_cluster_holds(
    memory_system: System, api: ApiClient, namespace: str
) -> None:
    """Streams in memory, nats-server restarted mid-workload: every stream, consumer and
    lease bucket is gone. The bus keeper makes them again, the watcher publishes the
    cluster anew, and every gang converges, made once. (The journal lived in memory too:
    what it held before is gone, so it is not checked.)"""
    outcome = await workload_through(memory_system, api, namespace, restart_nats, GANGS)
    found = outcome.converged
    assert found.converged(GANGS), f"after the restart: {found.missing()}"
    assert found.owners_unique()
    kept = (memory_system.workdir / "bus-keeper.log").read_text()
    assert "gone: making them again" in kept, kept
    left = await deleted(memory_system, api, namespace)
    assert left.empty(), (sorted(left.podgangs), sorted(left.pods), sorted(left.workloads))


@pytest.mark.parametrize("fault", NODE_FAULTS)
async def test_a_nats_node_killed_mid_workload_on_a_cluster(
    cluster_system: System, api: ApiClient, namespace: str, fault: str
) -> None:
    """Three nodes, every stream and consumer on all three (as deploy/ runs NATS): the
    node leading what the services use dies; its replicas elect anew, the services
    reconnect to the others, and nothing is lost meanwhile (fetch and journal appends
    failing over are retried, not fatal)."""
    await _converges_and_cleans_up(cluster_system, api, namespace, NODE_FAULTS[fault])


async def test_two_replicas_of_each_one_killed(
    system: System, api: ApiClient, namespace: str
) -> None:
    """Two replicas of podgang and of the backend share their consumers; one of each is
    killed mid-workload and not restarted: the other takes over what it held."""
    second_replicas(system)
    await _converges_and_cleans_up(system, api, namespace, kill_the_first_replicas)


async def test_deleted_while_the_backend_is_down_leaves_nothing(
    system: System, api: ApiClient, namespace: str
) -> None:
    """The backend dies mid-workload, the workload is deleted while it is down, and it
    comes back to find its PodGangs gone: nothing is left, nothing is made again."""
    await part_built(system, api, namespace, GANGS)
    system.kill(BACKEND)
    left = await deleted(system, api, namespace)
    assert left.empty(), (sorted(left.podgangs), sorted(left.pods), sorted(left.workloads))
    system.restart(BACKEND)  # ready: it has taken up what the store held at start
    await asyncio.sleep(AFTERMATH)
    again = await state(api, system.cp, namespace)
    assert again.empty(), (sorted(again.podgangs), sorted(again.pods), sorted(again.workloads))


async def test_scaled_up_and_down_while_services_are_down(
    system: System, api: ApiClient, namespace: str
) -> None:
    """Scaled up while the backend is down, then down while podgang is down: each time the
    workload converges to the replicas asked for, the gangs scaled away gone."""
    pcs = PODCLIQUESETS.path(namespace, NAME)
    probe = partial(state, api, system.cp, namespace)
    await part_built(system, api, namespace, GANGS)
    for down, replicas in ((BACKEND, GANGS + 10), ("podgang", GANGS // 2)):
        system.kill(down)
        await merge_patch(api, pcs, {"spec": {"replicas": replicas}})
        system.restart(down)
        found = await until(probe, partial(State.converged, gangs=replicas), CONVERGED_WITHIN)
        assert found.converged(replicas), (down, len(found.podgangs), len(found.pods))
        assert found.owners_unique()
    assert sorted(found.podgangs) == sorted(f"{NAME}-{i}" for i in range(GANGS // 2))
    assert await journal_complete(system, namespace, GANGS // 2) == []
    left = await deleted(system, api, namespace)
    assert left.empty(), (sorted(left.podgangs), sorted(left.pods), sorted(left.workloads))


async def test_podgang_killed_mid_roll_finishes_the_roll_once(
    system: System, api: ApiClient, namespace: str
) -> None:
    """A converged workload rolled to a new image; podgang is killed once a third of its
    pods are new, and restarted: the roll ends with every pod on the new image, placed, the
    same PodGangs (none made again) and every pod once."""
    pcs = chaos_workload(namespace, NAME, GANGS)
    await server_side_apply(api, pcs, namespace)
    probe = partial(state, api, system.cp, namespace)
    before = await until(probe, lambda s: s.converged(GANGS), CONVERGED_WITHIN)
    assert before.converged(GANGS)
    gangs = {name: g["metadata"]["uid"] for name, g in before.podgangs.items()}
    [clique] = pcs["spec"]["template"]["cliques"]
    for container in clique["spec"]["podSpec"]["containers"]:
        container["image"] = "registry.example.com/next:2"

    def new(found: State) -> int:
        return sum(
            1
            for p in found.pods.values()
            if p["spec"]["containers"][0]["image"] == "registry.example.com/next:2"
        )

    await server_side_apply(api, pcs, namespace)
    await until(probe, lambda s: new(s) >= 2 * GANGS // 3, CONVERGED_WITHIN)
    kill_and_restart("podgang")(system)
    done = await until(
        probe, lambda s: s.converged(GANGS) and new(s) == 2 * GANGS, CONVERGED_WITHIN
    )
    assert done.converged(GANGS)
    assert new(done) == 2 * GANGS, f"{new(done)} of {2 * GANGS} pods on the new image"
    assert done.owners_unique()
    assert {name: g["metadata"]["uid"] for name, g in done.podgangs.items()} == gangs


async def test_gangway_replaced_by_new_processes_writes_no_pod_and_no_gang(
    system: System, api: ApiClient, namespace: str
) -> None:
    """An upgrade of Gangway as a rollout makes one (Grove #709: an operator upgrade that
    recreates every pod): every service killed over a converged workload and new processes
    started under new names (new lease holders, as new pods are); the PodCliqueSet touched,
    so the new podgang looks at it. No pod, PodGang or Workload is written."""
    await server_side_apply(api, chaos_workload(namespace, NAME, GANGS), namespace)
    probe = partial(state, api, system.cp, namespace)
    await until(probe, lambda s: s.converged(GANGS) and settled(s), CONVERGED_WITHIN)
    await asyncio.sleep(AFTERMATH)  # the old services quiet: what they wrote has landed
    before = await state(api, system.cp, namespace)
    assert settled(before)
    running = sorted(system.services.ports)
    for name in running:
        system.kill(name)
    upgraded = [system.replica(name, 2) for name in running]
    touch = {"metadata": {"labels": {"example.com/touched": "after-upgrade"}}}
    await merge_patch(api, PODCLIQUESETS.path(namespace, NAME), touch)
    podgang = next(name for name in upgraded if name.startswith("podgang"))
    await eventually(partial(reconciles, system, podgang), bool, CONVERGED_WITHIN)
    await asyncio.sleep(AFTERMATH)
    after = await state(api, system.cp, namespace)
    assert versions(after) == versions(before)


def settled(found: State) -> bool:
    """Every PodGang says Running (its last phase write done)."""
    return all(g.get("status", {}).get("phase") == "Running" for g in found.podgangs.values())


def versions(found: State) -> dict[str, str]:
    """Every object's resourceVersion: any write changes one."""
    return {
        f"{kind}/{name}": obj["metadata"]["resourceVersion"]
        for kind, objs in (
            ("PodGang", found.podgangs),
            ("Pod", found.pods),
            ("Workload", found.workloads),
        )
        for name, obj in objs.items()
    }


async def reconciles(system: System, name: str) -> int:
    """The reconciles podgang process ``name`` has ended (its /metrics)."""
    url = f"http://127.0.0.1:{system.services.ports[name]}/metrics"
    text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read().decode())
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("gangway_podgang_reconciles_total")
    )


async def queued_and_stage_killed(
    system: System, api: ApiClient, namespace: str, cluster_queue: str
) -> State:
    """The chaos workload in a LocalQueue of ``cluster_queue``, the Kueue stage killed (-9)
    mid-admission (some gangs admitted, the rest being made and admitted) and started
    again; the state once converged."""
    system.cp.create(*local_queue(namespace, "team", cluster_queue))
    pcs = chaos_workload(namespace, NAME, GANGS)
    pcs["metadata"].setdefault("labels", {})[kueue.QUEUE_LABEL] = "team"
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(admitted, api, namespace), lambda n: n >= 0.3 * GANGS)
    kill_and_restart(kueue.STAGE)(system)
    probe = partial(state, api, system.cp, namespace)
    found = await until(probe, lambda s: s.converged(GANGS), CONVERGED_WITHIN)
    assert found.converged(GANGS), found.missing()
    return found


async def test_the_kueue_stage_killed_mid_admission_admits_every_gang_once(
    kueue_system: System, api: ApiClient, namespace: str
) -> None:
    """Kueue in front: the stage killed (-9) while the gangs' Workloads are being made and
    admitted, started again; every gang is admitted by Kueue once (one Workload each, owned
    by its PodGang), placed whole, its decision journaled once, and nothing is left after
    delete."""
    found = await queued_and_stage_killed(kueue_system, api, namespace, CLUSTER_QUEUE)
    assert await admitted(api, namespace) == GANGS
    made = await objects(api, namespace, WORKLOADS.path(namespace="{ns}"))
    owners = sorted(w["metadata"]["ownerReferences"][0]["uid"] for w in made.values())
    assert owners == sorted(g["metadata"]["uid"] for g in found.podgangs.values())
    said = await eventually(
        partial(queue_entries, kueue_system, namespace),
        lambda entries: len(entries) == GANGS,
        LOGGED_WITHIN,
    )
    assert sorted(said) == sorted(found.podgangs), "a gang's admission journaled twice or not"
    left = await deleted(kueue_system, api, namespace)
    assert left.empty(), (sorted(left.podgangs), sorted(left.pods))


async def test_the_kueue_stage_killed_while_writing_domains_gives_every_pod_its_own(
    kueue_topology_system: System, api: ApiClient, namespace: str
) -> None:
    """Kueue choosing the domains: the stage killed (-9) while it writes them onto the
    pods, started again; every gang is admitted and placed whole, every pod on the node
    Kueue chose for it (its nodeSelector), carrying Kueue's annotation, and nothing is left
    after delete."""
    await queued_and_stage_killed(kueue_topology_system, api, namespace, TAS_CLUSTER_QUEUE)
    for pod in (await pods(api, namespace)).values():
        assert kueue_topology.given(pod["metadata"].get("annotations") or {}), pod["metadata"]
        assert pod["spec"]["nodeSelector"][HOSTNAME_LABEL] == pod["spec"]["nodeName"]
    left = await deleted(kueue_topology_system, api, namespace)
    assert left.empty(), (sorted(left.podgangs), sorted(left.pods))
