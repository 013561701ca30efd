"""``gangway config check``: YAML on stdout when valid, field errors on stderr and exit 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gangway_cli.main import main
from tests.support.paths import FIXTURES


def test_prints_default_and_enabled(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", str(FIXTURES / "config" / "kai-default.yaml")]) == 0
    out = capsys.readouterr()
    assert yaml.safe_load(out.out) == {
        "default": "kai-scheduler",
        "enabled": ["default-scheduler", "kai-scheduler"],
    }
    assert out.err == ""


def test_errors_one_per_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "operator.yaml"
    bad.write_text(
        "scheduler:\n  profiles:\n    - {name: kai-scheduler, default: true}\n"
        "    - {name: default-scheduler, default: true}\n    - {name: lpx-scheduler}\n"
    )
    assert main(["config", "check", str(bad)]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.splitlines() == [
        'scheduler.profiles[2].name: "lpx-scheduler" is Grove\'s LPX scheduler backend, which '
        "Gangway has no backend for (supported are coscheduling, default-scheduler, "
        "kai-scheduler, koordinator, kube-scheduler, volcano): Grove's operator can run it, or "
        "a backend of your own declared with external: true",
        "scheduler.profiles: at most one profile may be default, found kai-scheduler "
        "(profiles[0].default), default-scheduler (profiles[1].default)",
    ]


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", str(tmp_path / "nope.yaml")]) == 1
    assert "No such file or directory" in capsys.readouterr().err


def test_installed_entry_point() -> None:
    gangway = Path(sys.executable).parent / "gangway"
    done = subprocess.run(
        [str(gangway), "config", "check", str(FIXTURES / "config" / "kai-default.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert "default: kai-scheduler" in done.stdout


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--version"])
    assert ended.value.code == 0
    assert capsys.readouterr().out == "gangway 0.1.0\n"
