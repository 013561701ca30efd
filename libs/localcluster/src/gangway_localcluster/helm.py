"""Helm, built from its Go module, for the tests that render deploy/charts/gangway.

``go install helm.sh/helm/v4/cmd/helm@v…`` asks the proxy for the longer module paths first,
and the proxy answers those 403 (not 404), which stops it; a wrapper module
(``tools/helm``) requiring helm.sh/helm/v4 builds the command instead.

    python -m gangway_localcluster --write-module   # regenerates tools/helm
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from gangway_localcluster.build import WrappedModule

HELM_VERSION: Final = "4.3.1"  # v4.3.2: the proxy answers 403 for its zip
MODULE: Final = "helm.sh/helm/v4"
BINARY: Final = "helm"
HELM: Final = WrappedModule("helm", MODULE, HELM_VERSION, {f"{MODULE}/cmd/helm": BINARY}, ())


def ensure_helm(log: bool = False) -> Path:
    """The helm binary, built once into ``~/.cache/gangway/helm-v<version>/``."""
    return HELM.build(log) / BINARY


def write_module(directory: Path | None = None) -> None:
    HELM.write("helm, which the tests render deploy/charts/gangway with", directory=directory)
