"""The koordinator backend: PodGang to Koordinator gangs (one PodGroup per podgroup, all of a
PodGang in one GangGroup), pod preparation and validation over NATS."""
