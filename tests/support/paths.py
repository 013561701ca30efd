"""Where tests find the repository's files and the shared upstream CRDs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]
FIXTURES: Final = REPO / "tests" / "fixtures"
DEPLOY_CRDS: Final = REPO / "deploy" / "crds"
# CI clones main with shared/ beside it; GANGWAY_SHARED_DIR points elsewhere when needed.
SHARED: Final = Path(os.environ.get("GANGWAY_SHARED_DIR", REPO.parent / "shared"))
SHARED_CRDS: Final = SHARED / "crds"
