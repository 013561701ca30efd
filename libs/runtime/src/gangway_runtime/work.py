"""What every durable consumer does the same way: back off, and give up into dead letter."""

from __future__ import annotations

from nats.aio.msg import Msg
from nats.js import JetStreamContext

from gangway_contracts.subjects import ERROR_HEADER, SOURCE_SUBJECT_HEADER, Subjects

_BACKOFF_MAX = 60.0


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
