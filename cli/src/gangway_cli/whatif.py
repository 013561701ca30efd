"""``gangway whatif -f pcs.yaml``: would this workload be placed, and where, before it is
submitted: on a local control plane with the real scheduler of its backend, kwok nodes
shaped as given (``--capacity``) or like an existing cluster's (``--from-cluster``), and
Gangway's own services, exactly as ``gangway up`` runs them; then all of it torn down.

Every document of the file is applied (a ClusterTopologyBinding, a queue the workload
names); each PodCliqueSet is reported gang by gang: placed or not, on which nodes and
topology domains, and when not, the reason in the words ``gangway why`` uses with the
scheduler's own. Exit 0 when every gang would be placed, 3 when one would not, 1 when the
input is wrong or the local cluster could not run it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

import msgspec

from gangway_cli.capacity import pools_like, read_capacity
from gangway_cli.cluster import apply
from gangway_cli.inputs import Manifests, read_offline_config
from gangway_cli.manifests import read_documents
from gangway_cli.output import print_errors
from gangway_cli.scratch import scratch_gangway
from gangway_cli.timeline import table
from gangway_cli.why import GangState, Workload, read
from gangway_contracts import kueue, why
from gangway_contracts.errors import FieldError, FieldErrors
from gangway_contracts.grove import PodCliqueSet
from gangway_localcluster.nodes import TOPOLOGY_LABELS, NodePool
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import ApiResource, Kube, KubeError

EXIT_NOT_PLACED: Final = 3
FIELD_MANAGER: Final = "gangway-whatif"
NAMESPACES: Final = ApiResource("", "v1", "namespaces", namespaced=False)
NODES: Final = ApiResource("", "v1", "nodes", namespaced=False)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--file", type=Path, required=True, help="the workload's manifests")
    parser.add_argument(
        "--backend", help="place it with this backend (default: its cliques' schedulerName)"
    )
    shape = parser.add_mutually_exclusive_group(required=True)
    shape.add_argument("--capacity", type=Path, help="a capacity file (the nodes to try)")
    shape.add_argument(
        "--from-cluster",
        action="store_true",
        help="nodes like those of the cluster of --kubeconfig (read once: labels, "
        "allocatable cpu, memory, pods and nvidia.com/gpu, taints)",
    )
    parser.add_argument("--kubeconfig", type=Path, help="with --from-cluster; default $KUBECONFIG")
    parser.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait for a verdict (180)"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=10.0,
        help="seconds a verdict must hold before it is the answer (10)",
    )
    parser.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="default: table"
    )
    parser.set_defaults(run=run)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Inputs:
    documents: list[dict[str, Any]]  # applied in the file's order
    podcliquesets: list[PodCliqueSet]
    backends: list[str]  # the backends they use: their schedulers run


def inputs(path: Path, backend: str | None) -> Inputs:
    """The file's documents, each PodCliqueSet valid as admission would find it (offline)
    and on ``backend`` when given; FieldErrors otherwise."""
    config = read_offline_config(None)
    if backend is not None and backend not in config.profiles:
        enabled = ", ".join(config.enabled)
        raise FieldErrors([FieldError(field="--backend", reason=f"not one of {enabled}")])
    documents = read_documents(path)
    for doc in documents:
        doc.setdefault("metadata", {})
        if doc.get("kind") == "PodCliqueSet":
            doc["metadata"].setdefault("namespace", "default")
            if backend is not None:
                _on_scheduler(doc, config.profiles[backend].scheduler_name)
    manifests = Manifests.from_documents(documents)
    podcliquesets = manifests.some_podcliquesets(path)
    for pcs in podcliquesets:
        manifests.plan(pcs)  # admission's structural checks, offline: FieldErrors
    used = {config.backend_for(pcs) for pcs in podcliquesets}  # FieldErrors: no backend
    return Inputs(documents, podcliquesets, sorted(used))


def _on_scheduler(doc: dict[str, Any], scheduler_name: str) -> None:
    for clique in doc.get("spec", {}).get("template", {}).get("cliques") or []:
        pod_spec = clique.get("spec", {}).get("podSpec")
        if isinstance(pod_spec, dict):
            pod_spec["schedulerName"] = scheduler_name


@dataclass(frozen=True)
class Placed:
    """One gang's answer."""

    name: str
    placed: bool
    reason: str
    message: str
    nodes: list[str]
    domains: dict[str, list[str]]  # topology level → the domains its pods landed in


@dataclass(frozen=True)
class Answer:
    namespace: str
    name: str
    refused: str = ""  # admission's words
    gangs: list[Placed] = field(default_factory=list)

    @property
    def placed(self) -> bool:
        return not self.refused and all(g.placed for g in self.gangs)


def decided(gang: GangState, waiting: dict[str, GangState]) -> bool:
    """The scheduler's verdict is in (or the backend's), or the gang waits for a base gang
    that has one: nothing more will happen on these nodes."""
    if gang.placed or gang.reason not in why.NOT_TRIED:
        return True
    base = waiting.get(gang.waiting_on)
    return base is not None and decided(base, {})


def _answer(workload: Workload, nodes: dict[str, dict[str, str]]) -> list[Placed]:
    """Each gang as ``gangway why`` read it, with the topology domains of its nodes."""
    return [
        Placed(
            gang.name,
            gang.placed,
            gang.reason,
            gang.message,
            list(gang.nodes),
            {
                level: found
                for level, key in TOPOLOGY_LABELS.items()
                if level != "host"
                and (found := sorted({nodes.get(n, {}).get(key, "") for n in gang.nodes} - {""}))
            },
        )
        for gang in workload.gangs
    ]


async def _place(kubeconfig: Path, given: Inputs, within: float, settle: float) -> list[Answer]:
    async with Kube(await api_client(kubeconfig)) as kube:
        refused = await _apply(kube, given)
        listed = msgspec.json.decode(await kube.request("GET", NODES.path()))
        nodes = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in listed["items"]}
        applied = [p for p in given.podcliquesets if _key(p) not in refused]
        workloads = await until_decided(kube, applied, within, settle)
        answers = [Answer(w.namespace, w.name, gangs=_answer(w, nodes)) for w in workloads]
    return answers + [
        Answer(p.metadata.namespace, p.metadata.name, refused=refused[_key(p)])
        for p in given.podcliquesets
        if _key(p) in refused
    ]


async def until_decided(
    kube: Kube, applied: list[PodCliqueSet], within: float, settle: float
) -> list[Workload]:
    """The workloads once every gang is decided and has stayed so — its reason and its
    pods on nodes — ``settle`` seconds, or as they stand after ``within`` (said: the
    undecided gangs then say what they wait on)."""
    deadline = time.monotonic() + within
    last: dict[str, tuple[tuple[str, str, int], ...]] = {}
    steady_since = time.monotonic()
    while True:
        workloads = [await read(kube, p.metadata.namespace, p.metadata.name) for p in applied]
        now = {
            f"{w.namespace}/{w.name}": tuple((g.name, g.reason, len(g.nodes)) for g in w.gangs)
            for w in workloads
        }
        if now != last:
            last, steady_since = now, time.monotonic()
            say(f"  {_progress(workloads)}")
        settled = all(
            w.gangs and all(decided(g, {x.name: x for x in w.gangs}) for g in w.gangs)
            for w in workloads
        )
        if settled and time.monotonic() - steady_since >= settle:
            return workloads
        if time.monotonic() > deadline:
            say(f"no verdict on every gang within {within:.0f} s: answering as things stand")
            return workloads
        await asyncio.sleep(0.5)


def _key(pcs: PodCliqueSet) -> str:
    return f"{pcs.metadata.namespace}/{pcs.metadata.name}"


def _progress(workloads: list[Workload]) -> str:
    gangs = [g for w in workloads for g in w.gangs]
    placed = sum(g.placed for g in gangs)
    return f"{placed} of {len(gangs)} gangs placed"


async def _apply(kube: Kube, given: Inputs) -> dict[str, str]:
    """Apply every document (namespaces first); the PodCliqueSets admission refused, by
    NAMESPACE/NAME, with its words."""
    for namespace in sorted({p.metadata.namespace for p in given.podcliquesets}):
        made: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace"}
        await apply(kube, NAMESPACES, {**made, "metadata": {"name": namespace}}, FIELD_MANAGER)
    refused = {}
    for doc in map(_placement_only, given.documents):
        resource = await _resource_of(kube, doc)
        try:
            await apply(kube, resource, doc, FIELD_MANAGER)
        except KubeError as exc:
            if doc.get("kind") != "PodCliqueSet":
                raise
            meta = doc["metadata"]
            refused[f"{meta['namespace']}/{meta['name']}"] = str(exc)
    return refused


def _placement_only(doc: dict[str, Any]) -> dict[str, Any]:
    """A PodCliqueSet without its Kueue LocalQueue: what-if asks where its gangs would be
    placed, not whether a queue's quota admits them now (no Kueue runs here)."""
    labels = (doc.get("metadata") or {}).get("labels") or {}
    if doc.get("kind") != "PodCliqueSet" or kueue.QUEUE_LABEL not in labels:
        return doc
    kept = {k: v for k, v in labels.items() if k != kueue.QUEUE_LABEL}
    return {**doc, "metadata": {**doc["metadata"], "labels": kept}}


async def _resource_of(kube: Kube, doc: dict[str, Any]) -> ApiResource:
    """The resource of a document's kind, by the API server's discovery."""
    api_version = str(doc.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    path = f"/apis/{api_version}" if group else f"/api/{version}"
    listed = msgspec.json.decode(await kube.request("GET", path))
    for found in listed.get("resources") or []:
        if found.get("kind") == doc.get("kind") and "/" not in found["name"]:
            return ApiResource(group, version, found["name"], namespaced=found["namespaced"])
    raise KubeError(404, "NotFound", f"{api_version} {doc.get('kind')}: not served")


def _pools(args: argparse.Namespace) -> list[NodePool]:
    if args.capacity is not None:
        return read_capacity(args.capacity)
    return asyncio.run(_cluster_nodes(args.kubeconfig))


async def _cluster_nodes(kubeconfig: Path | None) -> list[NodePool]:
    async with Kube(await api_client(kubeconfig)) as kube:
        listed = msgspec.json.decode(await kube.request("GET", NODES.path()))
    return pools_like(listed["items"])


def whatif(given: Inputs, pools: list[NodePool], timeout: float, settle: float) -> list[Answer]:
    """The local cluster, Gangway on it, the workload through it; all gone on return."""
    with ExitStack() as stack:
        local, _, _ = scratch_gangway(stack, "gangway-whatif-", given.backends, say, pools)
        say("applying the workload; waiting for the scheduler's verdict…")
        answers = asyncio.run(_place(local.cp.kubeconfig, given, timeout, settle))
        say("stopping…")
    return answers


def show(answers: list[Answer], out: TextIO) -> None:
    for answer in answers:
        head = f"{answer.namespace}/{answer.name}"
        if answer.refused:
            out.write(f"{head}: refused at admission: {answer.refused}\n")
            continue
        placed = sum(g.placed for g in answer.gangs)
        out.write(f"{head}: {placed} of {len(answer.gangs)} gangs would be placed\n")
        rows = [
            (
                g.name,
                "yes" if g.placed else "no",
                str(len(g.nodes)),
                " ".join(f"{k}={','.join(v)}" for k, v in g.domains.items()) or "-",
                g.reason,
            )
            for g in answer.gangs
        ]
        out.write("\n".join(table(("gang", "placed", "nodes", "domains", "reason"), rows)) + "\n")
        for gang in answer.gangs:
            if not gang.placed:
                out.write(f"\n{gang.name}: {gang.reason}\n  {gang.message}\n")


def run(args: argparse.Namespace) -> int:
    try:
        given = inputs(args.file, args.backend)
    except FieldErrors as exc:
        return print_errors(exc.errors)
    try:
        pools = _pools(args)
    except FieldErrors as exc:
        return print_errors(f"--capacity {args.capacity}: {e}" for e in exc.errors)
    except (KubeError, OSError) as exc:
        print(f"whatif: the nodes of the cluster: {exc}", file=sys.stderr)
        return 1
    try:
        answers = whatif(given, pools, args.timeout, args.settle)
    except (RuntimeError, TimeoutError, KubeError, OSError) as exc:
        print(f"whatif: the local cluster could not run it: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        json.dump([asdict(a) for a in answers], sys.stdout, indent=2)
        print()
    else:
        show(answers, sys.stdout)
    return 0 if all(a.placed for a in answers) else EXIT_NOT_PLACED
