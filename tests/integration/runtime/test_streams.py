"""Stream provisioning: idempotent, configurable, and loud about what it cannot change."""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NatsClient
from nats.js.api import StorageType

from gangway_contracts.subjects import Subjects
from gangway_runtime.settings import StreamSettings
from gangway_runtime.streams import StreamConfigError, ensure_streams


async def test_provisioning_twice_changes_nothing(nc: NatsClient, subjects: Subjects) -> None:
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings())
    first = await js.stream_info(subjects.objects_stream)
    await ensure_streams(js, subjects, StreamSettings())
    again = await js.stream_info(subjects.objects_stream)
    assert again.config == first.config
    assert first.config.max_msgs_per_subject == 1
    assert first.config.allow_msg_ttl
    assert first.config.storage == StorageType.FILE


async def test_changed_settings_are_applied(nc: NatsClient, subjects: Subjects) -> None:
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings())
    await ensure_streams(js, subjects, StreamSettings(journal_max_age_seconds=3600))
    journal = await js.stream_info(subjects.journal_stream)
    assert journal.config.max_age == 3600


async def test_storage_cannot_change_in_place(nc: NatsClient, subjects: Subjects) -> None:
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings())
    with pytest.raises(StreamConfigError, match="can not change storage type"):
        await ensure_streams(js, subjects, StreamSettings(storage="memory"))
