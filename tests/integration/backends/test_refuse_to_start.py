"""A backend whose scheduler API is missing refuses to start, saying what is missing: the
process exits 2 with one clear line instead of crash-looping on a traceback."""

from __future__ import annotations

import asyncio
import os
import sys

from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files


async def test_kai_backend_without_kais_crds_exits_with_the_reason(nats_url: str) -> None:
    # Gangway's CRDs only: no KAI PodGroup CRD in this cluster.
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
            "gangway_backend_kai",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(proc.communicate(), 60)
    text = output.decode()
    assert proc.returncode == 2, text
    assert (
        "cannot start: the API server does not serve podgroups.scheduling.run.ai/v2alpha2" in text
    )
    assert "Traceback" not in text
