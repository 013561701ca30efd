"""``python -m gangway_backend_kai``: the kai-scheduler backend process."""

import gangway_runtime.lean  # noqa: F401  (first: keeps aiohttp out, see lean.py)
from gangway_backend_kai.backend import KaiBackend
from gangway_backendkit.run import run

if __name__ == "__main__":
    run(KaiBackend())
