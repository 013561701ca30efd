"""Which replica handles a key now: a lease per key in a JetStream key-value bucket the
replicas of one service share.

Replicas share one durable consumer, so messages about one key reach any of them; two
handling one key at once wrote the same objects twice and collided (two podgang replicas
finished a workload in twice the time one took). A replica takes a key's lease before
handling it (a create: it fails while another holds it), renews it while handling, and gives
it back after. A lease not renewed ends with the bucket's TTL, so a dead replica's keys free
themselves.

A replica restarted under the same holder name (``GANGWAY_LEASE_HOLDER``: deploy/ gives each
its pod's name, which a restarted container keeps and no other live process has) takes its
predecessor's leases back at once instead of waiting out their TTL: the process that held
them is dead, since this one replaced it. Without a name, a holder is this instance alone
(host, pid and a random part), and a restart waits (saying so).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import uuid
from collections.abc import Hashable

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from gangway_runtime.settings import ConsumerSettings

log = logging.getLogger(__name__)
_SAID_AT_MOST = 10_000


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
    def __init__(self, js: JetStreamContext, bucket: str, holder: str = "") -> None:
        self._js = js
        self._bucket = bucket
        self._kv: KeyValue | None = None
        # Who holds a lease: the name given, else this one instance (host, pid and a random
        # part: two in one process are two holders, and nothing is ever taken back).
        unique = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        self._holder = (holder or unique).encode()
        self._waiting: set[str] = set()  # keys said to be held by another, until taken
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
            return await self._take_back(key, token)
        self._waiting.discard(token)
        return True

    async def _take_back(self, key: Hashable, token: str) -> bool:
        """A held lease: ours from before a restart (the same holder name) is taken back at
        once; another's is waited for, said once per key."""
        assert self._kv is not None
        try:
            entry = await self._kv.get(token)
        except KeyNotFoundError:  # lapsed or given back meanwhile: the next try creates it
            return False
        if entry.value == self._holder and entry.revision is not None:
            try:
                self.held[token] = await self._kv.update(token, self._holder, last=entry.revision)
            except KeyWrongLastSequenceError:
                return False
            log.info("%s: lease taken back from this replica's previous run", key)
            self._waiting.discard(token)
            return True
        if token not in self._waiting:
            if len(self._waiting) >= _SAID_AT_MOST:
                self._waiting.clear()  # forgetting costs one more line, not memory
            self._waiting.add(token)
            holder = (entry.value or b"").decode(errors="replace")
            log.info("%s: waiting for its lease, held by %s", key, holder)
        return False

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
