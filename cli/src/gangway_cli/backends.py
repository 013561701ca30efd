"""The built-in backends, constructed as their services construct them, for offline use."""

from __future__ import annotations

from collections.abc import Callable
from pkgutil import resolve_name

from gangway_backend_kube.backend import KubeBackend
from gangway_backend_kube.translate import WORKLOAD_VERSIONS, WorkloadVersion
from gangway_backendkit.protocol import Backend
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.config import DEFAULT_SCHEDULER, SchedulerConfig
from gangway_contracts.errors import FieldError, FieldErrors


def builtin_backend(
    name: str, config: SchedulerConfig, workload_api: WorkloadVersion = WORKLOAD_VERSIONS[0]
) -> Backend:
    """The backend its table entry's factory makes; default-scheduler's objects depend on
    the Workload API version, which offline is the one asked for (``--workload-api``)."""
    table = builtin_backends()
    if name == DEFAULT_SCHEDULER:
        return KubeBackend.from_config(config, workload_version=workload_api)
    if name in table:
        factory: Callable[[SchedulerConfig], Backend] = resolve_name(table[name].factory)
        return factory(config)
    raise FieldErrors(
        [
            FieldError(
                field="scheduler.profiles",
                reason=f'"{name}" is an external backend: only the built-in ones run offline '
                f"({', '.join(table)})",
            )
        ]
    )
