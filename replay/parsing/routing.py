"""Each record to its message family: the compiled router's codes, and polars' regexes for the
records it leaves undecided (replay.parsing.families holds the routes)."""

from __future__ import annotations

import numpy as np
import polars as pl

from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES, GENERIC, ROUTES
from replay.parsing.records import Records
from replay.parsing.scan import UNDECIDED
from replay.parsing.scanned import Scanned, with_strings, word_column


def route(records: pl.DataFrame, recs: Records | None = None, names: bool = True) -> pl.DataFrame:
    """Add `family` (grammar rule, GENERIC, or null = known method, unknown body) and its code `_code`
    (`names` False: the code only; `named` adds the names to the rows that read them).

    The compiled scanner routes most records itself (`_fam`); the rest go through `_route_polars`
    (the text columns it reads built for them only, from `recs`). When the scanner decided every
    record, no polars query runs: the two columns are built from the codes."""
    if "_fam" in records.columns:
        fam = records["_fam"]
        codes = (fam.fill_null(UNDECIDED) if fam.null_count() else fam).to_numpy()
        todo = np.flatnonzero(codes == UNDECIDED)
    else:
        codes = np.full(records.height, -1, dtype=np.int32)
        todo = np.arange(records.height)
    if todo.size:
        codes = codes.copy()
        part = records[todo.tolist()] if todo.size < records.height else records
        codes[todo] = _route_polars(part if recs is None else with_strings(recs, part, ["cls", "method", "body"]))
    code = pl.Series("_code", codes, dtype=pl.Int32)
    return records.hstack([word_column("family", codes + 1, _FAMILIES), code] if names else [code])


def named(records: pl.DataFrame) -> pl.DataFrame:
    """Routed `records` with `family`, the name of each one's `_code`, where `route` left it out."""
    if "family" in records.columns:
        return records
    return records.hstack([word_column("family", records["_code"].to_numpy() + 1, _FAMILIES)])


_FAMILIES = (None, *FAMILY_NAMES)  # `family` by code + 1 (code -1, no family: null)


def _route_polars(records: pl.DataFrame) -> np.ndarray:
    """Family codes by vectorised regexes: each (class, METHOD) group tries its routes in order on
    the bodies no earlier route took (first match wins), a literal prefix by `starts_with`."""
    codes = np.full(records.height, -1, dtype=np.int32)
    body = records["body"]
    groups = records.select("cls", "method", pl.int_range(pl.len(), dtype=pl.UInt32).alias("_i")).group_by(
        "cls", "method").agg("_i")
    for cls, method, at in groups.iter_rows():
        routes = ROUTES.get((cls, method))
        at = np.asarray(at, dtype=np.int64)
        if routes is None:
            codes[at] = FAMILY_CODE[GENERIC]
            continue
        texts = body.gather(at)
        for route in routes:
            hit = _prefix_match(texts, route.prefix).fill_null(False).to_numpy()
            codes[at[hit]] = FAMILY_CODE[route.family]
            at, texts = at[~hit], texts.filter(pl.Series(~hit))
            if not at.size:
                break
    return codes


_REGEX_SYNTAX = set("\\.^$*+?()[]{}|")


def _prefix_match(texts: pl.Series, prefix: str) -> pl.Series:
    if prefix == "":
        return pl.Series(np.ones(texts.len(), dtype=bool))
    if prefix == "^$":
        return texts == ""
    if prefix.startswith("^") and not _REGEX_SYNTAX.intersection(prefix[1:]):
        return texts.str.starts_with(prefix[1:])
    return texts.str.contains(prefix)


def family_counts(records: pl.DataFrame, recs: Records) -> dict[str, int]:
    """Records per family name ("None": of no family) of the routed `records` (every record of
    `recs`): as `_scan.chunk` counted them while it routed, when it decided every record; else
    counted from `_code`."""
    per = recs.counts if isinstance(recs, Scanned) else None
    if per is not None and not per[0]:  # none left to polars: the scanner's codes are the routes
        counts = np.zeros(len(FAMILY_NAMES) + 1, dtype=np.int64)
        counts[:len(per) - 1] = per[1:]
    else:
        counts = np.bincount(records["_code"].to_numpy() + 1, minlength=len(FAMILY_NAMES) + 1)
    return {str(FAMILY_NAMES[c - 1]) if c else "None": int(n) for c, n in enumerate(counts.tolist()) if n}
