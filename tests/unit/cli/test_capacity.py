"""``gangway whatif``'s nodes: a capacity file read by field, or a cluster's nodes copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from gangway_cli.capacity import pools_like, read_capacity
from gangway_contracts.errors import FieldErrors
from gangway_localcluster.nodes import RACK_LABEL


def test_a_capacity_file_becomes_pools_numbered_on(tmp_path: Path) -> None:
    path = tmp_path / "capacity.yaml"
    path.write_text(
        "nodes:\n"
        "- {count: 2, gpus: 4, labels: {gangway.dev/rack: r9}}\n"
        "- {count: 1, cpu: 500m, taints: [{key: gpu, effect: NoSchedule}]}\n"
    )
    first, second = read_capacity(path)
    assert [n["metadata"]["name"] for n in first.manifests()] == ["whatif-node-0", "whatif-node-1"]
    assert {n["metadata"]["labels"][RACK_LABEL] for n in first.manifests()} == {"r9"}
    [node] = second.manifests()
    assert node["metadata"]["name"] == "whatif-node-2"
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "", "effect": "NoSchedule"}]
    assert node["status"]["allocatable"]["cpu"] == "500m"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("nodes: []\n", "nodes: List should have at least 1 item"),
        ("nodes: [{count: 1, memory: much}]\n", "nodes[0].memory: 'much' is not a quantity"),
        (
            "nodes: [{count: 1, taints: [{key: k, effect: Sometimes}]}]\n",
            "nodes[0].taints[0].effect",
        ),
        ("[1, 2\n", "not YAML"),
    ],
)
def test_a_wrong_capacity_file_is_said_by_field(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "capacity.yaml"
    path.write_text(text)
    with pytest.raises(FieldErrors) as raised:
        read_capacity(path)
    assert any(said in str(e) for e in raised.value.errors), raised.value.errors


def test_a_clusters_nodes_are_copied_with_labels_allocatable_and_taints() -> None:
    node = {
        "metadata": {
            "name": "gpu-7",
            "labels": {"kubernetes.io/hostname": "gpu-7", "topology.kubernetes.io/zone": "z1"},
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "timeAdded": "x"}]},
        "status": {"allocatable": {"cpu": "95500m", "memory": "1Ti", "nvidia.com/gpu": "8"}},
    }
    cordoned = {"metadata": {"name": "old"}, "spec": {"unschedulable": True}}
    [pool] = pools_like([node, cordoned])
    [copy] = pool.manifests()
    assert copy["metadata"]["labels"]["topology.kubernetes.io/zone"] == "z1"
    assert copy["status"]["allocatable"] == {
        "cpu": "95500m",
        "memory": "1Ti",
        "pods": "110",
        "nvidia.com/gpu": "8",
    }
    assert copy["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
