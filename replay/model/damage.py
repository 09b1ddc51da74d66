"""The cycles whose input is damaged, and why: computed once, read by the audit, report, explain and TUI.

A cycle's decisions can be held against the RM only where the log shows what the RM saw. These
cycles are `input damaged` instead:

- a cycle touched by a line the parser could not read (garbage, a record cut or interleaved: the
  `unparsed` table names the cycle each line is part of or precedes), and a cycle with NUL bytes
  (a disk that filled) or a run of bytes that are not UTF-8 in a record (the parser reports such a
  record unparsed rather than read fields it cannot trust; a lone such byte is a name in a legacy
  encoding, read with U+FFFD in its place, except in the RM's own class and method names);
- a cycle with a message of an RM class under a METHOD that class never logs
  (replay.parsing.rm_methods): a line cut short and run into another, the lines between lost;
- the cycle after one whose published schedule is unread: that schedule is the state it starts from;
- the two cycles on either side of a gap in the stream: the RM numbers its scheduling loops (the
  epoch), one published schedule each, so an epoch that jumps forward means cycles are missing
  (a rolled file lost); the cycle before the gap may end in the missing part and the one after it
  begin there. An epoch that goes back is an RM restart, not a gap;
- a log's first cycle, when the log shows the RM start and fewer Orchestrator states before that
  cycle than its epoch counts (the RM numbers its loops by the states it took): the loops between
  are lost, and what the RM wrote as it started is the other side of the gap;
- a first cycle the log starts inside (its scheduling pass began before the first line);
- a cycle with an RmCounter block cut short (it lacks a line every block has: lines lost inside it);
- a cycle with a second published schedule: the RM prints one per loop, after the "Schedule sent"
  line that numbers the cycle, so a second one is a later loop's whose own line was lost;
- a cycle after the first whose scheduling loop is never entered in the log (lines lost before it);
- a cycle whose scheduling loop never returns in the log: the log ends inside it (a file cut
  short, or the live rm.log), or lines inside it are lost, its return then naming a later epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from replay.model.reads import narrow, where
from replay.parsing.header import HEADER_FIELDS, HEADER_RE
from replay.parsing.rm_methods import LOGGED_METHODS
from replay.model.logorder import log_order

UNPARSED = "unparsed lines"
NUL = "NUL bytes"
BAD_BYTES = "bad bytes"
UNKNOWN_METHOD = "unknown method"
GAP = "gap in the stream"
CUT = "cut first cycle"
UNRETURNED = "loop never returns"
UNENTERED = "loop never entered"
SHORT_BLOCK = "RmCounter block cut short"
SECOND_SCHEDULE = "schedule never sent"
_SCHEDULE = "JobManagerConverter.createState"  # the RM's method that prints the published schedule
INSIDE = "inside the unparsed record"  # a line of a record reported whole: its first line says why
# the order they are listed in
REASONS = (UNPARSED, NUL, BAD_BYTES, UNKNOWN_METHOD, SHORT_BLOCK, SECOND_SCHEDULE, GAP, CUT, UNENTERED, UNRETURNED)
_WORDS = {
    UNPARSED: "lines the parser could not read",
    NUL: "a run of NUL bytes (a disk that filled)",
    BAD_BYTES: "a run of bytes that are not UTF-8",
    UNKNOWN_METHOD: "a message of a method its RM class never logs (a line cut short and run into another: lines "
                    "between them lost)",
    GAP: "a gap in the stream (the RM's loop count jumps: a rolled file or part of one is missing)",
    CUT: "the log starts inside this cycle (its scheduling pass began before the first line)",
    SHORT_BLOCK: "an RmCounter block without its lines (lines inside it are lost)",
    SECOND_SCHEDULE: "a second schedule printed in the cycle (the 'Schedule sent to Orchestrator' line of the loop "
                     "that printed it is lost, and lines with it)",
    UNENTERED: "the cycle's scheduling loop is never entered in the log (lines before it are lost)",
    UNRETURNED: "the cycle's scheduling loop never returns in the log (the log ends inside the cycle, or lines "
                "inside it are lost)",
}


@dataclass(frozen=True)
class Damage:
    """Why one cycle's input is damaged: each reason with the first line (file, line) that shows it."""

    cycle: int
    epoch: int | None
    reasons: tuple[tuple[str, str | None, int | None], ...]  # (reason, file, line), in REASONS order
    after_gap: bool = False  # the audit starts again here: the first cycle after a gap, or lines lost in it
    # the log's first cycle, after a gap that follows the RM's start: the lines before its loop entry
    # (the start's own) are the other side of the gap (`between_gaps`)
    after_start: bool = False

    def text(self) -> str:
        """One line: every reason, with the first line that shows it."""
        return "; ".join(_WORDS[r] + (f" ({f}:{n})" if f is not None and n is not None else "")
                         for r, f, n in self.reasons)

    @property
    def first(self) -> tuple[str, str | None, int | None]:
        """The main reason and its first line."""
        return self.reasons[0]


def _reason_of(text: str) -> str:
    """The damage kind of an unparsed row's reason (replay.parsing.pipeline)."""
    if text.startswith("NUL bytes"):
        return NUL
    if text.startswith("a run of bad bytes"):
        return BAD_BYTES
    return UNPARSED


def _published() -> pl.Expr:
    """Whether an unparsed row is part of a published schedule: the first line of a damaged
    JobManagerConverter.createState record whose message is empty (the schedule's header, its
    entries on the lines after it), or a line found inside such a record."""
    def field(name: str) -> pl.Expr:
        return pl.col("text").str.extract(HEADER_RE, HEADER_FIELDS.index(name) + 1)
    dump = ((field("cls") == "JobManagerConverter") & (field("method") == "createState")
            & (field("body").str.strip_chars() == ""))
    inside = pl.col("reason").str.starts_with(f"unexpected line inside a {_SCHEDULE} record")
    return (dump | inside).fill_null(False)


def _unknown_method() -> pl.Expr:
    """Whether a message names an RM class and a METHOD that class never logs."""
    pairs = [f"{cls}.{method}" for cls, methods in LOGGED_METHODS.items() for method in methods]
    return pl.col("cls").is_in(list(LOGGED_METHODS)) & ~pl.concat_str("cls", pl.lit("."), "method").is_in(pairs)


def _before_entry(entry: tuple[str, int] | None, file: str | None, line: int | None) -> bool:
    """Whether a line of cycle N (numbered by the "Schedule sent" line before it) comes before cycle
    N's loop-entry line (`entry`): lines in another file are taken as before it."""
    return entry is None or file != entry[0] or line is None or line < entry[1]


def damaged_cycles(tables: Mapping[str, pl.DataFrame]) -> dict[int, Damage]:
    """Cycle -> why its input is damaged, for every damaged cycle of the log (in cycle order)."""
    cycles = tables["cycles"].select("cycle", "epoch", "file", "line", "started", "ts_end").sort("cycle")
    found: dict[int, dict[str, tuple[str | None, int | None]]] = {}

    def mark(cycle: int, reason: str, file: str | None, line: int | None) -> None:
        found.setdefault(cycle, {}).setdefault(reason, (file, line))

    numbers = set(cycles["cycle"].to_list())
    entered = {c: (f, ln) for c, f, ln, started in cycles.select("cycle", "file", "line", "started").iter_rows()
               if started}

    def mark_read(cycle: int, reason: str, file: str | None, line: int | None) -> None:
        """A line the parser could not read (or place) damages its cycle; one between a "Schedule sent"
        line and the next loop's entry may be a line of the schedule the cycle before published after
        it, as well as this cycle's input: that one too."""
        mark(cycle, reason, file, line)
        if cycle - 1 in entered and _before_entry(entered.get(cycle), file, line):
            mark(cycle - 1, reason, file, line)

    if "unparsed" in tables:
        lines = narrow(tables, "unparsed", ("cycle", "reason", "file", "line", "text")).with_columns(
            _published().alias("published"))
        # a record's first line carries its reason; the lines inside it say which record they are in
        for cycle, reason, file, line, published in lines.filter(pl.col("cycle").is_not_null()).select(
                "cycle", "reason", "file", "line", "published").iter_rows():
            if not (reason or "").startswith(INSIDE):
                mark_read(cycle, _reason_of(reason or ""), file, line)
                if published and cycle + 1 in numbers:
                    # the schedule the cycle published is the state the next cycle starts from (the
                    # processes it added, those it is taking away): unread, that cycle's input is lost
                    mark(cycle + 1, _reason_of(reason or ""), file, line)
    if "messages" in tables:
        # a lone bad byte is taken for a name in a legacy encoding (a user's, a job's), but the RM's
        # class and method names are its own: one there is a message the parser could not place
        scrambled = pl.col("cls").str.contains("\ufffd") | pl.col("method").str.contains("\ufffd")
        messages = narrow(tables, "messages", ("cycle", "cls", "method", "file", "line")).filter(
            pl.col("cycle").is_not_null())
        # and the RM's classes spell out the methods they log: a message of one under another
        # METHOD (its name intact) is a line cut short and run into another, what was between lost
        for reason, which in ((BAD_BYTES, scrambled), (UNKNOWN_METHOD, ~scrambled & _unknown_method())):
            for cycle, file, line in messages.filter(which).select("cycle", "file", "line").iter_rows():
                mark_read(cycle, reason, file, line)
    resumes = set()
    if "rmcounter" in tables:
        # every block the RM prints names its entities, weights, wants, machines and max order
        short = pl.any_horizontal(pl.col(c).is_null() for c in ("entity", "weight", "wanted", "vmachines", "maxorder"))
        for cycle, file, line in where(tables, "rmcounter", short & pl.col("cycle").is_not_null()).select(
                "cycle", "file", "line").iter_rows():
            mark(cycle, SHORT_BLOCK, file, line)
            resumes.add(cycle)
    if "schedule" in tables:
        # the RM prints one schedule per loop, after its "Schedule sent" line, which numbers the
        # cycle: a second one in a cycle is a later loop's, whose own line a lost span took
        dumps = narrow(tables, "schedule", ("cycle", "file", "line")).filter(pl.col("cycle").is_not_null()).unique(
            ["cycle", "file", "line"]).sort(log_order("cycle"))
        for cycle, file, line in dumps.filter(pl.int_range(pl.len()).over("cycle") == 1).iter_rows():
            mark(cycle, SECOND_SCHEDULE, file, line)
            resumes.add(cycle)
    rows = list(cycles.iter_rows())
    after_start: set[int] = set()
    if rows and not rows[0][4]:
        mark(rows[0][0], CUT, rows[0][2], rows[0][3])
    for i, (cycle, _e, file, line, started, ended) in enumerate(rows):
        # lines lost here: the state the log gave before them (nodes, work) is no evidence after
        # them, so the audit starts again here, as after a gap
        if i and not started:
            mark(cycle, UNENTERED, file, line)
            resumes.add(cycle)
        if ended is None:
            mark(cycle, UNRETURNED, file, line)
            resumes.add(cycle)
    if lost_after_start(tables):
        # no two cycles straddle such a loss, so no epoch jumps between them
        resumes.add(rows[0][0])
        after_start.add(rows[0][0])
        mark(rows[0][0], GAP, rows[0][2], rows[0][3])
    for (c0, e0, *_), (c1, e1, f1, l1, *_) in zip(rows, rows[1:]):
        if e0 is not None and e1 is not None and e1 > e0 + 1:
            resumes.add(c1)
            mark(c0, GAP, f1, l1)
            mark(c1, GAP, f1, l1)
    epochs = {c: e for c, e, *_ in rows}
    return {c: Damage(c, epochs.get(c), tuple((r, *found[c][r]) for r in REASONS if r in found[c]), c in resumes,
                      c in after_start)
            for c in sorted(found)}


def lost_after_start(tables: Mapping[str, pl.DataFrame]) -> bool:
    """Whether the log shows the RM start (its banner) before its first cycle, and fewer
    Orchestrator states between the two than that cycle's epoch counts: the RM counts every state
    it takes ("OR state arrives", less those "ignored, arrived too soon") and numbers each loop by
    that count, so the lines of the loops between (and of what changed in them) are lost. So it is
    in the part of a log after a gap, whose tables keep the log's bootstrap."""
    cycles = tables["cycles"].sort("cycle").select("epoch", "file", "line", "started")
    if cycles.is_empty() or not cycles["started"][0]:
        return False
    epoch, file, line, _ = cycles.row(0)
    config, messages = tables.get("config"), tables.get("messages")
    if config is None or messages is None or epoch is None or line is None or "key" not in config.columns:
        return False
    banners = [n for f, n in config.filter(pl.col("key") == "DUCC Version").select("file", "line").iter_rows()
               if f == file and n is not None and n < line]
    if not banners:
        return False
    # the method logs the state's arrival at INFO, and a state it ignores again at WARN
    levels = narrow(tables, "messages", ("cls", "method", "level", "file", "line")).filter(
        (pl.col("file") == file) & pl.col("line").is_between(max(banners), line, closed="none")
        & (pl.col("cls") == "ResourceManagerComponent") & (pl.col("method") == "onJobManagerStateUpdate"))["level"]
    taken = levels.to_list().count("INFO") - levels.to_list().count("WARN")
    return bool(epoch > taken)


def resume_points(damage: Mapping[int, Damage]) -> list[int]:
    """The cycles the audit starts again at: the first after each gap in the stream, and each one
    lines were lost in (its loop never entered or never returning)."""
    return [c for c, d in damage.items() if d.after_gap]


def between_gaps(tables: Mapping[str, pl.DataFrame], first: int, stop: int | None,
                 after_start: bool = False) -> dict[str, pl.DataFrame]:
    """The log's tables from cycle `first` up to `stop` (None: the end), as if the log were only
    that part: what one side of a gap says is no evidence about the other (rows of no cycle kept:
    the bootstrap, the records after the last schedule). `after_start` (`Damage.after_start`): the
    gap lies between the RM's start and `first`, so the lines before its loop entry, which the RM
    wrote as it started (the nodes arriving, the work it was handed), are the other side."""
    keep = pl.col("cycle") >= first if stop is None else pl.col("cycle").is_between(first, stop, closed="left")
    cycles = tables["cycles"].filter(pl.col("cycle") == first).select("file", "line")
    if after_start and cycles.height:
        file, line = cycles.row(0)
        started = (pl.col("cycle") == first) & (pl.col("file") == file) & (pl.col("line") < line)
        return {name: frame.filter(pl.col("cycle").is_null() | (keep & ~started))
                if {"cycle", "file", "line"} <= set(frame.columns) else
                frame.filter(pl.col("cycle").is_null() | keep) if "cycle" in frame.columns else frame
                for name, frame in tables.items()}
    return {name: frame.filter(pl.col("cycle").is_null() | keep) if "cycle" in frame.columns else frame
            for name, frame in tables.items()}


def damage_report(damage: Mapping[int, Damage], cycles: set[int] | None = None) -> dict[str, Any]:
    """report.json's `damaged`: how many cycles, how many per reason, and the first lines."""
    chosen = [d for c, d in damage.items() if cycles is None or c in cycles]
    by_reason: dict[str, int] = {}
    for d in chosen:
        for r, *_ in d.reasons:
            by_reason[r] = by_reason.get(r, 0) + 1
    return {"cycles": len(chosen), "by_reason": by_reason,
            "first_lines": [{"cycle": d.cycle, "epoch": d.epoch, "reason": d.first[0], "file": d.first[1],
                             "line": d.first[2]} for d in chosen[:20]]}
