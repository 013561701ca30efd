"""Field paths a contract view reads, spelled as on the wire (``spec.podgroups[].name``)."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
from msgspec import inspect


def _walk(t: inspect.Type, path: str) -> Iterator[str]:
    if isinstance(t, inspect.UnionType):
        for member in t.types:
            yield from _walk(member, path)
    elif isinstance(t, inspect.ListType):
        yield from _walk(t.item_type, f"{path}[]")
    elif isinstance(t, inspect.StructType):
        for f in t.fields:
            child = f"{path}.{f.encode_name}" if path else f.encode_name
            yield child
            yield from _walk(f.type, child)


def contract_paths(view: type[msgspec.Struct]) -> set[str]:
    return set(_walk(inspect.type_info(view), ""))
