"""What a PodCliqueSet's status says, from the plan and the read model."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import yaml
from msgspec.structs import replace

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodCliqueSetStatus, PodGang
from gangway_contracts.pods import Pod
from gangway_podgang import progress
from gangway_podgang.compact import PodRecord, compact_pod
from gangway_podgang.manifests import all_references, podgang_spec
from gangway_podgang.plan import plan_podgangs
from tests.support.crd_compat import declared_paths, version_schema
from tests.support.manifests import inference_podcliqueset
from tests.support.paths import DEPLOY_CRDS
from tests.support.simulated_cluster import converge, converged_on, replanned, with_condition

AT = "2026-01-01T00:00:00Z"


def everything_exists(
    pcs: PodCliqueSet, gated: bool, bound: bool
) -> tuple[dict[str, PodGang], dict[str, PodRecord]]:
    plan = plan_podgangs(pcs)
    podgangs, pods = {}, {}
    for gang in plan.gangs:
        spec = podgang_spec(gang, "ml", None, all_references(gang, "ml"))
        meta = {"name": gang.name, "generation": 1}
        live = from_object({"metadata": meta, "spec": spec}, PodGang)
        live = with_condition(live, labels.INITIALIZED, True)
        podgangs[gang.name] = with_condition(live, labels.BACKEND_SYNCED, True)
        for _, _, name in gang.pods:
            spec_view: dict[str, object] = {}
            if gated:
                spec_view["schedulingGates"] = [{"name": labels.PODGANG_PENDING_CREATION_GATE}]
            if bound and gang.is_base:
                spec_view["nodeName"] = "n1"
            pods[name] = compact_pod(
                from_object(
                    {
                        "metadata": {"name": name, "labels": {labels.PODGANG: gang.name}},
                        "spec": spec_view,
                    },
                    Pod,
                )
            )
    return podgangs, pods


def test_nothing_yet_means_pending_gangs() -> None:
    pcs = inference_podcliqueset()
    ready = progress.gangs_ready(pcs, plan_podgangs(pcs), {}, {}, backend="kai-scheduler", at=AT)
    assert (ready.status, ready.reason) == ("False", "PodGangsPending")
    assert ready.observed_generation == 3


def test_scaled_gangs_held_back_say_they_wait_for_the_base_gang() -> None:
    pcs = inference_podcliqueset()
    podgangs, pods = everything_exists(pcs, gated=True, bound=False)
    ready = progress.gangs_ready(pcs, plan_podgangs(pcs), podgangs, pods, backend="b", at=AT)
    assert (ready.status, ready.reason) == ("False", "WaitingForBaseGang")


def test_all_lifted_is_ready_and_counts_the_available_replica() -> None:
    pcs = inference_podcliqueset()
    plan = plan_podgangs(pcs)
    podgangs, pods = everything_exists(pcs, gated=False, bound=True)
    ready = progress.gangs_ready(pcs, plan, podgangs, pods, backend="b", at=AT)
    assert (ready.status, ready.reason) == ("True", "Ready")
    counts = progress.counts(pcs, plan, podgangs, pods, at=AT)
    assert (counts["replicas"], counts["availableReplicas"], counts["updatedReplicas"]) == (1, 1, 1)
    assert counts["observedGeneration"] == 3


def test_gangs_held_back_are_not_scheduled_and_say_the_gates_are_on() -> None:
    pcs = inference_podcliqueset()
    _, pods = everything_exists(pcs, gated=True, bound=False)
    said = progress.gangs_scheduled(pcs, plan_podgangs(pcs), pods, at=AT)
    assert (said.status, said.reason) == ("False", "Gated")
    assert said.message.startswith("4 of 4 PodGangs not scheduled: gates still on in ")


def test_the_scheduler_s_verdict_names_the_gangs_it_did_not_place() -> None:
    pcs = inference_podcliqueset()
    plan = plan_podgangs(pcs)
    _, pods = everything_exists(pcs, gated=False, bound=True)
    refused = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
    }
    scaled = [g for g in plan.gangs if not g.is_base]
    for gang in scaled:
        for _, _, name in gang.pods:
            pods[name] = compact_pod(
                from_object({"metadata": {"name": name}, "status": {"conditions": [refused]}}, Pod)
            )
    said = progress.gangs_scheduled(pcs, plan, pods, at=AT)
    assert (said.status, said.reason) == ("False", "Unschedulable")
    first = sorted(g.name for g in scaled)[0]
    assert said.message.startswith(
        f"{len(scaled)} of {len(plan.gangs)} PodGangs not scheduled: {first}: 0/3 nodes"
    )


def test_every_gang_placed_is_scheduled() -> None:
    pcs = inference_podcliqueset()
    plan = plan_podgangs(pcs)
    _, pods = everything_exists(pcs, gated=False, bound=True)
    for gang in plan.gangs:
        for _, _, name in gang.pods:
            pods[name] = compact_pod(
                from_object({"metadata": {"name": name}, "spec": {"nodeName": "n1"}}, Pod)
            )
    said = progress.gangs_scheduled(pcs, plan, pods, at=AT)
    assert (said.status, said.reason, said.message) == (
        "True",
        "Scheduled",
        "4 of 4 PodGangs placed",
    )


def test_a_status_that_would_not_change_is_not_written() -> None:
    pcs = inference_podcliqueset()
    plan = plan_podgangs(pcs)
    podgangs, pods = everything_exists(pcs, gated=False, bound=True)
    ready = progress.gangs_ready(pcs, plan, podgangs, pods, backend="b", at=AT)
    fields = progress.counts(pcs, plan, podgangs, pods, at=AT)
    change = progress.status_change(fields, [ready])
    written = change({})
    assert written is not None
    later = progress.gangs_ready(pcs, plan, podgangs, pods, backend="b", at="2026-02-02T00:00:00Z")
    assert progress.status_change(fields, [later])(written) is None


def test_a_status_read_back_through_the_view_is_not_written_again() -> None:
    """The view leaves zeros out (no replica available yet, no scaling group): the status
    as the read model shows it after the write still counts as written."""
    pcs = inference_podcliqueset()
    plan = plan_podgangs(pcs)
    podgangs, pods = everything_exists(pcs, gated=True, bound=False)
    ready = progress.gangs_ready(pcs, plan, podgangs, pods, backend="b", at=AT)
    fields = progress.counts(pcs, plan, podgangs, pods, at=AT)
    assert fields["availableReplicas"] == 0
    written = progress.status_change(fields, [ready])({})
    assert written is not None
    stored = without_nulls(written)  # a merge patch onto nothing: nulls remove, are not kept
    shown = replace(pcs, status=from_object(stored, PodCliqueSetStatus))
    current = progress.current_status(shown)["status"]
    assert "availableReplicas" not in current  # left out by the view
    assert progress.status_change(fields, [ready])(current) is None


def test_the_status_written_is_what_the_crd_declares() -> None:
    """The API server prunes what the CRD does not declare: every field of the status
    podgang writes is declared by deploy/crds (generated from the view)."""
    pcs = inference_podcliqueset()
    plan = plan_podgangs(pcs)
    podgangs, pods = everything_exists(pcs, gated=False, bound=True)
    ready = progress.gangs_ready(pcs, plan, podgangs, pods, backend="b", at=AT)
    written = progress.status_change(progress.counts(pcs, plan, podgangs, pods, at=AT), [ready])({})
    assert written is not None
    assert written["updateProgress"]["totalPodCliquesCount"] > 0
    crd = yaml.safe_load((DEPLOY_CRDS / "grove.io_podcliquesets.yaml").read_text())
    status = version_schema(crd, "v1alpha1")["properties"]["status"]
    assert set(value_paths(written)) - set(declared_paths(status)) == set()


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


def value_paths(value: object, path: str = "") -> Iterator[str]:
    """Every field path of a JSON value, spelt as declared_paths spells them."""
    if isinstance(value, dict):
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else key
            yield child_path
            yield from value_paths(child, child_path)
    elif isinstance(value, list):
        for item in value:
            yield from value_paths(item, f"{path}[]")


def test_an_update_says_when_it_began_which_replica_it_replaces_and_when_it_ended() -> None:
    manifest: dict[str, Any] = {
        "metadata": {"name": "pcs", "namespace": "ns"},
        "spec": {"replicas": 2, "template": {"cliques": [{"name": "w", "spec": {"replicas": 2}}]}},
    }
    cluster = converged_on(manifest, random.Random(0))

    def timing(at: str) -> dict[str, Any]:
        pcs = from_object(manifest, PodCliqueSet)
        plan = plan_podgangs(pcs)
        found = progress.update_timing(plan, cluster.pods, pcs, at=at)
        manifest["status"] = {"updateProgress": {k: v for k, v in found.items() if v is not None}}
        return found

    assert timing("t0") == {
        "updateStartedAt": None,
        "updateEndedAt": None,
        "currentlyUpdating": None,
    }
    manifest["spec"]["template"]["cliques"][0]["spec"]["podSpec"] = {"priority": 7}
    newer = replanned(cluster, manifest)
    began = {"updateStartedAt": "t1", "updateEndedAt": None}
    assert timing("t1") == {
        **began,
        "currentlyUpdating": [{"replicaIndex": 0, "updateStartedAt": "t1"}],
    }
    for pod in ("pcs-0-w-0", "pcs-0-w-1"):  # replica 0 rolled: its pods deleted
        del cluster.pods[pod]
    assert timing("t2") == {
        **began,
        "currentlyUpdating": [{"replicaIndex": 0, "updateStartedAt": "t1"}],
    }
    for pod in ("pcs-0-w-0", "pcs-0-w-1"):  # replica 0 back, current and scheduled
        cluster.create_pod(pod, "pcs-0")
        cluster.pods[pod] = replace(cluster.pods[pod], node_name="n", ready=True)
    assert timing("t3") == {
        **began,
        "currentlyUpdating": [{"replicaIndex": 1, "updateStartedAt": "t3"}],
    }
    converge(cluster, newer, random.Random(0))
    ended = {"updateStartedAt": "t1", "updateEndedAt": "t4", "currentlyUpdating": None}
    assert timing("t4") == ended
    assert timing("t5") == ended, "an ended update keeps its times"


def test_a_roll_made_again_before_the_status_was_written_is_still_told() -> None:
    """A small gang is deleted and made again within one reconcile: no pod of it is
    outdated when the status is written, yet the update is under way until it is back,
    and recorded once it is."""
    manifest: dict[str, Any] = {
        "metadata": {"name": "pcs", "namespace": "ns"},
        "spec": {"replicas": 1, "template": {"cliques": [{"name": "w", "spec": {"replicas": 1}}]}},
    }
    cluster = converged_on(manifest, random.Random(0))
    manifest["spec"]["template"]["cliques"][0]["spec"]["podSpec"] = {"priority": 7}
    replanned(cluster, manifest)
    pcs = from_object(manifest, PodCliqueSet)
    plan = plan_podgangs(pcs)
    del cluster.pods["pcs-0-w-0"]
    cluster.create_pod("pcs-0-w-0", "pcs-0")  # current, not placed yet
    found = progress.update_timing(plan, cluster.pods, pcs, at="t1", began=frozenset({0}))
    assert found == {
        "updateStartedAt": "t1",
        "updateEndedAt": None,
        "currentlyUpdating": [{"replicaIndex": 0, "updateStartedAt": "t1"}],
    }
    pod = cluster.pods["pcs-0-w-0"]
    cluster.pods["pcs-0-w-0"] = replace(pod, node_name="n", ready=True)
    found = progress.update_timing(plan, cluster.pods, pcs, at="t2", began=frozenset({0}))
    assert found == {"updateStartedAt": "t2", "updateEndedAt": "t2", "currentlyUpdating": None}
