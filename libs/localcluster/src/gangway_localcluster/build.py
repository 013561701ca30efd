"""Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from
Go modules.

``go install k8s.io/kubernetes/cmd/...@v1.x`` cannot work: k8s.io/kubernetes replaces every
staging module (k8s.io/api, …) with a local directory and requires them at v0.0.0. A small
wrapper module (``tools/k8s``) requires k8s.io/kubernetes and maps each staging module to
its published twin (v1.Y.Z ↔ v0.Y.Z); ``go build`` then works through the module proxy.

One setting picks the version: ``GANGWAY_K8S_VERSION`` (default :data:`KUBERNETES_VERSION`);
1.38 and later build with Go 1.27 (:func:`go_toolchain`), every other module with the
machine's Go.
The pinned version builds from the checked-in ``tools/k8s`` (go.sum verified); another
version gets a module generated the same way under the cache. Binaries are cached outside
the clone in ``~/.cache/gangway/k8s-v<version>/`` and reused; ``KUBEBUILDER_ASSETS`` may
provide any of them (setup-envtest ships etcd and kube-apiserver).

kwok's go.mod has no replace directives, so ``go install sigs.k8s.io/kwok/cmd/kwok@v…`` builds
it with its own pins (checksums from the checksum database), into
``~/.cache/gangway/kwok-v<version>/`` beside the node and pod stages taken from the same module
download: the bare binary has none, and without stages it does nothing.

KAI's scheduler and binder (``kai.py``, ``tools/kai``), scheduler-plugins' scheduler
(``coscheduling.py``, ``tools/scheduler-plugins``), Koordinator's koord-scheduler
(``koordinator.py``, ``tools/koordinator``) and Volcano's vc-scheduler (``volcano.py``,
``tools/volcano``) build the same way.

    python -m gangway_localcluster                 # build (or reuse) and print paths
    python -m gangway_localcluster --write-module  # regenerate the tools/ modules
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

from gangway_localcluster import processes

KUBERNETES_VERSION: Final = "1.37.2"
# The etcd k8s.io/kubernetes 1.37.2 itself requires (another version builds the one its
# go.mod requires): one etcd for the module graph and the binary.
ETCD_VERSION: Final = "3.7.0"
KWOK_VERSION: Final = "0.8.0"
KWOK_MODULE: Final = "sigs.k8s.io/kwok"
# kwok's ready-made stages (paths in its module): nodes become Ready at once; bound pods go
# Running, pods of Jobs complete, deleted pods go away (no kubelet to confirm a deletion).
KWOK_STAGES: Final = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
BINARY_FIELDS: Final = (
    "etcd",
    "kube_apiserver",
    "kube_controller_manager",
    "kube_scheduler",
    "kubectl",
    "kwok",
)
# A heartbeat while a binary builds: a cold kube-apiserver takes minutes.
PROGRESS_EVERY: Final = 30.0

# Package to build in the wrapper module → binary name.
PACKAGES: Final = {
    "go.etcd.io/etcd/server/v3": "etcd",
    "k8s.io/kubernetes/cmd/kube-apiserver": "kube-apiserver",
    "k8s.io/kubernetes/cmd/kube-controller-manager": "kube-controller-manager",
    "k8s.io/kubernetes/cmd/kube-scheduler": "kube-scheduler",
    "k8s.io/kubernetes/cmd/kubectl": "kubectl",
}
# A real node's binaries (:mod:`gangway_localcluster.realnode`), from the same module: built
# only when a real node is asked for.
NODE_PACKAGES: Final = {
    "k8s.io/kubernetes/cmd/kubelet": "kubelet",
    "k8s.io/kubernetes/cmd/kube-proxy": "kube-proxy",
}

REPO: Final = Path(__file__).resolve().parents[4]
TOOLS_MODULE: Final = REPO / "tools" / "k8s"


def kubernetes_version() -> str:
    return os.environ.get("GANGWAY_K8S_VERSION", KUBERNETES_VERSION).removeprefix("v")


def cache_root() -> Path:
    if explicit := os.environ.get("GANGWAY_CACHE_DIR"):
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "gangway"


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    kwok: Path
    kwok_stages: tuple[Path, ...]
    version: str

    @property
    def minor(self) -> int:
        """The Kubernetes minor: it decides the Workload API version and the feature gates."""
        return int(self.version.split(".")[1])


# Kubernetes 1.38 needs Go 1.27: the go command takes that one approved toolchain from the
# module proxy (about 76 MB, once a machine). Every other module builds with the machine's
# Go (1.26); no other toolchain is ever downloaded.
NEWER_GO: Final = "go1.27.3"
NEWER_GO_FROM_MINOR: Final = 38


def go_toolchain(kubernetes: str) -> str:
    """The GOTOOLCHAIN a Kubernetes version builds with."""
    return NEWER_GO if int(kubernetes.split(".")[1]) >= NEWER_GO_FROM_MINOR else "local"


def go_env(toolchain: str = "local") -> dict[str, str]:
    return {**os.environ, "GOTOOLCHAIN": toolchain, "GOFLAGS": "-buildvcs=false"}


def run_go(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, toolchain: str = "local"
) -> str:
    return processes.run(["go", *args], cwd=cwd, env={**go_env(toolchain), **(env or {})})


@contextmanager
def progress(what: str, log: bool) -> Iterator[None]:
    """Say what builds, then every PROGRESS_EVERY seconds that it still does, then how long
    it took: a cold build is silent for minutes otherwise."""
    if not log:
        yield
        return
    started = time.monotonic()
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(PROGRESS_EVERY):
            say(f"  {what}: still building, {time.monotonic() - started:.0f}s")

    say(f"  {what}: building")
    ticker = threading.Thread(target=heartbeat, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
    say(f"  {what}: built in {time.monotonic() - started:.0f}s")


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def module_dir(module: str, version: str, toolchain: str = "local") -> Path:
    """Where the Go module cache holds ``module@v<version>`` (downloaded if missing). Run
    outside any module, so no go.mod of ours is touched by the download."""
    download = ["mod", "download", "-json", f"{module}@v{version}"]
    info = json.loads(run_go(download, Path(tempfile.gettempdir()), toolchain=toolchain))
    if "Error" in info:
        raise RuntimeError(f"{module}@v{version}: {info['Error']}")
    return Path(info["Dir"])


def staging_modules(version: str) -> tuple[list[str], str, str]:
    """The staging modules k8s.io/kubernetes@v<version> replaces, its go directive and the
    etcd server it requires (the etcd built beside it: one etcd in the module graph)."""
    text = (module_dir("k8s.io/kubernetes", version, go_toolchain(version)) / "go.mod").read_text()
    modules = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", text, re.MULTILINE)
    go_line = re.search(r"^go (\S+)", text, re.MULTILINE)
    etcd = re.search(r"^\s*go\.etcd\.io/etcd/server/v3 v(\S+)", text, re.MULTILINE)
    if not modules or go_line is None or etcd is None:
        raise RuntimeError(
            f"k8s.io/kubernetes@v{version}: no staging replaces, go line or etcd in go.mod"
        )
    return sorted(modules), go_line.group(1), etcd.group(1)


def render_go_mod(version: str, etcd_version: str, modules: list[str], go: str) -> str:
    staging = ".".join(["0", *version.split(".")[1:]])
    minor = ".".join(go.split(".")[:2])
    replaces = "".join(f"\t{m} => {m} v{staging}\n" for m in modules)
    tools = "".join(f"\t{p}\n" for p in sorted({**PACKAGES, **NODE_PACKAGES}))
    return (
        "// Builds the Kubernetes control-plane binaries Gangway tests and `gangway up` run.\n"
        "// Generated by `python -m gangway_localcluster --write-module`; "
        "edit the version there.\n"
        "module gangway.dev/tools/k8s\n\n"
        f"go {go}\n\n"
        # godebug counts only in the main module: keep upstream's defaults for this release.
        f"godebug default=go{minor}\n\n"
        f"require k8s.io/kubernetes v{version}\n\n"
        f"require go.etcd.io/etcd/server/v3 v{etcd_version}\n\n"
        f"replace (\n{replaces})\n\n"
        f"tool (\n{tools})\n"
    )


def _module_dir(version: str, target: Path) -> Path:
    """The Go module to build from: the checked-in one for the pinned version."""
    if version == KUBERNETES_VERSION and (TOOLS_MODULE / "go.sum").exists():
        return TOOLS_MODULE
    module = target.parent / f"{target.name}-module"
    write_module(version, module)
    return module


def write_module(version: str, directory: Path) -> None:
    """Generate the wrapper module for ``version`` in ``directory`` and resolve its go.sum."""
    directory.mkdir(parents=True, exist_ok=True)
    modules, go, etcd = staging_modules(version)
    (directory / "go.mod").write_text(render_go_mod(version, etcd, modules, go))
    run_go(["mod", "tidy"], directory, toolchain=go_toolchain(version))


def wrapper_go_mod(
    upstream: str,
    version: str,
    upstream_go_mod: str,
    *,
    name: str,
    purpose: str,
    packages: Iterable[str],
    pins: Mapping[str, str] | None = None,
) -> str:
    """A wrapper module requiring ``upstream@v<version>`` with every requirement and replace
    of the upstream go.mod copied (a dependency's replaces count only in the main module),
    ``pins`` (module → version) changed where the proxy does not serve upstream's, and a
    ``tool`` line per package to build."""
    go_line = re.search(r"^go (\S+)", upstream_go_mod, re.MULTILINE)
    blocks = re.findall(
        r"^(?:require|replace) \(\n.*?^\)\n|^replace [^(\n].*\n",
        upstream_go_mod,
        re.MULTILINE | re.DOTALL,
    )
    if go_line is None or not blocks:
        raise RuntimeError(f"{upstream}@v{version}: no go line or require block in go.mod")
    copied = "\n".join(blocks)
    for module, pinned in (pins or {}).items():
        # The version after the module's path, in a require line or a replace's right side.
        copied = re.sub(rf"(?<![\w./-]){re.escape(module)} v\S+", f"{module} v{pinned}", copied)
    tools = "".join(f"\t{p}\n" for p in packages)
    return (
        f"// Builds {purpose}.\n"
        "// Generated by `python -m gangway_localcluster --write-module`; "
        "edit the version there.\n"
        f"module gangway.dev/tools/{name}\n\n"
        f"go {go_line.group(1)}\n\n"
        f"require {upstream} v{version}\n\n{copied}\ntool (\n{tools})\n"
    )


def write_wrapper(
    directory: Path,
    upstream: str,
    version: str,
    *,
    purpose: str,
    packages: Iterable[str],
    pins: Mapping[str, str] | None = None,
) -> None:
    """Generate a wrapper module (:func:`wrapper_go_mod`) and its go.sum, seeded with the
    upstream one: some of its pins are unknown to the checksum database, and upstream's
    go.sum, itself checked as part of the upstream module, vouches for them."""
    directory.mkdir(parents=True, exist_ok=True)
    source = module_dir(upstream, version)
    text = wrapper_go_mod(
        upstream,
        version,
        (source / "go.mod").read_text(),
        name=directory.name,
        purpose=purpose,
        packages=packages,
        pins=pins,
    )
    (directory / "go.mod").write_text(text)
    shutil.copyfile(source / "go.sum", directory / "go.sum")
    (directory / "go.sum").chmod(0o644)  # the module cache's copy is read-only
    run_go(["mod", "tidy"], directory)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """One build at a time per cache entry, across processes (pytest-xdist workers)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _from_assets(name: str) -> Path | None:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and (candidate := Path(assets) / name).is_file():
        return candidate
    return None


def _build_kubernetes(packages: Mapping[str, str], version: str, log: bool) -> Path:
    """Build the missing ``packages`` of k8s.io/kubernetes@v<version> into its cache folder."""
    target = cache_root() / f"k8s-v{version}"
    ldflags = (
        f"-s -w -X k8s.io/component-base/version.gitVersion=v{version} "
        f"-X k8s.io/component-base/version.gitMajor={version.split('.', maxsplit=1)[0]} "
        f"-X k8s.io/component-base/version.gitMinor={version.split('.')[1]}"
    )
    with locked(target.parent / f".k8s-v{version}.lock"):
        module = partial(_module_dir, version, target)
        build_missing(
            packages,
            target,
            f"v{version}",
            module=module,
            ldflags=ldflags,
            log=log,
            toolchain=go_toolchain(version),
        )
    return target


def ensure_node_binaries(version: str | None = None, log: bool = False) -> tuple[Path, Path]:
    """kubelet and kube-proxy for ``version``, built once: a real node's own binaries."""
    target = _build_kubernetes(NODE_PACKAGES, version or kubernetes_version(), log)
    return target / "kubelet", target / "kube-proxy"


def ensure_binaries(version: str | None = None, log: bool = False) -> Binaries:
    """Return the binaries for ``version``, building the missing ones once."""
    version = version or kubernetes_version()
    wanted = {pkg: name for pkg, name in PACKAGES.items() if _from_assets(name) is None}
    target = _build_kubernetes(wanted, version, log)
    kwok, stages = ensure_kwok(log=log)

    def path(name: str) -> Path:
        return _from_assets(name) or target / name

    return Binaries(
        etcd=path("etcd"),
        kube_apiserver=path("kube-apiserver"),
        kube_controller_manager=path("kube-controller-manager"),
        kube_scheduler=path("kube-scheduler"),
        kubectl=path("kubectl"),
        kwok=kwok,
        kwok_stages=stages,
        version=version,
    )


def build_missing(
    packages: Mapping[str, str],
    target: Path,
    version: str,
    *,
    module: Callable[[], Path],
    ldflags: str,
    log: bool,
    toolchain: str = "local",
) -> None:
    """Build each package (→ binary name) whose binary is not in ``target`` yet, one after
    the other with progress, in the wrapper module ``module()`` gives (asked for only when
    something is missing), with Go ``toolchain``. The caller holds ``target``'s lock."""
    missing = {pkg: name for pkg, name in packages.items() if not (target / name).is_file()}
    if not missing:
        return
    if log:
        say(
            f"building {', '.join(missing.values())} {version} from Go modules into {target} "
            "(first run only: minutes)"
        )
    directory = module()
    for i, (pkg, name) in enumerate(missing.items(), 1):
        with staged(target, name) as out, progress(f"[{i}/{len(missing)}] {name}", log):
            build = ["build", "-trimpath", "-ldflags", ldflags, "-o", str(out), pkg]
            run_go(build, directory, toolchain=toolchain)


@dataclass(frozen=True)
class WrappedModule:
    """A scheduler built from a wrapper module of ours (``tools/<name>``) into
    ``~/.cache/gangway/<name>-v<version>/``, beside CRDs copied from the same module
    download."""

    name: str
    module: str
    version: str
    packages: Mapping[str, str]  # package in the module → binary name
    crd_files: tuple[str, ...]  # paths in the module

    @property
    def wrapper(self) -> Path:
        return REPO / "tools" / self.name

    @property
    def target(self) -> Path:
        return cache_root() / f"{self.name}-v{self.version}"

    def crds(self) -> tuple[Path, ...]:
        """The CRDs, copied once (no build: a cluster that only stores the scheduler's
        objects needs nothing more)."""
        with locked(self.target.parent / f".{self.name}-v{self.version}-crds.lock"):
            return copied_from_module(
                self.module, self.version, self.crd_files, self.target / "crds"
            )

    def write(
        self,
        purpose: str,
        pins: Mapping[str, str] | None = None,
        directory: Path | None = None,
    ) -> None:
        """Generate the wrapper module ``tools/<name>`` (:func:`write_wrapper`)."""
        write_wrapper(
            directory or self.wrapper,
            self.module,
            self.version,
            purpose=purpose,
            packages=self.packages,
            pins=pins,
        )

    def built(self) -> bool:
        """Every binary is in the cache already: :meth:`build` takes no time."""
        return all((self.target / name).is_file() for name in self.packages.values())

    def build(self, log: bool = False) -> Path:
        """Every binary, built once; the folder that holds them."""
        with locked(self.target.parent / f".{self.name}-v{self.version}.lock"):
            build_missing(
                self.packages,
                self.target,
                f"v{self.version}",
                module=lambda: self.wrapper,
                ldflags="-s -w",
                log=log,
            )
        return self.target


@dataclass(frozen=True)
class SecondScheduler:
    """A kube-scheduler build of another project (scheduler-plugins, Koordinator), run beside
    kube-scheduler with one profile of ``plugins`` under a name of the caller's choosing."""

    module: WrappedModule
    binary: str
    plugins: Mapping[str, Any]  # the profile's ``plugins`` section
    extra_args: tuple[str, ...] = ()
    ready_path: str = "/readyz"  # what answers once it runs

    def build(self, log: bool = False) -> Path:
        """The binary, built once."""
        return self.module.build(log) / self.binary


def ensure_kwok(log: bool = False) -> tuple[Path, tuple[Path, ...]]:
    """kwok and its stages, built and copied once from ``sigs.k8s.io/kwok@v<KWOK_VERSION>``."""
    target = cache_root() / f"kwok-v{KWOK_VERSION}"
    with locked(target.parent / f".kwok-v{KWOK_VERSION}.lock"):
        stages = copied_from_module(KWOK_MODULE, KWOK_VERSION, KWOK_STAGES, target / "stages")
        if not (target / "kwok").is_file():
            with staged(target, "kwok") as out, progress(f"kwok v{KWOK_VERSION}", log):
                run_go(
                    ["install", f"{KWOK_MODULE}/cmd/kwok@v{KWOK_VERSION}"],
                    Path(tempfile.gettempdir()),
                    env={"GOBIN": str(out.parent)},
                )
    return target / "kwok", stages


def copied_from_module(
    module: str, version: str, files: tuple[str, ...], into: Path
) -> tuple[Path, ...]:
    """``files`` (paths in ``module@v<version>``) copied into ``into`` once: data that must
    match the binary built from the same module download (kwok's stages, KAI's CRDs)."""
    copies = tuple(into / Path(file).name for file in files)
    if not all(copy.is_file() for copy in copies):
        source = module_dir(module, version)
        into.mkdir(parents=True, exist_ok=True)
        for file, copy in zip(files, copies, strict=True):
            partial = copy.with_name(f"{copy.name}.part")
            shutil.copyfile(source / file, partial)
            os.replace(partial, copy)  # never a half file that looks whole
    return copies


@contextmanager
def staged(target: Path, name: str) -> Iterator[Path]:
    """A path to build ``name`` at, renamed into ``target`` only once it is whole."""
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        yield staging / name
        os.replace(staging / name, target / name)  # atomic: never a half binary
    finally:
        shutil.rmtree(staging, ignore_errors=True)
