"""Each overlay's committed NATS users are what its scheduler configuration generates, and
the Helm chart's what the permissions generate, so they never drift from the subjects the
code uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from gangway_cli.deploy import chart_nats_users, nats_users
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


def test_the_charts_nats_users_are_generated_from_the_permissions() -> None:
    committed = REPO / "deploy" / "charts" / "gangway" / "files" / "nats-users.yaml"
    assert committed.read_text() == chart_nats_users(), (
        f"regenerate: gangway deploy nats-users --chart > {committed.relative_to(REPO)}"
    )
