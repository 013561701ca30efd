"""The JetStream streams, provisioned in one place for every service.

Creating a stream that exists with the same configuration is a no-op on the server, so every
service calls ``ensure_streams`` at start and whichever comes first creates them. A changed
setting (more replicas, a longer journal) is applied as an update; one the server cannot
change in place (the storage type) stops the service with the reason.
"""

from __future__ import annotations

import logging

from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import APIError, BadRequestError

from gangway_contracts.subjects import Subjects
from gangway_runtime.settings import StreamSettings

log = logging.getLogger(__name__)

# JSApiStreamNameExistErr: the stream exists with another configuration.
_STREAM_NAME_IN_USE = 10058


class StreamConfigError(RuntimeError):
    """A stream exists with settings the server cannot change in place."""


def stream_configs(subjects: Subjects, settings: StreamSettings) -> list[StreamConfig]:
    common = StreamConfig(
        retention=RetentionPolicy.LIMITS,
        discard=DiscardPolicy.OLD,
        storage=StorageType.FILE if settings.storage == "file" else StorageType.MEMORY,
        num_replicas=settings.replicas,
    )
    return [
        common.evolve(
            name=subjects.objects_stream,
            description="Latest state of each mirrored Kubernetes object (one per subject)",
            subjects=[f"{subjects.objects_root}.>"],
            max_msgs_per_subject=1,
            duplicate_window=settings.duplicate_window_seconds,
            allow_msg_ttl=True,  # tombstones expire (Nats-TTL), live objects never do
        ),
        common.evolve(
            name=subjects.journal_stream,
            description="What each service decided, per workload, with trace ids",
            subjects=[f"{subjects.journal_root}.>"],
            max_age=settings.journal_max_age_seconds,
            max_bytes=settings.journal_max_bytes,
        ),
        common.evolve(
            name=subjects.deadletter_stream,
            description="Messages a service gave up on, with the error",
            subjects=[f"{subjects.deadletter_root}.>"],
            max_age=settings.deadletter_max_age_seconds,
        ),
    ]


async def ensure_streams(
    js: JetStreamContext, subjects: Subjects, settings: StreamSettings
) -> None:
    for config in stream_configs(subjects, settings):
        try:
            await js.add_stream(config)
        except BadRequestError as exc:
            if exc.err_code != _STREAM_NAME_IN_USE:
                raise
            log.info("stream %s: applying changed configuration", config.name)
            try:
                await js.update_stream(config)
            except APIError as update:
                raise StreamConfigError(
                    f"stream {config.name}: {update.description}; change it back, or "
                    "recreate the stream (its objects are re-published by the watcher)"
                ) from update
