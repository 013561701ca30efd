"""Reading test manifests and comparing decoded views with what they came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import FIXTURES


def fixture(relative: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((FIXTURES / relative).read_text())
    return doc


def fixtures(folder: str) -> list[Path]:
    return sorted((FIXTURES / folder).glob("*.yaml"))


def is_subset(part: Any, whole: Any) -> bool:
    """Every value in ``part`` appears at the same place in ``whole``."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            k in whole and is_subset(v, whole[k]) for k, v in part.items()
        )
    if isinstance(part, list):
        return (
            isinstance(whole, list)
            and len(part) == len(whole)
            and all(is_subset(p, w) for p, w in zip(part, whole, strict=True))
        )
    return bool(part == whole)
