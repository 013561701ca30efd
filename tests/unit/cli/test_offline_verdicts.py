"""The offline commands give one verdict: a manifest ``gangway validate`` refuses, ``plan``
and ``render`` refuse too (exit 1, the same reasons), and a field the API server would refuse
as unknown (strict field validation, kubectl's default) is refused by all three, named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gangway_cli.main import main
from tests.support.broken_manifests import CASES, KEPT, single


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", CASES, ids=str)
def test_validate_plan_and_render_refuse_alike(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, said = CASES[case]
    pcs = single()
    change(pcs)
    path = tmp_path / "pcs.yaml"
    path.write_text(yaml.safe_dump(pcs))
    verdicts = {
        command: run(capsys, command, str(path)) for command in ("validate", "plan", "render")
    }
    for command, (code, err) in verdicts.items():
        assert code == 1, f"{command} admitted it:\n{err}"
        for words in said:
            assert words in err, f"{command}: {err}"
    # The same reasons, whichever command: each line of plan's is one of validate's.
    refused = {line for line in verdicts["validate"][1].splitlines() if ": " in line}
    for command in ("plan", "render"):
        lines = [line for line in verdicts[command][1].splitlines() if ": " in line]
        assert set(lines) <= refused, command


@pytest.mark.parametrize("case", KEPT, ids=str)
def test_grove_s_update_settings_are_admitted(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pcs = single()
    KEPT[case](pcs)
    path = tmp_path / "pcs.yaml"
    path.write_text(yaml.safe_dump(pcs))
    for command in ("validate", "plan", "render"):
        code, err = run(capsys, command, str(path))
        assert code == 0, f"{command}: {err}"
