"""What Kueue's topology assignment can be asked for: a pack over one podgroup, or over a
leader of one pod and its workers; the rest refused, by field."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from gangway_contracts import kueue, kueue_topology
from gangway_contracts.config import load_operator_config
from gangway_contracts.errors import FieldErrors
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.kueue_topology import Pack, Request, Unexpressible, requests

RACK = "example.com/rack"


def test_topology_is_off_unless_asked_for_and_needs_kueue_in_front() -> None:
    assert not load_operator_config("kueue: {enabled: true}").kueue_topology
    assert load_operator_config("kueue: {enabled: true, topology: true}").kueue_topology
    with pytest.raises(FieldErrors) as refused:
        load_operator_config("kueue: {topology: true}")
    assert [e.field for e in refused.value.errors] == ["kueue.topology"]


def pack(name: str, *members: str, level: str = RACK, required: bool = True) -> Pack:
    return Pack(name, members, level, required, f"field-of-{name}")


def test_one_podgroup_and_a_leader_with_its_workers_are_expressible() -> None:
    assert requests({"w": 4}, [pack("gang", "w")]) == {"w": Request(RACK, True)}
    both = requests({"leader": 1, "workers": 3}, [pack("gang", "leader", "workers")])
    assert both == {
        "leader": Request(RACK, True, "gang"),
        "workers": Request(RACK, True, "gang"),
    }
    # A podgroup's own pack at the same level, and the gang's around it: the group wins.
    nested = requests(
        {"leader": 1, "workers": 3}, [pack("workers", "workers"), pack("gang", "leader", "workers")]
    )
    assert nested["workers"].group == "gang"
    preferred = requests({"w": 2}, [pack("gang", "w", required=False)])
    assert preferred["w"].annotation() == (kueue_topology.PREFERRED, RACK)
    # Preferred in a rack by its own, required there by the gang's: required.
    both_ways = requests({"w": 2}, [pack("w", "w", required=False), pack("gang", "w")])
    assert both_ways["w"] == Request(RACK, True)


@pytest.mark.parametrize(
    ("counts", "packs", "field"),
    [
        ({"p": 2, "d": 2}, [pack("gang", "p", "d")], "field-of-gang"),
        ({"a": 1, "b": 1, "c": 1}, [pack("gang", "a", "b", "c")], "field-of-gang"),
        ({"w": 2}, [pack("w", "w", level="zone"), pack("gang", "w")], "field-of-gang"),
    ],
)
def test_what_kueue_cannot_keep_in_one_domain_is_said(
    counts: dict[str, int], packs: list[Pack], field: str
) -> None:
    with pytest.raises(Unexpressible) as refused:
        requests(counts, packs)
    assert refused.value.field == field


def pcs(**template: Any) -> PodCliqueSet:
    def clique(name: str, replicas: int, **more: Any) -> dict[str, Any]:
        spec = {"roleName": name, "replicas": replicas, "podSpec": {"containers": []}}
        return {"name": name, "spec": spec, **more}

    doc = {
        "metadata": {"name": "p", "namespace": "ns", "labels": {kueue.QUEUE_LABEL: "team"}},
        "spec": {
            "template": {
                "cliques": [clique("leader", 1), clique("prefill", 2), clique("decode", 2)],
                **template,
            }
        },
    }
    return msgspec.json.decode(msgspec.json.encode(doc), type=PodCliqueSet)


RACKED = {"pack": {"required": "rack"}}


@pytest.mark.parametrize(
    ("workload", "fields"),
    [
        # Three standalone cliques in one rack: more than Kueue keeps together.
        (pcs(topologyConstraint=RACKED), ["spec.template.topologyConstraint"]),
        # Each scaling-group replica in a rack: a leader of one pod and its decode workers.
        (
            pcs(
                podCliqueScalingGroups=[
                    {
                        "name": "sg",
                        "cliqueNames": ["leader", "decode"],
                        "replicas": 2,
                        "topologyConstraint": RACKED,
                    }
                ]
            ),
            [],
        ),
        # Prefill and decode, two pods each, in one rack per scaling-group replica.
        (
            pcs(
                podCliqueScalingGroups=[
                    {
                        "name": "sg",
                        "cliqueNames": ["prefill", "decode"],
                        "topologyConstraint": RACKED,
                    }
                ]
            ),
            ["spec.template.podCliqueScalingGroups[0].topologyConstraint"],
        ),
        (pcs(), []),
    ],
)
def test_admission_refuses_packing_kueue_cannot_choose_domains_for(
    workload: PodCliqueSet, fields: list[str]
) -> None:
    assert [e.field for e in kueue.problems(workload, True, topology=True)] == fields
    assert kueue.problems(workload, True, topology=False) == []
