"""Which PodGang a message is about, and the records that are refused for it (poison)."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangway_backendkit.handler import podgang_key
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Kind, ObjectKey

RESOURCE = ObjectKey("podgroups.example.com", "stub", "ns", "pg-1")
PODGANG = ObjectKey(Kind.PODGANG, "stub", "ns", "pg-1")


def record(obj: object) -> ObjectRecord:
    return ObjectRecord(
        kind=RESOURCE.kind,
        namespace="ns",
        name="pg-1",
        uid="u",
        resource_version="1",
        observed_at="2026-11-24T00:00:00Z",
        object=msgspec.Raw(json.dumps(obj).encode()),
    )


def test_a_resource_leads_to_the_podgang_that_owns_it_else_its_namesake() -> None:
    owned = {"metadata": {"ownerReferences": [{"kind": "PodGang", "name": "gang-0"}]}}
    assert podgang_key("stub", RESOURCE, record(owned)).name == "gang-0"
    assert podgang_key("stub", RESOURCE, record({"metadata": {}})).name == "pg-1"
    assert podgang_key("stub", RESOURCE, record({})) == ObjectKey(
        Kind.PODGANG, "stub", "ns", "pg-1"
    )


@pytest.mark.parametrize(
    "poison",
    [
        [1, 2],
        "a string",
        7,
        {"metadata": "x"},
        {"metadata": {"ownerReferences": "x"}},
        {"metadata": {"ownerReferences": [3]}},
        {"metadata": {"ownerReferences": [{"name": 1}]}},
    ],
)
def test_a_resource_of_the_wrong_shape_is_refused_not_a_crash(poison: object) -> None:
    with pytest.raises(msgspec.DecodeError):
        podgang_key("stub", RESOURCE, record(poison))


@given(
    st.recursive(
        st.none() | st.integers() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    )
)
def test_any_json_either_leads_to_a_podgang_or_is_refused(obj: object) -> None:
    try:
        key = podgang_key("stub", RESOURCE, record(obj))
    except msgspec.DecodeError:
        return
    assert key.kind == Kind.PODGANG


@pytest.mark.parametrize(
    "poison",
    [
        [1, 2],
        {"metadata": {"name": "pg-1"}},  # no spec
        {"metadata": {"name": "pg-1"}, "spec": {"podgroups": "x"}},
    ],
)
def test_a_podgang_of_the_wrong_shape_is_refused_at_once(poison: object) -> None:
    with pytest.raises(msgspec.DecodeError):
        podgang_key("stub", PODGANG, record(poison))
