"""What one PodCliqueSet asks for, counted from its spec alone, is what podgang plans; over a
ceiling, ``spec.replicas`` is named with the numbers and the setting to change."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.limits import Limits, over_limits, size_of
from gangway_podgang.plan import plan_podgangs
from tests.support.strategies import podcliquesets


@given(podcliquesets(), st.integers(0, 6))
def test_the_size_counted_is_the_size_planned(manifest: dict[str, Any], replicas: int) -> None:
    manifest["spec"]["replicas"] = replicas
    pcs = from_object(manifest, PodCliqueSet)
    plan = plan_podgangs(pcs)
    size = size_of(pcs)
    assert size.gangs == len(plan.gangs)
    assert size.pods == sum(len(group.pods) for gang in plan.gangs for group in gang.podgroups)


def _pcs(replicas: int) -> PodCliqueSet:
    return from_object(
        {
            "metadata": {"name": "huge", "namespace": "ml"},
            "spec": {
                "replicas": replicas,
                "template": {"cliques": [{"name": "w", "spec": {"replicas": 2}}]},
            },
        },
        PodCliqueSet,
    )


def test_over_a_ceiling_names_the_replicas_the_numbers_and_the_setting() -> None:
    assert over_limits(_pcs(10), Limits(max_pods=20, max_gangs=10)) == []
    errors = over_limits(_pcs(100_000), Limits(max_pods=20, max_gangs=10))
    assert [str(e) for e in errors] == [
        "spec.replicas: 100000 replicas make 200000 pods, over the 20 one PodCliqueSet may "
        "make here (GANGWAY_MAX_PODS_PER_PODCLIQUESET); lower the replicas, or split the "
        "workload",
        "spec.replicas: 100000 replicas make 100000 PodGangs, over the 10 one PodCliqueSet may "
        "make here (GANGWAY_MAX_GANGS_PER_PODCLIQUESET); lower the replicas, or split the "
        "workload",
    ]
