"""The work queue: bursts of messages for one PodCliqueSet become few reconciles, one at a
time per key, and every message is handed out exactly once."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gangway_podgang.worker import KeyQueue

keys = st.sampled_from([("ns", "a"), ("ns", "b"), ("other", "a")])


@given(st.lists(st.tuples(keys, st.booleans()), max_size=40))
def test_each_message_is_handed_out_once_and_no_key_twice_at_a_time(
    script: list[tuple[tuple[str, str], bool]],
) -> None:
    async def play() -> None:
        queue = KeyQueue()
        active: set[tuple[str, str]] = set()
        handed: list[Any] = []
        for i, (key, take_one) in enumerate(script):
            queue.add(key, i)  # type: ignore[arg-type]  # any token stands for a message
            if take_one and not queue._ready.empty():
                taken, msgs = await queue.take()
                assert taken not in active
                active.add(taken)
                handed += msgs
                if i % 2:  # some reconciles finish at once, others later
                    active.discard(taken)
                    queue.done(taken)
        while active or not queue._ready.empty():
            for key in list(active):
                active.discard(key)
                queue.done(key)
            while not queue._ready.empty():
                taken, msgs = await queue.take()
                handed += msgs
                active.add(taken)
        assert sorted(handed) == list(range(len(script)))
        assert queue.idle

    asyncio.run(play())


def test_a_burst_for_one_key_is_one_reconcile() -> None:
    async def play() -> int:
        queue = KeyQueue()
        for i in range(1000):
            queue.add(("ns", "a"), i)  # type: ignore[arg-type]
        _, msgs = await queue.take()
        queue.done(("ns", "a"))
        assert queue.idle
        return len(msgs)

    assert asyncio.run(play()) == 1000
