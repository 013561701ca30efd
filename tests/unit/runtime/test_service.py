"""How a service process ends: a refusal to start exits 2 with one line, any other failure
exits 1 after saying what it was at ERROR (never a bare traceback, never silence)."""

from __future__ import annotations

import logging

import pytest

from gangway_runtime.service import CannotStart, run


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
