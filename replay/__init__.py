"""rmreplay's log side: parse DUCC rm.log files into typed tables (and rebuild scheduler inputs).

    from replay import parse, write_tables
    result = parse(["rm.log"])          # result.tables: table name -> polars DataFrame
    write_tables(result.tables, "out")  # out/<table>.parquet
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay.parsing.pipeline import ParseResult, Summary, parse
    from replay.parsing.sources import InputError
    from replay.parsing.store import read_tables, write_tables
    from replay.progress import OnProgress, Progress

# loaded on first use: `import replay.cli` sets the allocators before polars loads, and a command that
# reads tables already parsed (the TUI's first screen, a stored audit) never loads the parse pipeline
_HOMES = {"ParseResult": "replay.parsing.pipeline", "Summary": "replay.parsing.pipeline",
          "parse": "replay.parsing.pipeline", "InputError": "replay.parsing.sources",
          "read_tables": "replay.parsing.store", "write_tables": "replay.parsing.store",
          "OnProgress": "replay.progress", "Progress": "replay.progress"}

__all__ = ["InputError", "OnProgress", "ParseResult", "Progress", "Summary", "parse", "read_tables", "write_tables"]


def __getattr__(name: str) -> Any:
    """The public names, imported from their modules when first asked for."""
    if name not in _HOMES:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value  # asked for once
    return value
