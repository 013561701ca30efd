"""A spawned task that dies says so at once, at ERROR, naming what it was doing; one that
ends or is cancelled says nothing."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gangway_runtime import tasks


async def test_a_task_death_is_logged_with_its_name_and_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def fails() -> None:
        raise ValueError("bad bytes")

    async def forever() -> None:
        await asyncio.Event().wait()

    died = tasks.spawn(fails(), "publish gangway.objects.pod.-.ml.a")
    done = tasks.spawn(asyncio.sleep(0), "nothing to say")
    stopped = tasks.spawn(forever(), "stopped")
    await asyncio.wait({died, done})
    await tasks.stop(stopped)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        "task publish gangway.objects.pod.-.ml.a died: ValueError('bad bytes')"
    ]
    assert errors[0].exc_info is not None
