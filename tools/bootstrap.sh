#!/usr/bin/env bash
# Installs what `make up` and `make test` need on a fresh machine: uv (from PyPI when
# missing) and the workspace environment pinned by uv.lock. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --user "uv>=0.9" || python3 -m pip install --quiet "uv>=0.9"
  export PATH="$HOME/.local/bin:$PATH"
fi
# Bytecode compiled once here: kubernetes-asyncio's generated models (1 500 modules) would
# otherwise be compiled again by every process that imports them (PYTHONDONTWRITEBYTECODE),
# costing each service ~1.5 s and ~35 MiB more at start (bench/RESULTS.md, "Eighth round").
uv sync --quiet --frozen --all-packages --compile-bytecode
