"""The machines: those there before the log began (inventory, stated; solver, inferred) and their liveness."""
