"""nats-server with users and subject permissions from configuration text."""

from __future__ import annotations

import asyncio

import nats
import nats.errors
import pytest

from gangway_localcluster.nats import NatsServer

CONFIG = """
authorization {
  users = [
    {user: backend-kai, password: s3cret,
     permissions: {publish: ["gangway.journal.>"], subscribe: ["gangway.backend.kai-scheduler.>"]}}
  ]
}
"""


async def test_users_and_permissions_are_enforced() -> None:
    with NatsServer.start(config=CONFIG) as server:
        host = server.url.removeprefix("nats://")
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(
                f"nats://backend-kai:wrong@{host}",
                max_reconnect_attempts=0,
                allow_reconnect=False,
                connect_timeout=2,
            )

        errors: list[Exception] = []

        async def on_error(e: Exception) -> None:
            errors.append(e)

        nc = await nats.connect(f"nats://backend-kai:s3cret@{host}", error_cb=on_error)
        await nc.publish("gangway.journal.ns.pcs.E", b"allowed")
        await nc.publish("gangway.objects.podgang.x.ns.n", b"denied")
        await nc.flush()
        await asyncio.sleep(0.3)  # the server reports the violation asynchronously
        await nc.close()
        assert [str(e) for e in errors] == [
            'nats: permissions violation for publish to "gangway.objects.podgang.x.ns.n"'
        ]
