"""The DUCC RM oracle: run the real RM on generated scenarios and diff rmreplay against it."""
