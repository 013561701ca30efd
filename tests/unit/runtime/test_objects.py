"""A handler's own writes against the store's records: it decides on whichever is newer."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gangway_runtime.objects import OwnWrites, newer_or_same


def obj(version: int, marker: str = "") -> dict[str, Any]:
    return {"metadata": {"resourceVersion": str(version)}, "marker": marker}


def test_resource_versions_compare_as_numbers_else_as_equals() -> None:
    assert newer_or_same("10", "9")
    assert not newer_or_same("9", "10")
    assert newer_or_same("abc", "abc")
    assert not newer_or_same("abd", "abc")
    assert newer_or_same("1", "")  # nothing written: anything shown will do


@given(written=st.integers(1, 100), stored=st.integers(1, 100))
def test_the_newer_of_own_write_and_stored_record_is_decided_on(written: int, stored: int) -> None:
    own: OwnWrites[str] = OwnWrites()
    own.remember("gang", obj(written, "own"))
    newest = own.newest("gang", obj(stored, "store"), str(stored))
    assert newest["marker"] == ("store" if stored >= written else "own")
    # Once the store shows the write, it is forgotten: the store alone is the truth again.
    assert len(own) == (0 if stored >= written else 1)


@given(st.lists(st.integers(0, 30), max_size=200))
def test_at_most_so_many_writes_are_kept_the_latest_remembered_last(keys: list[int]) -> None:
    own: OwnWrites[int] = OwnWrites(at_most=8)
    for version, key in enumerate(keys, start=1):
        own.remember(key, obj(version))
    assert len(own) == min(8, len(set(keys)))
    if keys:  # the last remembered is never the one forgotten
        newest = own.newest(keys[-1], obj(0), "0")
        assert newest["metadata"]["resourceVersion"] == str(len(keys))


def test_a_key_never_written_is_the_store_s_record() -> None:
    own: OwnWrites[str] = OwnWrites()
    stored = obj(3)
    assert own.newest("other", stored, "3") is stored


def test_an_object_the_store_does_not_hold_yet_is_as_written_until_it_is_seen_gone() -> None:
    own: OwnWrites[str] = OwnWrites()
    own.remember("podgroup", obj(5, "created"))
    assert own.newest("podgroup", None, "") == obj(5, "created")  # not mirrored yet
    assert own.newest("podgroup", None, "4") == obj(5, "created")  # an older record's tombstone
    assert own.newest("podgroup", None, "6") is None  # deleted after the write
    assert len(own) == 0
