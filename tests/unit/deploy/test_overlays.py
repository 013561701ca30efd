"""Each overlay's committed NATS users are what its scheduler configuration generates, so
permissions never drift from the subjects the code uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from gangway_cli.deploy import nats_users
from tests.support.paths import REPO

CONFIGURED = sorted((REPO / "deploy" / "overlays").glob("*/operator.yaml"))


def test_overlays_with_their_own_configuration_exist() -> None:
    assert {p.parent.name for p in CONFIGURED} >= {
        "default",
        "kai-only",
        "coscheduling",
        "koordinator",
        "volcano",
    }


@pytest.mark.parametrize("config", CONFIGURED, ids=lambda p: p.parent.name)
def test_committed_nats_users_are_generated_from_the_configuration(config: Path) -> None:
    committed = (config.parent / "nats-users.conf").read_text()
    assert committed == nats_users(config), (
        f"regenerate: gangway deploy nats-users --config {config.relative_to(REPO)}"
        f" > {(config.parent / 'nats-users.conf').relative_to(REPO)}"
    )
