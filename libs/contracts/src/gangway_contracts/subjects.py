"""Every NATS subject, stream and service name Gangway uses. No other module spells one.

Subjects (``.`` separates tokens, so names that may hold dots are escaped):

- ``gangway.objects.<kind>.<owner>.<namespace>.<name>``: the latest state of one Kubernetes
  object, kept compacted (one message per subject) in the OBJECTS stream. ``<owner>`` is the
  backend that owns a PodGang or a backend resource, so a backend's consumer filters on
  ``gangway.objects.*.<backend>.>``; ``-`` for objects no backend owns.
- ``gangway.journal.<namespace>.<podcliqueset>.<event>``: what each service decided.
- ``gangway.deadletter.<service>``: messages a service gave up on, with the error.
- ``gangway.backend.<backend>.<operation>``: request/reply served by a backend.
"""

from __future__ import annotations

import enum
from typing import Final, NamedTuple

PREFIX: Final = "gangway"

OBJECTS_STREAM: Final = "GANGWAY_OBJECTS"
JOURNAL_STREAM: Final = "GANGWAY_JOURNAL"
DEADLETTER_STREAM: Final = "GANGWAY_DEADLETTER"

OBJECTS_ROOT: Final = f"{PREFIX}.objects"
JOURNAL_ROOT: Final = f"{PREFIX}.journal"
DEADLETTER_ROOT: Final = f"{PREFIX}.deadletter"
BACKEND_ROOT: Final = f"{PREFIX}.backend"

# "-" and "_" never occur as a whole Kubernetes name or inside one (DNS-1123 allows neither
# a leading "-" nor "_"), so both encodings below can be reversed.
NO_TOKEN: Final = "-"
_DOT_ESCAPE: Final = "_"

# NATS headers; the W3C trace context rides in "traceparent"/"tracestate".
MSG_ID_HEADER: Final = "Nats-Msg-Id"
ERROR_HEADER: Final = "Gangway-Error"
TRACEPARENT_HEADER: Final = "traceparent"
TRACESTATE_HEADER: Final = "tracestate"


class Kind(enum.StrEnum):
    """Object kinds Gangway mirrors. Backends may mirror more; a kind is any DNS label."""

    PODCLIQUESET = "podcliqueset"
    PODGANG = "podgang"
    POD = "pod"


class BackendOperation(enum.StrEnum):
    PREPARE_PODS = "prepare-pods"
    VALIDATE = "validate"


class ObjectKey(NamedTuple):
    kind: str
    owner: str  # backend name, or "" when no backend owns the object
    namespace: str  # "" for cluster-scoped objects
    name: str


def _encode(value: str) -> str:
    return value.replace(".", _DOT_ESCAPE) if value else NO_TOKEN


def _decode(token: str) -> str:
    return "" if token == NO_TOKEN else token.replace(_DOT_ESCAPE, ".")


def object_subject(key: ObjectKey) -> str:
    return ".".join(
        (
            OBJECTS_ROOT,
            key.kind,
            _encode(key.owner),
            _encode(key.namespace),
            _encode(key.name),
        )
    )


def parse_object_subject(subject: str) -> ObjectKey:
    root = OBJECTS_ROOT + "."
    if not subject.startswith(root):
        raise ValueError(f"not an object subject: {subject!r}")
    tokens = subject[len(root) :].split(".")
    if len(tokens) != 4:
        raise ValueError(f"object subject needs kind.owner.namespace.name: {subject!r}")
    kind, owner, namespace, name = tokens
    return ObjectKey(kind, _decode(owner), _decode(namespace), _decode(name))


def objects_filter(kind: str = "*", owner: str = "*") -> str:
    """Consumer filter for one kind (and owner); ``*`` matches any."""
    owner_token = owner if owner == "*" else _encode(owner)
    return f"{OBJECTS_ROOT}.{kind}.{owner_token}.>"


def journal_subject(namespace: str, podcliqueset: str, event: str) -> str:
    return f"{JOURNAL_ROOT}.{_encode(namespace)}.{_encode(podcliqueset)}.{event}"


def journal_filter(namespace: str = "*", podcliqueset: str = "*") -> str:
    ns = namespace if namespace == "*" else _encode(namespace)
    pcs = podcliqueset if podcliqueset == "*" else _encode(podcliqueset)
    return f"{JOURNAL_ROOT}.{ns}.{pcs}.*"


def deadletter_subject(service: str) -> str:
    return f"{DEADLETTER_ROOT}.{service}"


def backend_subject(backend: str, operation: BackendOperation) -> str:
    return f"{BACKEND_ROOT}.{backend}.{operation.value}"


def backend_service_name(backend: str) -> str:
    """Name of the NATS micro service a backend registers (``$SRV.INFO`` shows it)."""
    return f"gangway-backend-{backend}"


def object_msg_id(uid: str, resource_version: str, deleted: bool = False) -> str:
    """JetStream de-duplication id: two watchers seeing the same change publish one message."""
    return f"{uid}:{resource_version}{':deleted' if deleted else ''}"
