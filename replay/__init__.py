"""rmreplay's log side: parse DUCC rm.log files into typed tables (and rebuild scheduler inputs).

    from replay import parse, write_tables
    result = parse(["rm.log"])          # result.tables: table name -> polars DataFrame
    write_tables(result.tables, "out")  # out/<table>.parquet
"""

from replay.parsing.pipeline import ParseResult, Summary, parse
from replay.parsing.sources import InputError
from replay.parsing.store import read_tables, write_tables
from replay.progress import OnProgress, Progress

__all__ = ["InputError", "OnProgress", "ParseResult", "Progress", "Summary", "parse", "read_tables", "write_tables"]
