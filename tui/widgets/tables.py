"""The tabs' tables: each one fills itself with one cycle's rows of the view it reads from `Browse`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Span, Text

from tui.actions import JOBS_TABLE, MARKS, bindings
from tui.grid import Cell, Grid

if TYPE_CHECKING:  # (polars loads after a first screen drawn from its summary: tui.summary)
    import polars as pl

    from tui.data import Browse


def _n(v: object) -> str:
    return "-" if v is None else str(v)


def _blank(v: object) -> str:
    return "" if v is None else str(v)


class CycleTable(Grid):
    """A tab's table: `fill(browse, cycle, query)` shows the cycle's rows that match the filter."""

    COLUMNS: ClassVar[list[tuple[str, int]]] = []
    FILTER: ClassVar[dict[str, str]] = {}  # filter field -> the column it matches

    def __init__(self, **kw: Any) -> None:
        super().__init__(self.COLUMNS, **kw)
        self.row_keys: list[str] = []  # the job (or host) of each row

    def frame(self, browse: Browse, cycle: int) -> pl.DataFrame:
        """The cycle's rows of this tab's view."""
        raise NotImplementedError

    def cells(self, browse: Browse, frame: pl.DataFrame) -> tuple[list[tuple[Cell, ...]], list[str]]:
        """The drawn rows and each one's key."""
        raise NotImplementedError

    def fill(self, browse: Browse, cycle: int, query: str = "") -> None:
        """Show the cycle (its rows matching `query`, see tui.data.matches); drawn when on screen."""
        from tui.data import matches

        frame = self.frame(browse, cycle)
        rows, self.row_keys = self.cells(browse, matches(frame, query, self.FILTER) if query else frame)
        self.set_rows(rows)

    def key_at(self, row: int) -> str | None:
        """The job (or host) shown on a row."""
        return self.row_keys[row] if 0 <= row < len(self.row_keys) else None


_STATE_STYLES = {"Expanded": "green", "Shrunken": "yellow", "Dormant": "dim", "Reserved": "cyan"}


class JobsTable(CycleTable):
    """Jobs: who, cap and count beside rmref's, shares held, added and removed, state; enter opens the job."""

    BINDINGS = bindings(JOBS_TABLE)
    COLUMNS = [("job", 6), ("type", 11), ("user", 10), ("class", 10), ("ord", 3), ("cap", 5), ("ref", 5),
               ("counted", 7), ("ref", 5), ("held", 4), ("+add", 4), ("-rm", 4), ("state", 8), ("div", 3),
               ("reason", 80)]
    FILTER = {"job": "job_id", "user": "user", "class": "class", "host": "hosts"}

    def frame(self, browse: Browse, cycle: int) -> pl.DataFrame:
        return browse.jobs.at(cycle)

    def cells(self, browse: Browse, frame: pl.DataFrame) -> tuple[list[tuple[Cell, ...]], list[str]]:
        return job_cells(frame.iter_rows(named=True), browse.audited), [str(j) for j in frame["job_id"].to_list()]

    def show_rows(self, rows: Sequence[Mapping[str, Any]], audited: bool) -> None:
        """Show rows of the jobs view given as they are (a first screen's summary: tui.summary)."""
        self.row_keys = [str(r["job_id"]) for r in rows]
        self.set_rows(job_cells(rows, audited))


# what `job_cells` reads of a row of the jobs view (tui.data.jobs_frame)
JOB_CELL_COLUMNS = ("job_id", "type", "user", "class", "order_shown", "cap", "ref_cap", "counted", "ref_counted",
                    "held", "added", "removed", "state", "divergences", "reason")


def job_cells(rows: Iterable[Mapping[str, Any]], audited: bool) -> list[tuple[Cell, ...]]:
    """The Jobs tab's drawn cells of rows of the jobs view (rmref's columns '…' until `audited`)."""
    pending = "…" if not audited else "-"
    cells: list[tuple[Cell, ...]] = []
    for r in rows:
        div = r["divergences"]
        base = "bold red" if div else ""
        cap_bad = audited and r["ref_cap"] is not None and r["ref_cap"] != r["cap"]
        cnt_bad = audited and r["ref_counted"] is not None and r["ref_counted"] != (r["counted"] or 0)
        cells.append((
            Text(str(r["job_id"]), style=base), r["type"] or "-", r["user"] or "-", r["class"] or "-",
            r["order_shown"], _n(r["cap"]),
            Text(_n(r["ref_cap"]) if r["ref_cap"] is not None else pending, style="bold red" if cap_bad else "dim"),
            _n(r["counted"]),
            Text(_n(r["ref_counted"]) if r["ref_counted"] is not None else pending,
                 style="bold red" if cnt_bad else "dim"),
            str(r["held"]), Text(f"+{r['added']}" if r["added"] else "", style="green"),
            Text(f"-{r['removed']}" if r["removed"] else "", style="yellow"),
            Text(r["state"], style=_STATE_STYLES.get(r["state"], "")),
            Text(str(div) if div else "", style=base), Text(r["reason"] or "", style="italic"),
        ))
    return cells


class NodesTable(CycleTable):
    """Nodes: per nodepool and host, order, used and free quanta (a bar), the jobs on it, its status."""

    # (an order one of alike nodes' is drawn with its options, "13|15?": the jobs column gives way)
    COLUMNS = [("nodepool", 12), ("host", 18), ("ord", 6), ("used / free", 24), ("used", 4), ("free", 4),
               ("jobs", 21), ("status", 24)]
    FILTER = {"host": "host", "job": "jobs", "class": "nodepool"}
    BAR = 24

    def frame(self, browse: Browse, cycle: int) -> pl.DataFrame:
        return browse.nodes.at(cycle)

    def cells(self, browse: Browse, frame: pl.DataFrame) -> tuple[list[tuple[Cell, ...]], list[str]]:
        top = max([1, *frame["order"].fill_null(0).to_list()])
        rows: list[tuple[Cell, ...]] = []
        for r in frame.iter_rows(named=True):
            used = r["used"] or 0
            n_used = round(self.BAR * used / top)
            # (no free part drawn where the free space is not known: `free` None)
            n_free = 0 if r["free"] is None else max(round(self.BAR * (r["order"] or 0) / top) - n_used, 0)
            down = r["status"] != "online"
            bar = Text("█" * n_used, style="red" if down else "green") + Text("░" * n_free, style="grey50")
            status = r["status"] + (" blacklisted" if r["blacklisted"] else "")
            rows.append((r["nodepool"] or "-", Text(r["host"], style="bold red" if down else ""), r["order_shown"], bar,
                         str(used), "?" if r["free"] is None else str(r["free"]), r["jobs"],
                         Text(status, style="bold red" if down or r["blacklisted"] else "green")))
        if not rows and browse.nodes_note:
            rows = [("", Text(browse.nodes_note, style="italic"), "", "", "", "", "", "")]
        return rows, frame["host"].to_list()


_DEFRAG_STYLES = {"needy": "bold yellow", "needy_detected": "yellow", "taken": "bold red", "rmref taken": "red",
                  "failed": "red", "satisfied": "green"}


class DefragTable(CycleTable):
    """Defragmentation: needy jobs, the machines searched for them, the shares taken (logged and rmref's)."""

    COLUMNS = [("what", 17), ("job", 6), ("user", 10), ("class", 10), ("host", 18), ("donor", 6),
               ("counted", 7), ("needed", 6), ("detail", 60)]
    FILTER = {"job": "job_id", "user": "user", "class": "class", "host": "host"}

    def frame(self, browse: Browse, cycle: int) -> pl.DataFrame:
        return browse.defrag.at(cycle)

    def cells(self, browse: Browse, frame: pl.DataFrame) -> tuple[list[tuple[Cell, ...]], list[str]]:
        rows: list[tuple[Cell, ...]] = [
            (Text(r["kind"], style=_DEFRAG_STYLES.get(r["kind"], "")), _n(r["job_id"]), r["user"] or "",
             r["class"] or "", r["host"] or "", _blank(r["donor_job"]), _blank(r["counted"]), _blank(r["needed"]),
             r["detail"] or "")
            for r in frame.iter_rows(named=True)]
        return rows, []


class DiffTable(CycleTable):
    """The audit's divergences of the cycle, with the explanation."""

    COLUMNS = [("job", 6), ("decision", 10), ("logged", 24), ("rmref", 24), ("explanation", 200)]
    FILTER = {"job": "job_id"}

    def frame(self, browse: Browse, cycle: int) -> pl.DataFrame:
        return browse.diff.at(cycle)

    def cells(self, browse: Browse, frame: pl.DataFrame) -> tuple[list[tuple[Cell, ...]], list[str]]:
        rows: list[tuple[Cell, ...]] = [
            (Text(_n(r["job_id"]), style="bold red"), r["decision"], r["logged"], r["reference"], r["explanation"])
            for r in frame.iter_rows(named=True)]
        if not rows and not browse.audited:
            rows = [("", "", "", "", Text("the audit is still running", style="italic"))]
        return rows, []


class Timeline(Grid):
    """Every cycle of the log, one line each, with its marks (one cell a line: scrolling re-renders one cell)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__([(" cycle time     jobs  +   -  !NX", 34)], **kw)
        self.lines: list[str] = []  # the lines shown

    def fill(self, browse: Browse) -> None:
        """Show every cycle: number, time, jobs, expanded, shrunken, then its marks."""
        self.show_lines(timeline_lines(browse.timeline))

    def show_lines(self, lines: list[str]) -> None:
        """Show the lines `timeline_lines` made (now, or for a first screen's summary: tui.summary)."""
        styles = [style for _m, style, _w in MARKS]
        rows: list[tuple[Cell, ...]] = []
        for line in lines:
            at = len(line) - len(styles)
            rows.append((Text(line, spans=[Span(at + i, at + i + 1, style) for i, style in enumerate(styles)]),))
        self.lines = lines
        self.set_rows(rows)


def timeline_lines(timeline: pl.DataFrame) -> list[str]:
    """The timeline's line of every cycle (`tui.data.timeline_frame`'s rows): number, time, jobs,
    expanded, shrunken, then its marks."""
    import polars as pl

    # the lines formatted by polars at once (a first screen: 2,500 cycles of i_mega24 in a few ms)
    def count(name: str, width: int) -> pl.Expr:  # (0: blank)
        return (pl.when(pl.col(name) != 0).then(pl.col(name).cast(pl.String)).otherwise(pl.lit(""))
                .str.pad_start(width))
    lines: list[str] = timeline.select(pl.concat_str(
        pl.col("cycle").cast(pl.String).str.pad_start(6), pl.lit(" "),
        pl.col("ts").dt.strftime("%H:%M:%S").fill_null("-").str.pad_end(8), pl.lit(" "),
        pl.col("jobs").cast(pl.String).str.pad_start(4), pl.lit(" "),
        count("expanded", 3), pl.lit(" "), count("shrunken", 3), pl.lit("  "),
        *(pl.when(pl.col(on) != 0).then(pl.lit(mark)).otherwise(pl.lit(" "))
          for on, (mark, _s, _w) in zip(("divergences", "needy", "deaths"), MARKS)))).to_series().to_list()
    return lines
