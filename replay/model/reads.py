"""The columns the audit reads (replay.model and replay.apps.audit), table by table.

`rmreplay audit` keeps only these while it parses, so a long log's tables take a fraction of the
memory (a table's text and the generic messages are not read). A column
left out here that the model does read fails loudly (polars' ColumnNotFoundError), never silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from replay.parsing.store import ParquetTables
from replay.parsing.tables import SCHEMAS

WHERE = ("cycle", "file", "line")

AUDIT_READS: dict[str, tuple[str, ...]] = {
    "cycles": ("cycle", "file", "line", "started", "epoch", "ts_end"),
    # short_name: a node rule's round names the host by it (replay.model.release, replay.model.conflicts)
    "nodes": (*WHERE, "host", "event", "nodepool", "share_order", "memory_mb", "ip", "job_id", "work_type", "count",
              "down", "short_name"),
    "job_caps": (*WHERE, "job_id", "user", "order", "base_cap", "expected_cap", "potential_cap", "actual_cap",
                 "prj_kind", "init_wait"),
    "counts": (*WHERE, "job_id", "class", "shares_given", "order", "policy", "kind", "nodepool", "type_code",
               "shares", "reason"),
    "placements": (*WHERE, "job_id", "host", "share_id", "order", "kind", "placed_for", "m_order", "memory_mb"),
    "evictions": (*WHERE, "job_id", "host", "share_id", "order", "reason", "nodepool", "work_type"),
    "eviction_counts": (*WHERE, "job_id", "nodepool", "block", "counted", "current", "needed", "order"),
    "defrag": (*WHERE, "job_id", "kind", "nodepool", "class", "user", "host", "share_id", "donor_job", "pure_fs",
               "counted", "needed", "order", "shares", "count", "potentially_needy", "nsh", "job_ids", "hosts"),
    "schedule": (*WHERE, "job_id", "work_type", "memory_gb", "reason", "kind", "host", "share_id", "init_ms",
                 "purged", "refused"),
    "jobs": (*WHERE, "job_id", "source", "type_code", "user", "class", "shares", "order", "threads", "memory_gb",
             "remaining", "init_wait", "max_processes"),
    "job_events": (*WHERE, "job_id", "event", "state_from", "state_to", "total", "remaining", "max_processes",
                   "host", "share_id", "tag"),
    # the release's message forms (replay.model.release, `text`: getNodepoolByName's `add by rule`, read
    # only on a log with node rule rounds); a class or method with a bad byte, and the Orchestrator
    # states the RM took before its first loop (replay.model.damage)
    "messages": ("cls", "method", "level", *WHERE, "text"),
    "processes": (*WHERE, "job_id", "event", "host", "share_id", "state_from", "state_to", "init_ms",
                  "share_order", "count"),
    "allotments": (*WHERE, "job_id", "kind", "memory_gb", "allotment_gb", "user"),
    "expansions": (*WHERE, "job_id", "kind", "nodepool", "counted", "current", "needed", "order", "host", "hosts",
                   "because"),
    "occupancy": (*WHERE, "nodepool", "host", "blacklisted", "order", "memory_mb", "jobs"),
    "unparsed": ("cycle", "file", "line", "reason", "text"),  # the damaged cycles (replay.model.damage)
}
# the bootstrap tables are small; the RmCounter blocks are read whole: the user order of each
# countUserShares block, the machines a counter apportioned (from which a log cut mid-stream sizes
# its nodes) and every weight, want and gift (a count divergence is explained from them)
AUDIT_WHOLE = ("config", "classes", "nodepools", "rmcounter")


def audit_columns() -> dict[str, tuple[str, ...]]:
    """Table -> the columns to keep for an audit (`replay.parse(..., columns=...)`)."""
    return {**AUDIT_READS, **{name: tuple(SCHEMAS[name]) for name in AUDIT_WHOLE}}


def narrow(tables: Mapping[str, pl.DataFrame], name: str, columns: Sequence[str]) -> pl.DataFrame:
    """Only `columns` of a table: read alone from disk where the tables are on disk, so a wide
    table (the RmCounter blocks' vectors) is not whole in memory for a narrow use."""
    if isinstance(tables, ParquetTables):
        return tables.narrow(name, columns)
    return tables[name].select(columns)


def where(tables: Mapping[str, pl.DataFrame], name: str, keep: pl.Expr) -> pl.DataFrame:
    """The rows of a table `keep` is true of: filtered as they are read where the tables are on
    disk, so a wide table (the RmCounter blocks' vectors) is not whole in memory for a few rows."""
    if isinstance(tables, ParquetTables):
        return tables.where(name, keep)
    return tables[name].filter(keep)
