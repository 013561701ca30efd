"""From API objects to records and subjects: pure functions, table-driven."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from gangway_backend_kai.builtin import KAI_PODGROUPS
from gangway_contracts import labels
from gangway_contracts.resources import PODCLIQUESETS, PODGANGS, PODS
from gangway_contracts.subjects import ObjectKey
from gangway_watcher.mirror import (
    decode_event,
    decode_list,
    object_key,
    object_record,
    resource_version_number,
    tombstone,
)


def obj(name: str = "x", namespace: str = "ns", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Thing",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": "u-1",
            "resourceVersion": "42",
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
            **meta,
        },
        "spec": {"a": 1},
    }


@pytest.mark.parametrize(
    ("resource", "object_labels", "owner"),
    [
        (PODCLIQUESETS, {}, ""),
        (PODGANGS, {labels.SCHEDULER_NAME: "kai-scheduler"}, "kai-scheduler"),
        (PODGANGS, {}, ""),  # not (yet) labelled: nobody's, under "-"
        (PODS, {labels.SCHEDULER_NAME: "kai-scheduler"}, ""),  # pods are the podgang service's
        (KAI_PODGROUPS, {}, "kai-scheduler"),
    ],
)
def test_owner_token(resource: Any, object_labels: dict[str, str], owner: str) -> None:
    key = object_key(resource, obj(labels=object_labels))
    assert key == ObjectKey(resource.kind, owner, "ns", "x")


def test_record_strips_managed_fields_and_keeps_the_rest() -> None:
    source = obj(labels={"a": "b"})
    record = object_record(PODGANGS, source)
    stored = msgspec.json.decode(record.object)
    assert "managedFields" not in stored["metadata"]
    assert stored["metadata"]["labels"] == {"a": "b"}
    assert stored["spec"] == {"a": 1}
    assert "managedFields" in source["metadata"], "the input is not modified"
    assert (record.uid, record.resource_version, record.deleted) == ("u-1", "42", False)


def test_tombstone_keeps_the_last_state_at_the_deleting_version() -> None:
    last = object_record(PODCLIQUESETS, obj())
    dead = tombstone(last, "99")
    assert dead.deleted
    assert dead.resource_version == "99"
    assert bytes(dead.object) == bytes(last.object)
    assert (dead.name, dead.uid) == (last.name, last.uid)


def test_cluster_scoped_object_has_no_namespace() -> None:
    source = obj()
    del source["metadata"]["namespace"]
    assert object_key(PODCLIQUESETS, source).namespace == ""


def test_watch_event_and_list_decoding() -> None:
    event = decode_event(b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}')
    assert event.type == "BOOKMARK"
    page = decode_list(
        b'{"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"9","continue":"tok"}}'
    )
    assert (page.resource_version, page.continue_token, len(page.items)) == ("9", "tok", 1)
    assert decode_list(b'{"items":[],"metadata":{}}').continue_token == ""
    with pytest.raises(msgspec.ValidationError):
        decode_event(b'{"type":"RENAMED","object":{}}')


@pytest.mark.parametrize(("text", "number"), [("42", 42), ("0", 0), ("", None), ("a1", None)])
def test_resource_version_number(text: str, number: int | None) -> None:
    assert resource_version_number(text) == number
