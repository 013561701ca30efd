"""The built-in backends, constructed as their services construct them, for offline use."""

from __future__ import annotations

from typing import Final

from gangway_backend_coscheduling.backend import CoschedulingBackend
from gangway_backend_kai.backend import KaiBackend
from gangway_backend_koordinator.backend import KoordinatorBackend
from gangway_backend_kube.backend import KubeBackend
from gangway_backend_kube.translate import WORKLOAD_VERSIONS, WorkloadVersion
from gangway_backend_volcano.backend import VolcanoBackend
from gangway_backendkit.protocol import Backend
from gangway_contracts.config import (
    COSCHEDULING,
    DEFAULT_SCHEDULER,
    KAI_SCHEDULER,
    KOORDINATOR,
    VOLCANO,
    SchedulerConfig,
)
from gangway_contracts.errors import FieldError, FieldErrors

BUILTIN_BACKENDS: Final = (KAI_SCHEDULER, DEFAULT_SCHEDULER, COSCHEDULING, KOORDINATOR, VOLCANO)


def builtin_backend(
    name: str, config: SchedulerConfig, workload_api: WorkloadVersion = WORKLOAD_VERSIONS[0]
) -> Backend:
    if name == KAI_SCHEDULER:
        return KaiBackend()
    if name == DEFAULT_SCHEDULER:
        return KubeBackend.from_config(config, workload_version=workload_api)
    if name == COSCHEDULING:
        return CoschedulingBackend.from_config(config)
    if name == KOORDINATOR:
        return KoordinatorBackend.from_config(config)
    if name == VOLCANO:
        return VolcanoBackend.from_config(config)
    raise FieldErrors(
        [
            FieldError(
                field="scheduler.profiles",
                reason=f'"{name}" is an external backend: only the built-in ones run offline '
                f"({', '.join(BUILTIN_BACKENDS)})",
            )
        ]
    )
