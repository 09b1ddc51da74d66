"""rmreplay's log side: parse DUCC rm.log files into typed tables (and rebuild scheduler inputs).

    from replay import parse, write_tables
    result = parse(["rm.log"])          # result.tables: table name -> polars DataFrame
    write_tables(result.tables, "out")  # out/<table>.parquet
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from replay.parsing.sources import InputError
from replay.progress import OnProgress, Progress

if TYPE_CHECKING:
    from replay.parsing.pipeline import ParseResult, Summary, parse
    from replay.parsing.store import read_tables, write_tables

# the parse pipeline (lark, pyarrow.compute) and the store load on first use: a command that
# reads tables already parsed (the TUI's first screen, a stored audit) does not pay for them
_LAZY = {"ParseResult": "replay.parsing.pipeline", "Summary": "replay.parsing.pipeline",
         "parse": "replay.parsing.pipeline", "read_tables": "replay.parsing.store",
         "write_tables": "replay.parsing.store"}


def __getattr__(name: str) -> Any:
    """The parse's names, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value

__all__ = ["InputError", "OnProgress", "ParseResult", "Progress", "Summary", "parse", "read_tables", "write_tables"]
