"""Generated NATS passwords are read by the real nats-server from its environment, as deploy/
hands them over: every one parses (``token_urlsafe`` failed 1 in 64, those starting "-")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gangway_cli.deploy import new_nats_password
from gangway_contracts.permissions import Permissions, nats_authorization, password_variable
from gangway_localcluster.nats import nats_server_binary

USERS = 1000  # P(no bad one among 1000 | 1 in 64 bad) < 1e-6


def test_a_thousand_generated_passwords_all_parse(tmp_path: Path) -> None:
    users = {f"user-{i}": Permissions(publish=("a",), subscribe=()) for i in range(USERS)}
    passwords = {password_variable(user): new_nats_password() for user in users}
    config = tmp_path / "nats.conf"
    config.write_text("port: -1\n" + nats_authorization(users))
    done = subprocess.run(
        [str(nats_server_binary()), "-c", str(config), "-t"],
        env={**os.environ, **passwords},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert len(set(passwords.values())) == USERS
