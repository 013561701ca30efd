"""A micro service's requests answered side by side: a slow answer holds no other."""

from __future__ import annotations

import asyncio
from typing import cast

from nats.micro.request import Request

from gangway_runtime.micro import SideBySide


async def test_a_slow_answer_holds_no_request_behind_it() -> None:
    release = asyncio.Event()
    answered: list[str] = []

    async def handler(request: Request) -> None:
        asked = cast(str, request)
        if asked == "slow":
            await release.wait()
        answered.append(asked)

    side = SideBySide(handler, at_most=2)
    await side(cast(Request, "slow"))
    await side(cast(Request, "quick"))
    for _ in range(10):
        await asyncio.sleep(0)
    assert answered == ["quick"]
    release.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert answered == ["quick", "slow"]
    await side.stop()


async def test_stopping_ends_the_answers_under_way() -> None:
    async def forever(request: Request) -> None:
        await asyncio.Event().wait()

    side = SideBySide(forever, at_most=1)
    await side(cast(Request, "one"))
    await side.stop()
    await asyncio.wait_for(side(cast(Request, "two")), 1)  # its slot was given back
    await side.stop()
