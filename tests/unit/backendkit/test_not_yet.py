"""A backend says "not yet" with a type the kit understands, not a RuntimeError."""

from __future__ import annotations

from gangway_backendkit.protocol import NotYet
from gangway_runtime.consumer import transient


def test_not_yet_is_retried_without_limit_at_the_time_it_gives() -> None:
    """A backend's NotYet (its PodCliqueSet not mirrored yet) is retried without limit, at
    the time it gives, not after a growing backoff, and never dead-lettered."""
    not_yet = NotYet("PodCliqueSet of ml/trainer not in the store yet", after=1.5)
    assert transient(not_yet)
    assert not_yet.after == 1.5
