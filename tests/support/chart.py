"""deploy/charts/gangway rendered by helm (built from its Go module), and what the chart's
values are for the choices a kustomize overlay makes."""

from __future__ import annotations

import functools
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final

import yaml

from gangway_localcluster.helm import ensure_helm
from tests.support.deploy import NAMESPACE, OVERLAYS_DIR
from tests.support.paths import REPO

CHART: Final = REPO / "deploy" / "charts" / "gangway"
BACKENDS: Final = sorted(p.name for p in (REPO / "deploy" / "backends").iterdir())


class ChartRefused(Exception):
    """helm template failed; the message is what helm said."""


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ensure_helm()), *args], capture_output=True, text=True, check=False)


@functools.cache
def _template(values: str, chart: Path = CHART) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        file.write(values)
        file.flush()
        done = helm(
            *("template", "gangway", str(chart), "--namespace", NAMESPACE),
            *("--include-crds", "--values", file.name),
        )
    if done.returncode != 0:
        # What helm said, without its notes on following the chart's links to deploy/.
        said = [line for line in done.stderr.splitlines() if not line.startswith("level=")]
        raise ChartRefused("\n".join(said))
    rendered: str = done.stdout
    return rendered


def chart(values: dict[str, Any] | None = None, path: Path = CHART) -> list[dict[str, Any]]:
    """The chart's objects (of the chart at ``path``, a folder or a package) for ``values``;
    a fresh copy each call."""
    text = _template(yaml.safe_dump(values or {}, sort_keys=True), path)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def values_for(overlay: str) -> dict[str, Any]:
    """The chart values that choose what ``overlay`` chooses: its backends, Kueue in front
    or not, its operator configuration, its certificate source; the namespace created, as
    kustomize does."""
    backends: set[str] = set()
    kueue = topology = False
    certificates = ""
    scheduler: dict[str, Any] = {}
    for directory in _overlay_chain(OVERLAYS_DIR / overlay):
        kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
        backends |= {Path(r).name for r in kustomization.get("resources", []) if "/backends/" in r}
        stages = [r for r in kustomization.get("resources", []) if "/stages/" in r]
        kueue = kueue or any(Path(r).name == "kueue" for r in stages)
        topology = topology or any(Path(r).name == "kueue-topology" for r in stages)
        for component in kustomization.get("components", []):
            certificates = certificates or Path(component).name
        operator = directory / "operator.yaml"
        if operator.is_file() and not scheduler:
            scheduler = yaml.safe_load(operator.read_text())["scheduler"]
    return {
        "backends": {key: {"enabled": key in backends} for key in BACKENDS},
        "kueue": {"enabled": kueue, "topology": topology},
        "scheduler": scheduler,
        "webhook": {"certificates": certificates},
        "namespace": {"create": True},
    }


def _overlay_chain(directory: Path) -> list[Path]:
    """The overlay, then the overlays it is built on (the nearer one's choice first)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    parents = [
        (directory / r).resolve()
        for r in kustomization.get("resources", [])
        if (directory / r).resolve().parent == OVERLAYS_DIR
    ]
    return [directory] + [d for parent in parents for d in _overlay_chain(parent)]
