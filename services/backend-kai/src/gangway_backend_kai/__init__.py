"""The kai-scheduler backend: PodGang to KAI PodGroup, pod preparation and validation over NATS."""
