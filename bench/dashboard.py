"""The Grafana dashboard drawn from a real run: docs/dashboard.png.

    uv run --group bench python -m bench.dashboard   # 60 gangs x 2 pods, podgang killed
    uv run --group bench python -m bench.dashboard --gangs 30 --out /tmp/dashboard.png

Run from the checkout's root (it reuses the chaos suite's scenario). A control plane with
kube-scheduler and kwok nodes, a nats-server and the services (watcher, podgang,
backend-default-scheduler) as processes, scraped every 2 s by a real Prometheus (built from
its Go module; the first run builds it, minutes). The story: a workload of ``--gangs`` gangs
is submitted, podgang is killed and restarted once 40 % of its PodGangs exist, the workload
converges and is deleted. Then every panel of deploy/components/monitoring/
gangway-dashboard.json asks Prometheus its own query over the run (``$namespace`` and
``$__rate_interval`` filled in as Grafana would), and the answers are drawn in the
dashboard's layout. Grafana itself is not run: it is not a Go module one can build (its
front end is a JavaScript build).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from gangway_localcluster import processes
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files
from gangway_localcluster.nodes import NodePool
from gangway_localcluster.prometheus import ensure_prometheus
from tests.chaos.scenario import System, deleted, kill_and_restart, start_system, workload_through
from tests.support.kube import admin_client, fresh_namespace
from tests.support.paths import REPO

DASHBOARD: Final = REPO / "deploy" / "components" / "monitoring" / "gangway-dashboard.json"
NAMESPACE: Final = "gangway-system"  # what the dashboard's $namespace is set to
SCRAPE_SECONDS: Final = 2
RATE_INTERVAL: Final = "8s"  # Grafana's $__rate_interval: four scrape intervals
LEGEND_LINES: Final = 8
UNITS: Final = {"bytes": ("MiB", 1 / (1 << 20)), "s": ("s", 1.0), "ops": ("/s", 1.0)}


@dataclass
class Prometheus:
    """A Prometheus process scraping the services listed in ``targets``."""

    child: processes.Child
    url: str
    targets: Path

    @classmethod
    def start(cls, workdir: Path) -> Prometheus:
        port = processes.free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        targets = workdir / "targets.json"
        targets.write_text("[]")
        config = workdir / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": f"{SCRAPE_SECONDS}s"},
                    "scrape_configs": [
                        {
                            "job_name": "gangway",
                            "file_sd_configs": [
                                {"files": [str(targets)], "refresh_interval": "1s"}
                            ],
                        }
                    ],
                }
            )
        )
        args: list[str | Path] = [
            ensure_prometheus(log=True),
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        child = processes.start("prometheus", args, workdir / "prometheus.log")
        url = f"http://127.0.0.1:{port}"
        processes.wait_until(lambda: processes.http_ok(f"{url}/-/ready"), child, "/-/ready", 60)
        return cls(child, url, targets)

    def scrape(self, system: System) -> None:
        """Scrape every service as the ServiceMonitor names it (job = its Deployment's
        name), at the ports it listens on now (a restarted service has a new one)."""
        groups = [
            {
                "targets": [f"127.0.0.1:{port}"],
                "labels": {
                    "job": f"gangway-{name}",
                    "namespace": NAMESPACE,
                    "pod": f"gangway-{name}-0",
                },
            }
            for name, port in system.services.ports.items()
        ]
        self.targets.write_text(json.dumps(groups))

    def query_range(self, expr: str, start: float, end: float) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode(
            {"query": expr, "start": start, "end": end, "step": SCRAPE_SECONDS}
        )
        with urllib.request.urlopen(f"{self.url}/api/v1/query_range?{query}") as answer:
            found: list[dict[str, Any]] = json.load(answer)["data"]["result"]
        return found


async def run(gangs: int, workdir: Path) -> tuple[Prometheus, float, float]:
    """The story; returns Prometheus and when the run started and ended."""
    prometheus = Prometheus.start(workdir / "prometheus")
    with ControlPlane.start(crds=crd_files(), scheduling=True) as cp:
        cp.add_nodes(NodePool(count=8, prefix="dash"))
        system = start_system(cp, workdir)
        try:
            prometheus.scrape(system)
            started = time.time()
            await asyncio.sleep(10)  # the idle services, before the workload

            def podgang_killed(system: System) -> None:
                kill_and_restart("podgang")(system)
                prometheus.scrape(system)

            async with admin_client(cp.kubeconfig) as api, fresh_namespace(api) as namespace:
                outcome = await workload_through(system, api, namespace, podgang_killed, gangs)
                print(f"converged {outcome.recovered_after:.1f} s after podgang came back")
                await asyncio.sleep(10)
                await deleted(system, api, namespace)
            await asyncio.sleep(15)  # the deletion's aftermath, and a last scrape
            return prometheus, started, time.time()
        finally:
            system.stop()


def draw(prometheus: Prometheus, start: float, end: float, out: Path) -> None:
    import matplotlib  # noqa: PLC0415 - a bench-only dependency, loaded when drawing

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    panels = json.loads(DASHBOARD.read_text())["panels"]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    figure = plt.figure(figsize=(24, rows * 0.5))
    grid = figure.add_gridspec(rows, 24, hspace=4.0, wspace=1.8)
    section = ""
    first_of_section: dict[str, Any] = {}
    for panel in panels:
        pos = panel["gridPos"]
        if panel["type"] == "row":
            section = panel["title"]
            continue
        top, left = pos["y"] + 1, pos["x"]  # a row of the grid kept for the title
        axes = figure.add_subplot(grid[top : pos["y"] + pos["h"], left : left + pos["w"]])
        first_of_section.setdefault(section, axes)
        _plot(axes, panel, prometheus, start, end)
    for title, axes in first_of_section.items():  # above its first panel, at the left
        box = axes.get_position()
        figure.text(0.11, box.y1 + 0.018, title, fontsize=16, weight="bold")
    figure.savefig(out, dpi=60, bbox_inches="tight")
    print(f"wrote {out}")


def _plot(
    axes: Any, panel: dict[str, Any], prometheus: Prometheus, start: float, end: float
) -> None:
    unit = panel["fieldConfig"]["defaults"].get("unit", "short")
    label, scale = UNITS.get(unit, ("", 1.0))
    drawn: list[tuple[float, str, list[float], list[float]]] = []
    for target in panel["targets"]:
        expr = target["expr"].replace("$namespace", NAMESPACE)
        for series in prometheus.query_range(
            expr.replace("$__rate_interval", RATE_INTERVAL), start, end
        ):
            points = [(float(t) - start, float(v) * scale) for t, v in series["values"]]
            points = [(t, v) for t, v in points if math.isfinite(v)]
            if not points:
                continue
            legend = target.get("legendFormat", "")
            for name, value in series["metric"].items():
                legend = legend.replace(f"{{{{{name}}}}}", value)
            times, values = [t for t, _ in points], [v for _, v in points]
            drawn.append((max(values), legend, times, values))
    # The busiest series, as many as a legend can show.
    for _, legend, times, values in sorted(drawn, reverse=True)[:LEGEND_LINES]:
        axes.plot(times, values, label=legend[:56], linewidth=1.4)
    axes.set_xlim(0, end - start)
    axes.set_title(panel["title"], fontsize=12, loc="left")
    axes.set_xlabel("seconds into the run", fontsize=8)
    axes.set_ylabel(label, fontsize=8)
    axes.tick_params(labelsize=8)
    axes.grid(alpha=0.3)
    if drawn:
        axes.legend(fontsize=7, loc="upper right")
    else:
        axes.text(
            0.5,
            0.5,
            "nothing in this run",
            ha="center",
            va="center",
            color="gray",
            transform=axes.transAxes,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gangs", type=int, default=60)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "dashboard.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gangway-dashboard-") as scratch:
        prometheus, start, end = asyncio.run(run(args.gangs, Path(scratch)))
        try:
            draw(prometheus, start, end, args.out)
        finally:
            prometheus.child.stop()


if __name__ == "__main__":
    main()
