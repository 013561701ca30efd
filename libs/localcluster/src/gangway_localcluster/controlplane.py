"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager.

The API server runs with the Workload API switched on (feature gates plus the runtime
config of its minor), RBAC authorization and client-certificate authentication; the
controller manager runs the garbage collector and the namespace controller, so owner
references cascade and namespaces finish deleting as on a real cluster. No kubelet and
no scheduler: pods stay unscheduled unless a test binds them.

    with ControlPlane.start() as cp:
        print(cp.kubeconfig)
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import Any, Final

import yaml

from gangway_localcluster import processes
from gangway_localcluster.build import Binaries, ensure_binaries
from gangway_localcluster.certs import CertificateAuthority, KeyPair, signing_key_pair

# The Workload API version each Kubernetes minor serves (each alpha replaced the previous
# one without conversion, so a control plane pins one minor).
WORKLOAD_API: Final = {35: "v1alpha1", 36: "v1alpha2"}
FEATURE_GATES: Final = "GenericWorkload=true,GangScheduling=true"
SERVICE_CIDR: Final = "10.0.0.0/24"
ADMIN_USER: Final = "gangway-admin"
FIELD_MANAGER: Final = "gangway-localcluster"


class APIError(RuntimeError):
    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {message}")


@dataclass(kw_only=True)
class ControlPlane(processes.Supervised):
    server: str
    kubeconfig: Path
    binaries: Binaries
    workload_api_version: str
    _client_ca: CertificateAuthority
    _ca_pem: bytes
    _admin: KeyPair
    _etcd_url: str = ""

    # --- lifecycle ----------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        binaries: Binaries | None = None,
        workdir: Path | None = None,
        controller_manager: bool = True,
        crds: Iterable[Path] = (),
    ) -> ControlPlane:
        """Start everything; ``crds`` are installed before the controller manager starts,
        so its garbage collector watches them from its first discovery (else ~30 s later)."""
        binaries = binaries or ensure_binaries()
        minor = int(binaries.version.split(".")[1])
        if minor not in WORKLOAD_API:
            known = ", ".join(f"1.{m}" for m in sorted(WORKLOAD_API))
            raise RuntimeError(f"Kubernetes {binaries.version}: Workload API known for {known}")
        owns = workdir is None
        workdir = workdir or Path(tempfile.mkdtemp(prefix="gangway-cp-"))
        pki = workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)

        serving_ca = CertificateAuthority("gangway-local-serving-ca")
        client_ca = CertificateAuthority("gangway-local-client-ca")
        (pki / "serving-ca.crt").write_bytes(serving_ca.cert_pem)
        (pki / "client-ca.crt").write_bytes(client_ca.cert_pem)
        serving_ca.issue("kube-apiserver", hosts=("127.0.0.1", "localhost"), server=True).write(
            pki, "apiserver"
        )
        _, sa_key = signing_key_pair().write(pki, "sa-signer")
        admin = client_ca.issue(ADMIN_USER, orgs=("system:masters",))

        cp = cls(
            workdir=workdir,
            server="",
            kubeconfig=workdir / "kubeconfig",
            binaries=binaries,
            workload_api_version=WORKLOAD_API[minor],
            _client_ca=client_ca,
            _ca_pem=serving_ca.cert_pem,
            _admin=admin,
            _owns_workdir=owns,
        )
        try:
            cp._etcd_url = cp._start_etcd()
            cp._start_apiserver()
            cp.kubeconfig.write_text(cp._kubeconfig_text(admin, ADMIN_USER))
            cp.kubeconfig.chmod(0o600)
            cp.install_crds(crds)
            if controller_manager:
                cp._start_controller_manager(sa_key)
        except BaseException:
            cp.stop()
            raise
        return cp

    def _start_etcd(self) -> str:
        for _ in range(3):
            client, peer = processes.free_port(), processes.free_port()
            url = f"http://127.0.0.1:{client}"
            child = processes.start(
                "etcd",
                [
                    self.binaries.etcd,
                    f"--data-dir={self.workdir / 'etcd'}",
                    f"--listen-client-urls={url}",
                    f"--advertise-client-urls={url}",
                    f"--listen-peer-urls=http://127.0.0.1:{peer}",
                    f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                    f"--initial-cluster=default=http://127.0.0.1:{peer}",
                    "--unsafe-no-fsync=true",  # test data: durability buys nothing here
                    "--log-level=warn",
                ],
                self.workdir / "logs" / "etcd.log",
            )
            try:
                processes.wait_until(
                    partial(processes.http_ok, f"{url}/health"), child, "health", 30
                )
            except RuntimeError:
                continue  # a port was taken between choosing and binding: choose again
            self._children.append(child)
            return url
        raise RuntimeError("etcd did not start on a free port in 3 tries")

    def _start_apiserver(self, port: int | None = None) -> None:
        """On a free port, or on ``port`` again after a restart (clients keep their URL)."""
        pki = self.workdir / "pki"
        cert, key = pki / "apiserver.crt", pki / "apiserver.key"
        sa_pub, sa_key = pki / "sa-signer.crt", pki / "sa-signer.key"
        for _ in range(1 if port else 3):
            chosen = port or processes.free_port()
            server = f"https://127.0.0.1:{chosen}"
            child = processes.start(
                "kube-apiserver",
                [
                    self.binaries.kube_apiserver,
                    f"--etcd-servers={self._etcd_url}",
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",
                    f"--secure-port={chosen}",
                    f"--tls-cert-file={cert}",
                    f"--tls-private-key-file={key}",
                    f"--cert-dir={self.workdir / 'apiserver-certs'}",
                    f"--client-ca-file={pki / 'client-ca.crt'}",
                    "--authorization-mode=RBAC",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                    f"--service-account-issuer={server}",
                    f"--service-account-key-file={sa_pub}",
                    f"--service-account-signing-key-file={sa_key}",
                    # No controller creates default ServiceAccounts for pods here (as envtest).
                    "--disable-admission-plugins=ServiceAccount",
                    "--allow-privileged=true",
                    f"--feature-gates={FEATURE_GATES}",
                    f"--runtime-config=scheduling.k8s.io/{self.workload_api_version}=true",
                ],
                self.workdir / "logs" / "kube-apiserver.log",
            )
            self.server = server
            try:
                processes.wait_until(self._ready, child, "/readyz", 90)
            except RuntimeError:
                continue
            self._children.append(child)
            return
        raise RuntimeError("kube-apiserver did not start on a free port in 3 tries")

    def restart_apiserver(self) -> None:
        """Stop the API server and start it again on the same port: every watch breaks and
        the watch cache starts empty, as in a real control-plane upgrade."""
        child = next(c for c in self._children if c.name == "kube-apiserver")
        child.stop()
        self._children.remove(child)
        self._start_apiserver(port=int(self.server.rsplit(":", 1)[1]))

    @property
    def _controllers(self) -> list[str]:
        """Owner-reference GC and namespace deletion; from 1.36 also the controller that
        lifts the protection finalizer of deleted PodGroups (else they never go away)."""
        found = ["garbage-collector-controller", "namespace-controller"]
        if self.workload_api_version == "v1alpha2":
            found.append("podgroup-protection-controller")
        return found

    def _start_controller_manager(self, sa_key: Path) -> None:
        child = processes.start(
            "kube-controller-manager",
            [
                self.binaries.kube_controller_manager,
                f"--kubeconfig={self.kubeconfig}",
                f"--controllers={','.join(self._controllers)}",
                "--leader-elect=false",
                "--secure-port=0",
                f"--service-account-private-key-file={sa_key}",
                "--use-service-account-credentials=false",
                f"--feature-gates={FEATURE_GATES}",
            ],
            self.workdir / "logs" / "kube-controller-manager.log",
        )
        # It has no endpoint to poll with --secure-port=0: alive after a moment is enough;
        # the GC proof test shows it working.
        time.sleep(0.5)
        if not child.alive():
            raise RuntimeError(f"kube-controller-manager exited:\n{child.log_tail()}")
        self._children.append(child)

    # --- access -------------------------------------------------------------------------

    def _kubeconfig_text(self, pair: KeyPair, user: str) -> str:
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "gangway-local",
                        "cluster": {
                            "server": self.server,
                            "certificate-authority-data": b64(self._ca_pem),
                        },
                    }
                ],
                "users": [
                    {
                        "name": user,
                        "user": {
                            "client-certificate-data": b64(pair.cert_pem),
                            "client-key-data": b64(pair.key_pem),
                        },
                    }
                ],
                "contexts": [
                    {"name": "gangway-local", "context": {"cluster": "gangway-local", "user": user}}
                ],
                "current-context": "gangway-local",
            },
            sort_keys=False,
        )

    def user_kubeconfig(self, user: str, groups: Iterable[str] = ()) -> Path:
        """A kubeconfig for another identity (RBAC tests): a client cert, CN user, O groups."""
        pair = self._client_ca.issue(user, orgs=tuple(groups))
        path = self.workdir / f"kubeconfig-{user.replace(':', '_')}"
        path.write_text(self._kubeconfig_text(pair, user))
        path.chmod(0o600)
        return path

    @cached_property
    def _ssl_context(self) -> ssl.SSLContext:
        """The admin's TLS context, built once: readiness polls reuse it every 100 ms."""
        context = ssl.create_default_context(cadata=self._ca_pem.decode())
        cert, key = self._admin.write(self.workdir / "pki", "admin")
        context.load_cert_chain(cert, key)
        return context

    def _ready(self) -> bool:
        try:
            status, _ = self.request("GET", "/readyz")
        except (OSError, ssl.SSLError, APIError):
            return False
        return status == 200

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """One admin request; JSON (or text) back; raises APIError for 4xx/5xx."""
        host, port = self.server.removeprefix("https://").split(":")
        conn = http.client.HTTPSConnection(host, int(port), context=self._ssl_context, timeout=30)
        try:
            payload = (
                None
                if body is None
                else (body if isinstance(body, (bytes, str)) else json.dumps(body))
            )
            conn.request(method, path, body=payload, headers={"Content-Type": content_type})
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        try:
            data: Any = json.loads(raw) if raw else None
        except ValueError:
            data = raw.decode(errors="replace")
        if response.status >= 400:
            raise APIError(response.status, data)
        return response.status, data

    # --- CRDs ---------------------------------------------------------------------------

    def install_crds(self, paths: Iterable[Path], timeout: float = 60.0) -> list[str]:
        """Server-side apply every CRD in the files, then wait until each is Established."""
        names = []
        for path in paths:
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                name = doc["metadata"]["name"]
                # Server-side apply: Grove's large CRDs exceed client-side apply's annotation.
                self.request(
                    "PATCH",
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                    f"{name}?fieldManager={FIELD_MANAGER}&force=true",
                    json.dumps(doc),
                    content_type="application/apply-patch+yaml",
                )
                names.append(name)
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending:
            for name in sorted(pending):
                _, crd = self.request(
                    "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                )
                # A just-created CRD may report `conditions: null` before the controller fills it.
                conditions = (crd.get("status") or {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    pending.discard(name)
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"CRDs not established after {timeout:.0f}s: {sorted(pending)}")
            if pending:
                time.sleep(0.1)
        return names
