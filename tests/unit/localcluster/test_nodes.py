"""Fake nodes as Gangway describes them: capacity in status, a place in a topology."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangway_localcluster.nodes import (
    BLOCK_LABEL,
    GPU,
    HOSTNAME_LABEL,
    MANAGED_BY_KWOK,
    RACK_LABEL,
    ZONE_LABEL,
    NodePool,
    is_ready,
)


def test_a_node_carries_its_capacity_and_kwoks_mark() -> None:
    [node] = NodePool(count=1, gpus=4, cpu="8", memory="64Gi", labels={"pool": "a"}).manifests()
    assert node["status"]["capacity"] == {"cpu": "8", "memory": "64Gi", "pods": "110", GPU: "4"}
    assert node["status"]["allocatable"] == node["status"]["capacity"]
    assert node["metadata"]["annotations"] == dict([MANAGED_BY_KWOK])
    assert node["metadata"]["labels"]["pool"] == "a"
    assert node["metadata"]["labels"][HOSTNAME_LABEL] == node["metadata"]["name"] == "kwok-node-0"


def test_no_gpus_no_gpu_resource() -> None:
    [node] = NodePool(count=1, gpus=0).manifests()
    assert GPU not in node["status"]["capacity"]


def test_nodes_fill_racks_then_blocks_then_zones() -> None:
    pool = NodePool(count=9, hosts_per_rack=2, racks_per_block=2, blocks_per_zone=2)
    places = [
        (n["metadata"]["labels"][RACK_LABEL], n["metadata"]["labels"][BLOCK_LABEL])
        for n in pool.manifests()
    ]
    assert places[:5] == [
        ("rack-0", "block-0"),
        ("rack-0", "block-0"),
        ("rack-1", "block-0"),
        ("rack-1", "block-0"),
        ("rack-2", "block-1"),
    ]
    assert pool.manifests()[8]["metadata"]["labels"][ZONE_LABEL] == "zone-1"


def test_adding_to_a_pool_continues_its_names_and_places() -> None:
    first, more = NodePool(count=3), NodePool(count=2, first=3)
    assert [n["metadata"]["name"] for n in more.manifests()] == ["kwok-node-3", "kwok-node-4"]
    whole = NodePool(count=5).manifests()
    assert [n["metadata"]["labels"] for n in first.manifests() + more.manifests()] == [
        n["metadata"]["labels"] for n in whole
    ]


def test_impossible_pools_are_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="gpus: must be >= 0"):
        NodePool(count=1, gpus=-1)
    with pytest.raises(ValueError, match="hosts_per_rack: must be >= 1"):
        NodePool(count=1, hosts_per_rack=0)


@given(
    count=st.integers(0, 60),
    hosts=st.integers(1, 6),
    racks=st.integers(1, 4),
    blocks=st.integers(1, 4),
)
def test_every_rack_lies_in_one_block_and_every_block_in_one_zone(
    count: int, hosts: int, racks: int, blocks: int
) -> None:
    pool = NodePool(
        count=count, hosts_per_rack=hosts, racks_per_block=racks, blocks_per_zone=blocks
    )
    block_of: dict[str, str] = {}
    zone_of: dict[str, str] = {}
    for node in pool.manifests():
        labels = node["metadata"]["labels"]
        assert block_of.setdefault(labels[RACK_LABEL], labels[BLOCK_LABEL]) == labels[BLOCK_LABEL]
        assert zone_of.setdefault(labels[BLOCK_LABEL], labels[ZONE_LABEL]) == labels[ZONE_LABEL]
    assert len({n["metadata"]["name"] for n in pool.manifests()}) == count


def test_ready_is_the_ready_condition_true() -> None:
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert is_ready(ready)
    assert not is_ready({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert not is_ready({"metadata": {"name": "new"}})
