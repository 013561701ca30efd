"""``gangway render``: the backend's objects, then the prepared pods; errors name fields."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_cli.main import main
from gangway_contracts import labels
from tests.support.manifests import fixture
from tests.support.paths import FIXTURES

CONFIG = str(FIXTURES / "config" / "kai-default.yaml")
BINDING = fixture("topology/datacenter.yaml")
SAMPLES = resources.files("gangway_cli.samples")


def write(tmp_path: Path, *docs: dict[str, Any]) -> str:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def inference(topology_name: str | None = "datacenter") -> dict[str, Any]:
    pcs = fixture("podcliquesets/disaggregated-inference.yaml")
    if topology_name:
        pcs["spec"]["template"]["topologyConstraint"]["topologyName"] = topology_name
    return pcs


def render(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[Any], str]:
    code = main(["render", *args])
    out = capsys.readouterr()
    return code, list(yaml.safe_load_all(out.out)) if code == 0 else [], out.err


def test_kai_podgroups_then_pods_ready_for_kai(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = render(capsys, "--config", CONFIG, write(tmp_path, inference(), BINDING))
    assert code == 0
    kinds = [d["kind"] for d in docs]
    assert kinds == ["PodGroup"] * 8 + ["Pod"] * 40, "one PodGroup per PodGang, pods after"
    assert docs[0]["spec"]["minMember"] == 8
    pod = docs[8]
    assert pod["spec"]["schedulerName"] == "kai-scheduler"
    assert pod["metadata"]["annotations"]["pod-group-name"] == "llama-disagg-0"
    assert pod["spec"]["schedulingGates"] == [{"name": labels.PODGANG_PENDING_CREATION_GATE}]
    assert err == 'note: not checked offline: KAI Queue "team-a" exists\n'


def test_what_the_backend_rejects_is_said_field_by_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = render(capsys, "--config", CONFIG, write(tmp_path, inference(None)))
    assert code == 1
    assert err.splitlines()[0] == (
        "spec.template.topologyConstraint.pack: kai-scheduler places by a named Topology: "
        "set spec.template.topologyConstraint.topologyName"
    )


def test_workload_api_of_the_clusters_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pcs = fixture("podcliquesets/single-clique.yaml")
    pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["schedulerName"] = "default-scheduler"
    file = write(tmp_path, pcs)
    code, docs, _ = render(capsys, "--config", CONFIG, "--workload-api", "v1alpha1", file)
    assert code == 0
    assert [d["kind"] for d in docs] == ["Workload"] + ["Pod"] * 4
    assert docs[0]["spec"]["podGroups"] == [{"name": "worker", "policy": {"gang": {"minCount": 4}}}]
    assert docs[1]["spec"]["workloadRef"] == {"name": "trainer-0", "podGroup": "worker"}

    code, docs, _ = render(capsys, "--config", CONFIG, file)
    assert [d["kind"] for d in docs] == ["Workload", "PodGroup"] + ["Pod"] * 4
    assert docs[2]["spec"]["schedulingGroup"] == {"podGroupName": "trainer-0-worker"}


def test_podgangs_alone_render_their_objects_and_say_why_there_are_no_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gang = fixture("podgangs/base-gang.yaml")
    # KAI takes the queue from the PodCliqueSet, so it must be in the stream.
    code, _, err = render(capsys, "--config", CONFIG, write(tmp_path, gang))
    assert (code, err) == (1, "PodCliqueSetMissing: the queue comes from the PodCliqueSet\n")

    code, docs, err = render(capsys, "--config", CONFIG, write(tmp_path, gang, inference()))
    assert code == 0
    assert [d["kind"] for d in docs] == ["PodGroup"] + ["Pod"] * 6

    gang["metadata"]["labels"][labels.SCHEDULER_NAME] = "default-scheduler"
    code, docs, err = render(capsys, "--config", CONFIG, write(tmp_path, gang))
    assert [d["kind"] for d in docs] == ["Workload"] + ["PodGroup"] * 3
    assert "no pods" in err


def test_a_podgang_as_groves_operator_writes_it_for_each_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by its controller owner reference (no Gangway label, no part-of), rendered by
    the backend chosen with --backend: a migration aid."""
    gang = fixture("podgangs/grove-written.yaml")
    assert labels.PART_OF not in gang["metadata"]["labels"]
    pcs = yaml.safe_load((FIXTURES / "grove/samples/simple/simple1.yaml").read_text())
    pcs["metadata"]["labels"]["kai.scheduler/queue"] = "team-a"
    stream = write(tmp_path, gang, pcs)
    code, docs, err = render(capsys, "--config", CONFIG, "--backend", "kai-scheduler", stream)
    assert code == 0, err
    assert [d["kind"] for d in docs] == ["PodGroup"] + ["Pod"] * 9
    assert docs[0]["spec"]["queue"] == "team-a"
    assert docs[0]["spec"]["minMember"] == 9
    code, docs, _ = render(capsys, "--config", CONFIG, "--backend", "default-scheduler", stream)
    assert [d["kind"] for d in docs] == ["Workload"] + ["PodGroup"] * 4 + ["Pod"] * 9
    code, _, err = render(capsys, "--config", CONFIG, "--backend", "volcano", stream)
    assert (code, err) == (
        1,
        '--backend: "volcano" is not enabled (default-scheduler, kai-scheduler are)\n',
    )


def test_an_external_backend_cannot_be_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {"scheduler": {"profiles": [{"name": "acme", "external": True, "default": True}]}}
        )
    )
    pcs = fixture("podcliquesets/single-clique.yaml")
    del pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["schedulerName"]
    code, _, err = render(capsys, "--config", str(config), write(tmp_path, pcs))
    assert code == 1
    assert "external backend" in err


def test_coscheduling_podgroup_then_pods_for_its_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(FIXTURES / "config" / "coscheduling.yaml")
    sample = yaml.safe_load(SAMPLES.joinpath("coscheduling.yaml").read_text())
    code, docs, err = render(capsys, "--config", config, write(tmp_path, sample))
    assert (code, err) == (0, "")
    group, *pods = docs
    assert (group["kind"], group["metadata"]["name"]) == ("PodGroup", "demo-training-0")
    assert group["spec"] == {"minMember": 5, "scheduleTimeoutSeconds": 30}
    assert [p["kind"] for p in pods] == ["Pod"] * 5
    for pod in pods:
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "demo-training-0"


def test_koordinator_gangs_in_one_group_then_pods_for_koord_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "operator.yaml"
    config.write_text("scheduler: {profiles: [{name: koordinator, default: true}]}\n")
    sample = yaml.safe_load(SAMPLES.joinpath("koordinator.yaml").read_text())
    code, docs, err = render(capsys, "--config", str(config), write(tmp_path, sample))
    assert (code, err) == (0, "")
    gangs = [d for d in docs if d["kind"] == "PodGroup"]
    assert [(g["metadata"]["name"], g["spec"]["minMember"]) for g in gangs] == [
        ("demo-roles-0-server", 1),
        ("demo-roles-0-worker", 3),
    ]
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert len(pods) == 4
    assert {p["spec"]["schedulerName"] for p in pods} == {"koord-scheduler"}


def test_volcano_one_podgroup_in_the_named_queue_then_pods_as_its_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "operator.yaml"
    config.write_text("scheduler: {profiles: [{name: volcano, default: true}]}\n")
    sample = yaml.safe_load(SAMPLES.joinpath("volcano.yaml").read_text())
    code, docs, err = render(capsys, "--config", str(config), write(tmp_path, sample))
    assert (code, err) == (0, 'note: not checked offline: Volcano Queue "default" is open\n')
    group, *pods = docs
    assert (group["kind"], group["metadata"]["name"]) == ("PodGroup", "demo-generate-0")
    assert group["spec"] == {
        "minMember": 3,
        "minTaskMember": {"demo-generate-0-router": 1, "demo-generate-0-decoder": 2},
        "queue": "default",
        "minResources": {"cpu": "5"},  # the router's 1, two decoders' 2 each
    }
    tasks = [p["metadata"]["annotations"]["volcano.sh/task-spec"] for p in pods]
    assert sorted(tasks) == ["demo-generate-0-decoder"] * 4 + ["demo-generate-0-router"]
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
