"""How a pod finds the others of its PodCliqueSet replica, exactly as under Grove's operator
(its user guide, "Environment variables for pod discovery", and ``operator/api/common``).
Pure.

- one headless Service per PodCliqueSet replica, ``<pcs>-<replica>``, selecting that
  replica's pods, listing them before they are ready unless ``headlessServiceConfig`` says
  otherwise;
- every pod's ``hostname`` is ``<podclique>-<pod index>`` (Gangway's pod name too) and its
  ``subdomain`` that Service, so ``<podclique>-<i>.<pcs>-<replica>.<namespace>.svc.<domain>``
  resolves to it;
- Grove's variables first in every container and init container, so that a template's
  ``$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-leader-0.$(GROVE_HEADLESS_SERVICE)`` expands (the
  kubelet expands ``$(VAR)`` in list order); a template variable of a reserved name is
  replaced, as Grove does.

Grove defines no ``GROVE_PCSG_POD_INDEX`` (checked at the commit its samples are pinned to):
none is made up here.
"""

from __future__ import annotations

from typing import Any, Final

from gangway_contracts import labels
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.services import CLUSTER_DOMAIN

PCS_NAME: Final = "GROVE_PCS_NAME"
PCS_INDEX: Final = "GROVE_PCS_INDEX"
PCLQ_NAME: Final = "GROVE_PCLQ_NAME"
HEADLESS_SERVICE: Final = "GROVE_HEADLESS_SERVICE"
PCLQ_POD_INDEX: Final = "GROVE_PCLQ_POD_INDEX"
PCSG_NAME: Final = "GROVE_PCSG_NAME"
PCSG_TEMPLATE_NUM_PODS: Final = "GROVE_PCSG_TEMPLATE_NUM_PODS"
PCSG_INDEX: Final = "GROVE_PCSG_INDEX"


def service_name(pcs_name: str, replica: int) -> str:
    return f"{pcs_name}-{replica}"


def service_address(pcs_name: str, replica: int, namespace: str) -> str:
    return f"{service_name(pcs_name, replica)}.{namespace}.svc.{CLUSTER_DOMAIN}"


def _from_label(name: str, label: str) -> dict[str, Any]:
    """A variable the kubelet fills from one of the pod's own labels (Grove's way for the
    indices, so a pod's variables say what its labels say)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def variables(
    pcs: PodCliqueSet,
    replica: int,
    podclique: str,
    scaling_group: str | None = None,
    scaling_group_pods: int = 0,
) -> list[dict[str, Any]]:
    """Grove's variables for a pod of ``podclique`` (its full name) in PodCliqueSet replica
    ``replica``, in Grove's order; a scaling-group member's add the group's full name, the
    number of pods its template makes, and its replica index."""
    meta = pcs.metadata
    found: list[dict[str, Any]] = [
        {"name": PCS_NAME, "value": meta.name},
        {"name": PCS_INDEX, "value": str(replica)},
        {"name": PCLQ_NAME, "value": podclique},
        {"name": HEADLESS_SERVICE, "value": service_address(meta.name, replica, meta.namespace)},
        _from_label(PCLQ_POD_INDEX, labels.POD_INDEX),
    ]
    if scaling_group is not None:
        found += [
            _from_label(PCSG_NAME, labels.SCALING_GROUP),
            {"name": PCSG_TEMPLATE_NUM_PODS, "value": str(scaling_group_pods)},
            _from_label(PCSG_INDEX, labels.SCALING_GROUP_REPLICA_INDEX),
        ]
    return found


def with_variables(containers: list[dict[str, Any]], first: list[dict[str, Any]]) -> None:
    """Put ``first`` at the head of every container's ``env``, dropping the container's own
    variables of those names."""
    reserved = {v["name"] for v in first}
    for container in containers:
        own = [v for v in container.get("env") or [] if v.get("name") not in reserved]
        container["env"] = [*first, *own]
