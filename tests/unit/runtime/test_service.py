"""How a service process ends: a refusal to start exits 2 with one line, any other failure
exits 1 after saying what it was at ERROR (never a bare traceback, never silence)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

import aiohttp
import pytest

from gangway_runtime import tasks
from gangway_runtime.service import connections, run
from gangway_runtime.settings import ServiceSettings
from gangway_runtime.startup import CannotStart


async def _cannot_start() -> None:
    raise CannotStart("the API server does not serve podgroups.example.com/v1")


async def _broken() -> None:
    raise RuntimeError("a bug in the handling")


def test_a_refusal_to_start_exits_2_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(SystemExit) as ended:
        run(_cannot_start)
    assert ended.value.code == 2
    [line] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert line.getMessage() == (
        "cannot start: the API server does not serve podgroups.example.com/v1"
    )


def test_an_unexpected_failure_exits_1_said_at_error(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(SystemExit) as ended:
        run(_broken)
    assert ended.value.code == 1
    [line] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert line.getMessage() == "stopped by an unexpected failure"
    assert line.exc_info is not None
    assert "a bug in the handling" in str(line.exc_info[1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_not_ready_while_nats_does_not_answer() -> None:
    """/readyz must not say 200 before the service can take work: it was 200 while the
    service was still trying to reach NATS (no check was registered yet)."""
    port = _free_port()
    settings = ServiceSettings(
        nats_url=f"nats://127.0.0.1:{_free_port()}", http_host="127.0.0.1", http_port=port
    )

    async def probe() -> tuple[int, str]:
        async def hold() -> None:
            async with connections("test", settings):
                pass

        task = asyncio.create_task(hold())
        try:
            async with aiohttp.ClientSession() as http:
                for _ in range(100):
                    with contextlib.suppress(aiohttp.ClientConnectionError):
                        async with http.get(f"http://127.0.0.1:{port}/readyz") as answer:
                            return answer.status, await answer.text()
                    await asyncio.sleep(0.05)
        finally:
            await tasks.stop(task)
        raise AssertionError("the probes never listened")

    assert asyncio.run(probe()) == (503, "not ready: nats\n")
