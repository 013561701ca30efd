"""Fields a manifest writes that its kind does not have, found as the API server finds them
with strict field validation (kubectl's default): ``spec.template.cliques[0].spec.minAvaliable``
is refused there, so the offline commands refuse it too instead of dropping it silently.

Views are partial where the API server's schema is not: ``metadata`` and ``status`` are
left to it, and so is every raw Kubernetes field (a podSpec is checked against Kubernetes'
own schema elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import msgspec.inspect as mi

from gangway_contracts.errors import FieldError, field_path

_LEFT_TO_THE_API_SERVER: Final = frozenset({"metadata", "status", "apiVersion", "kind"})
_UNKNOWN: Final = (
    "unknown field: the API server refuses it (strict field validation, kubectl's default)"
)


def unknown_fields(obj: Any, type_: type) -> list[FieldError]:
    """One error per field of ``obj`` that ``type_`` (a wire view) does not declare."""
    return list(_walk(obj, mi.type_info(type_), ()))


def _walk(obj: Any, info: mi.Type, at: tuple[str | int, ...]) -> Iterator[FieldError]:
    if isinstance(info, mi.StructType) and isinstance(obj, dict):
        fields = {f.encode_name: f.type for f in info.fields}
        for key, value in obj.items():
            if not at and key in _LEFT_TO_THE_API_SERVER:
                continue
            if key not in fields:
                where = field_path(*at, key)
                yield FieldError(field=where, reason=_UNKNOWN)
                continue
            yield from _walk(value, fields[key], (*at, key))
    elif isinstance(info, mi.UnionType):
        for option in info.types:  # the struct of an optional field
            if isinstance(option, mi.StructType | mi.ListType):
                yield from _walk(obj, option, at)
                return
    elif isinstance(info, mi.ListType) and isinstance(obj, list):
        for i, item in enumerate(obj):
            yield from _walk(item, info.item_type, (*at, i))
    elif isinstance(info, mi.Metadata):
        yield from _walk(obj, info.type, at)
