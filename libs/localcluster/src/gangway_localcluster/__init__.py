"""A real local control plane for tests and ``gangway up``: etcd, kube-apiserver and
kube-controller-manager built from Go modules (``build``), nats-server from PyPI, each
started on free loopback ports and stopped without leaving processes or files behind."""
