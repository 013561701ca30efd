"""Which CRD files a local cluster installs."""

from __future__ import annotations

from pathlib import Path


def crd_files(gangway_crds: Path, third_party: Path | None) -> list[Path]:
    """Gangway's own CRDs, then every scheduler CRD under ``third_party`` (KAI, Volcano…).

    grove.io and scheduler.grove.io come from Gangway's folder only: upstream copies of
    the same CRDs would replace ours (same names, so never both). Grove's
    ClusterTopologyBinding, which Gangway reads but does not ship, is taken from upstream.
    """
    ours = sorted(p for p in gangway_crds.glob("*.yaml") if p.name != "kustomization.yaml")
    if third_party is None or not third_party.is_dir():
        return ours
    theirs = [
        p
        for p in sorted(third_party.rglob("*.yaml"))
        if p.parent.name != "grove" or p.name.startswith("grove.io_clustertopologybindings")
    ]
    return [*ours, *theirs]
