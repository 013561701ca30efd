"""Startup order with Grove's meaning: who waits on which PodCliques, the init container that
waits, and the Services of ready pods it asks (Grove's simple3 sample, whose comments say the
order expected in every gang)."""

from __future__ import annotations

from typing import Any

import pytest

from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_podgang.headless import services_to_write
from gangway_podgang.manifests import pod_manifest
from gangway_podgang.plan import plan_podgangs
from gangway_podgang.startup import INIT_CONTAINER, PROGRAM, starts_after
from gangway_podgang.wait_ready import parse
from tests.support.manifests import fixture

SIMPLE3 = "grove/samples/simple/simple3-explicit-startup-order.yaml"


def simple3(**template: Any) -> PodCliqueSet:
    manifest = fixture(SIMPLE3)
    manifest["metadata"].update(namespace="ns", uid="pcs-uid")
    manifest["spec"]["template"].update(template)
    return from_object(manifest, PodCliqueSet)


def waits(pcs: PodCliqueSet) -> dict[str, tuple[tuple[str, int], ...]]:
    return {g.name: g.waits_on for gang in plan_podgangs(pcs).gangs for g in gang.podgroups}


def test_explicit_order_within_each_gang_as_grove_says() -> None:
    found = waits(simple3())
    base_b = ("simple3-0-sga-0-pcb", 2), ("simple3-0-sga-1-pcb", 2)
    base_c = ("simple3-0-sga-0-pcc", 2), ("simple3-0-sga-1-pcc", 2)
    assert found["simple3-0-pca"] == ()
    # pcb, pcc after pca: in the base gang, after the standalone clique.
    assert found["simple3-0-sga-0-pcb"] == (("simple3-0-pca", 3),)
    assert found["simple3-0-sga-1-pcc"] == (("simple3-0-pca", 3),)
    # pcd after pcb and pcc: the base gang's pcd waits on the group's base replicas.
    assert found["simple3-0-sga-0-pcd"] == (*base_b, *base_c)
    # pce (standalone) after pcb and pcc: the same replicas of the group.
    assert found["simple3-0-pce"] == (*base_b, *base_c)
    # The scaled gang (group replica 2) waits on its own replica only, never on the base gang.
    assert found["simple3-0-sga-2-pcb"] == ()
    assert found["simple3-0-sga-2-pcd"] == (("simple3-0-sga-2-pcb", 2), ("simple3-0-sga-2-pcc", 2))


def test_in_order_and_any_order() -> None:
    pcs = simple3(cliqueStartupType="CliqueStartupTypeInOrder")
    assert starts_after(pcs.spec.template) == {
        "pca": (),
        "pcb": ("pca",),
        "pcc": ("pcb",),
        "pcd": ("pcc",),
        "pce": ("pcd",),
    }
    pcs = simple3(cliqueStartupType="CliqueStartupTypeAnyOrder")
    assert all(w == () for w in waits(pcs).values())  # startsAfter is then ignored, as Grove


def test_a_waiting_pod_has_the_init_container_last_and_no_credentials() -> None:
    pcs = simple3()
    plan = plan_podgangs(pcs)
    gang = plan.gangs[0]
    group = next(g for g in gang.podgroups if g.name == "simple3-0-sga-0-pcb")
    pod = pod_manifest(gang, group, 0, pcs, "gang-uid", startup_image="registry/gangway:1")
    *_, waiting = pod["spec"]["initContainers"]
    assert waiting["name"] == INIT_CONTAINER
    assert waiting["image"] == "registry/gangway:1"
    assert waiting["command"] == list(PROGRAM)
    assert waiting["args"] == ["simple3-0-pca.ns.svc.cluster.local=3"]
    assert "env" not in waiting  # Grove's variables are the template's containers' alone
    assert "serviceAccountName" not in pod["spec"]
    first = next(g for g in gang.podgroups if g.name == "simple3-0-pca")
    assert "initContainers" not in pod_manifest(gang, first, 0, pcs, "gang-uid")["spec"]


def test_each_waited_clique_gets_a_service_of_its_ready_pods() -> None:
    pcs = simple3()
    writes, _ = services_to_write(pcs, plan_podgangs(pcs), {})
    by_name = {w.name: w for w in writes}
    assert sorted(by_name) == [
        "simple3-0",
        "simple3-0-pca",
        "simple3-0-sga-0-pcb",
        "simple3-0-sga-0-pcc",
        "simple3-0-sga-1-pcb",
        "simple3-0-sga-1-pcc",
        "simple3-0-sga-2-pcb",
        "simple3-0-sga-2-pcc",
    ]
    ready = by_name["simple3-0-pca"]
    assert ready.travels_with == "simple3-0"  # written with the replica's base gang
    assert ready.desired["spec"] == {
        "clusterIP": "None",
        "selector": {
            "app.kubernetes.io/part-of": "simple3",
            "app.kubernetes.io/managed-by": "gangway",
            "grove.io/podclique": "simple3-0-pca",
        },
        "publishNotReadyAddresses": False,
    }


@pytest.mark.parametrize("bad", ["svc", "svc=0", "=2", "svc=two"])
def test_the_waiter_refuses_what_it_cannot_wait_for(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse([bad])
    assert exit_.value.code == 2
    assert "expected <service address>=<ready pods>" in capsys.readouterr().err


def test_the_waiter_reads_addresses_and_counts() -> None:
    args = parse(["a.ns.svc.cluster.local.=2", "b=1", "--nameserver", "127.0.0.1:5353"])
    assert args.waits == [("a.ns.svc.cluster.local", 2), ("b", 1)]
    assert args.nameserver == ("127.0.0.1", 5353)
