"""Textual browser for parsed rm.log tables: `rmreplay tui`, a log cycle by cycle."""
