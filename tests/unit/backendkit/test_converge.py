"""What counts as a change to a backend object: the remembered hash and the live spec."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gangway_backendkit.converge import SPEC_HASH_ANNOTATION, _stamped, _unchanged, spec_hash

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=5))
def test_the_hash_ignores_key_order(spec: dict[str, Any]) -> None:
    reordered = dict(reversed(list(spec.items())))
    assert spec_hash({"spec": spec, "metadata": {}}) == spec_hash(
        {"metadata": {}, "spec": reordered}
    )


def desired() -> dict[str, Any]:
    return _stamped(
        {
            "metadata": {"name": "g", "labels": {"a": "1"}, "ownerReferences": [{"uid": "u"}]},
            "spec": {"minMember": 2, "subGroups": [{"name": "x", "minMember": 2}]},
        }
    )


def live(**spec: Any) -> dict[str, Any]:
    want = desired()
    return {
        "metadata": {
            **want["metadata"],
            "labels": {"a": "1", "added-by-someone": "y"},
            "resourceVersion": "7",
        },
        "spec": {**want["spec"], **spec},
    }


def test_what_the_scheduler_adds_is_not_a_change() -> None:
    assert _unchanged(desired(), live(markUnschedulable=True))


def test_an_edited_field_is_a_change() -> None:
    assert not _unchanged(desired(), live(minMember=5))


def test_a_field_we_stopped_setting_is_a_change() -> None:
    smaller = _stamped({**desired(), "spec": {"minMember": 2}})
    assert smaller["metadata"]["annotations"][SPEC_HASH_ANNOTATION] != spec_hash(desired())
    assert not _unchanged(smaller, live())
