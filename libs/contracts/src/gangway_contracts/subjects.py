"""Every NATS subject, stream and service name Gangway uses. No other module spells one.

All names hang off a prefix (``gangway`` unless configured), so one NATS can hold several
installations, and each test its own. With the default prefix, the subjects are
(``.`` separates tokens, so names that may hold dots are escaped):

- ``gangway.objects.<kind>.<owner>.<namespace>.<name>``: the latest state of one Kubernetes
  object, kept compacted (one message per subject) in the OBJECTS stream. ``<owner>`` is the
  backend that owns a PodGang or a backend resource, so a backend's consumer filters on
  ``gangway.objects.*.<backend>.>``; ``-`` for objects no backend owns.
- ``gangway.journal.<namespace>.<podcliqueset>.<event>.<podgang>.<writer>``: what each
  service decided. ``<writer>`` is the NATS user that wrote it (``podgang``,
  ``backend-kai``…), each allowed only its own, so no service can write another's history.
- ``gangway.deadletter.<service>``: messages a service gave up on, with the error.
- ``gangway.backend.<backend>.<operation>``: request/reply served by a backend.
- ``gangway.podgang.<operation>``: request/reply served by podgang (``dry-run-pods``).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final, NamedTuple

DEFAULT_PREFIX: Final = "gangway"

# "-" and "_" never occur as a whole Kubernetes name or inside one (DNS-1123 allows neither
# a leading "-" nor "_"), so both encodings below can be reversed.
NO_TOKEN: Final = "-"
_DOT_ESCAPE: Final = "_"
_PREFIX: Final = re.compile(r"^[a-z][a-z0-9-]{0,30}$")

# NATS headers; the W3C trace context rides in "traceparent"/"tracestate".
MSG_ID_HEADER: Final = "Nats-Msg-Id"
ERROR_HEADER: Final = "Gangway-Error"
# On a dead letter: the subject the message was taken from.
SOURCE_SUBJECT_HEADER: Final = "Gangway-Source-Subject"
TRACEPARENT_HEADER: Final = "traceparent"
TRACESTATE_HEADER: Final = "tracestate"


class Kind(enum.StrEnum):
    """Object kinds Gangway mirrors. Backends may mirror more; a kind is any DNS label."""

    PODCLIQUESET = "podcliqueset"
    PODGANG = "podgang"
    POD = "pod"
    CLUSTERTOPOLOGYBINDING = "clustertopologybinding"
    SERVICE = "service"  # the headless Services podgang makes
    PODCLIQUE = "podclique"
    PODCLIQUESCALINGGROUP = "podcliquescalinggroup"
    HPA = "horizontalpodautoscaler"  # those podgang makes from autoScalingConfig/scaleConfig


class BackendOperation(enum.StrEnum):
    PREPARE_PODS = "prepare-pods"
    VALIDATE = "validate"


class PodgangOperation(enum.StrEnum):
    """Requests the podgang service serves (admission asks)."""

    DRY_RUN_PODS = "dry-run-pods"


class ObjectKey(NamedTuple):
    kind: str  # a Kind, or "<plural>.<group>" for a backend's resource
    owner: str  # backend name, or "" when no backend owns the object
    namespace: str  # "" for cluster-scoped objects
    name: str


def _encode(value: str) -> str:
    return value.replace(".", _DOT_ESCAPE) if value else NO_TOKEN


def _decode(token: str) -> str:
    return "" if token == NO_TOKEN else token.replace(_DOT_ESCAPE, ".")


def _pattern(value: str) -> str:
    return value if value in ("*", ">") else _encode(value)


@dataclass(frozen=True)
class Subjects:
    """All names under one prefix: one Gangway installation (or one test) per prefix."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if not _PREFIX.match(self.prefix):
            raise ValueError(f"subject prefix {self.prefix!r} must match {_PREFIX.pattern}")

    def _stream(self, name: str) -> str:
        return f"{self.prefix.upper().replace('-', '_')}_{name}"

    @property
    def objects_stream(self) -> str:
        return self._stream("OBJECTS")

    @property
    def journal_stream(self) -> str:
        return self._stream("JOURNAL")

    @property
    def deadletter_stream(self) -> str:
        return self._stream("DEADLETTER")

    @property
    def objects_root(self) -> str:
        return f"{self.prefix}.objects"

    @property
    def journal_root(self) -> str:
        return f"{self.prefix}.journal"

    @property
    def deadletter_root(self) -> str:
        return f"{self.prefix}.deadletter"

    @property
    def backend_root(self) -> str:
        return f"{self.prefix}.backend"

    def object(self, key: ObjectKey) -> str:
        tokens = (_encode(key.kind), _encode(key.owner), _encode(key.namespace), _encode(key.name))
        return ".".join((self.objects_root, *tokens))

    def parse_object(self, subject: str) -> ObjectKey:
        root = self.objects_root + "."
        if not subject.startswith(root):
            raise ValueError(f"not an object subject: {subject!r}")
        tokens = subject[len(root) :].split(".")
        if len(tokens) != 4:
            raise ValueError(f"object subject needs kind.owner.namespace.name: {subject!r}")
        kind, owner, namespace, name = tokens
        return ObjectKey(_decode(kind), _decode(owner), _decode(namespace), _decode(name))

    def objects_filter(self, kind: str = "*", owner: str = "*") -> str:
        """Consumer filter for one kind (and owner); ``*`` matches any."""
        return f"{self.objects_root}.{_pattern(kind)}.{_pattern(owner)}.>"

    def journal(
        self, namespace: str, podcliqueset: str, event: str, podgang: str = "", *, writer: str
    ) -> str:
        """One workload's entries of one type by one writer, and of one PodGang when the
        event is about one: the last entry of a PodGang's step is one direct get away."""
        tokens = (_encode(namespace), _encode(podcliqueset), event, _encode(podgang), writer)
        return ".".join((self.journal_root, *tokens))

    def journal_writer(self, subject: str) -> str:
        """The writer token of a journal subject; "" for an entry written before subjects
        carried one."""
        tokens = subject[len(self.journal_root) + 1 :].split(".")
        return tokens[4] if len(tokens) == 5 else ""

    def journal_filter(self, namespace: str = "*", podcliqueset: str = "*") -> str:
        return f"{self.journal_root}.{_pattern(namespace)}.{_pattern(podcliqueset)}.>"

    def deadletter(self, service: str) -> str:
        return f"{self.deadletter_root}.{service}"

    def backend(self, backend: str, operation: BackendOperation) -> str:
        return f"{self.backend_root}.{backend}.{operation.value}"

    def podgang(self, operation: PodgangOperation) -> str:
        return f"{self.prefix}.podgang.{operation.value}"

    def leases_bucket(self, durable: str) -> str:
        """The key-value bucket where the replicas of the service consuming as ``durable``
        hold their leases on keys."""
        return f"{durable}-leases"

    def service_name(self, service: str) -> str:
        """A service's name under this prefix: its durable consumer and dead-letter subject."""
        return f"{self.prefix}-{service}"

    def backend_service_name(self, backend: str) -> str:
        """Name of the NATS micro service a backend registers (``$SRV.INFO`` shows it)."""
        return self.service_name(f"backend-{backend}")


def object_msg_id(uid: str, resource_version: str, deleted: bool = False) -> str:
    """JetStream de-duplication id: two watchers seeing the same change publish one message."""
    return f"{uid}:{resource_version}{':deleted' if deleted else ''}"
