"""coscheduling (scheduler-plugins' Coscheduling), as the table of built-in backends knows it."""

from __future__ import annotations

from typing import Final

from gangway_contracts.backend_config import SecondSchedulerConfig
from gangway_contracts.builtin import BuiltinBackend, always
from gangway_contracts.mirrored import backend_resource

NAME: Final = "coscheduling"  # its profile name: the table's key


class CoschedulingConfig(SecondSchedulerConfig):
    """coscheduling: scheduler-plugins' Coscheduling plugin; one PodGroup per PodGang. Its
    timeout default is the plugin's permitWaitingTimeSeconds (60 s)."""

    # The name scheduler-plugins' own second-scheduler install gives it.
    scheduler_name: str = "scheduler-plugins-scheduler"


COSCHEDULING_PODGROUPS: Final = backend_resource(
    NAME, "podgroups", "scheduling.x-k8s.io", "v1alpha1"
)


BACKEND: Final = BuiltinBackend(
    name=NAME,
    config=CoschedulingConfig,
    service="gangway_backend_coscheduling",
    factory="gangway_backend_coscheduling.backend:CoschedulingBackend.from_config",
    mirrored=always(COSCHEDULING_PODGROUPS),
)
