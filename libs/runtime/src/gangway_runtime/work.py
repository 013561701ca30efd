"""What every durable consumer does the same way: fetch (binding again when the consumer is
lost), back off, and give up into dead letter."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext

from gangway_contracts.subjects import ERROR_HEADER, SOURCE_SUBJECT_HEADER, Subjects

_BACKOFF_MAX = 60.0
log = logging.getLogger(__name__)


async def fetch(
    sub: JetStreamContext.PullSubscription,
    batch: int,
    durable: str,
    bind: Callable[[], Awaitable[None]],
) -> list[Msg]:
    """The next batch, or none. A consumer gone (deleted, a server restarted) or briefly
    without a leader (a cluster node failing over: ServiceUnavailable) is bound again with
    ``bind``, a second later, instead of ending the process."""
    try:
        return await sub.fetch(batch, timeout=5)
    except TimeoutError:  # nats-py's, or asyncio's on a late reply
        return []
    except NatsError as exc:
        log.warning("consumer %s: %s; binding again", durable, exc)
        await asyncio.sleep(1)
        with contextlib.suppress(NatsError):
            await bind()
        return []


def backoff(delivered: int) -> float:
    """Seconds before the next delivery: 0.5 s doubling per attempt, at most a minute."""
    return min(0.5 * (1 << min(max(delivered - 1, 0), 16)), _BACKOFF_MAX)


async def dead_letter(
    js: JetStreamContext, subjects: Subjects, service: str, msg: Msg, error: str
) -> None:
    """Keep the message, with why it was given up on, on the service's dead-letter subject;
    then ack it so the consumer moves on."""
    headers = {ERROR_HEADER: error[:4000], SOURCE_SUBJECT_HEADER: msg.subject}
    await js.publish(subjects.deadletter(service), msg.data, headers=headers)
    await msg.ack()
