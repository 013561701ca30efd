"""The default-scheduler backend: PodGang to Workload API objects, pod preparation and validation
over NATS.
"""
