"""Reading the manifests a user hands to an offline subcommand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gangway_contracts.errors import FieldError, FieldErrors


def read_documents(path: Path) -> list[dict[str, Any]]:
    """Every non-empty YAML document in the file; FieldErrors when unreadable."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise FieldErrors([FieldError(field="", reason=f"{path}: {exc.strerror}")]) from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise FieldErrors([FieldError(field="", reason=f"{path}: not valid YAML: {exc}")]) from None
    bad = [i for i, d in enumerate(docs) if not isinstance(d, dict)]
    if bad:
        raise FieldErrors(
            [FieldError(field="", reason=f"{path}: document {i} is not a mapping") for i in bad]
        )
    return docs
