"""``gangway up`` (the README's first command) brings up a working system and takes it down."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from functools import partial
from pathlib import Path
from typing import Any

import nats
import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from gangway_backend_kube.builtin import WORKLOADS
from gangway_contracts.subjects import Kind, Subjects
from gangway_runtime.tracing import trace_id_hex, workload_context
from tests.integration.watcher.conftest import labelled, podgang
from tests.support.backends import live
from tests.support.discovery import expanded, resolve
from tests.support.kube import admin_client, server_side_apply
from tests.support.manifests import fixture, on_scheduler
from tests.support.otlp import Receiver, otlp_receiver
from tests.support.podgang import gated, pods, workload
from tests.support.store import eventually, holds, stored

INFERENCE = "podcliquesets/disaggregated-inference.yaml"
# Every service as its own process, each exporting its own spans.
TRACED = ("watcher", "podgang", "backend-default-scheduler", "admission")


async def _demo_runs_to_the_end(env: dict[str, str]) -> None:
    """``gangway demo`` against what ``up`` runs: every sample admitted and done, every pod
    bound by the scheduler it names (kube-scheduler, KAI's scheduler and binder, or
    scheduler-plugins' Coscheduling) and
    Running on up's kwok nodes (the scaled prefill gangs released once their base gang was
    scheduled)."""
    process = await asyncio.create_subprocess_exec(
        Path(sys.executable).parent / "gangway",
        "demo",
        "--timeout=90",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "KUBECONFIG": env["KUBECONFIG"]},
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    text = out.decode()
    assert process.returncode == 0, text
    assert "refused" not in text, text
    for name in ("demo-trainer", "demo-inference", "demo-training", "demo-roles", "demo-serving"):
        assert name in text
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("demo-")}
    assert "running ████████████ 4/4" in lines["demo-trainer"], text
    assert "running ████████████ 10/10" in lines["demo-serving"], text
    assert "running ████████████ 4/4" in lines["demo-inference"], text  # KAI's
    assert "running ████████████ 5/5" in lines["demo-training"], text  # Coscheduling's
    assert "running ████████████ 4/4" in lines["demo-roles"], text  # Koordinator's
    assert text.rstrip().splitlines()[-2] == "done."


async def _demo_workers_reach_their_leaders(api: ApiClient, env: dict[str, str]) -> None:
    """The demo's prefill workers address their leader as Dynamo's do; through up's CoreDNS
    each address is its own scaling-group replica's leader pod."""
    port = int(env["GANGWAY_DNS"].rsplit(":", 1)[1])
    found = await pods(api, "gangway-demo")
    serving = {n: p for n, p in found.items() if n.startswith("demo-serving-")}
    workers = [p for n, p in serving.items() if "-pworker-" in n]
    assert len(workers) == 6, sorted(serving)
    for worker in workers:
        address = expanded(worker, worker["spec"]["containers"][0])["LEADER_ADDRESS"]
        group = worker["metadata"]["labels"]["grove.io/podcliquescalinggroup-replica-index"]
        leader = serving[f"demo-serving-0-prefill-{group}-pleader-0"]
        want = [leader["status"]["podIP"]]
        assert await eventually(partial(resolve, port, address), want.__eq__) == want


async def _one_trace_across_every_service(
    collector: Receiver, pcs: dict[str, Any], nats_url: str
) -> None:
    """The PodCliqueSet's trace, as a collector receives it from the separate processes:
    one trace id, derived from its uid, with spans from every service that touched it; and
    ``gangway trace`` names the same id from the journal."""
    trace_id = trace_id_hex(workload_context(pcs["metadata"]["uid"]))

    async def services() -> set[str]:
        return {s.service.removeprefix("gangway-") for s in collector.in_trace(trace_id)}

    await eventually(services, lambda found: found >= set(TRACED))
    process = await asyncio.create_subprocess_exec(
        Path(sys.executable).parent / "gangway",
        "trace",
        "demo/trainer",
        f"--nats-url={nats_url}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, out.decode()
    assert f"trace id: {trace_id}" in out.decode()
    assert "GatesLifted" in out.decode()


async def test_up_runs_every_service_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    async with otlp_receiver() as collector:
        await _up_and_down(tmp_path, collector)


async def _up_and_down(tmp_path: Path, collector: Receiver) -> None:
    ready = tmp_path / "ready.env"
    gangway = Path(sys.executable).parent / "gangway"
    tracing = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    proc = await asyncio.create_subprocess_exec(
        gangway,
        "up",
        "--ready-file",
        str(ready),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **tracing},
    )
    try:

        async def up() -> bool:
            return ready.exists() or proc.returncode is not None

        await eventually(up, bool, within=300)
        assert proc.returncode is None
        env = dict(line.split("=", 1) for line in ready.read_text().splitlines())
        async with admin_client(Path(env["KUBECONFIG"])) as api:
            ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}
            await server_side_apply(api, ns, "")
            # The whole flow on the default scheduler with gang scheduling: PodGang, its
            # Workload, prepared pods, gates lifted once the Workload exists.
            await server_side_apply(api, workload("demo", "trainer"), "demo")
            workload_api = {
                "apiVersion": f"{WORKLOADS.group}/{WORKLOADS.versions[0]}",
                "kind": "Workload",
            }
            trainer_workload = {**workload_api, "metadata": {"name": "trainer-0"}}
            await eventually(partial(live, api, trainer_workload, "demo"), bool)
            trainer_pods = await eventually(
                partial(pods, api, "demo"),
                lambda f: len(f) == 4 and not any(map(gated, f.values())),
            )
            assert all(p["spec"]["schedulingGroup"] for p in trainer_pods.values())
            trainer = await live(api, workload("demo", "trainer"), "demo")
            await _one_trace_across_every_service(collector, trainer, env["NATS_URL"])
            await _demo_runs_to_the_end(env)
            await _demo_workers_reach_their_leaders(api, env)
            # Each backend keeps its resource for a PodGang it owns: a Workload for
            # default-scheduler, a KAI PodGroup for kai-scheduler (its queue from the
            # PodCliqueSet the PodGang is part of), a scheduler-plugins PodGroup for
            # coscheduling, a Volcano PodGroup (in the default queue) for volcano.
            inference = labelled(fixture(INFERENCE), "demo", "llama-disagg")
            for clique in inference["spec"]["template"]["cliques"]:
                clique.pop("topologyConstraint", None)  # no required packing on this backend
            inference["spec"]["template"]["podCliqueScalingGroups"][0].pop("topologyConstraint")
            await server_side_apply(api, inference, "demo")
            for backend, made in (
                ("default-scheduler", f"{WORKLOADS.group}/{WORKLOADS.versions[0]} Workload"),
                ("kai-scheduler", "scheduling.run.ai/v2alpha2 PodGroup"),
                ("coscheduling", "scheduling.x-k8s.io/v1alpha1 PodGroup"),
                ("volcano", "scheduling.volcano.sh/v1beta1 PodGroup"),
            ):
                gang = podgang("demo", f"llama-disagg-{backend}", backend)
                await server_side_apply(api, gang, "demo")
                api_version, kind = made.split()
                name = {"name": gang["metadata"]["name"]}
                expected = {"apiVersion": api_version, "kind": kind, "metadata": name}
                await eventually(partial(live, api, expected, "demo"), bool)
            # Admission is registered: a PodCliqueSet naming no enabled scheduler is refused.
            refused = labelled(fixture(INFERENCE), "demo", "refused")
            on_scheduler(refused, "lpx-scheduler")
            with pytest.raises(ApiException) as raised:
                await server_side_apply(api, refused, "demo")
            assert '"lpx-scheduler\\" is not an enabled' in str(raised.value.body)
        nc = await nats.connect(env["NATS_URL"])
        try:
            js = nc.jetstream()
            found = await eventually(
                lambda: stored(js, Subjects(), Kind.PODCLIQUESET), holds(("demo", "trainer"))
            )
            assert not found[("demo", "trainer")].deleted
        finally:
            await nc.close()
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), 60)
        except TimeoutError:  # never leave it running: its children die with it
            proc.kill()
            output, _ = await proc.communicate()
            output = b"up ignored Ctrl-C for 60 s; killed\n" + output
    text = output.decode()
    assert await proc.wait() == 0, text
    for service in (
        "watcher",
        "podgang",
        "backend-default-scheduler",
        "backend-kai-scheduler",
        "backend-coscheduling",
        "backend-koordinator",
        "backend-volcano",
        "admission",
    ):
        assert f"{service}: http://127.0.0.1:" in text
    assert "scheduler-plugins v0.34.7 with Coscheduling, as scheduler-plugins-scheduler" in text
    assert "Koordinator v1.8.0's koord-scheduler, as koord-scheduler" in text
    assert "Volcano v1.10.0's vc-scheduler, as volcano; Volcano queue default" in text
    # Its suggestions fit its cluster: 4 nodes of 110 pods cannot hold ScaleTest_1000's 1000.
    assert "1000 pods: 4 nodes hold 440 (start up with --nodes 10 to run them all)" in text
    assert "kubectl get pclq,pcsg -n gangway-demo -o wide" in text
    assert "stopping" in text
