"""Untyped data (a YAML document, the environment) into a typed struct or dataclass, with
every problem named by its field.

msgspec converts, but stops at the first problem; someone fixing a configuration wants all
of them. So each field is converted on its own, unknown keys are named, and a type's own
checks (its ``CHECKS``: a field's name → what is wrong with a value, or None) run on the
fields that converted. pydantic does all this, but importing it costs every service about
10 MiB, and msgspec is imported anyway.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

import msgspec

from gangway_contracts.errors import FieldError, FieldErrors, field_path, validation_error

T = TypeVar("T")

Check = Callable[[Any], str | None]
DecHook = Callable[[type, Any], Any]


class Field(NamedTuple):
    name: str  # the attribute
    key: str  # how the data spells it
    type: Any
    required: bool


def fields(kind: type) -> list[Field]:
    """The fields of a msgspec Struct or a dataclass."""
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return [
            Field(f.name, f.encode_name, f.type, f.required) for f in msgspec.structs.fields(kind)
        ]
    if not dataclasses.is_dataclass(kind):
        raise TypeError(f"{kind.__name__} is neither a msgspec Struct nor a dataclass")
    hints = typing.get_type_hints(kind, include_extras=True)
    missing = dataclasses.MISSING
    return [
        Field(f.name, f.name, hints[f.name], f.default is missing and f.default_factory is missing)
        for f in dataclasses.fields(kind)
    ]


def _is_record(kind: Any) -> bool:
    """A type whose fields this module converts one by one."""
    return isinstance(kind, type) and (
        issubclass(kind, msgspec.Struct) or dataclasses.is_dataclass(kind)
    )


def convert(
    data: Any,
    kind: type[T],
    *,
    at: tuple[str | int, ...] = (),
    strict: bool = True,
    dec_hook: DecHook | None = None,
) -> T:
    """``data`` (a mapping of ``kind``'s keys) as a ``kind``; raises FieldErrors naming
    every field at fault, each path starting with ``at``."""
    if not isinstance(data, Mapping):
        reason = f"expected a mapping, got {type(data).__name__}"
        raise FieldErrors([FieldError(field=field_path(*at), reason=reason)])
    known = fields(kind)
    checks: Mapping[str, Check] = getattr(kind, "CHECKS", {})
    converted, errors = {}, []
    for f in known:  # in the order they are declared, as they are documented
        if f.key not in data:
            if f.required:
                errors.append(FieldError(field=field_path(*at, f.key), reason="required"))
            continue
        try:
            if _is_record(f.type) and isinstance(data[f.key], Mapping):
                nested = (*at, f.key)
                value = convert(data[f.key], f.type, at=nested, strict=strict, dec_hook=dec_hook)
            else:
                value = msgspec.convert(data[f.key], f.type, strict=strict, dec_hook=dec_hook)
        except msgspec.ValidationError as exc:
            errors.append(_within(validation_error(exc), *at, f.key))
            continue
        except FieldErrors as exc:
            errors += exc.errors
            continue
        if (check := checks.get(f.name)) is not None and (problem := check(value)) is not None:
            errors.append(FieldError(field=field_path(*at, f.key), reason=problem))
        converted[f.name] = value
    keys = {f.key for f in known}
    errors += [
        FieldError(field=field_path(*at, key), reason="unknown field")
        for key in data
        if key not in keys
    ]
    if errors:
        raise FieldErrors(errors)
    return kind(**converted)


def _within(error: FieldError, *at: str | int) -> FieldError:
    """A field's own error (its path from the field down) placed under ``at``; msgspec's
    "Object contains unknown field `x`" read as the field x, unknown."""
    inner, reason = error.field, error.reason
    for says, means in (
        ("Object contains unknown field `", "unknown field"),
        ("Object missing required field `", "required"),
    ):
        if reason.startswith(says):
            name = reason.removeprefix(says).rstrip("`")
            inner, reason = (f"{inner}.{name}" if inner else name), means
    where = field_path(*at)
    if inner:
        where += inner if inner.startswith("[") or not where else f".{inner}"
    return FieldError(field=where, reason=reason)
