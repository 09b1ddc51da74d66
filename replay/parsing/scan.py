"""The compiled family readers (`replay.parsing._scan`) as polars columns; the scan of lines and
headers into records is replay.parsing.scanned (`scan_records`).

The family readers: `fill_rows` (every single-line family with token templates, replay.parsing.templates,
in one pass, gathered by table), `rmcounter_rows` (whole RmCounter blocks, one row per entity) and
`schedule_rows` (createState structures). Each takes what it is sure of and hands the rest to the
regexes of replay.parsing.fast, which hand theirs to lark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.chunks import Bytes
from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES, TARGETS
from replay.parsing.tables import series_from_arrow
from replay.parsing.templates import K_ANY, K_INT, TEMPLATES, compile_template, templates_of
from replay.parsing.compiled import COMPILED
from replay.parsing.scanned import string_views

if COMPILED:
    from replay.parsing import _scan
UNDECIDED = -2  # the compiled router leaves the record to polars (replay.parsing.routing.route)


def _take(values: pl.Series, at: np.ndarray) -> pl.Series:
    """values[at]: a row selection by index, a third of the cost of Series.gather (no query)."""
    return values[at]


def list_series(values: pa.Array, offsets: np.ndarray, name: str, present: np.ndarray | None = None) -> pl.Series:
    """A list column from flat values and int32 offsets (`present`: which lists are not null)."""
    absent = 0 if present is None else int((~present).sum())
    validity = pa.py_buffer(np.packbits(present, bitorder="little")) if present is not None and absent else None
    # from_buffers, not pa.array: that one imports pandas (a quarter second) to inspect its input
    lists = pa.ListArray.from_buffers(pa.list_(values.type), len(offsets) - 1,
                                      [validity, pa.py_buffer(np.ascontiguousarray(offsets, np.int32))],
                                      null_count=absent, children=[values])
    return series_from_arrow(lists).alias(name)


@dataclass(frozen=True)
class Bucket:
    """The templated families of one table as the scanner fills them: its string columns, its
    list columns (and which hold integers), and the constant columns its families' targets add
    (a value per family code, None for the families without it)."""

    table: str
    columns: tuple[str, ...]
    lists: tuple[str, ...]
    list_ints: tuple[bool, ...]
    consts: tuple[tuple[str, tuple[str | None, ...]], ...]


def present_ints(col: pl.Series, null: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """A nullable integer column as int32 values (`null` where none) and which are present (None: all),
    by numpy (a polars fill_null is a query: a tenth of a millisecond a call)."""
    if not col.null_count():
        return np.ascontiguousarray(col.to_numpy(), np.int32), None
    values = col.to_numpy()  # float64, NaN where null
    present = ~np.isnan(values)
    return np.where(present, values, null).astype(np.int32), present


@dataclass(frozen=True)
class RecordArrays:
    """The routed records' columns the compiled readers read, as numpy arrays, taken from the frame
    once per chunk: number, family code, block (-1: none), body span (0 where none) and whether
    the record has one (its header the scanner read)."""

    rec: np.ndarray
    codes: np.ndarray
    piece: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    spanned: np.ndarray

    @classmethod
    def of(cls, records: pl.DataFrame) -> RecordArrays:
        """The arrays of `records` (routed: `_code`, `_piece`, `_bs`, `_be`)."""
        starts, present = present_ints(records["_bs"])
        return cls(records["rec"].to_numpy(), np.ascontiguousarray(records["_code"].to_numpy(), np.int32),
                   present_ints(records["_piece"], -1)[0], starts, present_ints(records["_be"])[0],
                   np.ones(records.height, dtype=bool) if present is None else present)


def templated(family: str) -> bool:
    """Whether the scanner reads `family` by its templates (replay.parsing.templates)."""
    return COMPILED and family in fill_plan()[2]


@lru_cache(maxsize=1)
def fill_plan() -> tuple[tuple[Bucket, ...], tuple[Any, ...], frozenset[str]]:
    """(buckets, the plan `_scan.fill` runs, the families it reads): every family with templates
    and one target table, its table's bucket, and per template the bucket column of each field."""
    tables: dict[str, dict[str, Any]] = {}
    chosen = []
    for family in FAMILY_NAMES:
        targets = TARGETS.get(family, [])
        if not templates_of(family) or len(targets) != 1:
            continue
        got = tables.setdefault(targets[0].table, {"columns": {}, "lists": {}, "consts": {}})
        for text in templates_of(family):
            tmpl = compile_template(text)
            for name in tmpl.fields:
                if name != "_":
                    got["columns"].setdefault(name, None)
            if tmpl.list_field and got["lists"].setdefault(tmpl.list_field, tmpl.list_ints) != tmpl.list_ints:
                raise ValueError(f"template list {tmpl.list_field!r} holds integers in one family, words in another")
        for key, value in targets[0].consts.items():
            got["consts"].setdefault(key, {})[FAMILY_CODE[family]] = value
        chosen.append((family, targets[0].table))
    buckets = tuple(Bucket(table, tuple(got["columns"]), tuple(got["lists"]), tuple(got["lists"].values()),
                           tuple((key, tuple(per.get(code) for code in range(len(FAMILY_NAMES))))
                                 for key, per in got["consts"].items()))
                    for table, got in tables.items())
    index = {b.table: i for i, b in enumerate(buckets)}
    families: list[tuple[int, tuple[Any, ...]] | None] = [None] * len(FAMILY_NAMES)
    for family, table in chosen:
        bucket = buckets[index[table]]
        alts = []
        for text in templates_of(family):
            tmpl = compile_template(text)
            slots = np.array([-1 if f == "_" else bucket.columns.index(f) for f in tmpl.fields], dtype=np.int32)
            alts.append((tmpl.ops, slots.tobytes(), bucket.lists.index(tmpl.list_field) if tmpl.list_field else -1))
        families[FAMILY_CODE[family]] = (index[table], tuple(alts))
    kinds = tuple((len(b.columns), bytes(K_INT if ints else K_ANY for ints in b.list_ints)) for b in buckets)
    return buckets, (tuple(families), kinds), frozenset(f for f, _ in chosen)


@dataclass(frozen=True)
class RawRows:
    """One block's templated rows of one table as `_scan.fill` matched them, not yet a frame: the
    compiled table builders (replay.parsing.columns) type them in C; `frame()` gives the rows
    `fill_rows` would have given (the reference path)."""

    bucket: Bucket
    got: tuple[Any, ...]  # _scan.fill's (rows, spans, lists) of this bucket
    data: Bytes
    at: np.ndarray  # the block's records, as positions in `records`
    rec: np.ndarray  # every record's number
    codes: np.ndarray  # every record's family code

    @property
    def rows(self) -> np.ndarray:
        """The positions in `records` of the rows' records, in record order."""
        return self.at[np.frombuffer(self.got[0], dtype=np.int32)]

    @property
    def spans(self) -> np.ndarray:
        """int32 (start, end) per row and bucket column (start -1: the row has no such field)."""
        return np.frombuffer(self.got[1], dtype=np.int32).reshape(-1, 2 * len(self.bucket.columns))

    def frame(self) -> pl.DataFrame | None:
        """The rows as `fill_rows` gives them (None: no row)."""
        return _bucket_frame(self.bucket, self.got, self.data, self.at, self.rec, self.codes)


Filled = tuple[dict[str, pl.DataFrame], np.ndarray, dict[str, list[RawRows]]]


def fill_rows(records: pl.DataFrame, blocks: tuple[Bytes, ...], skip: frozenset[str] = frozenset(),
              raw: frozenset[str] = frozenset(), arrays: RecordArrays | None = None) -> Filled:
    """The rows of every templated family in `records` (routed: `_code`, and the body spans
    `_piece`, `_bs`, `_be`), one frame per table in record order; which records they took; and
    the rows of the tables in `raw` unframed, per block (`RawRows`, for the compiled tables).
    `arrays`: the records' columns as numpy, when the caller has them already.

    A record its templates do not match (or whose header the polars path read, so it has no span)
    is not taken: it goes on to the regex and lark paths. Families in `skip` are left alone."""
    taken = np.zeros(records.height, dtype=bool)
    if not COMPILED or not blocks or records.is_empty() or "_bs" not in records.columns:
        return {}, taken, {}
    buckets, plan, _ = fill_plan()
    cols = RecordArrays.of(records) if arrays is None else arrays
    codes = cols.codes.copy()
    if skip:  # by a table per code (-1, no family, last), not np.isin's sort
        left = np.zeros(len(FAMILY_NAMES) + 1, dtype=bool)
        left[[FAMILY_CODE[f] for f in skip]] = True
        codes[left[codes]] = -1
    spanned, starts, ends, rec = cols.spanned, cols.starts, cols.ends, cols.rec
    pieces = np.maximum(cols.piece, 0)  # a record with no block has no span either
    parts: dict[str, list[pl.DataFrame]] = {}
    unframed: dict[str, list[RawRows]] = {}
    for piece in np.unique(pieces[spanned]):
        at = np.flatnonzero(spanned & (pieces == piece))
        status, rows = _scan.fill(blocks[piece], starts[at], ends[at], codes[at], plan)
        taken[at] = np.frombuffer(status, dtype=np.uint8) == 1
        for bucket, got in zip(buckets, rows):
            if bucket.table in raw:
                if len(got[0]):
                    unframed.setdefault(bucket.table, []).append(RawRows(bucket, got, blocks[piece], at, rec, codes))
                continue
            frame = _bucket_frame(bucket, got, blocks[piece], at, rec, codes)
            if frame is not None:
                parts.setdefault(bucket.table, []).append(frame)
    return {table: pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
            for table, frames in parts.items()}, taken, unframed


def _bucket_frame(bucket: Bucket, got: tuple[Any, ...], data: Bytes, at: np.ndarray, rec: np.ndarray,
                  codes: np.ndarray) -> pl.DataFrame | None:
    """One bucket's rows from `_scan.fill`'s output for one block (None: it took no record)."""
    raw_rows, raw_spans, lists = got
    rows = at[np.frombuffer(raw_rows, dtype=np.int32)]
    if not rows.size:
        return None
    code = codes[rows]
    cols = [pl.Series("rec", rec[rows], dtype=pl.UInt32), _take(_FAMILY, code)]
    spans = np.frombuffer(raw_spans, dtype=np.int32).reshape(rows.size, len(bucket.columns) * 2)
    # a field none of these rows has is left out (the assembly adds the null columns it reads)
    cols += [string_views(data, spans[:, 2 * i], spans[:, 2 * i + 1], name) for i, name in enumerate(bucket.columns)
             if spans[:, 2 * i].max() >= 0]
    for name, ints, (raw_counts, raw_values) in zip(bucket.lists, bucket.list_ints, lists):
        counts = np.frombuffer(raw_counts, dtype=np.int32)
        if counts.max() < 0:
            continue
        offsets = np.concatenate(([0], np.cumsum(np.maximum(counts, 0))))
        if ints:
            values = pa.Array.from_buffers(pa.int64(), int(offsets[-1]), [None, pa.py_buffer(raw_values)])
        else:
            items = np.frombuffer(raw_values, dtype=np.int32).reshape(-1, 2)
            values = string_views(data, items[:, 0], items[:, 1], "item").to_arrow()
        cols.append(list_series(values, offsets, name, counts >= 0))
    present = set(code.tolist())
    cols += [_take(pl.Series(key, per_code, dtype=pl.String), code) for key, per_code in bucket.consts
             if any(per_code[c] is not None for c in present)]
    return pl.DataFrame(cols)


_FAMILY = pl.Series("_family", FAMILY_NAMES, dtype=pl.String)


# The RmCounter families the scanner assembles itself, in `_scan.rmcounter`'s kind order.
RMCOUNTER_KINDS = ("rmc_start", "rmc_end", "rmc_maxorder", "rmc_names", "rmc_weights", "rmc_wanted",
                   "rmc_vmachines", "rmc_final", "rmc_given", "rmc_vshares", "rmc_nshares")


@lru_cache(maxsize=1)
def _rmcounter_templates() -> tuple[Any, ...]:
    """Per kind: the template's ops and the slots of its `entity` and `maxorder` fields (-1: none)."""
    out = []
    for family in RMCOUNTER_KINDS:
        tmpl = compile_template(TEMPLATES[family])
        slot: Callable[[str], int] = lambda name: tmpl.fields.index(name) if name in tmpl.fields else -1  # noqa: E731
        out.append((tmpl.ops, slot("entity"), slot("maxorder")))
    return tuple(out)


def rmcounter_rows(part: pl.DataFrame, blocks: tuple[Bytes, ...]) -> pl.DataFrame | None:
    """One row per entity of every RmCounter block in `part` (the chunk's RmCounter records, in log
    order), assembled by the scanner: `rec` of the block's Start line, descr, entity, weight,
    wanted, vmachines, maxorder, given. None when it cannot take them all (another family, a
    header the polars path read, records in two blocks, a line its template refuses): then they
    go the general way (template rows, tables._rmcounter), which gives the same rows."""
    got = rmcounter_scan(part, blocks)
    return None if got is None else rmcounter_frame(*got, part["rec"])


def rmcounter_scan(part: pl.DataFrame, blocks: tuple[Bytes, ...]) -> tuple[dict[str, Any], Bytes] | None:
    """`_scan.rmcounter` over `part` and the block it lies in; None: not the scanner's (rmcounter_rows)."""
    if not COMPILED or part.is_empty() or "_bs" not in part.columns:
        return None
    return rmcounter_at(RecordArrays.of(part), np.arange(part.height), blocks)


# per family code (-1, no family, last): its kind in RMCOUNTER_KINDS, -1 for none
_RMCOUNTER_KIND = np.full(len(FAMILY_NAMES) + 1, -1, dtype=np.int32)
_RMCOUNTER_KIND[[FAMILY_CODE[f] for f in RMCOUNTER_KINDS]] = np.arange(len(RMCOUNTER_KINDS))


def rmcounter_at(cols: RecordArrays, at: np.ndarray, blocks: tuple[Bytes, ...]) -> tuple[dict[str, Any], Bytes] | None:
    """rmcounter_scan of the records at positions `at` of `cols` (the chunk's, in log order)."""
    if not COMPILED or not at.size:
        return None
    kinds = _RMCOUNTER_KIND[cols.codes[at]]
    piece = cols.piece[at]
    if (kinds < 0).any() or not cols.spanned[at].all() or (piece != piece[0]).any() or piece[0] < 0:
        return None
    data = blocks[int(piece[0])]
    got = _scan.rmcounter(data, cols.starts[at], cols.ends[at], kinds, _rmcounter_templates())
    return None if got is None else (got, data)


def rmcounter_frame(got: dict[str, Any], data: Bytes, rec: pl.Series) -> pl.DataFrame:
    """`_scan.rmcounter`'s output as rmcounter_rows gives it (`rec`: the RmCounter records' numbers)."""
    i32: Callable[[str], np.ndarray] = lambda key: np.frombuffer(got[key], dtype=np.int32)  # noqa: E731
    block_of = i32("row_block")
    descr = i32("descr").reshape(-1, 2)
    entity = i32("entity").reshape(-1, 2)
    vmachines = _take(_int_lists(got, "vmachines"), block_of)
    maxorder = pl.Series("maxorder", np.frombuffer(got["maxorder"], dtype=np.int64)).scatter(
        np.flatnonzero(i32("maxorder_ok") == 0), None)
    maxorder = _take(maxorder, block_of)
    weight = pl.Series("weight", np.frombuffer(got["weight"], dtype=np.int64)).scatter(
        np.flatnonzero(i32("weight_ok") == 0), None)
    return pl.DataFrame([
        _take(rec, i32("block_line")[block_of]),
        _take(string_views(data, descr[:, 0], descr[:, 1], "descr"), block_of),
        string_views(data, entity[:, 0], entity[:, 1], "entity"),  # a block without entities: null
        weight, _int_lists(got, "wanted"), vmachines.alias("vmachines"), maxorder, _int_lists(got, "given"),
    ])


def _int_lists(got: dict[str, Any], key: str) -> pl.Series:
    """A list<int64> column from the scanner's values, offsets and validity."""
    offsets = np.concatenate(([0], np.frombuffer(got[f"{key}_off"], dtype=np.int32)))
    values = pa.Array.from_buffers(pa.int64(), len(got[key]) // 8, [None, pa.py_buffer(got[key])])
    return list_series(values, offsets, key, np.frombuffer(got[f"{key}_ok"], dtype=np.int32) != 0)


_SCHEDULE_SPANS = ("work_type", "job_id", "memory_gb", "reason", "host", "share_id", "init_ms")


def schedule_rows(
    part: pl.DataFrame, cont: pl.DataFrame, blocks: tuple[Bytes, ...]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, failures) of createState records: the scanner reads every record whose lines have
    exactly the canonical shapes (`_scan.schedule`), and leaves the others (and any record whose
    lines lie in two blocks, or that the polars path read) to replay.parsing.fast's _schedule_state."""
    got = schedule_scan(part, cont, blocks)
    if got is None or not got[1]:  # no structure at all: nothing to read, nothing wrong
        failed = part.select("rec")
        return pl.DataFrame({"rec": []}, schema={"rec": pl.UInt32}), failed if got is None else failed.clear()
    return schedule_frame(*got), pl.DataFrame({"rec": np.frombuffer(got[0][4], dtype=np.int32)}).cast(pl.UInt32)


def schedule_scan(part: pl.DataFrame, cont: pl.DataFrame,
                  blocks: tuple[Bytes, ...]) -> tuple[tuple[bytes, bytes, bytes, bytes, bytes], Bytes] | None:
    """`_scan.schedule` over the records' lines, and the block they lie in (b"": no line); None when
    the lines are not all the scanner's in one block."""
    got = line_spans(part, cont)
    if got is None:
        return None
    piece, spans = got
    if piece < 0:
        return (b"", b"", b"", b"", b""), b""
    return _scan.schedule(blocks[piece], *spans), blocks[piece]


def schedule_frame(got: tuple[bytes, bytes, bytes, bytes, bytes], data: Bytes) -> pl.DataFrame:
    """`_scan.schedule`'s rows as schedule_rows gives them."""
    raw_rec, raw_kind, raw_purged, raw_spans, _ = got
    spans = np.frombuffer(raw_spans, dtype=np.int32).reshape(-1, 2 * len(_SCHEDULE_SPANS))
    cols = [pl.Series("rec", np.frombuffer(raw_rec, dtype=np.int32)).cast(pl.UInt32)]
    cols += [string_views(data, spans[:, 2 * i], spans[:, 2 * i + 1], name) for i, name in enumerate(_SCHEDULE_SPANS)]
    codes: Callable[[bytes, list[str]], pl.Series]
    codes = lambda raw, names: pl.Series(names).gather(pl.Series(np.frombuffer(raw, dtype=np.int32)).replace(-1, None))  # noqa: E731
    cols += [codes(raw_kind, ["Existing", "Additions", "Removals"]).alias("kind"),
             codes(raw_purged, ["false", "true"]).alias("purged")]
    return pl.DataFrame(cols)


_OCCUPANCY_SPANS = ("m_host", "m_blacklisted", "m_order", "m_active", "m_unused", "memory_mb", "free")


def _lines_of(part: pl.DataFrame, cont: pl.DataFrame) -> tuple[np.ndarray, int] | None:
    """(the rows of `cont` that are lines of `part`'s records, in order; their block, -1: no line)
    when the compiled readers can take them (all spanned, in one block); else None. By numpy: a
    polars semi join is a query a call."""
    if "_s" not in cont.columns:
        return None
    c_rec, p_rec = cont["rec"].to_numpy(), part["rec"].to_numpy()
    if not len(c_rec) or not len(p_rec):
        return np.zeros(0, dtype=np.int64), -1
    mine = np.zeros(max(int(c_rec.max()), int(p_rec.max())) + 1, dtype=bool)
    mine[p_rec] = True
    at = np.flatnonzero(mine[c_rec])
    if not at.size:
        return at, -1
    piece = present_ints(cont["_piece"], -1)[0][at]
    spanned = present_ints(cont["_s"])[1]
    if (spanned is not None and not spanned[at].all()) or (piece != piece[0]).any() or piece[0] < 0:
        return None
    return at, int(piece[0])


def line_spans(part: pl.DataFrame, cont: pl.DataFrame) -> tuple[int, tuple[np.ndarray, ...]] | None:
    """(block, (rec, start, end) as int32) of the continuation lines of `part`'s records (`_lines_of`;
    block -1: no line); None: not the compiled readers'."""
    got = _lines_of(part, cont)
    if got is None:
        return None
    at, piece = got
    return piece, tuple(np.ascontiguousarray(present_ints(cont[c])[0][at]) for c in ("rec", "_s", "_e"))


def block_lines(part: pl.DataFrame, cont: pl.DataFrame) -> pl.DataFrame | None:
    """The continuation lines of `part`'s records, when the compiled readers can take them (all
    spanned, in one block); else None."""
    got = _lines_of(part, cont)
    return None if got is None or got[1] < 0 else cont[got[0]]


def not_taken(part: pl.DataFrame, rec: np.ndarray) -> pl.DataFrame:
    """The records of `part` with no row in `rec` (refused, or with no line): the polars path decides."""
    recs = part.get_column("rec")
    return pl.DataFrame([recs[np.flatnonzero(~np.isin(recs.to_numpy(), rec))]])


def occupancy_rows(
    part: pl.DataFrame, cont: pl.DataFrame, blocks: tuple[Bytes, ...]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, failures) of DEBUG occupancy tables: the scanner reads every record whose lines have
    exactly the canonical shapes (`_scan.occupancy`), and leaves the others (a record with no
    lines, or whose lines lie in two blocks, or that the polars path read) to replay.parsing.fast's
    _occupancy_table, which gives the same rows."""
    got = occupancy_scan(part, cont, blocks)
    if got is None:
        return pl.DataFrame({"rec": []}, schema={"rec": pl.UInt32}), part.select("rec")
    return occupancy_frame(*got), not_taken(part, np.frombuffer(got[0][0], dtype=np.int32))


def occupancy_scan(part: pl.DataFrame, cont: pl.DataFrame,
                   blocks: tuple[Bytes, ...]) -> tuple[tuple[bytes, bytes, bytes, bytes, bytes], Bytes] | None:
    """`_scan.occupancy` over the records' lines, and their block; None: not the scanner's (occupancy_rows)."""
    got = line_spans(part, cont)
    if got is None or got[0] < 0:
        return None
    return _scan.occupancy(blocks[got[0]], *got[1]), blocks[got[0]]


def occupancy_frame(got: tuple[bytes, bytes, bytes, bytes, bytes], data: Bytes) -> pl.DataFrame:
    """`_scan.occupancy`'s rows as occupancy_rows gives them."""
    return reader_frame(got, data, _OCCUPANCY_SPANS, "m_jobs_list", 7)


def reader_frame(got: Any, data: Bytes, names: tuple[str, ...], list_name: str, list_at: int | None = None,
                 ) -> pl.DataFrame:
    """A compiled reader's rows (rec, spans per row, item counts, item spans, refused) as a frame: rec,
    the `names` as text, and the items as the list column `list_name` (at `list_at`; None: last)."""
    raw_rec, raw_spans, raw_counts, raw_items, _ = got
    rec = np.frombuffer(raw_rec, dtype=np.int32)
    spans = np.frombuffer(raw_spans, dtype=np.int32).reshape(-1, 2 * len(names))
    cols = [pl.Series("rec", rec).cast(pl.UInt32)]
    cols += [string_views(data, spans[:, 2 * i], spans[:, 2 * i + 1], name) for i, name in enumerate(names)]
    counts = np.frombuffer(raw_counts, dtype=np.int32)
    items = np.frombuffer(raw_items, dtype=np.int32).reshape(-1, 2)
    values = string_views(data, items[:, 0], items[:, 1], "item").to_arrow()
    offsets = np.concatenate(([0], np.cumsum(np.maximum(counts, 0))))
    cols.insert(len(cols) if list_at is None else list_at, list_series(values, offsets, list_name, counts >= 0))
    return pl.DataFrame(cols)


SECTION_SPANS = ("section", "type_code", "job_id", "job_name", "user", "class", "shares", "order", "qshares",
                  "threads", "memory_gb", "nquest", "remaining", "init_wait", "max_processes")


def section_spans(part: pl.DataFrame, cont: pl.DataFrame, blocks: tuple[Bytes, ...]) -> tuple[Bytes, Any, Any] | None:
    """(block, record numbers, spans per SECTION_SPANS field) of the rows `_scan.sections` reads; None: two blocks."""
    got = line_spans(part, cont)
    if got is None or got[0] < 0:
        return None
    data = blocks[got[0]]
    rec, spans, _ = _scan.sections(data, *got[1])
    return data, np.frombuffer(rec, np.int32), np.frombuffer(spans, np.int32).reshape(-1, 2 * len(SECTION_SPANS))


def section_rows(
    part: pl.DataFrame, cont: pl.DataFrame, blocks: tuple[Bytes, ...]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, failures) of the DEBUG pretty-printed schedule: the scanner reads every record of the
    canonical shape (`_scan.sections`) and leaves the others to replay.parsing.fast's
    _sched_sections, which gives the same rows."""
    got = section_spans(part, cont, blocks)
    if got is None:
        return pl.DataFrame({"rec": []}, schema={"rec": pl.UInt32}), part.select("rec")
    data, rec, spans = got
    cols = [pl.Series("rec", rec).cast(pl.UInt32)]
    cols += [string_views(data, spans[:, 2 * i], spans[:, 2 * i + 1], name) for i, name in enumerate(SECTION_SPANS)]
    return pl.DataFrame(cols), not_taken(part, rec)
