"""Where tests find the repository's files. Nothing outside the checkout: third-party CRDs
come from the checkout (Grove's, pinned in third_party/) or a module download (KAI's)."""

from __future__ import annotations

from typing import Final

from gangway_localcluster.build import REPO
from gangway_localcluster.crds import GANGWAY_CRDS, GROVE_CRDS

__all__ = ["DEPLOY_CRDS", "FIXTURES", "REPO", "UPSTREAM_GROVE_CRDS"]

FIXTURES: Final = REPO / "tests" / "fixtures"
DEPLOY_CRDS: Final = GANGWAY_CRDS
UPSTREAM_GROVE_CRDS: Final = GROVE_CRDS
