"""Every package declares what it imports: a package installed alone (the image installs each
with its own dependencies) must not lean on what another package happened to pull in."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(
    p for pattern in ("libs/*/src/*", "services/*/src/*", "cli/src/*") for p in ROOT.glob(pattern)
)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported(package: Path) -> set[str]:
    """Top-level modules the package's code imports, its own and the standard library's left
    out (imports under ``if TYPE_CHECKING`` count: mypy needs them installed)."""
    found: set[str] = set()
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m != package.name and m not in sys.stdlib_module_names}


def declared(package: Path) -> set[str]:
    project = tomllib.loads((package.parents[1] / "pyproject.toml").read_text())["project"]
    return {_normal(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) for d in project["dependencies"]}


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
def test_every_import_is_a_declared_dependency(package: Path) -> None:
    distributions = packages_distributions()
    needed = declared(package)
    missing = {}
    for module in imported(package):
        names = distributions.get(module, [module])
        if not needed & {_normal(name) for name in names}:
            missing[module] = names
    assert not missing, f"{package.name} imports what its pyproject.toml does not declare"
