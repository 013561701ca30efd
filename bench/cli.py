"""How fast the ``gangway`` command answers: wall time of a few invocations, median of runs.

    uv run python bench/cli.py            # 7 runs each

Each invocation is a fresh process of the installed entry point (the workspace's
``gangway``), bytecode already compiled (a second run on a fresh install, as a user sees it).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

GANGWAY = Path(sys.executable).parent / "gangway"
REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "fixtures" / "podcliquesets" / "single-clique.yaml"
CONFIG = REPO / "tests" / "fixtures" / "config" / "kai-default.yaml"
INVOCATIONS = {
    "gangway --help": ["--help"],
    "gangway --version": ["--version"],
    "gangway plan --help": ["plan", "--help"],
    "gangway plan (the single-clique sample)": ["plan", "--config", str(CONFIG), str(SAMPLE)],
    "gangway up --help": ["up", "--help"],
}


def seconds(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([GANGWAY, *args], capture_output=True, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    print("| invocation | median | max |")
    print("|---|---|---|")
    for name, args in INVOCATIONS.items():
        seconds(args)  # bytecode compiled, files cached
        taken = [seconds(args) for _ in range(runs)]
        print(f"| `{name}` | {statistics.median(taken):.2f} s | {max(taken):.2f} s |")


if __name__ == "__main__":
    main()
