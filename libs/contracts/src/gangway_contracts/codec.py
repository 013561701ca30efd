"""Turning wire structs into JSON and plain objects, and back.

Services decode JSON bytes straight off NATS. Manifests read from YAML pass through JSON
first, because raw fields (a clique's podSpec) only exist as JSON text.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import msgspec

T = TypeVar("T")

# What decoding bytes that are not the contract raises: msgspec's DecodeError (its
# ValidationError included) for the wrong shape or type, RecursionError for JSON nested too
# deep, ValueError for a subject or field that does not parse. Every consumer of the bus
# catches exactly these and dead-letters the message; anything else is a bug.
MALFORMED: Final = (ValueError, msgspec.DecodeError, RecursionError)

_encoder = msgspec.json.Encoder()


def to_json(value: Any) -> bytes:
    return _encoder.encode(value)


def from_json(data: bytes | str, type_: type[T]) -> T:
    return msgspec.json.decode(data, type=type_)


def from_object(obj: Any, type_: type[T]) -> T:
    """A YAML- or JSON-loaded manifest → its view; raises msgspec.ValidationError with a path."""
    return msgspec.json.decode(_encoder.encode(obj), type=type_)


def to_object(value: Any) -> Any:
    """A struct → plain dicts and lists, as a Kubernetes client expects."""
    return msgspec.json.decode(_encoder.encode(value))
