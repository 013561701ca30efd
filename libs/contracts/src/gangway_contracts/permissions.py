"""Each service's NATS user: the subjects it may publish to and subscribe to, nothing more.

Derived from :class:`~gangway_contracts.subjects.Subjects`, so the permissions and the
subjects the code uses cannot drift apart. deploy/ renders them into nats-server's
configuration (``gangway deploy nats-users``); tests run every service under its own user.

Replies go to an inbox of the service's own (``_INBOX_<service>.``), so no user can read the
answers meant for another, and backends may only answer requests, never publish to inboxes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from gangway_contracts.config import SchedulerConfig
from gangway_contracts.subjects import BackendOperation, Subjects

WATCHER: Final = "watcher"
PODGANG: Final = "podgang"
ADMISSION: Final = "admission"

# NATS micro discovery ($SRV.PING, $SRV.INFO.<name>, …): backends answer it.
_SERVICE_DISCOVERY: Final = "$SRV.>"


def backend_user(backend: str) -> str:
    return f"backend-{backend}"


def inbox_prefix(service_name: str) -> str:
    """Where replies to a service's requests arrive (``gangway_runtime.bus`` sets it on the
    connection of the service named ``Subjects.service_name(user)``)."""
    return f"_INBOX_{service_name}"


@dataclass(frozen=True)
class Permissions:
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    # Allowed to publish once to the reply subject of a request it received.
    allow_responses: bool = False


def _provision(subjects: Subjects) -> list[str]:
    """Every service makes sure the streams exist at start (whichever starts first)."""
    streams = (subjects.objects_stream, subjects.journal_stream, subjects.deadletter_stream)
    return [f"$JS.API.STREAM.{verb}.{s}" for s in streams for verb in ("CREATE", "UPDATE", "INFO")]


def _reader(stream: str) -> list[str]:
    """Consume a stream with consumers of its own (durable or not), acknowledge, and read
    one subject's latest message (a backend looks up a PodGang's PodCliqueSet)."""
    return [
        f"$JS.API.STREAM.MSG.GET.{stream}",
        f"$JS.API.CONSUMER.CREATE.{stream}",
        f"$JS.API.CONSUMER.CREATE.{stream}.>",
        f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.*",
        f"$JS.API.CONSUMER.INFO.{stream}.*",
        f"$JS.API.CONSUMER.DELETE.{stream}.*",
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.*",
        f"$JS.ACK.{stream}.>",
    ]


def _leases(subjects: Subjects, durable: str) -> list[str]:
    """Keep the leases of a consumer's replicas: bind or create their bucket, take, renew
    and give back a lease (``gangway_runtime.leases``)."""
    bucket = subjects.leases_bucket(durable)
    stream = f"KV_{bucket}"
    return [f"$JS.API.STREAM.{verb}.{stream}" for verb in ("CREATE", "INFO", "MSG.GET")] + [
        f"$JS.API.DIRECT.GET.{stream}.>",
        f"$KV.{bucket}.>",
    ]


def _user(
    subjects: Subjects, user: str, publish: Iterable[str], subscribe: Iterable[str] = ()
) -> Permissions:
    return Permissions(
        publish=(*_provision(subjects), *publish),
        subscribe=(f"{inbox_prefix(subjects.service_name(user))}.>", *subscribe),
        allow_responses=bool(subscribe),  # who serves requests answers them
    )


def service_permissions(subjects: Subjects, config: SchedulerConfig) -> dict[str, Permissions]:
    """User name → permissions, for every service a configuration runs (external backends
    included: their vendors run them under these users)."""
    objects = subjects.objects_stream
    journal = f"{subjects.journal_root}.>"
    users = {
        WATCHER: _user(subjects, WATCHER, [f"{subjects.objects_root}.>", *_reader(objects)]),
        PODGANG: _user(
            subjects,
            PODGANG,
            [
                *_reader(objects),
                *_leases(subjects, subjects.service_name(PODGANG)),
                journal,
                subjects.deadletter(subjects.service_name(PODGANG)),
                *(subjects.backend("*", op) for op in BackendOperation),
            ],
        ),
        ADMISSION: _user(
            subjects, ADMISSION, [journal, subjects.backend("*", BackendOperation.VALIDATE)]
        ),
    }
    for backend in config.enabled:
        user = backend_user(backend)
        users[user] = _user(
            subjects,
            user,
            [
                *_reader(objects),
                *_leases(subjects, subjects.backend_service_name(backend)),
                journal,
                subjects.deadletter(subjects.backend_service_name(backend)),
            ],
            # Its own requests and discovery: never another backend's, nor anyone's replies.
            [f"{subjects.backend_root}.{backend}.>", _SERVICE_DISCOVERY],
        )
    return users


def _quoted(items: Iterable[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)


def password_variable(user: str) -> str:
    """The environment variable nats-server reads a user's password from."""
    return "GANGWAY_NATS_PASSWORD_" + user.upper().replace("-", "_")


def nats_authorization(
    users: dict[str, Permissions], passwords: dict[str, str] | None = None
) -> str:
    """nats-server's ``authorization`` block. Passwords are ``$VARIABLE`` references the
    server resolves from its environment (a Secret in deploy/), or given literally (tests)."""
    lines = ["authorization {", "  users = ["]
    for user, p in sorted(users.items()):
        lines.append(user_entry(user, p, (passwords or {}).get(user)))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def user_entry(user: str, p: Permissions, password: str | None = None) -> str:
    """One user of the ``authorization`` block, its lines indented for it."""
    secret = f'"{password}"' if password is not None else f"${password_variable(user)}"
    lines = [
        f'    {{user: "{user}", password: {secret}, permissions: {{',
        f"      publish: {{allow: [{_quoted(p.publish)}]}},",
        f"      subscribe: {{allow: [{_quoted(p.subscribe)}]}},",
    ]
    if p.allow_responses:
        lines.append("      allow_responses: true,")
    lines.append("    }},")
    return "\n".join(lines)
