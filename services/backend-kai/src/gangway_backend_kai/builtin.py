"""kai-scheduler, as the table of built-in backends knows it."""

from __future__ import annotations

from typing import Final

from gangway_contracts.backend_config import BackendConfig
from gangway_contracts.builtin import BuiltinBackend, always
from gangway_contracts.mirrored import backend_resource

NAME: Final = "kai-scheduler"  # its profile name: the table's key


class KaiSchedulerConfig(BackendConfig):
    """kai-scheduler: no options yet; the type exists so unknown keys are caught."""


KAI_PODGROUPS: Final = backend_resource(NAME, "podgroups", "scheduling.run.ai", "v2alpha2")


BACKEND: Final = BuiltinBackend(
    name=NAME,
    config=KaiSchedulerConfig,
    service="gangway_backend_kai",
    factory="gangway_backend_kai.backend:KaiBackend.from_config",
    mirrored=always(KAI_PODGROUPS),
)
