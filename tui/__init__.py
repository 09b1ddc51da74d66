"""Textual browser for parsed rm.log tables (see issue 4)."""
