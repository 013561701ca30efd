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
from collections.abc import Hashable, Iterable
from typing import Final

from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from gangway_runtime.objects import Recent
from gangway_runtime.settings import ConsumerSettings

log = logging.getLogger(__name__)
_SAID_AT_MOST = 10_000
_FREE: Final = b""  # the value of a lease let go: any replica may take it
# Revisions of the leases this process let go, kept to take each again in one write (one
# forgotten costs the three writes of a create over an existing entry).
_FREED_AT_MOST = 10_000


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
    def __init__(
        self, js: JetStreamContext, bucket: str, holder: str = "", linger: float = 0.0
    ) -> None:
        self._js = js
        self._bucket = bucket
        self._kv: KeyValue | None = None
        # Who holds a lease: the name given, else this one instance (host, pid and a random
        # part: two in one process are two holders, and nothing is ever taken back).
        unique = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        self._holder = (holder or unique).encode()
        self._linger = linger
        self._waiting: set[str] = set()  # keys said to be held by another, until taken
        self.held: dict[str, int] = {}  # lease key → revision, of leases this process holds
        self._idle: dict[str, float] = {}  # held leases given back: when (loop time)
        self._letting_go: set[str] = set()  # being marked free right now
        self._freed: Recent[str, int] = Recent(_FREED_AT_MOST)  # lease key → free revision
        self._writing = asyncio.Lock()  # a renewal never races a let-go of the same lease

    async def bind(self, settings: ConsumerSettings) -> None:
        """Bind to the bucket (:func:`ensure_bucket`)."""
        self._kv = await ensure_bucket(self._js, self._bucket, settings)

    async def take(self, key: Hashable) -> bool:
        """The lease of ``key``, if no other replica holds it."""
        assert self._kv is not None  # bind() first
        token = lease_key(key)
        if token in self._letting_go:
            return False  # ours a moment ago; tried again shortly, as any busy key
        if token in self.held:  # given back and still lingering: no write
            self._idle.pop(token, None)
            return True
        if (free := self._freed.pop(token)) is not None:
            try:  # as this process left it: one write
                self.held[token] = await self._kv.update(token, self._holder, last=free)
            except KeyWrongLastSequenceError:
                pass  # another replica wrote it since, or it lapsed: as any other lease
            else:
                self._waiting.discard(token)
                return True
        try:
            self.held[token] = await self._kv.create(token, self._holder)
        except KeyWrongLastSequenceError:
            return await self._take_back(key, token)
        self._waiting.discard(token)
        return True

    async def _take_back(self, key: Hashable, token: str) -> bool:
        """A lease that exists: free (let go by a replica), or ours from before a restart
        (the same holder name), is taken at once; another's is waited for, said once per
        key."""
        assert self._kv is not None
        try:
            entry = await self._kv.get(token)
        except KeyNotFoundError:  # lapsed or deleted meanwhile: the next try creates it
            return False
        if entry.value in (_FREE, None, self._holder) and entry.revision is not None:
            try:
                self.held[token] = await self._kv.update(token, self._holder, last=entry.revision)
            except KeyWrongLastSequenceError:
                return False
            if entry.value == self._holder:
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
        """Done with ``key`` for now: let go after the linger, or at once without one."""
        token = lease_key(key)
        if token not in self.held:
            return
        if self._linger > 0:
            self._idle[token] = asyncio.get_running_loop().time()
            return
        await self._let_go([token])

    async def run(self) -> None:
        """Let go of the leases given back ``linger`` seconds ago and not taken again, for
        ever (nothing to do without a linger)."""
        if self._linger <= 0:
            return
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._linger / 2)
            due = loop.time() - self._linger
            try:
                await self._let_go([token for token, at in self._idle.items() if at <= due])
            except (NatsError, TimeoutError) as exc:  # the bus away: those lapse instead
                log.warning("leases not let go: %s", exc)

    async def let_go_all(self) -> None:
        """Free every lease this process holds (stopping: its successor need not wait)."""
        await self._let_go(list(self.held))

    async def _let_go(self, tokens: Iterable[str]) -> None:
        assert self._kv is not None
        async with self._writing:
            for token in tokens:
                self._idle.pop(token, None)
                revision = self.held.pop(token, None)
                if revision is None:
                    continue
                self._letting_go.add(token)
                try:
                    self._freed[token] = await self._kv.update(token, _FREE, last=revision)
                except KeyWrongLastSequenceError:
                    log.warning("lease %s had expired and was taken meanwhile", token)
                finally:
                    self._letting_go.discard(token)

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
                    self._idle.pop(token, None)
