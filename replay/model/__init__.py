"""The cycle model: what the RM knew at each cycle (world), its logged decisions, and DUCC resources folders."""
