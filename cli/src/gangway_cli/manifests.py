"""Reading the manifests a user hands to an offline subcommand."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from gangway_contracts.errors import FieldError, FieldErrors

STDIN = Path("-")


def read_documents(path: Path) -> list[dict[str, Any]]:
    """Every non-empty YAML document in the file (``-``: standard input); FieldErrors, one
    line each, when unreadable."""
    name = "standard input" if path == STDIN else str(path)
    try:
        text = sys.stdin.read() if path == STDIN else path.read_text()
    except OSError as exc:
        raise FieldErrors([FieldError(field="", reason=f"{name}: {exc.strerror}")]) from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        reason = f"{name}: not valid YAML: {_one_line(exc)}"
        raise FieldErrors([FieldError(field="", reason=reason)]) from None
    bad = [i for i, d in enumerate(docs) if not isinstance(d, dict)]
    if bad:
        raise FieldErrors(
            [FieldError(field="", reason=f"{name}: document {i} is not a mapping") for i in bad]
        )
    return docs


def _one_line(exc: yaml.YAMLError) -> str:
    """PyYAML's several-line message as one: what, and where."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"
