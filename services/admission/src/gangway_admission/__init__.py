"""The validating webhook for PodCliqueSets: structural checks, scheduler resolution, backend
validation over NATS.
"""
