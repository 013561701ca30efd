"""``/scale`` on PodCliques and scaling groups: what an HPA or ``kubectl scale`` sets is what
podgang plans, until the template's own replicas change; and the HPAs Grove's
``autoScalingConfig`` / ``scaleConfig`` ask for."""

from __future__ import annotations

from typing import Any

import msgspec

from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.limits import Limits
from gangway_contracts.subjects import Kind
from gangway_podgang.autoscalers import AutoscalerView, autoscalers_to_write, autoscalers_wanted
from gangway_podgang.cliques import (
    PodCliqueView,
    ScalingGroupView,
    cliques_to_write,
    planned_objects,
)
from gangway_podgang.plan import Plan, plan_podgangs
from gangway_podgang.scaling import scales_of
from tests.support.manifests import fixture

SAMPLE = "grove/samples/user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"
SIMPLE1 = "grove/samples/simple/simple1.yaml"
GROUP = "env-demo-pcsg-0-model-instance"


def pcs(path: str = SAMPLE, **change: Any) -> PodCliqueSet:
    manifest = fixture(path)
    manifest["metadata"].update(uid="pcs-uid", namespace="ns")
    for clique in manifest["spec"]["template"]["cliques"]:
        clique["spec"].update(change.get(clique["name"], {}))
    return from_object(manifest, PodCliqueSet)


def made(found: PodCliqueSet, plan: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PodCliques and scaling groups podgang would make, as the model would hold them."""

    def live(manifest: dict[str, Any]) -> dict[str, Any]:
        uid = f"uid-{manifest['metadata']['name']}"
        return {**manifest, "metadata": {**manifest["metadata"], "uid": uid}}

    objects = [live(o) for gang in plan.gangs for o in planned_objects(found, plan, gang.name)]
    groups = {
        o["metadata"]["name"]: msgspec.convert(o, ScalingGroupView)
        for o in objects
        if o["kind"] == "PodCliqueScalingGroup"
    }
    cliques = {}
    for o in objects:
        if o["kind"] == "PodClique":
            ref = o["metadata"]["ownerReferences"][0]
            if ref["kind"] == "PodCliqueScalingGroup":
                ref["uid"] = f"uid-{ref['name']}"
            cliques[o["metadata"]["name"]] = msgspec.convert(o, PodCliqueView)
    return cliques, groups


def scaled(view: Any, replicas: int) -> Any:
    return msgspec.structs.replace(view, spec=msgspec.structs.replace(view.spec, replicas=replicas))


def test_a_scaled_podclique_is_planned_with_its_pods_and_left_as_scaled() -> None:
    found = pcs()
    cliques, groups = made(found, plan_podgangs(found))
    worker = f"{GROUP}-0-worker"
    cliques[worker] = scaled(cliques[worker], 5)
    scales = scales_of(found, cliques, groups, Limits())
    assert scales == {worker: 5}
    plan = plan_podgangs(found, None, scales)
    (group,) = [g for gang in plan.gangs for g in gang.podgroups if g.name == worker]
    assert len(group.pods) == 5
    assert group.min_replicas == 3  # the gang still needs what the template says
    writes, deletes = cliques_to_write(found, plan, cliques=cliques, groups=groups)
    assert (writes, deletes) == ((), ())


def test_the_template_s_own_change_wins_over_an_older_scale() -> None:
    before = pcs()
    cliques, groups = made(before, plan_podgangs(before))
    worker = f"{GROUP}-0-worker"
    cliques[worker] = scaled(cliques[worker], 5)
    after = pcs(worker={"replicas": 4})
    assert scales_of(after, cliques, groups, Limits()) == {}
    plan = plan_podgangs(after)
    writes, _ = cliques_to_write(after, plan, cliques=cliques, groups=groups)
    (back,) = [w.spec for w in writes if w.name == worker]
    assert back is not None
    assert back["spec"]["replicas"] == 4
    assert back["metadata"]["annotations"] == {"gangway.dev/template-replicas": "4"}


def test_a_scale_below_what_the_gang_needs_or_over_the_ceiling_is_set_back() -> None:
    found = pcs(worker={"minAvailable": 2})
    cliques, groups = made(found, plan_podgangs(found))
    worker = f"{GROUP}-0-worker"
    for replicas in (1, 51):
        cliques[worker] = scaled(cliques[worker], replicas)
        assert scales_of(found, cliques, groups, Limits(max_pods=50)) == {}
        writes, _ = cliques_to_write(found, plan_podgangs(found), cliques=cliques, groups=groups)
        (back,) = [w.spec for w in writes if w.name == worker]
        assert back is not None
        assert back["spec"]["replicas"] == 3


def test_a_scaled_group_brings_whole_gangs_and_takes_them_away() -> None:
    found = pcs()
    cliques, groups = made(found, plan_podgangs(found))
    groups[GROUP] = scaled(groups[GROUP], 4)
    scales = scales_of(found, cliques, groups, Limits())
    assert scales == {GROUP: 4}
    plan = plan_podgangs(found, None, scales)
    # minAvailable 1: the base gang holds replica 0, replicas 1..3 are a gang each.
    assert [g.name for g in plan.gangs] == [
        "env-demo-pcsg-0",
        *(f"{GROUP}-{i}" for i in range(3)),
    ]
    writes, _ = cliques_to_write(found, plan, cliques=cliques, groups=groups)
    assert not [w for w in writes if w.kind == Kind.PODCLIQUESCALINGGROUP]
    assert sorted(w.name for w in writes if w.create) == [
        f"{GROUP}-{g}-{c}" for g in (2, 3) for c in ("leader", "worker")
    ]
    # Below its minAvailable (1): not honoured.
    groups[GROUP] = scaled(groups[GROUP], 0)
    assert scales_of(found, cliques, groups, Limits()) == {}


def test_another_podcliquesets_namesake_scales_nothing() -> None:
    found = pcs()
    cliques, groups = made(found, plan_podgangs(found))
    worker = f"{GROUP}-0-worker"
    cliques[worker] = scaled(cliques[worker], 5)
    other = from_object(
        {**fixture(SAMPLE), "metadata": {"name": "env-demo-pcsg", "uid": "x"}}, PodCliqueSet
    )
    assert scales_of(other, cliques, groups, Limits()) == {}


def test_an_hpa_per_autoscaled_clique_and_group_of_each_replica() -> None:
    found = pcs(SIMPLE1)
    wanted = autoscalers_wanted(found)
    assert sorted(wanted) == ["simple1-0-pca", "simple1-0-sga"]
    clique = wanted["simple1-0-pca"]["spec"]
    assert clique["scaleTargetRef"] == {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "name": "simple1-0-pca",
    }
    # minReplicas defaults to the template's replicas, as Grove's webhook sets it.
    assert (clique["minReplicas"], clique["maxReplicas"]) == (3, 5)
    assert clique["metrics"][0]["resource"]["name"] == "cpu"
    group = wanted["simple1-0-sga"]["spec"]
    assert group["scaleTargetRef"]["kind"] == "PodCliqueScalingGroup"

    writes, deletes = autoscalers_to_write(found, {})
    assert [(w.kind, w.name, bool(w.create)) for w in writes] == [
        (Kind.HPA, "simple1-0-pca", True),
        (Kind.HPA, "simple1-0-sga", True),
    ]
    live = {
        name: msgspec.convert({**m, "metadata": {**m["metadata"], "uid": name}}, AutoscalerView)
        for name, m in wanted.items()
    }
    assert autoscalers_to_write(found, live) == ([], [])
    # Asked differently: set back; no longer asked for: deleted.
    changed = pcs(SIMPLE1, pca={"autoScalingConfig": {"maxReplicas": 9}})
    writes, deletes = autoscalers_to_write(changed, live)
    assert [(w.name, w.spec and w.spec["spec"]["maxReplicas"]) for w in writes] == [
        ("simple1-0-pca", 9)
    ]
    assert [d.name for d in deletes] == []
    fewer = pcs(SIMPLE1, pca={"autoScalingConfig": None})
    writes, deletes = autoscalers_to_write(fewer, live)
    assert (writes, [d.name for d in deletes]) == ([], ["simple1-0-pca"])


def test_a_group_the_template_scales_in_to_one_replica_is_written_back_to_one() -> None:
    """A merge patch changes only the fields it names: the group's spec names each, the
    default (1 replica) too, or a group scaled in from 2 to 1 would stay at 2."""

    def with_replicas(count: int) -> PodCliqueSet:
        manifest = fixture(SAMPLE)
        manifest["metadata"].update(uid="pcs-uid", namespace="ns")
        manifest["spec"]["template"]["podCliqueScalingGroups"][0]["replicas"] = count
        return from_object(manifest, PodCliqueSet)

    out = with_replicas(2)
    cliques, groups = made(out, plan_podgangs(out))
    back_in = with_replicas(1)
    writes, _ = cliques_to_write(back_in, plan_podgangs(back_in), cliques=cliques, groups=groups)
    (group,) = [w.spec for w in writes if w.kind == Kind.PODCLIQUESCALINGGROUP]
    assert group is not None
    assert group["spec"]["replicas"] == 1
    assert group["metadata"]["annotations"] == {"gangway.dev/template-replicas": "1"}
