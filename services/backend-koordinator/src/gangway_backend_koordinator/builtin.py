"""koordinator (Koordinator's koord-scheduler), as the table of built-in backends knows it."""

from __future__ import annotations

from typing import Final, Literal

from gangway_contracts.backend_config import SecondSchedulerConfig
from gangway_contracts.builtin import BuiltinBackend, always
from gangway_contracts.mirrored import backend_resource

NAME: Final = "koordinator"  # its profile name: the table's key


class KoordinatorConfig(SecondSchedulerConfig):
    """koordinator: Koordinator's koord-scheduler; one gang per podgroup, the PodGang's gangs
    one GangGroup. Its timeout default is the plugin's defaultTimeout (600 s)."""

    scheduler_name: str = "koord-scheduler"
    # Strict: a member failing in a cycle releases the gang's members placed in that cycle;
    # NonStrict: placed members keep their places while the gang fills.
    mode: Literal["Strict", "NonStrict"] = "Strict"
    # Which pods count towards a gang's minimum; unset: the scheduler's default
    # (once-satisfied).
    match_policy: Literal["once-satisfied", "only-waiting", "waiting-and-running"] | None = None


KOORDINATOR_PODGROUPS: Final = backend_resource(
    NAME, "podgroups", "scheduling.sigs.k8s.io", "v1alpha1"
)


BACKEND: Final = BuiltinBackend(
    name=NAME,
    config=KoordinatorConfig,
    service="gangway_backend_koordinator",
    factory="gangway_backend_koordinator.backend:KoordinatorBackend.from_config",
    mirrored=always(KOORDINATOR_PODGROUPS),
)
