"""A handler's own writes against the store's records, and what it remembers for a while."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gangway_runtime.objects import OwnWrites, Recent, newer_or_same


def test_resource_versions_compare_as_numbers_else_as_equals() -> None:
    assert newer_or_same("10", "9")
    assert not newer_or_same("9", "10")
    assert newer_or_same("abc", "abc")
    assert not newer_or_same("abd", "abc")
    assert newer_or_same("1", "")  # nothing written: anything shown will do


@given(written=st.integers(1, 100), stored=st.integers(1, 100))
def test_an_own_write_counts_until_the_store_shows_it_then_is_forgotten(
    written: int, stored: int
) -> None:
    own: OwnWrites[str, str] = OwnWrites()
    own.remember("gang", str(written), "synced")
    unshown = own.unshown("gang", str(stored))
    assert unshown == (None if stored >= written else "synced")
    assert len(own) == (0 if stored >= written else 1)


def test_an_object_the_store_does_not_hold_yet_does_not_show_the_write() -> None:
    own: OwnWrites[str, str] = OwnWrites()
    own.remember("gang", "5", "synced")
    assert own.unshown("gang", "") == "synced"
    assert own.unshown("other", "") is None


@given(st.lists(st.integers(0, 30), max_size=200))
def test_at_most_so_many_entries_the_oldest_set_forgotten_first(keys: list[int]) -> None:
    recent: Recent[int, int] = Recent(at_most=8)
    for value, key in enumerate(keys):
        recent[key] = value
    assert len(recent) == min(8, len(set(keys)))
    latest = {key: value for value, key in enumerate(keys)}
    kept = sorted(latest, key=latest.__getitem__)[-8:]
    assert all(recent.get(key) == latest[key] for key in kept)
    assert all(recent.get(key) is None for key in latest if key not in kept)
