"""The cycle model: what the RM knew at each cycle (start, assembly), its logged decisions, DUCC resources."""
