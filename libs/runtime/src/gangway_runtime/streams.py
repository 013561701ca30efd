"""The JetStream streams and durable consumers, provisioned in one place.

The setup step (``gangway deploy bus``, ``gangway up``) calls :func:`provision` under a
NATS user that may create and change them; the services' users may not (deploy/ gives them no
such permission), so a service only checks what it needs exists: a stream that is there with
the wanted configuration is left untouched. Where nothing restricts a service (a bare
nats-server in development), it creates what is missing itself, as the setup step would.

A changed setting (more replicas, a longer journal) is applied as an update; one the server
cannot change in place (the storage type) stops the caller with the reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Final

from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import APIError, BadRequestError, NotFoundError

from gangway_contracts.durables import Durable
from gangway_contracts.permissions import SETUP
from gangway_contracts.subjects import Subjects
from gangway_runtime import bus
from gangway_runtime.leases import ensure_bucket
from gangway_runtime.settings import ConsumerSettings, StreamSettings

log = logging.getLogger(__name__)
# How long a keeper waits before it connects again after losing the bus.
RETRY_SECONDS: Final = 5.0

# JSApiStreamNameExistErr: the stream exists with another configuration.
_STREAM_NAME_IN_USE = 10058
# What a stream's configuration is compared on: the fields Gangway sets, and the limits a
# careless (or hostile) change would lower.
_COMPARED = (
    "subjects",
    "retention",
    "discard",
    "storage",
    "num_replicas",
    "max_msgs_per_subject",
    "max_msgs",
    "max_bytes",
    "max_age",
    "duplicate_window",
    "allow_msg_ttl",
    "allow_direct",
)


class StreamConfigError(RuntimeError):
    """A stream exists with settings the server cannot change in place."""


class StreamReset(Exception):
    """The objects stream was deleted, or made anew, under a running service: what the
    service holds from it (a read model, the watcher's index, consumer positions) no longer
    holds. ``service.run`` starts the service again from the store."""


async def watch_for_reset(js: JetStreamContext, stream: str, every: float = 10.0) -> None:
    """Never returns; raises :class:`StreamReset` once ``stream`` is gone (said twice in a
    row: a node that has just restarted may not know it yet) or is another stream of the
    same name (its creation time differs). Anything else (a failover) is asked again."""
    created = (await js.stream_info(stream)).created
    missing = 0
    while True:
        await asyncio.sleep(every)
        try:
            info = await js.stream_info(stream)
        except NotFoundError:
            missing += 1
            if missing >= 2:
                raise StreamReset(f"stream {stream} was deleted") from None
            continue
        except (TimeoutError, NatsError):
            continue
        missing = 0
        if info.created != created:
            raise StreamReset(f"stream {stream} was made anew at {info.created}")


async def until_made(what: str, attempt: Callable[[], Awaitable[None]]) -> None:
    """``attempt`` again every 2 s until it succeeds. A timeout or a NATS error means what it
    binds to is not there yet: a failover, or a setup step that has not run (a service's user
    may not make streams and consumers); said each time, at WARNING."""
    while True:
        try:
            await attempt()
            return
        except (TimeoutError, NatsError) as exc:
            log.warning(
                "%s not ready (%s): a failover, or waiting for the setup step "
                "(gangway deploy bus); again in 2s",
                what,
                exc or type(exc).__name__,
            )
            await asyncio.sleep(2)


def stream_configs(subjects: Subjects, settings: StreamSettings) -> list[StreamConfig]:
    common = StreamConfig(
        retention=RetentionPolicy.LIMITS,
        discard=DiscardPolicy.OLD,
        storage=StorageType.FILE if settings.storage == "file" else StorageType.MEMORY,
        num_replicas=settings.replicas,
        # Reads of one subject's last message go to $JS.API.DIRECT.GET.<stream>.<subject>,
        # so a NATS user may be allowed to read some subjects and not others.
        allow_direct=True,
        max_msgs=-1,
        max_bytes=-1,
        max_age=0,
        max_msgs_per_subject=-1,
        duplicate_window=settings.duplicate_window_seconds,
    )
    return [
        common.evolve(
            name=subjects.objects_stream,
            description="Latest state of each mirrored Kubernetes object (one per subject)",
            subjects=[f"{subjects.objects_root}.>"],
            max_msgs_per_subject=1,
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


def _differences(found: StreamConfig, wanted: StreamConfig) -> list[str]:
    def value(config: StreamConfig, name: str) -> object:
        got = getattr(config, name)
        return sorted(got) if isinstance(got, list) else got

    return [
        f"{name} {value(found, name)!r} (wanted {value(wanted, name)!r})"
        for name in _COMPARED
        if getattr(wanted, name) is not None and value(found, name) != value(wanted, name)
    ]


async def ensure_streams(
    js: JetStreamContext, subjects: Subjects, settings: StreamSettings
) -> None:
    """Every stream there with the wanted configuration: looked at first, and created or
    updated only when it is missing or differs."""
    for config in stream_configs(subjects, settings):
        assert config.name is not None
        try:
            found = (await js.stream_info(config.name)).config
        except NotFoundError:
            found = None
        if found is not None and not (differences := _differences(found, config)):
            continue
        if found is not None:
            log.info("stream %s: applying changed %s", config.name, ", ".join(differences))
        await _create_or_update(js, config)


async def _create_or_update(js: JetStreamContext, config: StreamConfig) -> None:
    try:
        await js.add_stream(config)
    except BadRequestError as exc:
        if exc.err_code != _STREAM_NAME_IN_USE:
            raise
        try:
            await js.update_stream(config)
        except APIError as update:
            raise StreamConfigError(
                f"stream {config.name}: {update.description}; change it back, or "
                "recreate the stream (its objects are re-published by the watcher)"
            ) from update


def durable_config(durable: Durable, settings: ConsumerSettings) -> ConsumerConfig:
    """The durable consumer every replica of a service shares."""
    return ConsumerConfig(
        name=durable.name,
        durable_name=durable.name,
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=settings.ack_wait_seconds,
        max_ack_pending=settings.max_ack_pending,
        filter_subjects=list(durable.filters),
    )


async def ensure_durable(
    js: JetStreamContext, subjects: Subjects, durable: Durable, settings: ConsumerSettings
) -> None:
    """The service's durable consumer, created if missing."""
    stream = subjects.objects_stream
    try:
        await js.consumer_info(stream, durable.name)
    except NotFoundError:
        await js.add_consumer(stream, durable_config(durable, settings))


async def provision(
    js: JetStreamContext,
    subjects: Subjects,
    settings: ConsumerSettings,
    durables: Sequence[Durable],
) -> None:
    """What the setup step makes: the streams, and each service's durable consumer (created,
    or updated to the settings) and leases' bucket."""
    await ensure_streams(js, subjects, settings.streams)
    for durable in durables:
        await js.add_consumer(subjects.objects_stream, durable_config(durable, settings))
        await ensure_bucket(js, subjects.leases_bucket(durable.name), settings)
        log.info("consumer %s: %s", durable.name, ", ".join(durable.filters))


async def missing(
    js: JetStreamContext,
    subjects: Subjects,
    settings: ConsumerSettings,
    durables: Sequence[Durable],
) -> list[str]:
    """What :func:`provision` makes that is not there: streams, durable consumers, lease
    buckets, by name."""
    wanted: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        (f"stream {config.name}", partial(js.stream_info, str(config.name)))
        for config in stream_configs(subjects, settings.streams)
    ]
    for durable in durables:
        wanted.append(
            (
                f"consumer {durable.name}",
                partial(js.consumer_info, subjects.objects_stream, durable.name),
            )
        )
        bucket = subjects.leases_bucket(durable.name)
        wanted.append((f"bucket {bucket}", partial(js.key_value, bucket)))
    gone = []
    for name, look in wanted:
        try:
            await look()
        except NotFoundError:
            gone.append(name)
    return gone


async def keep_provisioned(
    js: JetStreamContext,
    subjects: Subjects,
    settings: ConsumerSettings,
    durables: Sequence[Durable],
    every: float = 10.0,
) -> None:
    """For ever: what :func:`provision` makes, made again once gone — a bus restarted on
    memory storage lost it all, or someone deleted a stream. The services wait for it (not
    ready, saying so); the watcher then finds the objects stream new and publishes the
    cluster again, and every service starts again from it."""
    while True:
        await asyncio.sleep(every)
        try:
            gone = await missing(js, subjects, settings, durables)
            if gone:
                log.warning("%s gone: making them again", ", ".join(gone))
                await provision(js, subjects, settings, durables)
        except (TimeoutError, NatsError) as exc:  # the bus away: looked at again later
            log.info("bus not checked: %s", exc or type(exc).__name__)


async def set_up(
    settings: ConsumerSettings,
    durables: Sequence[Durable],
    *,
    keep: bool = False,
    every: float = 10.0,
    patience: float = 0.0,
    provisioned: Callable[[], None] = lambda: None,
    unreachable: Callable[[BaseException], None] = lambda exc: log.warning(
        "NATS: %s; again in %.0fs", exc or type(exc).__name__, RETRY_SECONDS
    ),
) -> None:
    """The setup step: connected as ``settings`` say (NATS's setup user), :func:`provision`,
    then ``provisioned()``; ``keep``: then :func:`keep_provisioned` (looking ``every`` s)
    until cancelled. Through an outage (a bus not up yet, JetStream still electing its
    leaders, a server lost mid-provision: ``unreachable`` says so, then it starts again):
    for ever when keeping, else for ``patience`` seconds, then the error is raised."""
    deadline = time.monotonic() + patience
    while True:
        try:
            await _set_up(settings, durables, provisioned, every if keep else None)
            return
        except (OSError, TimeoutError, NatsError) as exc:
            if not keep and time.monotonic() + RETRY_SECONDS > deadline:
                raise
            unreachable(exc)
            await asyncio.sleep(RETRY_SECONDS)


async def _set_up(
    settings: ConsumerSettings,
    durables: Sequence[Durable],
    provisioned: Callable[[], None],
    keep_every: float | None = None,
) -> None:
    subjects = settings.subjects
    nc = await bus.connect(settings, subjects.service_name(SETUP))
    try:
        await provision(nc.jetstream(), subjects, settings, durables)
        provisioned()
        if keep_every is not None:
            await keep_provisioned(nc.jetstream(), subjects, settings, durables, keep_every)
    finally:
        await nc.drain()
