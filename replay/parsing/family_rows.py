"""A chunk's records read into rows, family by family, by the fastest path that takes each: the
compiled scanner's templates and readers, then polars' regexes and handlers, then lark, which
decides (every family's rows as the grammar gives them: tests/integration/test_engines.py)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing import boot_scan, fast
from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES, GENERIC, MULTILINE, TARGETS
from replay.parsing.records import Records, full_bodies
from replay.parsing.sectioned import FAMILY as SECTIONS
from replay.parsing.sectioned import with_sections
from replay.parsing.scan import (RecordArrays, fill_rows, occupancy_rows, occupancy_scan, rmcounter_at,
                                 rmcounter_rows, schedule_rows, schedule_scan, section_rows)
from replay.parsing.arrays import numeric
from replay.parsing.scanned import header_strings, with_strings, word_column
from replay.parsing.tables import series_from_arrow
from replay.parsing import columns_text
from replay.parsing.columns import Unframed, compiled_buckets, frames_of
from replay.parsing.columns_expansions import merged_rows
from replay.parsing.columns_schedule import BlockRows
from replay.parsing.pools import pool_rows, pool_scan, taken_all


# every family whose rows make the rmcounter table (the scanner may assemble them all itself)
_RMCOUNTER_FAMILIES = [f for f, targets in TARGETS.items() if any(t.table == "_rmcounter_lines" for t in targets)]
# the columns the family paths read: partitioning fewer columns copies less
_SLIM = ("rec", "family", "body", "_piece", "_bs", "_be")


def _by_code(families: Sequence[str]) -> np.ndarray:
    """Per family code (-1, no family, last): whether it is one of `families`."""
    out = np.zeros(len(FAMILY_NAMES) + 1, dtype=bool)
    out[[FAMILY_CODE[f] for f in families]] = True
    return out


_RMCOUNTER = _by_code(_RMCOUNTER_FAMILIES)


@lru_cache(maxsize=4)
def _unread(assembled: frozenset[str]) -> np.ndarray:
    """Per family code (-1, no family, last): whether its records are left to read once the families
    `assembled` are read whole."""
    out = ~_by_code(list(assembled))
    out[-1] = False
    return out


def parse_families(
    records: pl.DataFrame, recs: Records, engine: str
) -> tuple[dict[str, list[pl.DataFrame]], list[pl.DataFrame], dict[str, list[Unframed]]]:
    """Every family's rows, by bucket; the records none could read; and the rows of the compiled
    tables' buckets unframed (replay.parsing.columns), when the scanner took all of them. The
    records are chosen by their family codes in numpy and taken by index, once (a polars filter
    or partition is a query, and a chunk ran dozens)."""
    buckets: dict[str, list[pl.DataFrame]] = {}
    raw: dict[str, list[Unframed]] = {}
    unparsed: list[pl.DataFrame] = []
    codes = np.ascontiguousarray(records["_code"].to_numpy(), np.int32)
    if (codes < 0).any():
        unknown = records[np.flatnonzero(codes < 0)]
        unparsed.append(with_strings(recs, unknown, ["cls", "method"]).select(
            "rec", reason=pl.concat_str(pl.lit("known message "), "cls", pl.lit("."), "method",
                                        pl.lit(" with a body of no known shape"))))
    assembled: frozenset[str] = frozenset()
    cols = RecordArrays.of(records) if engine == "fast" and recs.blocks and "_bs" in records.columns else None
    if engine == "fast" and recs.blocks:
        assembled, raw, taken = _scanned(records, recs, buckets, codes, cols)
        # the records still to read: of a family (code -1 reads as the table's last, none), not assembled
        # whole, not taken by the templates (one table lookup per record, not a pass per condition)
        at = np.flatnonzero(_unread(assembled)[codes] > taken)
    else:
        at = np.flatnonzero(codes >= 0)
    # the bodies of the records still to read (the scanner's records carry none: built for these only)
    kept, generic = columns_text.take_generic(records["rec"].to_numpy()[at], codes[at], recs)
    if kept is not None:  # the messages table typed in C: no body, no frame
        raw.setdefault(columns_text.BUCKET, []).append(kept)
        at = at[~generic]
    parts = _partition(records, recs, at, codes[at], cols)
    if "jobs" in raw and SECTIONS in parts:  # the DEBUG schedule's rows join the jobs typed in C
        joined = with_sections(raw["jobs"], parts[SECTIONS], recs.continuations, recs.blocks)
        if joined is not None:
            raw["jobs"] = [joined]
            del parts[SECTIONS]
    if engine == "fast" and recs.blocks:
        _take_unframed(parts, recs, raw, records)  # all the chunk's records: the positions fill_rows' rows are in
    parts = {family: _worded(part, recs, family) for family, part in parts.items()}  # what the text readers get
    if GENERIC in parts:
        buckets.setdefault("messages", []).append(full_bodies(parts.pop(GENERIC), recs.continuations))
    for family, (rows, failed) in _family_rows(parts, recs, engine).items():
        if failed.height:  # (rec, reason): the grammar's own error message
            unparsed.append(failed)
        for target in TARGETS.get(family, []):
            consts = {**target.consts, "_family": family}
            buckets.setdefault(target.table, []).append(rows.hstack([
                pl.Series(k, [v], dtype=pl.String).new_from_index(0, rows.height) for k, v in consts.items()]))
    for bucket in [b for b in raw if b in buckets]:
        # some of the bucket's rows came from the regex or lark paths: the reference assembly takes
        # them all (the scanner's first, as `fill_rows` would have put them)
        buckets[bucket].insert(0, frames_of(raw.pop(bucket)))
    return buckets, unparsed, raw


def _scanned(records: pl.DataFrame, recs: Records, buckets: dict[str, list[pl.DataFrame]], codes: np.ndarray,
             cols: RecordArrays | None) -> tuple[frozenset[str], dict[str, list[Unframed]], np.ndarray]:
    """The records the compiled scanner reads whole: the RmCounter blocks, then every templated
    family in one pass (their rows framed into `buckets`, or unframed for the compiled tables);
    (the families assembled whole, the unframed rows by bucket, which records the templates took).
    `codes`: the records' family codes; `cols`: their columns as numpy (None: no body spans)."""
    assembled: frozenset[str] = frozenset()
    own: dict[str, list[Unframed]] = {}  # the compiled readers' rows the assembly types in C (columns_schedule)
    rmc = np.flatnonzero(_RMCOUNTER[codes])
    if "_rmcounter_rows" in compiled_buckets():
        got = rmcounter_at(cols, rmc, recs.blocks) if cols is not None else None
        if got is not None:
            rec = pl.Series("rec", cols.rec[rmc], dtype=pl.UInt32) if cols is not None else None
            own["_rmcounter_rows"] = [BlockRows("_rmcounter_rows", got[0], got[1], rec)]
            assembled = frozenset(_RMCOUNTER_FAMILIES)
    elif (ready := rmcounter_rows(records[rmc], recs.blocks)) is not None:
        buckets["_rmcounter_rows"] = [ready]
        assembled = frozenset(_RMCOUNTER_FAMILIES)
    # every single-line family with templates, in one pass; what they leave goes on
    filled, taken, fill_raw = fill_rows(records, recs.blocks, skip=assembled, raw=compiled_buckets(), arrays=cols)
    for table, rows in filled.items():
        buckets.setdefault(table, []).append(rows)
    return assembled, {**{b: list[Unframed](rows) for b, rows in fill_raw.items()}, **own}, taken


def _partition(records: pl.DataFrame, recs: Records, at: np.ndarray, codes: np.ndarray,
               cols: RecordArrays | None = None) -> dict[str, pl.DataFrame]:
    """The records at positions `at` (`codes`: their family codes) with the columns the family paths
    read (_SLIM; the body built for these only), one frame per family in the order each first
    appears, each in log order: one gather, then slices (polars' partition_by is a query). With
    the records' columns as numpy (`cols`) and every record spanned in a block, the frames hold the
    numbers only (_SPANNED): the compiled readers read no more, and `_worded` adds the text columns
    to the families left for the text readers."""
    if not at.size:
        return {}
    order = np.argsort(codes, kind="stable")  # a family's records together, in log order
    at, codes = at[order], codes[order]
    if cols is not None and "body" not in records.columns and cols.spanned[at].all() and cols.piece[at].min() >= 0:
        frame = _spanned(cols, at)
    else:
        frame = _slim(records, at, codes)
        if "body" not in records.columns:
            frame.insert_column(2, header_strings(recs, records["rec"].to_numpy()[at], ["body"])[0])
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], len(codes)]
    parts = {}
    for i in np.argsort(order[starts], kind="stable").tolist():  # by where each family first appears
        parts[FAMILY_NAMES[codes[starts[i]]]] = frame.slice(int(starts[i]), int(ends[i] - starts[i]))
    return parts


# the columns of a part the compiled readers read (the records' numbers and their body spans), as
# replay.parsing.scanned types them
_SPANNED = {"rec": pa.uint32(), "_piece": pa.uint16(), "_bs": pa.int32(), "_be": pa.int32()}


def _spanned(cols: RecordArrays, at: np.ndarray) -> pl.DataFrame:
    """The _SPANNED columns of the records at positions `at`, from their numpy columns (none null):
    Arrow arrays over numpy takes, handed to polars without a copy."""
    values = {"rec": cols.rec, "_piece": cols.piece, "_bs": cols.starts, "_be": cols.ends}
    return pl.DataFrame([series_from_arrow(numeric(kind, values[name][at].astype(kind.to_pandas_dtype(), copy=False)))
                         .alias(name) for name, kind in _SPANNED.items()])


def _worded(part: pl.DataFrame, recs: Records, family: str) -> pl.DataFrame:
    """`part` (one family's records) with the text columns the regex, handler and grammar paths read
    (`family`, `body`), as `_slim` lays them out, where `_partition` left them out."""
    if "body" in part.columns:
        return part
    body = header_strings(recs, part["rec"].to_numpy(), ["body"])[0]
    named = word_column("family", np.full(part.height, FAMILY_CODE[family] + 1), _NAMED)
    return part.select("rec").hstack([named, body, *part.select(list(_SPANNED)[1:])])


def _slim(records: pl.DataFrame, at: np.ndarray, codes: np.ndarray) -> pl.DataFrame:
    """The _SLIM columns of the records at positions `at` (`codes`: their family codes): numpy takes
    and the family names by code (as routing.route names them), not a polars gather, which runs on
    polars' thread pool and costs a chunk 1-10 ms on a busy machine; a gather where a column has
    nulls or text (the polars path's records)."""
    cols = [c for c in _SLIM if c in records.columns or c == "family"]
    numbers = [c for c in cols if c != "family"]
    if "body" in cols or any(records[c].null_count() for c in numbers):
        frame = records[at, [c for c in cols if c in records.columns]]
        if "family" not in records.columns:  # routed without the names (pipeline): a family's name by its code
            frame.insert_column(1, word_column("family", codes + 1, _NAMED))
        return frame
    taken = {c: pl.Series(c, records[c].to_numpy()[at], dtype=records.schema[c]) for c in numbers}
    return pl.DataFrame([word_column("family", codes + 1, _NAMED) if c == "family" else taken[c] for c in cols])


_NAMED = (None, *FAMILY_NAMES)  # a record's family by its code + 1 (code -1: none), as routing.route has it


def _take_unframed(parts: dict[str, pl.DataFrame], recs: Records, raw: dict[str, list[Unframed]],
                   whole: pl.DataFrame) -> None:
    """The createState, occupancy and doExpansion records the compiled readers read whole, kept
    unframed in `raw` for their tables typed in C (replay.parsing.columns_schedule, columns_expansions)
    and taken out of `parts` (`whole`: the chunk's records, as `fill_rows` numbers them)."""
    compiled = compiled_buckets()
    if "pool_tables" in parts:  # its reader checks the body's text
        parts["pool_tables"] = _worded(parts["pool_tables"], recs, "pool_tables")
    if "do_expansion" in parts and "expansions" in compiled:
        merged = merged_rows(parts["do_expansion"], recs.blocks, raw.get("expansions"), whole)
        if merged is not None:
            raw["expansions"] = [merged]
            del parts["do_expansion"]
    if "schedule_state" in parts and "_schedule_lines" in compiled:
        got = schedule_scan(parts["schedule_state"], recs.continuations, recs.blocks)
        if got is not None and not got[0][4]:  # the scanner refused no record
            raw["_schedule_lines"] = [BlockRows("_schedule_lines", *got)]
            del parts["schedule_state"]
    if "pool_tables" in parts and "pool_tables" in compiled:  # replay.parsing.columns_small
        pools = pool_scan(parts["pool_tables"], recs.continuations, recs.blocks)
        if pools is not None and taken_all(parts["pool_tables"], pools):
            raw["pool_tables"] = [pools]
            del parts["pool_tables"]
    if "occupancy_table" in parts and "_occupancy_lines" in compiled:
        part = parts["occupancy_table"]
        got = occupancy_scan(part, recs.continuations, recs.blocks)
        if got is not None and np.isin(part["rec"].to_numpy(), np.frombuffer(got[0][0], dtype=np.int32)).all():
            raw.setdefault("_occupancy_lines", []).append(BlockRows("_occupancy_lines", *got))
            del parts["occupancy_table"]
    boot_scan.take(parts, recs, raw, whole)  # jd_host_class, np_nodes: with their buckets' templated rows


def _family_rows(parts: dict[str, pl.DataFrame], recs: Records,
                 engine: str) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """(rows, failures) per family. Each path takes what it can and hands the rest on: the
    compiled createState reader to the polars regexes (every family's in one call) and handlers,
    those to the grammar, which decides (its failures carry the grammar's own error message)."""
    cont = recs.continuations
    found: dict[str, list[pl.DataFrame]] = {family: [] for family in parts}
    todo: dict[str, pl.DataFrame | None] = dict(parts)  # None: every record of the family has its rows

    def take(family: str, rows: pl.DataFrame, failed: pl.DataFrame) -> None:
        found[family].append(rows)
        left = todo[family]
        todo[family] = None if left is None or not failed.height else left.join(failed.select("rec"), on="rec",
                                                                                 how="semi")

    if recs.blocks and "schedule_state" in parts:
        take("schedule_state", *schedule_rows(parts["schedule_state"], cont, recs.blocks))
    if recs.blocks and "occupancy_table" in parts:
        take("occupancy_table", *occupancy_rows(parts["occupancy_table"], cont, recs.blocks))
    if recs.blocks and "sched_sections" in parts:
        take("sched_sections", *section_rows(parts["sched_sections"], cont, recs.blocks))
    if recs.blocks and "pool_tables" in parts:
        take("pool_tables", *pool_rows(parts["pool_tables"], cont, recs.blocks))
    if engine != "lark":
        batch = {f: p for f, p in todo.items() if p is not None and f in fast.REGEXES}
        for family, (rows, failed) in fast.regex_rows(batch).items():
            take(family, rows, failed)
        for family, part in list(todo.items()):
            if part is not None and family in fast.HANDLERS:
                take(family, *fast.fast_rows(family, part, cont))
    out = {}
    for family, got in found.items():
        failed = pl.DataFrame(schema={"rec": pl.UInt32, "reason": pl.String})
        left = todo[family]
        if left is not None:
            more, failed = lark_rows(family, left, cont)
            got.append(more)
        out[family] = (got[0] if len(got) == 1 else
                       pl.concat(got, how="diagonal_relaxed").sort("rec", maintain_order=True), failed)
    return out


_CACHED_BODY = 1024  # longer bodies (whole tables) rarely repeat, and would hold much memory


@lru_cache(maxsize=4096)
def _cached_body(family: str, text: str) -> tuple[dict[str, Any], ...] | str:
    # the same short body parses to the same rows: the bootstrap a restarted RM prints again,
    # the per-cycle lines only the grammar reads
    from replay.parsing import grammar

    got = grammar.parse_body(family, text)
    return got if isinstance(got, str) else tuple(got)


def _body_rows(family: str, text: str) -> Sequence[dict[str, Any]] | str:
    """grammar.parse_body, remembered for short bodies (its rows are only read: callers copy them)."""
    if len(text) <= _CACHED_BODY:
        return _cached_body(family, text)
    # lark and the grammar load here, on the first record only the grammar reads (0.1 s of start-up)
    from replay.parsing import grammar

    return grammar.parse_body(family, text)


def lark_rows(family: str, part: pl.DataFrame, cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    texts = full_bodies(part, cont) if family in MULTILINE else part.select("rec", text="body")
    rows: list[dict[str, Any]] = []
    bad_rec: list[int] = []
    bad_reason: list[str] = []
    for rec, text in texts.iter_rows():
        got = _body_rows(family, text or "")
        if isinstance(got, str):
            bad_rec.append(rec)
            bad_reason.append(got)
            continue
        rows.extend({"rec": rec, **row} for row in got)
    if rows:
        frame = pl.from_dicts(rows, infer_schema_length=None)
    else:
        frame = pl.DataFrame({"rec": []}, schema={"rec": pl.UInt32})
    failed = pl.DataFrame({"rec": bad_rec, "reason": bad_reason}, schema={"rec": pl.UInt32, "reason": pl.String})
    return frame.with_columns(pl.col("rec").cast(pl.UInt32)), failed
