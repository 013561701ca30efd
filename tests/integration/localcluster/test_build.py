"""The Go wrapper module: generated from the version alone, and what the binaries report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gangway_localcluster import build, coscheduling, kai, koordinator, volcano


def module_json(go_mod: Path) -> dict[str, Any]:
    done = subprocess.run(
        ["go", "mod", "edit", "-json", str(go_mod)], capture_output=True, text=True, check=True
    )
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def test_checked_in_module_is_what_the_generator_writes(tmp_path: Path) -> None:
    modules, go, etcd = build.staging_modules(build.KUBERNETES_VERSION)
    assert len(modules) == 33  # since 1.36: the 31 of 1.35 plus cri-streaming and streaming
    assert etcd == build.ETCD_VERSION
    (tmp_path / "go.mod").write_text(
        build.render_go_mod(build.KUBERNETES_VERSION, etcd, modules, go)
    )
    rendered = module_json(tmp_path / "go.mod")
    checked_in = module_json(build.TOOLS_MODULE / "go.mod")
    # `go mod tidy` adds the transitive requires; everything we write must stay as written.
    for key in ("Module", "Go", "Godebug", "Replace", "Tool"):
        assert checked_in.get(key) == rendered.get(key), key
    tidy = {(r["Path"], r["Version"]) for r in checked_in["Require"]}
    assert {(r["Path"], r["Version"]) for r in rendered["Require"]} <= tidy


@pytest.mark.parametrize(
    "wrapped",
    [kai.KAI, coscheduling.SCHEDULER_PLUGINS, koordinator.KOORDINATOR, volcano.VOLCANO],
    ids=lambda w: w.name,
)
def test_checked_in_scheduler_modules_are_what_the_generator_writes(
    tmp_path: Path, wrapped: build.WrappedModule
) -> None:
    """The schedulers' wrappers, regenerated from the module cache the build filled: go.mod
    and go.sum as checked in (a hand edit, or an upstream pin moved, shows here)."""
    writer = {
        "kai": kai.write_module,
        "scheduler-plugins": coscheduling.write_module,
        "koordinator": koordinator.write_module,
        "volcano": volcano.write_module,
    }[wrapped.name]
    writer(tmp_path / wrapped.name)
    for file in ("go.mod", "go.sum"):
        written = (tmp_path / wrapped.name / file).read_text()
        assert written == (wrapped.wrapper / file).read_text(), file


def test_binaries_report_the_pinned_versions() -> None:
    binaries = build.ensure_binaries()
    version = subprocess.run(
        [binaries.kube_apiserver, "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert version.strip() == f"Kubernetes v{build.kubernetes_version()}"
    etcd = subprocess.run(
        [binaries.etcd, "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert f"etcd Version: {build.ETCD_VERSION}" in etcd


def test_kubebuilder_assets_are_used_per_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = build.ensure_binaries()
    # setup-envtest ships etcd and kube-apiserver (and kubectl), not the controller manager.
    for name in ("etcd", "kube-apiserver"):
        (tmp_path / name).symlink_to(getattr(built, name.replace("-", "_")))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    binaries = build.ensure_binaries()
    assert binaries.etcd == tmp_path / "etcd"
    assert binaries.kube_apiserver == tmp_path / "kube-apiserver"
    assert binaries.kube_controller_manager == built.kube_controller_manager
