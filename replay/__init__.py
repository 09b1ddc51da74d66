"""rmreplay's log side: parse DUCC rm.log files into typed tables (and, later, replay them)."""

from replay.pipeline import ParseResult, Summary, parse
from replay.sources import InputError

__all__ = ["InputError", "ParseResult", "Summary", "parse"]
