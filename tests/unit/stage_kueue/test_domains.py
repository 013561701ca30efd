"""Kueue's topology assignment unrolled into domains, and each gated pod given one."""

from __future__ import annotations

from typing import Any

import msgspec

from gangway_contracts import kueue_topology, labels
from gangway_contracts.pods import Pod
from gangway_stage_kueue.domains import domains, place, where

RACK, HOST = "example.com/rack", "kubernetes.io/hostname"


def assignment() -> dict[str, Any]:
    """Kueue v1beta2's compressed form: rack-1 for all, hosts n-4 and n-5 by prefix and
    root, three pods on n-4 and one on n-5."""
    return {
        "levels": [RACK, HOST],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"universal": "rack-1"},
                    {"individual": {"prefix": "n-", "roots": ["4", "5"]}},
                ],
                "podCounts": {"individual": [3, 1]},
            }
        ],
    }


def pod(name: str, gated: bool = True, selector: dict[str, str] | None = None) -> Pod:
    """A pod of the gang; with ``selector``, one the stage gave that domain."""
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if selector:
        meta["annotations"] = {kueue_topology.REQUIRED: RACK}
    spec: dict[str, Any] = {"nodeSelector": selector or {}}
    if gated:
        spec["schedulingGates"] = [{"name": labels.PODGANG_PENDING_CREATION_GATE}]
    return msgspec.json.decode(msgspec.json.encode({"metadata": meta, "spec": spec}), type=Pod)


ON_N4 = {RACK: "rack-1", HOST: "n-4"}


def test_kueues_compressed_slices_unroll_into_domains_in_its_order() -> None:
    assert domains(assignment()) == [
        ({RACK: "rack-1", HOST: "n-4"}, 3),
        ({RACK: "rack-1", HOST: "n-5"}, 1),
    ]
    universal = {
        "levels": [RACK],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"roots": ["a", "b"], "suffix": "-x"}}],
                "podCounts": {"universal": 2},
            }
        ],
    }
    assert domains(universal) == [({RACK: "a-x"}, 2), ({RACK: "b-x"}, 2)]
    assert where({"w": assignment()}, {"w": RACK}) == f"{RACK} rack-1"
    assert where({"w": assignment()}, {}) == f"{RACK} rack-1"  # the highest level
    # Kueue names the nodes alone where its Topology ends at the hostname.
    hosts = {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": 10,
                "valuesPerLevel": [{"individual": {"roots": [f"n-{i}" for i in range(10)]}}],
                "podCounts": {"universal": 1},
            }
        ],
    }
    assert where({"w": hosts}, {"w": RACK}) == (
        f"{HOST} n-0, n-1, n-2, n-3, n-4, n-5, n-6, n-7, and 2 more"
    )


def test_gated_pods_fill_the_domains_in_name_order() -> None:
    placement = place([pod(f"w-{i}") for i in (3, 1, 2, 0)], domains(assignment()))
    assert placement.given == {
        "w-0": {RACK: "rack-1", HOST: "n-4"},
        "w-1": {RACK: "rack-1", HOST: "n-4"},
        "w-2": {RACK: "rack-1", HOST: "n-4"},
        "w-3": {RACK: "rack-1", HOST: "n-5"},
    }
    assert placement.stale == []


def test_a_second_pass_over_part_of_the_first_gives_the_same_answer() -> None:
    """The mirror may show some of the first pass's writes and not others."""
    first = place([pod(f"w-{i}") for i in range(4)], domains(assignment())).given
    seen = [pod("w-0", selector=ON_N4), pod("w-1"), pod("w-2", selector=ON_N4), pod("w-3")]
    again = place(seen, domains(assignment()))
    assert again.given == {name: first[name] for name in ("w-1", "w-3")}
    assert again.stale == []


def test_a_pod_placed_already_keeps_its_room_and_a_stale_domain_is_made_again() -> None:
    """A placed pod (past its gate) counts against its domain; a gated pod holding a
    domain of an admission Kueue took back, with no room for it here, is stale."""
    placed = [pod(f"p-{i}", gated=False, selector=ON_N4) for i in range(3)]
    elsewhere = pod("w-0", selector={RACK: "rack-0", HOST: "n-0"})
    placement = place([*placed, elsewhere, pod("w-1")], domains(assignment()))
    assert [p.metadata.name for p in placement.stale] == ["w-0"]
    assert placement.given == {"w-1": {RACK: "rack-1", HOST: "n-5"}}


def test_a_pods_own_node_selector_is_kept_to() -> None:
    """A pod pinned to n-5 by its template takes the domain that agrees with it."""
    pinned = pod("w-0")
    pinned = msgspec.structs.replace(
        pinned, spec=msgspec.structs.replace(pinned.spec, node_selector={HOST: "n-5"})
    )
    placement = place([pinned, pod("w-1")], domains(assignment()))
    assert placement.given["w-0"][HOST] == "n-5"
    assert placement.given["w-1"][HOST] == "n-4"
