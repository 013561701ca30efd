"""A scheduler a first `gangway up` has not built yet: built by its own command while the
cluster runs, then started on it (its CRDs installed, its processes up), told in one line.
The build here is the cached one (the suite's warm cache), the rest is real."""

from __future__ import annotations

import time

from gangway_cli.latecomers import LateSchedulers
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.volcano import SCHEDULER_NAME


def test_a_scheduler_built_late_is_started_on_the_running_cluster() -> None:
    said: list[str] = []
    with ControlPlane.start(scheduling=True) as cp:
        late = LateSchedulers(cp, {"volcano": SCHEDULER_NAME}, said.append)
        assert late.pending() == ["volcano"]
        late.start()
        try:
            deadline = time.monotonic() + 300
            while not said or not said[-1].startswith("every scheduler runs"):
                assert time.monotonic() < deadline, said
                time.sleep(0.2)
            assert late.pending() == [], said
            assert cp.schedulers == {"volcano": SCHEDULER_NAME}
            assert any(p.name == "scheduling.volcano.sh_queues.yaml" for p in cp.crds), cp.crds
            assert said[-2].startswith("Volcano v1.10.0's vc-scheduler built in ")
            assert said[-1] == "every scheduler runs: gangway demo places all six samples"
            # Still running once the builds are over: a child dies with the thread that
            # started it, and that thread must not end before the cluster does.
            time.sleep(2)
            assert cp.child("vc-scheduler").popen.poll() is None
        finally:
            late.stop()
