"""Stopping a task for sure.

Python 3.11's ``asyncio.wait_for`` (used inside nats-py) can swallow a cancellation that
arrives as its inner future completes, and a loop around it then runs on. So a stop
cancels again until the task is done.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

_RECHECK_SECONDS = 1.0


async def stop(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait until it has ended; its outcome is left to the caller
    (``task.result()``), a cancellation included."""
    while not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({task}, timeout=_RECHECK_SECONDS)


async def run_together(*coroutines: Coroutine[Any, Any, None]) -> None:
    """Run until one fails (its error is raised) or all end; on the way out, every task
    still running is stopped with :func:`stop` — a task group's single cancel is not
    enough for the reason above."""
    running = [asyncio.create_task(c) for c in coroutines]
    try:
        done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if not task.cancelled():
                task.result()
    finally:
        for task in running:
            await stop(task)
