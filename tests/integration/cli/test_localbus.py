"""``gangway up``'s NATS, as deploy/ runs it: the setup user made the streams and the durable
consumers before any service starts; each service connects as itself and may do its own
work only; a client without credentials reads and changes nothing; with TLS, a client must
trust the run's CA."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NatsClient

from gangway_cli.localbus import LocalBus
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.durables import durables
from gangway_contracts.permissions import SETUP, inbox_prefix
from gangway_contracts.subjects import Subjects
from gangway_localcluster.certs import CertificateAuthority
from gangway_runtime import bus, streams
from gangway_runtime.settings import ConsumerSettings, StreamSettings
from tests.support.store import eventually

CONFIG = parse_scheduler_config({"profiles": [{"name": "default-scheduler", "default": True}]})


async def _connect(url: str, ca: Path, errors: list[str], **user: Any) -> NatsClient:
    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    trusted = ssl.create_default_context(cafile=ca)
    return await nats.connect(url, tls=trusted, error_cb=on_error, **user)


async def test_services_connect_as_themselves_and_a_stranger_only_reads(tmp_path: Path) -> None:
    settings = ConsumerSettings(streams=StreamSettings(storage="memory"))
    local = await asyncio.to_thread(LocalBus.start, tmp_path, CONFIG, settings, True)
    subjects = Subjects()
    try:
        assert local.url.startswith("tls://")
        assert local.ca is not None
        # A service, as its user (password, CA), as it connects.
        watcher = await bus.connect(
            local.as_user(settings, "watcher"), subjects.service_name("watcher")
        )
        errors: list[str] = []
        stranger = await _connect(local.url, local.ca, errors)
        try:
            js = stranger.jetstream()
            assert (await js.stream_info(subjects.objects_stream)).config.allow_direct
            for durable in durables(subjects, CONFIG):  # made by the setup user
                setup = await _connect(
                    local.url,
                    local.ca,
                    errors,
                    user=SETUP,
                    password=local.passwords[SETUP],
                    inbox_prefix=inbox_prefix(subjects.service_name(SETUP)).encode(),
                )
                await setup.jetstream().consumer_info(subjects.objects_stream, durable.name)
                await setup.close()
            await watcher.jetstream().publish(subjects.objects_root + ".pod.-.ns.p", b"{}")
            await stranger.publish(subjects.objects_root + ".pod.-.ns.x", b"{}")
            await stranger.flush()
            await asyncio.sleep(0.3)  # the server reports a violation asynchronously
        finally:
            await stranger.close()
            await watcher.close()
        assert errors == [
            f'nats: permissions violation for publish to "{subjects.objects_root}.pod.-.ns.x"'
        ]
        # Without the run's CA, no connection at all.
        with pytest.raises((ssl.SSLError, nats.errors.NoServersError, OSError)):
            await nats.connect(local.url, allow_reconnect=False, max_reconnect_attempts=0)
    finally:
        local.stop()
    log = (tmp_path / "nats-server.log").read_text()
    assert not [user for user, password in local.passwords.items() if password in log]


async def test_a_service_that_trusts_another_ca_does_not_connect_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ConsumerSettings(streams=StreamSettings(storage="memory"))
    local = await asyncio.to_thread(LocalBus.start, tmp_path, CONFIG, settings, True)
    wrong = tmp_path / "another-ca.crt"
    wrong.write_bytes(CertificateAuthority("another").cert_pem)
    watcher = local.as_user(settings, "watcher").model_copy(update={"nats_ca": wrong})
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(bus.connect(watcher, "gangway-watcher"), 5)
    finally:
        local.stop()
    said = [r.getMessage() for r in caplog.records if r.name == "gangway_runtime.bus"]
    assert said, "nothing said"
    assert said[0] == (
        f"NATS: the server's certificate is not trusted by GANGWAY_NATS_CA ({wrong}): "
        "unable to get local issuer certificate"
    )


async def test_a_bus_that_lost_its_memory_gets_it_all_made_again(tmp_path: Path) -> None:
    """Memory storage, the server restarted: every stream, consumer and lease bucket is gone;
    the keeper (the setup user, as deploy/'s gangway-bus-keeper runs) makes them again, and
    a service may publish again."""
    settings = ConsumerSettings(streams=StreamSettings(storage="memory"))
    local = await asyncio.to_thread(LocalBus.start, tmp_path, CONFIG, settings, False)
    subjects = Subjects()
    made = durables(subjects, CONFIG)
    keeper = asyncio.create_task(
        streams.set_up(local.as_user(settings, SETUP), made, keep=True, every=0.5)
    )
    try:
        setup = await bus.connect(local.as_user(settings, SETUP), "gangway-setup")
        try:
            js = setup.jetstream()
            assert await streams.missing(js, subjects, settings, made) == []
            await asyncio.to_thread(local.server.restart)
            await eventually(
                lambda: streams.missing(js, subjects, settings, made), lambda gone: not gone
            )
        finally:
            await setup.close()
        watcher = await bus.connect(local.as_user(settings, "watcher"), "gangway-watcher")
        try:
            await watcher.jetstream().publish(subjects.objects_root + ".pod.-.ns.p", b"{}")
        finally:
            await watcher.close()
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
        local.stop()
