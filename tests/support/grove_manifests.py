"""Grove's own published samples and e2e manifests (tests/fixtures/grove, pinned)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

from tests.support.paths import FIXTURES

GROVE: Final = FIXTURES / "grove"
MANIFESTS: Final = sorted(GROVE.rglob("*.yaml"))

# Invalid under Grove's own CRD as well: these samples leave out a clique's roleName, which
# both CRDs require, so the API server refuses them before any webhook sees them.
INVALID_FOR_GROVE_TOO: Final = {
    "samples/user-guide/02_pod-and-resource-naming-conventions/"
    "multinode-disaggregated-with-frontend.yaml": "cliques[0].spec.roleName",
    "samples/user-guide/03_environment-variables-for-pod-discovery/"
    "standalone-env-vars.yaml": "cliques[0].spec.roleName",
}


def name(path: Path) -> str:
    return path.relative_to(GROVE).as_posix()


def podcliqueset(path: Path) -> dict[str, Any]:
    """The PodCliqueSet of a manifest file (some hold other objects beside it)."""
    docs: list[dict[str, Any]] = list(yaml.safe_load_all(path.read_text()))
    (pcs,) = [d for d in docs if d and d["kind"] == "PodCliqueSet"]
    return pcs
