"""Each service's NATS user: the subjects it may publish to and subscribe to, nothing more.

Derived from :class:`~gangway_contracts.subjects.Subjects`, so the permissions and the
subjects the code uses cannot drift apart. deploy/ renders them into nats-server's
configuration (``gangway deploy nats-users``); tests run every service under its own user.

Replies go to an inbox of the service's own (``_INBOX_<service>.``), so no user can read the
answers meant for another, and backends may only answer requests, never publish to inboxes.

The JetStream API is a subject space too, and is held as tightly: only the setup user
creates or changes streams and durable consumers; a service pulls and acknowledges through
its own durable consumer alone, makes consumers of its own only by name (a create without a
name could take over a durable one) over the subjects it may read, reads single subjects by
direct get, and publishes only its own kinds of journal entries. The durable consumers'
names are denied to every other user.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from gangway_contracts import durables, events, kueue
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.durables import Durable
from gangway_contracts.events import JournalEvent
from gangway_contracts.subjects import BackendOperation, Kind, PodgangOperation, Subjects

WATCHER: Final = "watcher"
PODGANG: Final = "podgang"
ADMISSION: Final = "admission"
# The bus's administrator: creates and changes streams and durable consumers (the setup step).
SETUP: Final = "setup"
# Reads the journal, objects and dead letters, changes nothing (``gangway trace``, operators).
VIEWER: Final = "viewer"

# NATS micro discovery ($SRV.PING, $SRV.INFO.<name>, …): backends answer it.
_SERVICE_DISCOVERY: Final = "$SRV.>"
_API: Final = "$JS.API"

# Which journal entries each writer may publish (and look up), each under its own user's
# name (the subject's last token): a service cannot forge another's decisions, nor one
# backend another's.
JOURNAL_WRITERS: Final[dict[str, tuple[type[JournalEvent], ...]]] = {
    PODGANG: (
        events.PodCliqueSetObserved,
        events.PodGangPlanned,
        events.PodGangCreated,
        events.PodGangDeleted,
        events.GangTerminated,
        events.GangRolled,
        events.PodsCreated,
        events.PodGangInitialized,
        events.GatesLifted,
        events.PodGangPhaseChanged,
        events.SchedulerVerdict,
        events.PodGangReadyChanged,
    ),
    ADMISSION: (events.AdmissionRejected,),
    "backend": (events.BackendSynced, events.BackendSyncFailed),
    kueue.STAGE: (events.QueueAdmitted, events.QueueHeld),
}


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
    # Never published to, even where ``publish`` allows it (nats-server's deny wins).
    deny_publish: tuple[str, ...] = ()


def _streams(subjects: Subjects) -> tuple[str, str, str]:
    return (subjects.objects_stream, subjects.journal_stream, subjects.deadletter_stream)


def _stream_info(subjects: Subjects) -> list[str]:
    """See that the streams exist as configured (every service checks at start)."""
    return [f"{_API}.STREAM.INFO.{stream}" for stream in _streams(subjects)]


def _ephemerals(stream: str, filters: Iterable[str] | None) -> list[str]:
    """Consumers of its own on ``stream``, created by name (nats-py names every ephemeral
    consumer it makes with a fresh NUID, which puts a single filter in the request's
    subject) and reading only ``filters``; ``None``: any filter (a reader of several at
    once)."""
    consumer = f"{_API}.CONSUMER"
    creates = (
        [f"{consumer}.CREATE.{stream}.*"]
        if filters is None
        else [f"{consumer}.CREATE.{stream}.*.{f}" for f in filters]
    )
    verbs = ("INFO", "MSG.NEXT", "DELETE")
    return [*creates, *(f"{consumer}.{verb}.{stream}.*" for verb in verbs)]


def _direct_gets(stream: str, patterns: Iterable[str]) -> list[str]:
    """Read the last message of the subjects ``patterns`` match, and no other."""
    return [f"{_API}.DIRECT.GET.{stream}.{pattern}" for pattern in patterns]


def _own_durable(subjects: Subjects, durable: Durable) -> list[str]:
    """Pull and acknowledge through its durable consumer only; hold its replicas' leases;
    dead-letter what it gives up on."""
    stream, name = subjects.objects_stream, durable.name
    bucket = subjects.leases_bucket(name)
    return [
        f"{_API}.CONSUMER.INFO.{stream}.{name}",
        f"{_API}.CONSUMER.MSG.NEXT.{stream}.{name}",
        f"$JS.ACK.{stream}.{name}.>",
        f"{_API}.STREAM.INFO.KV_{bucket}",
        f"{_API}.STREAM.MSG.GET.KV_{bucket}",
        f"{_API}.DIRECT.GET.KV_{bucket}.>",
        f"$KV.{bucket}.>",
        subjects.deadletter(name),
    ]


def denied_durable(subjects: Subjects, durable: str, own: bool = False) -> list[str]:
    """What the wildcards of :func:`_ephemerals` would otherwise allow on a durable
    consumer: creating, changing or deleting it (the setup step's alone), and, unless it is
    the service's ``own``, reading from it."""
    consumer, stream = f"{_API}.CONSUMER", subjects.objects_stream
    changes = [
        f"{consumer}.CREATE.{stream}.{durable}",
        f"{consumer}.CREATE.{stream}.{durable}.>",
        f"{consumer}.DELETE.{stream}.{durable}",
    ]
    reads = [f"{consumer}.INFO.{stream}.{durable}", f"{consumer}.MSG.NEXT.{stream}.{durable}"]
    return changes if own else changes + reads


def _journal(subjects: Subjects, writer: str, user: str) -> tuple[list[str], list[str]]:
    """The journal subjects ``user`` publishes to (the entries of ``writer``, under its own
    name), and the direct gets of them (whether a step is journaled already)."""
    entries = [
        subjects.journal("*", "*", kind.__name__, "*", writer=user)
        for kind in JOURNAL_WRITERS[writer]
    ]
    return entries, _direct_gets(subjects.journal_stream, entries)


def _user(
    subjects: Subjects,
    user: str,
    publish: Iterable[str],
    subscribe: Iterable[str] = (),
    *,
    deny: Iterable[str] = (),
    serves_requests: bool = False,
) -> Permissions:
    return Permissions(
        publish=(*_stream_info(subjects), *publish),
        subscribe=(f"{inbox_prefix(subjects.service_name(user))}.>", *subscribe),
        allow_responses=serves_requests,
        deny_publish=tuple(deny),
    )


def service_permissions(subjects: Subjects, config: SchedulerConfig) -> dict[str, Permissions]:
    """User name → permissions, for every service a configuration runs (external backends
    included: their vendors run them under these users), the setup step and the viewer."""
    objects, journal_stream = subjects.objects_stream, subjects.journal_stream
    all_objects = f"{subjects.objects_root}.>"
    podgang = durables.podgang(subjects)
    backends = {name: durables.backend(subjects, name) for name in config.enabled}
    stages = [durables.stage_kueue(subjects, config.kueue_topology)] if config.kueue else []

    def deny(own: Durable | None = None) -> list[str]:
        # The backends' in sorted order after podgang's, then the Kueue stage's: the Helm
        # chart composes the same.
        found = [podgang, *(backends[name] for name in sorted(backends)), *stages]
        return [p for d in found for p in denied_durable(subjects, d.name, own=d == own)]

    podgang_journal, podgang_lookups = _journal(subjects, PODGANG, PODGANG)
    admission_journal, _ = _journal(subjects, ADMISSION, ADMISSION)
    users = {
        WATCHER: _user(
            subjects,
            WATCHER,
            [
                all_objects,
                *_ephemerals(objects, [all_objects]),
                *_direct_gets(objects, [all_objects]),
            ],
            deny=deny(),
        ),
        PODGANG: _user(
            subjects,
            PODGANG,
            [
                *_ephemerals(objects, None),  # the read model: several kinds at once
                *_own_durable(subjects, podgang),
                *podgang_journal,
                *podgang_lookups,
                *(subjects.backend("*", op) for op in BackendOperation),
            ],
            # Its own requests (admission's dry runs) and discovery; it may only answer.
            [*(subjects.podgang(op) for op in PodgangOperation), _SERVICE_DISCOVERY],
            deny=deny(podgang),
            serves_requests=True,
        ),
        ADMISSION: _user(
            subjects,
            ADMISSION,
            [
                *admission_journal,
                subjects.backend("*", BackendOperation.VALIDATE),
                subjects.podgang(PodgangOperation.DRY_RUN_PODS),
            ],
        ),
        SETUP: _user(
            subjects,
            SETUP,
            [
                f"{_API}.STREAM.CREATE.*",
                f"{_API}.STREAM.UPDATE.*",
                f"{_API}.STREAM.INFO.*",
                f"{_API}.CONSUMER.CREATE.{objects}.*",
                f"{_API}.CONSUMER.INFO.{objects}.*",
            ],
        ),
        VIEWER: _user(
            subjects,
            VIEWER,
            [
                *_ephemerals(objects, [all_objects]),
                *_direct_gets(objects, [all_objects]),
                *_ephemerals(journal_stream, [f"{subjects.journal_root}.>"]),
                *_ephemerals(subjects.deadletter_stream, [f"{subjects.deadletter_root}.>"]),
            ],
            # Any client's default inbox, too: the viewer is whoever reads (services' replies
            # go to inboxes of their own, never under ``_INBOX.``).
            ["_INBOX.>"],
            deny=deny(),
        ),
    }
    for name, durable in backends.items():
        user = backend_user(name)
        backend_journal, backend_lookups = _journal(subjects, "backend", user)
        own_objects = subjects.objects_filter("*", name)
        users[user] = _user(
            subjects,
            user,
            [
                *_ephemerals(objects, [own_objects]),  # the resync over its PodGangs
                # Its own objects, and the PodCliqueSets and topologies its PodGangs name.
                *_direct_gets(
                    objects,
                    [
                        own_objects,
                        subjects.objects_filter(Kind.PODCLIQUESET, ""),
                        subjects.objects_filter(Kind.CLUSTERTOPOLOGYBINDING, ""),
                    ],
                ),
                *_own_durable(subjects, durable),
                *backend_journal,
                *backend_lookups,
            ],
            # Its own requests and discovery: never another backend's, nor anyone's replies.
            [f"{subjects.backend_root}.{name}.>", _SERVICE_DISCOVERY],
            deny=deny(durable),
            serves_requests=True,
        )
    if config.kueue:
        users[kueue.STAGE] = _stage_kueue(subjects, stages[0], deny(stages[0]))
    return users


def _stage_kueue(subjects: Subjects, durable: Durable, deny: list[str]) -> Permissions:
    """The Kueue stage: its durable consumer over every PodGang and its Workloads, the
    resync over them, direct gets of them, of the PodCliqueSets they name and of the pods
    of an evicted gang; its own journal entries. It serves no requests."""
    objects = subjects.objects_stream
    journal, lookups = _journal(subjects, kueue.STAGE, kueue.STAGE)
    podgangs = subjects.objects_filter(Kind.PODGANG)
    own = subjects.objects_filter("*", kueue.STAGE)
    return _user(
        subjects,
        kueue.STAGE,
        [
            *_ephemerals(objects, [podgangs, own]),
            *_direct_gets(
                objects,
                [
                    podgangs,
                    own,
                    subjects.objects_filter(Kind.PODCLIQUESET, ""),
                    subjects.objects_filter(Kind.POD, ""),
                ],
            ),
            *_own_durable(subjects, durable),
            *journal,
            *lookups,
        ],
        deny=deny,
    )


def _quoted(items: Iterable[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)


def _denied(items: tuple[str, ...]) -> str:
    return f", deny: [{_quoted(items)}]" if items else ""


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
        f"      publish: {{allow: [{_quoted(p.publish)}]{_denied(p.deny_publish)}}},",
        f"      subscribe: {{allow: [{_quoted(p.subscribe)}]}},",
    ]
    if p.allow_responses:
        lines.append("      allow_responses: true,")
    lines.append("    }},")
    return "\n".join(lines)
