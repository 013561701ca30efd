"""The real kube-scheduler places what Gangway writes, on kwok nodes: a gang binds whole or not
at all, competing gangs do not split the room, a scaled gang waits for its base gang to be
scheduled, and a workload nothing can hold says why. No pod is bound by hand."""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import labels
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.nodes import RACK_LABEL
from tests.e2e.conftest import Nodes, Up
from tests.e2e.workloads import (
    PLACED_WITHIN,
    bound,
    events_about,
    gang_said,
    gang_where,
    gpu_clique,
    gpu_workload,
    made_again_under_its_names_stays_whole,
    of_gang,
    packed,
    pod_changes,
    pods_version,
    racks_of,
    rolled_within_its_budget,
    running,
    running_pods_of,
    scheduled,
    stays_unbound,
    trace_of,
    two_racks_the_first_half_taken,
    whole_gang,
    why_of,
)
from tests.support.backends import live
from tests.support.kube import (
    ensure_priority_class,
    kube_of,
    printed_columns,
    server_side_apply,
)
from tests.support.podgang import condition, gated, live_when, podgangs, pods, workload
from tests.support.store import eventually
from tests.support.whatif import placed_and_not, whatif

CONFIG = {
    "profiles": [{"name": "default-scheduler", "default": True, "config": {"gangScheduling": True}}]
}
# Long enough for the scheduler to have tried the gang (and kwok to run what it bound).
# The scheduler's verdict on a gang it tried and did not place. kube-scheduler 1.37.2 says
# SchedulerError ("error in DynamicResources PodGroupPostFilter plugins: not found") when no
# node passes a pod's node selector at all, Unschedulable otherwise.
VERDICTS = ("Unschedulable", "SchedulerError")


async def test_a_gang_that_does_not_fit_gets_no_pod_until_it_does(
    api: ApiClient, namespace: str, nodes: Nodes, up: Up
) -> None:
    await nodes.add(3, gpus=4)
    pcs = whole_gang(namespace, "trainer", nodes, 4, 4)
    await server_side_apply(api, pcs, namespace)
    # The scheduler's own verdict, carried onto the PodGang: it tried, and the gang does
    # not fit (three 4-GPU nodes for four 4-GPU pods).
    gang = await gang_where(
        api, namespace, "trainer-0", lambda g: scheduled(g).get("reason") == "Unschedulable"
    )
    assert scheduled(gang)["status"] == "False"
    assert gang["status"]["phase"] == "Pending"
    found = await pods(api, namespace)
    assert len(found) == 4
    assert not any(map(gated, found.values()))
    assert bound(found.values()) == 0, "a gang that does not fit must not start"
    # ...and onto the PodCliqueSet: a condition naming the gang, in the scheduler's words,
    # one Warning Event, and the verdict in `gangway trace`.
    pcs_live = await live_when(api, pcs, namespace, "PodGangsScheduled", reason="Unschedulable")
    said = condition(pcs_live, "PodGangsScheduled")
    assert said["status"] == "False"
    assert said["message"].startswith("1 of 1 PodGangs not scheduled: trainer-0: "), said
    # The scheduler's words say why: the resource a pod found nowhere, or (kube-scheduler
    # 1.37.2 gives every pod this once the group fails as a whole) the quorum it missed.
    assert "nvidia.com/gpu" in said["message"] or "minCount (4)" in said["message"], said
    warned = await eventually(
        partial(events_about, api, namespace, "Unschedulable"),
        lambda said: any(e["regarding"]["kind"] == "PodCliqueSet" for e in said),
    )
    assert [e["type"] for e in warned if e["regarding"]["kind"] == "PodCliqueSet"] == ["Warning"]
    trace = await trace_of(up, f"{namespace}/trainer")
    assert any(
        "SchedulerVerdict" in line and "trainer-0" in line and "Unschedulable: " in line
        for line in trace.splitlines()
    ), trace
    # ...and `gangway why`: the same reason, the scheduler's words, what to do next.
    said = gang_said(await why_of(up, f"{namespace}/trainer"), "trainer-0")
    assert (said["reason"], said["scheduled"], said["pods"], said["minimum"]) == (
        "Unschedulable",
        0,
        4,
        4,
    )
    # The scheduler's words, as the PodGang carries them (they change as it tries again).
    assert "nvidia.com/gpu" in said["message"] or "minCount (4)" in said["message"], said
    assert said["next_step"].startswith("add nodes")
    podgang_doc = {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang", **gang}
    columns = await printed_columns(api, podgang_doc, namespace)  # `kubectl get podgangs`
    assert (columns["Phase"], columns["Scheduled"]) == ("Pending", "Unschedulable"), columns

    await nodes.add(1, gpus=4)
    gang = await gang_where(
        api, namespace, "trainer-0", lambda g: g["status"]["phase"] == "Running"
    )
    assert scheduled(gang)["status"] == "True"
    await live_when(api, pcs, namespace, "PodGangsScheduled", status="True")
    told = await eventually(partial(events_about, api, namespace, "PodGangsScheduled"), bool)
    assert [e["type"] for e in told] == ["Normal"]
    found = await pods(api, namespace)
    assert bound(found.values()) == running(found.values()) == 4
    assert len({p["spec"]["nodeName"] for p in found.values()}) == 4
    # Grove's Ready and the times each condition last became True (#792).
    gang = await gang_where(
        api, namespace, "trainer-0", lambda g: condition(g, "Ready").get("status") == "True"
    )
    assert gang["status"]["lastScheduled"] == scheduled(gang)["lastTransitionTime"]
    assert gang["status"]["lastReady"] == condition(gang, "Ready")["lastTransitionTime"]


async def test_two_gangs_with_room_for_one_one_runs_whole_the_other_not_at_all(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    if e2e_cluster.binaries.minor < 36:
        # Kubernetes 1.35's alpha gang scheduling holds a partly reserved gang at Permit for
        # up to 300 s: two gangs racing for room for one may both wait that long, then retry.
        pytest.skip("Kubernetes 1.35: racing gangs may deadlock until the 300 s Permit timeout")
    await nodes.add(4, gpus=4)
    pcs = whole_gang(namespace, "trainer", nodes, 4, 4, replicas=2)
    await server_side_apply(api, pcs, namespace)

    def one_running_one_refused(gangs: dict[str, dict[str, Any]]) -> bool:
        phases = sorted(g.get("status", {}).get("phase", "") for g in gangs.values())
        reasons = sorted(scheduled(g).get("reason", "") for g in gangs.values())
        return phases == ["Pending", "Running"] and reasons == ["PodGangScheduled", "Unschedulable"]

    gangs = await eventually(
        partial(podgangs, api, namespace), one_running_one_refused, PLACED_WITHIN
    )
    found = await pods(api, namespace)
    for name, gang in gangs.items():
        members = of_gang(found, name)
        expected = 4 if gang["status"]["phase"] == "Running" else 0
        assert bound(members) == expected, (name, [p["spec"].get("nodeName") for p in members])


async def test_a_podgang_of_two_podgroups_is_placed_whole_or_not_at_all(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    """Prefill and decode in one gang (2 + 2 pods, a 4-GPU node each) on room for 3: where
    CompositePodGroup is served the PodGang is one tree and no pod binds (a pod group per
    podgroup would let one podgroup's two pods bind and hold their GPUs); a fourth node, and
    all four bind."""
    if e2e_cluster.binaries.minor < 37:
        pytest.skip("CompositePodGroup: Kubernetes 1.37 and later")
    await nodes.add(3, gpus=4)
    roles = (gpu_clique("prefill", 2, 2, gpus=4), gpu_clique("decode", 2, 2, gpus=4))
    pcs = gpu_workload(namespace, "disagg", nodes, *roles)
    await server_side_apply(api, pcs, namespace)
    root: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "disagg-0"},
    }
    tree = await eventually(partial(live, api, root, namespace), bool, PLACED_WITHIN)
    assert tree["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}
    await stays_unbound(api, namespace)
    gang = await gang_where(
        api, namespace, "disagg-0", lambda g: scheduled(g).get("reason") in VERDICTS
    )
    assert scheduled(gang)["message"], gang
    await nodes.add(1, gpus=4)
    await eventually(partial(pods, api, namespace), lambda f: running(f.values()) == 4)


async def test_required_rack_packing_keeps_a_whole_podgang_in_one_rack(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    """Two racks of four nodes, two nodes of the first taken: prefill and decode (2 + 2
    whole nodes, the PodGang packed by rack) fit only in the second rack, and kube-scheduler
    puts all four there — without the constraint it would use the first rack's room too."""
    if e2e_cluster.binaries.minor < 37:
        pytest.skip("CompositePodGroup: Kubernetes 1.37 and later")
    await two_racks_the_first_half_taken(api, namespace, nodes)
    roles = (gpu_clique("prefill", 2, 2, gpus=4), gpu_clique("decode", 2, 2, gpus=4))
    pcs = packed(gpu_workload(namespace, "packed", nodes, *roles), required="rack")
    await server_side_apply(api, pcs, namespace)
    gang = await running_pods_of(api, namespace, "packed", 4)
    root: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "packed-0"},
    }
    tree = await live(api, root, namespace)
    assert tree["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK_LABEL}]}
    assert await racks_of(api, gang) == {"rack-1"}, "the whole PodGang in the rack with room"


async def test_a_scaled_gang_is_released_only_once_its_base_gang_is_scheduled(
    api: ApiClient, namespace: str, nodes: Nodes, up: Up
) -> None:
    pcs = nodes.pin(workload(namespace, "llama", "podcliquesets/disaggregated-inference.yaml"))
    pcs["spec"]["replicas"] = 1
    await ensure_priority_class(api, pcs["spec"]["template"]["priorityClassName"], 1000)
    for clique in pcs["spec"]["template"]["cliques"]:
        clique.pop("topologyConstraint", None)  # default-scheduler packs no topology
    pcs["spec"]["template"]["podCliqueScalingGroups"][0].pop("topologyConstraint")
    await server_side_apply(api, pcs, namespace)
    base, scaled = "llama-0", {"llama-0-prefill-0", "llama-0-prefill-1", "llama-0-decode-0"}

    def gang_of(pod: dict[str, Any]) -> str:
        name: str = pod["metadata"]["labels"][labels.PODGANG]
        return name

    def base_lifted_scaled_gated(found: dict[str, dict[str, Any]]) -> bool:
        gangs = {gang_of(p) for p in found.values()}
        return gangs == {base, *scaled} and all(
            gated(p) == (gang_of(p) != base) for p in found.values()
        )

    # No node of this test's pool yet: the base gang cannot be scheduled, the scaled wait,
    # and say so: on what, by name.
    await eventually(partial(pods, api, namespace), base_lifted_scaled_gated)
    await gang_where(api, namespace, base, lambda g: scheduled(g).get("reason") in VERDICTS)
    found = await pods(api, namespace)
    assert base_lifted_scaled_gated(found)
    said = await why_of(up, f"{namespace}/llama")
    for name in scaled:
        waiting = gang_said(said, name)
        assert waiting["reason"] == "Gated", waiting
        assert waiting["message"] == f"scheduling gates on: its base gang {base} is not scheduled"

    await nodes.add(12, gpus=8)  # its 12 prefill pods ask for a whole 8-GPU node each
    every = await eventually(
        partial(pods, api, namespace),
        lambda f: running(f.values()) == len(f) == len(found),
        PLACED_WITHIN,
    )
    for name in scaled:
        gang = await gang_where(api, namespace, name, lambda g: g["status"]["phase"] == "Running")
        assert scheduled(gang)["status"] == "True"
    assert not any(map(gated, every.values()))
    pcs_live = await live_when(api, pcs, namespace, "PodGangsReady", status="True")
    assert pcs_live["status"]["availableReplicas"] == 1
    progress = pcs_live["status"]["updateProgress"]  # the printer columns' numbers
    assert progress["updatedPodCliquesCount"] == progress["totalPodCliquesCount"] > 0
    columns = await printed_columns(api, pcs, namespace)  # what `kubectl get pcs` shows
    assert columns["PCLQs-Updated"] == columns["PCLQs-Total"] == progress["totalPodCliquesCount"]
    assert (columns["Replicas"], columns["Available"]) == (1, 1)


async def test_a_workload_nothing_can_hold_says_why_and_blocks_nothing_else(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await nodes.add(2, gpus=4)
    impossible = whole_gang(namespace, "fpga", nodes, 2, 1)
    for container in impossible["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"]:
        container["resources"]["limits"] = {"example.com/fpga": "1"}
    await server_side_apply(api, impossible, namespace)
    await server_side_apply(api, whole_gang(namespace, "fits", nodes, 2, 4), namespace)

    # The scheduler's words from every pod: one says what no node has, another perhaps only
    # that the gang has no quorum.
    gang = await gang_where(
        api, namespace, "fpga-0", lambda g: "example.com/fpga" in scheduled(g).get("message", "")
    )
    assert scheduled(gang)["reason"] == "Unschedulable", scheduled(gang)
    await gang_where(api, namespace, "fits-0", lambda g: g["status"]["phase"] == "Running")
    found = await pods(api, namespace)
    assert bound(of_gang(found, "fpga-0")) == 0
    # The scheduler said so on the pods too, where `kubectl describe pod` shows it.
    listed = await kube_of(api).request(
        "GET",
        f"/api/v1/namespaces/{namespace}/events",
        [("fieldSelector", "reason=FailedScheduling")],
    )
    assert b"example.com/fpga" in listed


async def test_the_demo_fails_naming_the_sample_admission_refused(
    namespace: str, up: Up, api: ApiClient
) -> None:
    """This module's ``up`` enables only default-scheduler, and not Kueue: the demo's KAI,
    Coscheduling, Koordinator and Volcano samples are refused at admission, and its Kueue
    sample too (or, where this session's cluster serves no Kueue Workloads yet, said not
    installed), and the demo says which and why, and exits non-zero."""
    process = await asyncio.create_subprocess_exec(
        Path(sys.executable).parent / "gangway",
        "demo",
        f"--namespace={namespace}",
        "--timeout=5",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "KUBECONFIG": up.env["KUBECONFIG"]},
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    text = out.decode()
    assert process.returncode == 1, text
    refused = [line for line in text.splitlines() if "refused:" in line]
    kai, coscheduling, koordinator, volcano, queued = refused
    assert kai.startswith("demo-inference"), text
    assert '"kai-scheduler" is not an enabled scheduler backend' in kai, text
    assert coscheduling.startswith("demo-training"), text
    assert '"scheduler-plugins-scheduler" is not an enabled scheduler backend' in coscheduling
    assert koordinator.startswith("demo-roles"), text
    assert '"koord-scheduler" is not an enabled scheduler backend' in koordinator
    assert volcano.startswith("demo-generate"), text
    assert '"volcano" is not an enabled scheduler backend' in volcano
    assert queued.startswith("demo-queued"), text
    assert (
        "metadata.labels[kueue.x-k8s.io/queue-name]" in queued or "Kueue is not installed" in queued
    ), queued
    assert (
        "not done: 5 of 7 refused "
        "(demo-inference, demo-training, demo-roles, demo-generate, demo-queued)" in text
    )


async def test_a_new_image_replaces_the_gangs_one_podcliqueset_replica_at_a_time(
    api: ApiClient, namespace: str, nodes: Nodes, up: Up
) -> None:
    """Grove's RollingRecreate with the cluster full: replica 0's gang is deleted whole, made
    again from the new template and placed by kube-scheduler on the nodes it freed, and only
    then replica 1's. Every pod change is watched, so no moment goes unseen."""
    await nodes.add(4, gpus=4)
    pcs = whole_gang(namespace, "roll", nodes, 2, 4, replicas=2)
    await server_side_apply(api, pcs, namespace)
    now = await eventually(partial(pods, api, namespace), lambda p: running(p.values()) == 4)
    old = {pod["metadata"]["uid"] for pod in now.values()}
    start = await pods_version(api, namespace)
    container = pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"][0]
    container["image"] = "registry.example.com/next:2"
    await server_side_apply(api, pcs, namespace)
    seen_down: list[set[str]] = []
    async for _ in pod_changes(api, namespace, start, now):
        runs = Counter(
            p["metadata"]["labels"][labels.PCS_REPLICA_INDEX]
            for p in now.values()
            if running([p]) and not p["metadata"].get("deletionTimestamp")
        )
        down = {r for r in ("0", "1") if runs[r] < 2}
        if down and (not seen_down or seen_down[-1] != down):
            seen_down.append(down)
        new = [p for p in now.values() if p["metadata"]["uid"] not in old]
        if len(new) == 4 and running(new) == 4:
            break
    assert {p["spec"]["containers"][0]["image"] for p in now.values()} == {container["image"]}
    assert seen_down == [{"0"}, {"1"}], "one replica at a time, replica 0 first"
    status = await eventually(
        partial(live, api, pcs, namespace),
        lambda p: p.get("status", {}).get("updatedReplicas") == 2,
    )
    assert status["status"]["updateProgress"]["updatedPodCliquesCount"] == 2
    # Each replacement is a step of the trace and told on the PodCliqueSet.
    trace = await trace_of(up, f"{namespace}/roll")
    assert trace.count("GangRolled") == 2, trace
    said = await events_about(api, namespace, "GangRolled")
    assert said
    assert all(e["type"] == "Normal" for e in said)
    # One Event per kind of step and round: both gangs in one note if told together.
    notes = " ".join(e["note"] for e in said)
    assert "replaced whole" in notes
    assert "pods of an older template" in notes


async def test_a_scaling_group_rolls_two_replicas_at_a_time_with_max_unavailable_2(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await rolled_within_its_budget(api, namespace, nodes)


async def test_a_roll_that_cannot_progress_says_so_once_past_its_progress_deadline(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    """The new template asks for a node no node is: its gang is replaced, never placed, and
    the PodCliqueSet says ProgressDeadlineExceeded once the clique's deadline has gone by
    (podgang looks again then: nothing else changes). A new template that fits ends it."""
    await nodes.add(1, gpus=4)
    pcs = whole_gang(namespace, "stuck", nodes, 1, 4)
    clique = pcs["spec"]["template"]["cliques"][0]
    clique["rollingUpdate"] = {"progressDeadline": "5s"}
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda p: running(p.values()) == 1)
    await live_when(api, pcs, namespace, "UpdateInProgress", status="False")
    clique["spec"]["podSpec"]["nodeSelector"] = {**nodes.selector, "example.com/none": "x"}
    await server_side_apply(api, pcs, namespace)
    await live_when(api, pcs, namespace, "UpdateInProgress", status="True", reason="Progressing")
    stalled = await live_when(
        api, pcs, namespace, "UpdateInProgress", reason="ProgressDeadlineExceeded"
    )
    said = condition(stalled, "UpdateInProgress")
    assert said["status"] == "Unknown"
    assert "clique worker: no progress within its progressDeadline 5s" in said["message"]
    clique["spec"]["podSpec"]["nodeSelector"] = nodes.selector
    await server_side_apply(api, pcs, namespace)
    await live_when(api, pcs, namespace, "UpdateInProgress", reason="NoActiveUpdate")


async def test_a_gang_made_again_under_its_names_is_not_taken_for_the_old_one(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await made_again_under_its_names_stays_whole(api, namespace, nodes)


async def test_whatif_predicts_what_the_cluster_then_does(
    api: ApiClient, namespace: str, nodes: Nodes, tmp_path: Path
) -> None:
    """Two gangs of two 4-GPU pods on three 4-GPU nodes: `gangway whatif` on nodes shaped
    like the test's says one gang is placed and why the other is not; the cluster then
    does just that."""
    await nodes.add(3, gpus=4)
    pcs = whole_gang(namespace, "trainer", nodes, 2, 4, replicas=2)
    manifest = tmp_path / "trainer.yaml"
    manifest.write_text(yaml.safe_dump(pcs))
    capacity = {"nodes": [{"count": 3, "gpus": 4, "labels": nodes.selector}]}
    code, answer, said = await asyncio.to_thread(whatif, manifest, capacity, tmp_path)
    assert code == 3, said
    predicted = placed_and_not(answer)
    assert predicted == (1, ["Unschedulable"]), answer

    await server_side_apply(api, pcs, namespace)

    def settled(gangs: dict[str, dict[str, Any]]) -> bool:
        reasons = sorted(scheduled(g).get("reason", "") for g in gangs.values())
        return reasons == ["PodGangScheduled", "Unschedulable"]

    gangs = await eventually(partial(podgangs, api, namespace), settled, PLACED_WITHIN)
    reasons = [scheduled(g)["reason"] for g in gangs.values()]
    assert (reasons.count("PodGangScheduled"), ["Unschedulable"]) == predicted


async def test_whatif_copies_the_nodes_of_a_cluster(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane, tmp_path: Path
) -> None:
    """--from-cluster: the cluster's nodes read once and copied (labels, allocatable): a
    gang pinned to this test's two 4-GPU nodes is placed on their copies, and nothing is
    made on the cluster itself."""
    made = await nodes.add(2, gpus=4)
    pcs = whole_gang(namespace, "copied", nodes, 2, 4)
    manifest = tmp_path / "copied.yaml"
    manifest.write_text(yaml.safe_dump(pcs))
    kubeconfig = str(e2e_cluster.kubeconfig)
    code, answer, said = await asyncio.to_thread(
        whatif, manifest, None, tmp_path, "--from-cluster", "--kubeconfig", kubeconfig
    )
    assert code == 0, said
    [gang] = answer[0]["gangs"]
    assert sorted(gang["nodes"]) == sorted(f"like-{name}-0" for name in made)
    assert await pods(api, namespace) == {}, "whatif placed nothing on the cluster itself"
