"""A service's NATS connection against a real nats-server: several URLs, the first that
answers is used (a cluster's nodes, one of them down)."""

from __future__ import annotations

import logging

import pytest

from gangway_localcluster.processes import free_port
from gangway_runtime.bus import connect
from gangway_runtime.settings import ServiceSettings


async def test_a_comma_separated_url_connects_to_a_server_that_answers(nats_url: str) -> None:
    down = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    settings = ServiceSettings(nats_url=f"{down},{nats_url}")
    nc = await connect(settings, "gangway-test-bus")
    try:
        assert nc.is_connected
        assert nc.connected_url is not None
        assert f"{nc.connected_url.hostname}:{nc.connected_url.port}" in nats_url
    finally:
        await nc.close()


async def test_a_connection_closed_on_purpose_says_nothing_of_reconnecting(
    nats_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """nats-py calls the disconnected callback on close() too: `gangway up` and every service
    that stopped used to log a reconnect that never was."""
    caplog.set_level(logging.INFO, logger="gangway_runtime.bus")
    nc = await connect(ServiceSettings(nats_url=nats_url), "gangway-test-bus")
    await nc.close()
    assert [r.getMessage() for r in caplog.records] == []
