"""``python -m gangway_localcluster``: build (or reuse) every binary the local cluster runs,
and print where each is; ``--node`` also what the real node runs (root only: its kubelet,
kube-proxy and images); ``--write-module`` regenerates the wrapper modules under tools/.

Its own module: the schedulers' modules build with ``build``'s helpers, so ``build`` cannot
import them back.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gangway_localcluster import (
    build,
    coredns,
    coscheduling,
    helm,
    images,
    kai,
    koordinator,
    prometheus,
    volcano,
)
from gangway_localcluster.controlplane import LOCAL_SCHEDULERS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=build.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--write-module",
        action="store_true",
        help="regenerate the wrapper modules under tools/ (go.mod and go.sum) for the pinned "
        "versions",
    )
    parser.add_argument(
        "--node",
        action="store_true",
        help="also the real node's kubelet, kube-proxy and images (tests/node; needs root)",
    )
    parser.add_argument(
        "--scheduler",
        choices=sorted(LOCAL_SCHEDULERS),
        help="build only this backend's local scheduler (gangway up builds the missing ones "
        "so, one by one, while the cluster already runs)",
    )
    args = parser.parse_args(argv)
    if args.scheduler:
        print(f"{args.scheduler}: {LOCAL_SCHEDULERS[args.scheduler].build()}")
        return 0
    if args.write_module:
        build.write_module(build.KUBERNETES_VERSION, build.TOOLS_MODULE)
        kai.write_module()
        coscheduling.write_module()
        koordinator.write_module()
        volcano.write_module()
        helm.write_module()
        prometheus.write_module()
        coredns.write_module()
        return 0
    binaries = build.ensure_binaries(log=True)
    scheduler = kai.ensure_kai(log=True)
    paths: dict[str, Path | str] = {
        **{f.replace("_", "-"): getattr(binaries, f) for f in build.BINARY_FIELDS},
        "kai-scheduler": scheduler.scheduler,
        "kai-binder": scheduler.binder,
        **{s.binary: s.build(log=True) for s in (coscheduling.SCHEDULER, koordinator.SCHEDULER)},
        volcano.BINARY: volcano.VOLCANO.build(log=True) / volcano.BINARY,
        helm.BINARY: helm.ensure_helm(log=True),
        coredns.BINARY: coredns.ensure_coredns(log=True),
    }
    if args.node and os.geteuid() != 0:
        build.say("real node: not built (it needs root; tests/node will be skipped)")
    elif args.node:
        kubelet, kube_proxy = build.ensure_node_binaries(log=True)
        made = images.ensure_node_images(log=True)
        paths |= {"kubelet": kubelet, "kube-proxy": kube_proxy}
        paths |= {f"image {i + 1}": name for i, name in enumerate(made.all())}
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C, or gangway up stopping a build: half files removed
        sys.exit(130)
