"""Plans PodGangs from PodCliqueSets, creates pods behind the scheduling gate, initializes
PodGangs and lifts gates.
"""
