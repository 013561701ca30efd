"""The table of built-in backends. Each backend declares itself in its own package
(``<package>/builtin.py``: its name, its configuration, the resources the watcher mirrors
for it, the module its process runs and its factory) and names that declaration in its own
``pyproject.toml``, in the entry-point group ``gangway.backends``: the Python ecosystem's way
for a package to announce a plugin, so that adding a backend touches its own folder alone.
The configuration, the watcher, the CLI and ``gangway up`` read the table from here.

A third-party backend needs none of this: it is a process of its own, declared in the
scheduler configuration with ``external: true``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Final

from gangway_contracts.backend_config import BackendConfig
from gangway_contracts.mirrored import MirroredResource

GROUP: Final = "gangway.backends"


def _nothing(config: Any) -> tuple[MirroredResource, ...]:
    return ()


@dataclass(frozen=True)
class BuiltinBackend:
    name: str  # the profile name, the pods' default schedulerName and a NATS subject token
    config: type[BackendConfig]  # its profile's ``config``
    service: str  # the module its process runs: ``python -m <service>``
    factory: str  # "<module>:<callable>": the Backend from a SchedulerConfig, for offline use
    # What the watcher mirrors for it, given its profile's config.
    mirrored: Callable[[Any], tuple[MirroredResource, ...]] = field(default=_nothing)
    aliases: tuple[str, ...] = ()  # other names its profile may be given


def always(*resources: MirroredResource) -> Callable[[Any], tuple[MirroredResource, ...]]:
    """What a backend mirrors whatever its profile's config says."""
    return lambda config: resources


class BuiltinTableError(RuntimeError):
    """An installation whose backend packages do not declare what they should."""


@functools.cache
def builtin_backends() -> Mapping[str, BuiltinBackend]:
    """Every installed built-in backend, by name, in name order."""
    found: dict[str, BuiltinBackend] = {}
    for point in entry_points(group=GROUP):
        backend = point.load()
        if not isinstance(backend, BuiltinBackend) or backend.name != point.name:
            raise BuiltinTableError(
                f"entry point {point.name} = {point.value} ({GROUP}) is not the BuiltinBackend "
                f"named {point.name}"
            )
        found[backend.name] = backend
    return dict(sorted(found.items()))


def builtin(name: str) -> BuiltinBackend:
    """One built-in backend; BuiltinTableError naming the missing package when it is not
    installed."""
    backend = builtin_backends().get(name)
    if backend is None:
        raise BuiltinTableError(
            f"the built-in backend {name} is not installed (no {GROUP} entry point names it)"
        )
    return backend
