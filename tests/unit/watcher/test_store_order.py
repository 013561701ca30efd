"""The store never goes back in time: whatever order two watchers offer versions in, the
version kept is the newest (a property, checked over arbitrary interleavings)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from gangway_watcher.store import Stored, _not_newer

# An offer: (resourceVersion, deleted). Versions of one object only grow, and a delete is
# its last version.
offers = st.lists(st.integers(min_value=1, max_value=50), min_size=1, unique=True).map(
    lambda vs: [(v, False) for v in sorted(vs)[:-1]] + [(max(vs), True)]
)


@given(offers, st.randoms())
def test_any_interleaving_keeps_the_newest(
    history: list[tuple[int, bool]], rnd: random.Random
) -> None:
    # Two watchers each offer the full history, in any interleaving, and a retry after a
    # lost ack offers a version once more.
    stream = history * 3
    rnd.shuffle(stream)
    kept: Stored | None = None
    for rv, deleted in stream:
        if kept is None or not _not_newer(rv, deleted, kept):
            kept = Stored(seq=0, resource_version=rv, deleted=deleted)
    assert kept is not None
    assert (kept.resource_version, kept.deleted) == history[-1]


def test_same_version_again_is_not_newer_but_its_delete_is() -> None:
    live = Stored(seq=1, resource_version=5, deleted=False)
    assert _not_newer(5, False, live)
    assert not _not_newer(5, True, live)
    assert _not_newer(5, False, Stored(seq=2, resource_version=5, deleted=True))
    assert not _not_newer(None, False, live), "unordered versions are always offered"
