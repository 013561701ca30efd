"""Field errors: the one error shape every Gangway boundary speaks.

Rendered the way kube-apiserver renders field errors, so a user reads
``spec.template.cliques[1].spec.minAvailable: must be <= replicas (3)``
whether it came from admission, a backend's validation or ``gangway config check``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import msgspec
import pydantic

from gangway_contracts.k8s import is_dns_label

DNS_LABEL_MAX: Final = 63


class FieldError(msgspec.Struct, frozen=True, kw_only=True):
    """One problem with one field: where it is and why it is wrong."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}" if self.field else self.reason


def dns_label_reason(name: str) -> str:
    """Why ``name`` is not a DNS-1123 label: its length, or the characters it holds."""
    if len(name) > DNS_LABEL_MAX:
        return f'"{name}" is {len(name)} characters, more than a DNS label\'s {DNS_LABEL_MAX}'
    return (
        f"\"{name}\" is not a DNS-1123 label: lowercase letters, digits and '-', starting and "
        "ending with a letter or digit"
    )


def not_dns_labels(what: str, named: Iterable[tuple[str, str]]) -> list[FieldError]:
    """An error for each (field, name) whose name is not a DNS label; ``what`` says what the
    name becomes (e.g. "KAI subgroup name")."""
    return [
        FieldError(field=field, reason=f"makes {what}: {dns_label_reason(name)}")
        for field, name in named
        if not is_dns_label(name)
    ]


def field_path(*parts: str | int) -> str:
    """Join path parts the apiserver way: names with dots, list indices in brackets.

    >>> field_path("spec", "template", "cliques", 1, "spec", "minAvailable")
    'spec.template.cliques[1].spec.minAvailable'
    """
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part:
            out += f".{part}" if out else part
    return out


def validation_error(exc: msgspec.ValidationError) -> FieldError:
    """msgspec says "... - at `$.spec.replicas`": turn that into a field path and reason."""
    message = str(exc)
    reason, _, where = message.rpartition(" - at `")
    if not reason:
        return FieldError(field="", reason=message)
    return FieldError(field=where.rstrip("`").removeprefix("$.").removeprefix("$"), reason=reason)


def pydantic_errors(exc: pydantic.ValidationError, *at: str | int) -> list[FieldError]:
    """pydantic's errors of human-written configuration, each under ``at``: its location as a
    field path (as written: camelCase where the model reads aliases), its reason in words."""
    found = []
    for error in exc.errors(include_url=False):
        cause = (error.get("ctx") or {}).get("error")
        if error["type"] == "missing":
            reason = "required"
        elif error["type"] == "extra_forbidden":
            reason = "unknown field"
        elif error["type"] in ("value_error", "assertion_error") and cause is not None:
            reason = str(cause)  # our validator's own words, without pydantic's prefix
        elif error["type"].endswith("_type"):  # the wrong kind of value: say which it was
            reason = f"{error['msg']}, got {_kind(error['input'])}"
        else:
            reason = error["msg"]
        found.append(FieldError(field=field_path(*at, *error["loc"]), reason=reason))
    return found


def _kind(value: object) -> str:
    """A value's kind as YAML and JSON name it."""
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    names |= {dict: "a mapping", list: "a list", type(None): "null"}
    return names.get(type(value), type(value).__name__)


class FieldErrors(Exception):
    """Raised at a boundary with every problem found, not just the first."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors: Sequence[FieldError] = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))
