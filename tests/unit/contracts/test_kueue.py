"""What Kueue in front of a scheduler takes from the configuration and refuses, by field."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from gangway_contracts import kueue
from gangway_contracts.config import load_operator_config
from gangway_contracts.errors import FieldErrors
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.resources import mirrored_resources


def pcs(queue: str | None = "team", cliques: int = 1, on_clique: bool = False) -> PodCliqueSet:
    labels = {kueue.QUEUE_LABEL: queue} if queue else {}
    template = [
        {
            "name": f"c{i}",
            "labels": {kueue.QUEUE_LABEL: "team"} if on_clique else {},
            "spec": {"roleName": f"c{i}", "replicas": 1, "podSpec": {"containers": []}},
        }
        for i in range(cliques)
    ]
    doc: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns", "labels": labels},
        "spec": {"template": {"cliques": template}},
    }
    return msgspec.json.decode(msgspec.json.encode(doc), type=PodCliqueSet)


def test_kueue_is_off_unless_the_configuration_enables_it_and_then_workloads_are_mirrored() -> None:
    assert not load_operator_config("{}").kueue
    config = load_operator_config("kueue: {enabled: true}")
    assert config.kueue
    assert kueue.WORKLOADS in mirrored_resources(config)
    assert kueue.WORKLOADS not in mirrored_resources(load_operator_config("{}"))


def test_a_kueue_section_written_wrong_is_refused_by_field() -> None:
    with pytest.raises(FieldErrors) as refused:
        load_operator_config("kueue: {enabled: 'yes', queue: x}")
    fields = sorted(e.field for e in refused.value.errors)
    assert fields == ["kueue.enabled", "kueue.queue"]


@pytest.mark.parametrize(
    ("workload", "enabled", "fields"),
    [
        (pcs(queue=None), False, []),
        (pcs(), True, []),
        (pcs(), False, ["metadata.labels[kueue.x-k8s.io/queue-name]"]),
        (pcs(queue="Team_A"), True, ["metadata.labels[kueue.x-k8s.io/queue-name]"]),
        (pcs(on_clique=True), True, ["spec.template.cliques[0].labels[kueue.x-k8s.io/queue-name]"]),
        (pcs(cliques=kueue.MAX_PODSETS + 1), True, ["spec.template.cliques"]),
    ],
)
def test_what_kueue_cannot_admit_is_said_by_field(
    workload: PodCliqueSet, enabled: bool, fields: list[str]
) -> None:
    assert [e.field for e in kueue.problems(workload, enabled)] == fields
