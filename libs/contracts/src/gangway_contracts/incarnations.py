"""A gang made again is a new gang to its scheduler: its incarnation, and the names of its
scheduler objects.

A rolling update or a gang termination replaces a gang whole under the same PodGang and pod
names. A scheduler that keeps state by its own object's name (Koordinator's once-satisfied
gangs, Kubernetes #139914, KAI #2095) would take the new gang for the old one and let its
pods bind one by one. So podgang counts the gang's incarnations on the PodGang
(``labels.INCARNATION``), and each backend names its objects of incarnation n > 0
``<name>-i<n>``: no earlier gang of the PodCliqueSet used those names. Incarnation 0 keeps
the plain names every gang had before: upgrading Gangway renames nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Final

from gangway_contracts import labels

# Label values, and many scheduler object names, are DNS labels.
_AT_MOST: Final = 63


def incarnation_of(marks: Mapping[str, str]) -> int:
    """The incarnation an object's annotations (a PodGang's) or labels (a pod's) say; 0
    when they say none, or nothing that reads."""
    text = marks.get(labels.INCARNATION, "")
    return int(text) if text.isdigit() else 0


def incarnated(name: str, incarnation: int) -> str:
    """The name of a scheduler object ``name`` in its gang's ``incarnation``: ``name`` for
    0, else ``<name>-i<n>``, shortened with a digest of ``name`` to 63 characters."""
    if incarnation == 0:
        return name
    suffix = f"-i{incarnation}"
    if len(name) + len(suffix) <= _AT_MOST:
        return name + suffix
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: _AT_MOST - len(suffix) - 9]}-{digest}{suffix}"
