"""The fields of a headless Service that Gangway's services read (the one podgang makes per
PodCliqueSet replica, for pods to find each other by name as under Grove, and per clique
that others start after, for them to see its ready pods)."""

from __future__ import annotations

from typing import Final

from gangway_contracts.k8s import ObjectMeta, Wire

# Grove's value of app.kubernetes.io/component on a replica's headless Service.
COMPONENT_HEADLESS_SERVICE: Final = "pcs-headless-service"
# Gangway's own: the headless Service of a clique other cliques start after, listing only
# its ready pods (startup order; Grove has none, its init container asks the API server).
COMPONENT_READY_SERVICE: Final = "pclq-ready-service"
# The cluster domain Grove's addresses name (GROVE_HEADLESS_SERVICE), and the local
# cluster's DNS serves: a cluster with another domain resolves the Service by its short
# name (the pod's search path) all the same.
CLUSTER_DOMAIN: Final = "cluster.local"


class ServiceSpecView(Wire, frozen=True, kw_only=True):
    selector: dict[str, str] = {}
    publish_not_ready_addresses: bool = False


class Service(Wire, frozen=True, kw_only=True):
    metadata: ObjectMeta
    spec: ServiceSpecView = ServiceSpecView()
    api_version: str = "v1"
    kind: str = "Service"
