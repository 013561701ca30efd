"""Which replica handles a key now: a lease per key in a JetStream key-value bucket the
replicas of one service share.

Replicas share one durable consumer, so messages about one key reach any of them; two
handling one key at once wrote the same objects twice and collided (two podgang replicas
finished a workload in twice the time one took). A replica takes a key's lease before
handling it (a create: it fails while another holds it), renews it while handling, and gives
it back after. A lease not renewed ends with the bucket's TTL, so a dead replica's keys free
themselves.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
from collections.abc import Hashable

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from gangway_runtime.settings import ConsumerSettings

log = logging.getLogger(__name__)


def lease_key(key: Hashable) -> str:
    """A key-value key for any hashable work key (KV keys allow few characters)."""
    return hashlib.sha256(repr(key).encode()).hexdigest()[:40]


def bucket_config(bucket: str, settings: ConsumerSettings) -> KeyValueConfig:
    """A lease lives one ack deadline unless renewed: a dead replica's keys free themselves
    as its messages go back to the consumer."""
    streams = settings.streams
    return KeyValueConfig(
        bucket=bucket,
        history=1,
        ttl=settings.ack_wait_seconds,
        replicas=streams.replicas,
        storage=StorageType.FILE if streams.storage == "file" else StorageType.MEMORY,
    )


async def ensure_bucket(js: JetStreamContext, bucket: str, settings: ConsumerSettings) -> KeyValue:
    """The bucket, created if missing (by the setup step, or the first replica where nothing
    restricts it)."""
    try:
        return await js.key_value(bucket)
    except BucketNotFoundError:
        return await js.create_key_value(bucket_config(bucket, settings))


class Leases:
    def __init__(self, js: JetStreamContext, bucket: str) -> None:
        self._js = js
        self._bucket = bucket
        self._kv: KeyValue | None = None
        # Who holds a lease: this process, by host and pid (for whoever reads the bucket).
        self._holder = f"{socket.gethostname()}/{os.getpid()}".encode()
        self.held: dict[str, int] = {}  # lease key → revision, of leases this process holds
        self._writing = asyncio.Lock()  # a renewal never races a give-back of the same lease

    async def bind(self, settings: ConsumerSettings) -> None:
        """Bind to the bucket (:func:`ensure_bucket`)."""
        self._kv = await ensure_bucket(self._js, self._bucket, settings)

    async def take(self, key: Hashable) -> bool:
        """The lease of ``key``, if no other replica holds it."""
        assert self._kv is not None  # bind() first
        token = lease_key(key)
        try:
            self.held[token] = await self._kv.create(token, self._holder)
        except KeyWrongLastSequenceError:
            return False
        return True

    async def give_back(self, key: Hashable) -> None:
        assert self._kv is not None
        token = lease_key(key)
        async with self._writing:
            revision = self.held.pop(token, None)
            if revision is None:
                return
            try:
                await self._kv.delete(token, last=revision)
            except KeyWrongLastSequenceError:
                log.warning("lease %s had expired and was taken meanwhile", token)

    async def renew(self) -> None:
        """Keep every lease this process holds (called well within the TTL)."""
        assert self._kv is not None
        async with self._writing:
            for token, revision in list(self.held.items()):
                try:
                    self.held[token] = await self._kv.update(token, self._holder, last=revision)
                except KeyWrongLastSequenceError:
                    log.warning("lease %s expired while held (renewals too late)", token)
                    self.held.pop(token, None)
