"""A backend whose scheduler API is missing refuses to start, saying what is missing: the
process exits 2 with one clear line instead of crash-looping on a traceback."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files


@pytest.mark.parametrize(
    ("module", "missing"),
    [
        ("gangway_backend_kai", "podgroups.scheduling.run.ai/v2alpha2"),
        ("gangway_backend_coscheduling", "podgroups.scheduling.x-k8s.io/v1alpha1"),
        ("gangway_backend_koordinator", "podgroups.scheduling.sigs.k8s.io/v1alpha1"),
        ("gangway_backend_volcano", "podgroups.scheduling.volcano.sh/v1beta1"),
    ],
)
async def test_a_backend_without_its_schedulers_crds_exits_with_the_reason(
    nats_url: str, module: str, missing: str
) -> None:
    # Gangway's CRDs only: no scheduler's PodGroup CRD in this cluster.
    with ControlPlane.start(controller_manager=False, crds=crd_files()) as cp:
        env = {
            **os.environ,
            "GANGWAY_KUBECONFIG": str(cp.kubeconfig),
            "GANGWAY_NATS_URL": nats_url,
            "GANGWAY_SUBJECT_PREFIX": "refuse",
            "GANGWAY_HTTP_HOST": "127.0.0.1",
            "GANGWAY_HTTP_PORT": "0",
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(proc.communicate(), 60)
    text = output.decode()
    assert proc.returncode == 2, text
    assert f"cannot start: the API server does not serve {missing}" in text
    assert "Traceback" not in text
