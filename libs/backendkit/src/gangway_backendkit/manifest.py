"""A Kubernetes object as a backend writes it: what ``resources()`` returns and ``ensure``
keeps. Its own module so that the kit's context and converge need not import the protocol
(which names the context)."""

from __future__ import annotations

from typing import Any

Manifest = dict[str, Any]
