"""The machines: those there before the log began (inventory: stated; evidence, counts, solver:
inferred from the counters) and their liveness cycle by cycle."""
