"""The table of built-in backends: each declared once, in its own package, and everything
that enumerates backends reads it."""

from __future__ import annotations

import importlib
from pkgutil import resolve_name

from gangway_cli.services import services_for
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.config import canonical_name, parse_scheduler_config
from gangway_contracts.resources import backend_resources

NAMES = ["coscheduling", "default-scheduler", "kai-scheduler", "koordinator", "volcano"]


def test_every_built_in_backend_declares_itself_in_its_package() -> None:
    table = builtin_backends()
    assert list(table) == NAMES
    for name, backend in table.items():
        package = backend.service
        assert type(backend).__module__ == "gangway_contracts.builtin"
        assert backend.config.__module__ == f"{package}.builtin", name
        importlib.import_module(f"{package}.__main__".rsplit(".", 1)[0])
        assert callable(resolve_name(backend.factory)), name
    assert canonical_name("kube-scheduler") == "default-scheduler"


def test_what_is_enabled_is_what_runs_and_what_is_mirrored() -> None:
    config = parse_scheduler_config(
        {"profiles": [{"name": name} for name in NAMES if name != "default-scheduler"]}
    )
    assert [module for _, module in services_for(config)] == [
        "gangway_watcher",
        "gangway_podgang",
        *(builtin_backends()[name].service for name in NAMES),
        "gangway_admission",
    ]
    mirrored = {r.backend: r.group for r in backend_resources(config)}
    assert mirrored == {
        "coscheduling": "scheduling.x-k8s.io",
        "kai-scheduler": "scheduling.run.ai",
        "koordinator": "scheduling.sigs.k8s.io",
        "volcano": "scheduling.volcano.sh",
    }
