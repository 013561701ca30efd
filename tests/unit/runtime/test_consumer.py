"""The consumer kit's pure parts: the key queue (bursts coalesce, one key at a time, every
message either handed out or superseded, exactly once) and the retry policy."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.errors import NoRespondersError
from nats.js.errors import BadRequestError, ServiceUnavailableError

from gangway_runtime.apiclient import ConnectionLost
from gangway_runtime.consumer import KeyQueue, Route, Transient, backoff, jittered, transient
from gangway_runtime.kube import KubeError

keys = st.sampled_from(["a", "b", "c"])
slots = st.sampled_from(["", "x"])
# What happens next: a message arrives, a worker takes a key, or a handling ends.
steps = st.one_of(
    st.tuples(st.just("add"), keys, slots),
    st.tuples(st.just("take"), st.none(), st.none()),
    st.tuples(st.just("done"), st.none(), st.none()),
    st.tuples(st.just("fail"), st.none(), st.none()),
)


@given(st.lists(steps, max_size=60))
def test_every_message_is_handed_out_or_superseded_once_and_no_key_twice_at_a_time(
    script: list[tuple[str, Any, Any]],
) -> None:
    async def play() -> None:
        queue: KeyQueue[str, int] = KeyQueue()
        active: dict[str, list[int]] = {}
        finished: list[int] = []  # acked after success, or superseded
        parked: set[str] = set()
        sent = 0

        async def take() -> None:
            key, msgs = await queue.take()
            assert key not in active
            active[key] = msgs
            parked.discard(key)

        for action, key, slot in script:
            if action == "add":
                older = queue.add(Route(key, slot), sent)
                sent += 1
                if older is not None:
                    finished.append(older)
            elif action == "take" and queue.ready:
                await take()
            elif action == "done" and active:
                handled, msgs = active.popitem()
                finished += msgs
                queue.done(handled)
            elif action == "fail" and active:
                failed, _ = active.popitem()
                finished += queue.park(failed)
                parked.add(failed)
        # Drain: wake what backs off, finish everything.
        while active or queue.ready or parked:
            for key in list(parked):
                queue.wake(key)
                parked.discard(key)
            while queue.ready:
                await take()
            for key, msgs in list(active.items()):
                del active[key]
                finished += msgs
                queue.done(key)
        assert sorted(finished) == list(range(sent))
        assert queue.idle

    asyncio.run(play())


def test_a_burst_for_one_key_is_one_handling_of_its_newest_message() -> None:
    async def play() -> list[int]:
        queue: KeyQueue[str, int] = KeyQueue()
        superseded = [queue.add(Route("a"), i) for i in range(1000)]
        assert superseded[1:] == list(range(999))
        key, msgs = await queue.take()
        queue.done(key)
        assert queue.idle
        return msgs

    assert asyncio.run(play()) == [999]


def test_messages_of_different_slots_are_all_handed_out() -> None:
    async def play() -> list[int]:
        queue: KeyQueue[str, int] = KeyQueue()
        for i, slot in enumerate(["gang", "group", "gang"]):
            queue.add(Route("a", slot), i)
        _, msgs = await queue.take()
        return sorted(msgs)

    assert asyncio.run(play()) == [1, 2]


def test_a_parked_key_waits_for_its_timer_whatever_arrives() -> None:
    async def play() -> None:
        queue: KeyQueue[str, int] = KeyQueue()
        queue.add(Route("a"), 0)
        await queue.take()
        assert queue.park("a") == []
        assert queue.ready == 0, "backing off: not ready until woken"
        assert list(queue.held()) == [0], "its message stays held (and kept alive)"
        assert queue.add(Route("a"), 1) == 0, "a newer message joins it, superseding"
        assert queue.ready == 0, "not even a new message wakes it: the timer does"
        queue.wake("a")
        assert (await queue.take())[1] == [1]

    asyncio.run(play())


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (KubeError(409, "Conflict", "x"), True),
        (KubeError(503, "ServiceUnavailable", "x"), True),
        (KubeError(422, "Invalid", "x"), False),
        (NoRespondersError(), True),
        (ServiceUnavailableError(), True),
        (BadRequestError(), False),
        (TimeoutError(), True),
        (ConnectionLost("the server closed the connection"), True),
        (Transient("backend not answering"), True),
        (RuntimeError("a bug"), False),
        (KeyError("a bug"), False),
    ],
)
def test_what_is_transient(exc: Exception, expected: bool) -> None:
    assert transient(exc) is expected


def test_backoff_is_capped_and_jitter_stays_near() -> None:
    assert backoff(1) == 0.5
    assert backoff(100) == 60.0
    for n in range(1, 20):
        assert 0.8 * backoff(n) <= jittered(backoff(n)) <= 1.2 * backoff(n)
