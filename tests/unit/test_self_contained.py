"""A clone needs nothing beside it: every CRD the suite, ``gangway up`` and the benchmark load
comes from the checkout or a module download, and the pinned upstream copies are what
third_party/README.md says they are."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

from gangway_localcluster.build import cache_root
from tests.support.paths import REPO, UPSTREAM_GROVE_CRDS

# Runs every CRD-loading path in a fresh interpreter that opens files only from the
# checkout, Gangway's cache, the Go module cache, Python's own installation and the system:
# anything else (the folder beside the checkout CRDs used to come from) raises.
LOAD_EVERY_CRD = """
import sys
from pathlib import Path

import yaml

allowed = [Path(p).resolve() for p in sys.argv[1:]]
allowed += [Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
allowed += [Path(p) for p in ("/dev", "/proc", "/sys", "/etc", "/usr")]


def only_allowed(event, args):
    if event == "open" and isinstance(args[0], (str, Path)):
        path = Path(args[0]).resolve()
        if not any(path.is_relative_to(root) for root in allowed):
            raise PermissionError(f"read outside the checkout and the caches: {path}")


sys.addaudithook(only_allowed)
from gangway_localcluster.crds import crd_files, gangway_crds
from tests.support.paths import UPSTREAM_GROVE_CRDS

paths = [*crd_files(schedulers=True), *gangway_crds(), *sorted(UPSTREAM_GROVE_CRDS.glob("*.yaml"))]
kinds = set()
for path in paths:
    for doc in yaml.safe_load_all(path.read_text()):
        kinds.add(doc["spec"]["names"]["kind"])
print(" ".join(sorted(kinds)))
"""


def test_every_crd_loads_from_the_checkout_or_a_download() -> None:
    module_cache = subprocess.run(
        ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
    ).stdout.strip()
    done = subprocess.run(
        [sys.executable, "-c", LOAD_EVERY_CRD, str(REPO), str(cache_root()), module_cache],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    kinds = set(done.stdout.split())
    assert {"PodCliqueSet", "PodGang", "ClusterTopologyBinding"} <= kinds
    assert {"PodGroup", "Queue", "BindRequest", "Topology"} <= kinds  # KAI's, from its module


# The folder beside the checkout that CRDs were once read from (a user's clone has none).
FORMER_FOLDER = "shared"


def test_no_source_names_a_folder_beside_the_checkout() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    folder = re.escape(FORMER_FOLDER)
    beside = re.compile(rf"\.\./{folder}|REPO\.parent|parents\[\d\]\s*/\s*\"{folder}\"")
    offenders = [
        name
        for name in tracked
        if name.endswith((".py", ".sh", ".toml", "Makefile", ".yaml", ".cfg"))
        and beside.search((REPO / name).read_text(errors="replace"))
        and name != "tests/unit/test_self_contained.py"
    ]
    assert offenders == []


def git_blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def test_pinned_grove_crds_are_the_upstream_files_named_in_the_readme() -> None:
    readme = (REPO / "third_party" / "README.md").read_text()
    listed = dict(re.findall(r"^\| (\S+\.yaml) \| \S+ \| ([0-9a-f]{40}) \|$", readme, re.M))
    on_disk = {p.name: git_blob_id(p) for p in UPSTREAM_GROVE_CRDS.glob("*.yaml")}
    assert on_disk == listed
