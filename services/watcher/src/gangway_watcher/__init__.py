"""Mirrors Kubernetes objects (PodCliqueSets, PodGangs, pods, backend resources) onto JetStream:
the only list/watch on the API server.
"""
