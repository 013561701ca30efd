"""The read model depends only on each object's latest record: replaying a history, with
records repeated, gives what a compacted stream (the last record per object) gives."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts import labels
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Kind, Subjects
from gangway_podgang.readmodel import ReadModel

NAMES = ["w-0", "w-1", "w-2"]
OWNERS = ["train", "serve", ""]  # "" : a pod no PodCliqueSet claims

# One change: (which pod, deleted?, which PodCliqueSet it says it is part of, repeated?)
changes = st.lists(
    st.tuples(st.sampled_from(NAMES), st.booleans(), st.sampled_from(OWNERS), st.booleans()),
    max_size=30,
)


def record(name: str, version: int, deleted: bool, owner: str) -> ObjectRecord:
    obj: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "ml",
            "resourceVersion": str(version),
            "labels": {labels.PART_OF: owner} if owner else {},
        }
    }
    return ObjectRecord(
        kind="Pod",
        namespace="ml",
        name=name,
        uid=f"uid-{name}",
        resource_version=str(version),
        observed_at="2026-01-01T00:00:00Z",
        object=msgspec.Raw(msgspec.json.encode(obj)),
        deleted=deleted,
    )


def state(model: ReadModel) -> dict[tuple[str, str], dict[str, str]]:
    return {
        key: {name: pod.resource_version for name, pod in model.workload(key).pods.items()}
        for key in model.workload_keys()
    }


@given(changes)
def test_the_model_is_the_latest_record_of_each_object(
    history: list[tuple[str, bool, str, bool]],
) -> None:
    replayed = ReadModel(None, Subjects("t"))  # type: ignore[arg-type]  # no bus needed
    latest: dict[str, ObjectRecord] = {}
    for version, (name, deleted, owner, repeated) in enumerate(history, start=1):
        found = record(name, version, deleted, owner)
        for _ in range(2 if repeated else 1):
            replayed.apply(Kind.POD, found)
        latest[name] = found
    compacted = ReadModel(None, Subjects("t"))  # type: ignore[arg-type]
    for found in latest.values():
        compacted.apply(Kind.POD, found)
    assert state(replayed) == state(compacted)
    assert all(key[1] for key in replayed.workload_keys())  # unclaimed pods are not kept


def test_a_deleted_hpa_is_remembered_gone_at_its_version_until_made_again() -> None:
    # clique_writes.py forgets a create of its own once the mirror shows a version as new:
    # a create and its delete mirrored before a reconcile ran show that version as "gone".
    model = ReadModel(None, Subjects("t"))  # type: ignore[arg-type]

    def hpa(version: int, deleted: bool) -> ObjectRecord:
        return msgspec.structs.replace(
            record("auto-0-model", version, deleted, "auto"), kind=Kind.HPA
        )

    model.apply(Kind.POD, record("auto-0-model-0", 4, False, "auto"))  # the workload lives on
    model.apply(Kind.HPA, hpa(5, deleted=False))
    model.apply(Kind.HPA, hpa(7, deleted=True))
    (key,) = model.workload_keys()
    assert model.workload(key).gone == {(Kind.HPA, "auto-0-model"): "7"}
    model.apply(Kind.HPA, hpa(9, deleted=False))
    assert model.workload(key).gone == {}


def test_a_victim_is_remembered_by_gang_until_replaced_on_a_node_or_the_podgang_says_so() -> None:
    # A scheduler marks its victim and deletes it within the same second: the mark is kept
    # by gang until its replacement is on a node or the PodGang's own Scheduled condition
    # says Preempted.
    model = ReadModel(None, Subjects("t"))  # type: ignore[arg-type]

    def of(kind: str, version: int, deleted: bool, uid: str = "old", **parts: Any) -> ObjectRecord:
        obj = {
            "metadata": {
                "name": "low-0-w-1" if kind == Kind.POD else "low-0",
                "uid": uid,
                "labels": {labels.PART_OF: "low", labels.PODGANG: "low-0"},
            },
            **parts,
        }
        found = record(obj["metadata"]["name"], version, deleted, "low")
        return msgspec.structs.replace(
            found, kind=kind, object=msgspec.Raw(msgspec.json.encode(obj))
        )

    mark = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    model.apply(Kind.PODGANG, of(Kind.PODGANG, 3, False, spec={"podgroups": []}))
    model.apply(Kind.POD, of(Kind.POD, 4, False, status={"conditions": [mark | {"message": "x"}]}))
    model.apply(Kind.POD, of(Kind.POD, 5, deleted=True))
    (key,) = model.workload_keys()
    [victim] = model.workload(key).preempted.values()
    assert (victim.name, victim.preemption()) == ("low-0-w-1", "low-0-w-1: x")
    # Its replacement gated, then on a node: the gang was placed again, the memo goes.
    model.apply(Kind.POD, of(Kind.POD, 6, False))
    assert model.workload(key).preempted
    model.apply(Kind.POD, of(Kind.POD, 7, False, uid="new", spec={"nodeName": "n1"}))
    assert model.workload(key).preempted == {}
    model.apply(Kind.POD, of(Kind.POD, 8, False, status={"conditions": [mark]}))
    said = {
        "type": "Scheduled",
        "status": "False",
        "reason": "Preempted",
        "message": "x",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status = {"phase": "Pending", "conditions": [said]}
    model.apply(Kind.PODGANG, of(Kind.PODGANG, 9, False, spec={"podgroups": []}, status=status))
    assert model.workload(key).preempted == {}
