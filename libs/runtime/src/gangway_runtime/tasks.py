"""Starting a task whose death is never silent, and stopping a task for sure.

A task left to itself that fails shows only as asyncio's "Task exception was never
retrieved", when (and if) it is collected: :func:`spawn` logs its failure at ERROR at once,
naming what it was doing.

Python 3.11's ``asyncio.wait_for`` (used inside nats-py) can swallow a cancellation that
arrives as its inner future completes, and a loop around it then runs on. So a stop
cancels again until the task is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

_RECHECK_SECONDS = 1.0
log = logging.getLogger(__name__)


def spawn(coroutine: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
    """A task; should it fail, its exception is logged at ERROR with ``name`` (what it was
    doing: "publish gangway.objects.pod.-.ml.a", "journal") and counted as retrieved."""
    task = asyncio.create_task(coroutine, name=name)
    task.add_done_callback(_log_failure)
    return task


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("task %s died: %r", task.get_name(), exc, exc_info=exc)


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
