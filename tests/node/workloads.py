"""PodCliqueSets whose containers do something on the real node, on the base image the
suite builds (Debian's python3): a leader that listens and a worker that finds it the way
Dynamo's multi-node workers do, from Grove's variables through the cluster's DNS."""

from __future__ import annotations

from typing import Any, Final

from gangway_backend_kai.translate import QUEUE_LABEL
from gangway_localcluster.images import BASE_IMAGE
from gangway_localcluster.kai import DEFAULT_QUEUE
from gangway_localcluster.kai import SCHEDULER_NAME as KAI
from tests.support.discovery import DYNAMO_LEADER

PORT: Final = 7000
# Listens after a pause (so that "ready" comes measurably after "started"), then prints
# each peer's greeting (the kubelet's readiness probe connects and says nothing).
LEADER: Final = f"""
import socket, time
time.sleep(3)
server = socket.create_server(("", {PORT}))
print("listening", flush=True)
while True:
    peer, address = server.accept()
    if greeting := peer.recv(256).decode():
        print("hello from", greeting, "at", address[0], flush=True)
    peer.close()
"""
# Resolves its leader's name (retrying while the name is not yet known), says who it is.
WORKER: Final = f"""
import os, socket, time
leader = os.environ["LEADER_ADDRESS"]
while True:
    try:
        with socket.create_connection((leader, {PORT}), timeout=2) as conn:
            conn.sendall(os.environ["HOSTNAME"].encode())
        break
    except OSError as exc:
        print("waiting for", leader, exc, flush=True)
        time.sleep(1)
print("told", leader, flush=True)
time.sleep(1e9)
"""
RESTRICTED: Final = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def python_clique(name: str, replicas: int, program: str, **extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": BASE_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["python3", "-u", "-c", program],
        "securityContext": RESTRICTED,
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
        **extra,
    }
    return {
        "name": name,
        "spec": {
            "roleName": name,
            "replicas": replicas,
            "podSpec": {"containers": [container], "terminationGracePeriodSeconds": 1},
        },
    }


def leader_and_worker(name: str, scheduler: str = "default-scheduler") -> dict[str, Any]:
    """One scaling-group replica of a leader and two workers; the workers start once the
    leader is ready (it is once it listens), and reach it at the address Dynamo's operator
    writes from Grove's variables."""
    leader = python_clique(
        "leader", 1, LEADER, readinessProbe={"tcpSocket": {"port": PORT}, "periodSeconds": 1}
    )
    worker = python_clique(
        "worker", 2, WORKER, env=[{"name": "LEADER_ADDRESS", "value": DYNAMO_LEADER}]
    )
    worker["spec"]["startsAfter"] = ["leader"]
    cliques = [leader, worker]
    for clique in cliques:
        clique["spec"]["podSpec"]["schedulerName"] = scheduler
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "template": {
                "cliqueStartupType": "CliqueStartupTypeExplicit",
                "cliques": cliques,
                "podCliqueScalingGroups": [
                    {"name": "model", "cliqueNames": ["leader", "worker"], "replicas": 1}
                ],
            },
        },
    }


def sleepers(name: str, scheduler: str, replicas: int = 2) -> dict[str, Any]:
    """One clique of ``replicas`` pods that only sleep, on ``scheduler`` (on KAI's, in the
    queue the local cluster made)."""
    clique = python_clique("sleeper", replicas, "import time; time.sleep(1e9)")
    clique["spec"]["podSpec"]["schedulerName"] = scheduler
    labels = {QUEUE_LABEL: DEFAULT_QUEUE} if scheduler == KAI else {}
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": 1, "template": {"cliques": [clique]}},
    }
