"""The compiled table builders, in one registry: which buckets of a chunk's unframed rows each owns
(every bucket of columns.COMPILED_TABLES the compiled readers leave unframed, one owner each), and
its build. assemble.assemble_chunk runs them all; what a builder does not take whole it frames for
the reference steps."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from replay.parsing import columns_boot, columns_schedule, columns_small, columns_text
from replay.parsing.built import Builder, Built
from replay.parsing.columns import COMPILED_TABLES, Unframed, compiled_table, frames_of
from replay.parsing.columns_plain import Records
from replay.parsing.scan import RawRows

# the buckets of the tables columns.py builds one per bucket (columns._BUILDERS, `compiled_table`)
PER_BUCKET = ("_cap_lines", "_defrag_lines", "jobs", "processes", "nodes", "job_events", "counts", "evictions",
              "_eviction_count_lines", "allotments", "expansions")


def per_bucket(raw: Mapping[str, Sequence[Unframed]], recs: Records | None, framed: Collection[str] = ()) -> Built:
    """The tables columns.py builds from one bucket each (`framed`: unused, each bucket stands alone)."""
    out = Built()
    for bucket, parts in raw.items():
        rows = [r for r in parts if isinstance(r, RawRows)]
        table = compiled_table(bucket, rows, recs)
        if table is None:  # the C code left this chunk to the reference step
            out.frames[bucket] = [frames_of(rows)]
        else:
            out.tables[COMPILED_TABLES[bucket]] = table
    return out


BUILDERS: tuple[Builder, ...] = (
    Builder(columns_schedule.BUCKETS, columns_schedule.build),  # schedule, placements, rmcounter, occupancy
    Builder((columns_text.BUCKET,), columns_text.build),  # messages
    Builder(columns_small.BUCKETS, columns_small.build),  # pool_tables, the cycles' rows
    Builder(columns_boot.BUCKETS, columns_boot.build),  # the config, classes and nodepools rows
    Builder(PER_BUCKET, per_bucket),
)
