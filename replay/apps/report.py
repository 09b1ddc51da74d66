"""`rmreplay report`: one self-contained HTML file about a log, for a support ticket.

Time span, the cluster (nodes, nodepools, classes), per-user and per-class shares over time,
utilisation over time, preemptions and defragmentation, node deaths, the audit's divergences and
the jobs that waited longest, with the RM's reasons. Plots are inline SVG drawn here (no script,
no network, no external file), so the page opens anywhere, offline.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.cycleref import epochs, label
from replay.model.logged import logged_decisions, takings
from replay.model.inputs import job_descriptions
from replay.model.machines.liveness import ORDER_ALIKE
from replay.model.nodes import capacity_and_use, node_cycles
from replay.model.orders import work_orders
from replay.model.release import ReleaseChoice
from replay.model.release import choose as choose_release
from replay.model.start import bootstrap
from replay.parsing.sources import InputError
from replay.parsing.tables import LEFT
from replay.apps.measures import logged_holdings
from replay.model.logorder import log_order
from rmref import UNLIMITED

if TYPE_CHECKING:
    from replay.apps.audit import AuditResult
    from replay.apps.stored import Known

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f")
MAX_SERIES = 9  # more users or classes than this: the rest are summed as "others"
MAX_POINTS = 600  # a plot's x axis is bucketed down to this many points
E = html.escape


@dataclass(frozen=True)
class Series:
    """One line (or band) of a plot."""

    name: str
    values: tuple[float, ...]



def _release_text(tables: Mapping[str, pl.DataFrame], chosen: ReleaseChoice | None) -> str:
    """The DUCC release the log is replayed as, with where that came from (the bootstrap's, when there is one)."""
    chosen = chosen or choose_release(tables)
    return f"{chosen.release.name} ({chosen.source}: {chosen.evidence})"


def _bucket(xs: Sequence[int], values: Sequence[float],
            how: Callable[[Sequence[float]], float]) -> tuple[list[int], list[float]]:
    """At most MAX_POINTS points: consecutive cycles merged (mean for levels, sum for events)."""
    step = max(1, -(-len(xs) // MAX_POINTS))
    if step == 1:
        return list(xs), list(values)
    return ([xs[i] for i in range(0, len(xs), step)],
            [how(values[i:i + step]) for i in range(0, len(xs), step)])


def _mean(vs: Sequence[float]) -> float:
    return sum(vs) / len(vs)


def axis_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    step = next((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), raw)
    first = int(lo // step) * step
    return [first + i * step for i in range(int((hi - first) // step) + 1) if first + i * step >= lo]


def tick_label(v: float) -> str:
    """A tick value as the plots print it."""
    return f"{v:,.0f}" if abs(v) >= 10 or v == int(v) else f"{v:.2g}"




def svg_plot(plot_id: str, title: str, xs: Sequence[int], series: Sequence[Series], y_label: str,
             kind: str = "line", events: bool = False, y_max: float | None = None, x_label: str = "cycle") -> str:
    """An inline SVG chart: `line`, `stacked` (bands summing to the total) or `bars` over cycles."""
    w, h, left, right, top, bottom = 900, 260, 60, 150, 28, 36
    pw, ph = w - left - right, h - top - bottom
    if not xs or not series:
        return (f'<svg class="plot empty" id="{plot_id}" width="{w}" height="60" role="img">'
                f'<title>{E(title)}</title><text x="10" y="30">{E(title)}: nothing to plot</text></svg>')
    how = sum if events else _mean
    bx = _bucket(xs, series[0].values, how)[0]
    cols = [_bucket(xs, s.values, how)[1] for s in series]
    if kind == "stacked":
        tops, acc = [], [0.0] * len(bx)
        for col in cols:
            acc = [a + v for a, v in zip(acc, col)]
            tops.append(acc)
        peak = max(acc, default=0)
    else:
        peak = max((v for col in cols for v in col), default=0)
    peak = y_max if y_max is not None else (peak or 1)
    x0, x1 = bx[0], bx[-1] if bx[-1] > bx[0] else bx[0] + 1

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + ph - (min(y, peak) / peak) * ph

    out = [f'<svg class="plot" id="{plot_id}" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" role="img"><title>{E(title)}</title>',
           f'<text x="{left}" y="16" class="ptitle">{E(title)}</text>']
    for t in axis_ticks(0, peak):
        y = py(t)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{tick_label(t)}</text>')
    for t in axis_ticks(x0, x1):
        x = px(t)
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle" class="tick">{tick_label(t)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{h - 4}" text-anchor="middle" class="axis">{E(x_label)}</text>'
               f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" text-anchor="middle" '
               f'class="axis">{E(y_label)}</text>')
    bar_w = max(1.0, pw / max(len(bx), 1) / max(len(cols), 1))
    for i, (s, col) in enumerate(zip(series, cols)):
        color = PALETTE[i % len(PALETTE)]
        if kind == "stacked":
            upper = tops[i]
            lower = tops[i - 1] if i else [0.0] * len(bx)
            pts = [f"{px(x):.1f},{py(v):.1f}" for x, v in zip(bx, upper)]
            pts += [f"{px(x):.1f},{py(v):.1f}" for x, v in zip(reversed(bx), reversed(lower))]
            out.append(f'<polygon class="series" data-series="{E(s.name)}" fill="{color}" fill-opacity="0.8" '
                       f'stroke="none" points="{" ".join(pts)}"/>')
        elif kind == "bars":
            rects = [f'<rect x="{px(x) + i * bar_w - bar_w * len(cols) / 2:.1f}" y="{py(v):.1f}" width="{bar_w:.1f}" '
                     f'height="{top + ph - py(v):.1f}"/>' for x, v in zip(bx, col) if v]
            out.append(f'<g class="series" data-series="{E(s.name)}" fill="{color}">{"".join(rects)}</g>')
        else:
            points = " ".join(f"{px(x):.1f},{py(v):.1f}" for x, v in zip(bx, col))
            out.append(f'<polyline class="series" data-series="{E(s.name)}" fill="none" stroke="{color}" '
                       f'stroke-width="1.8" points="{points}"/>')
        ly = top + 12 + i * 16
        out.append(f'<rect x="{left + pw + 12}" y="{ly - 9}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{left + pw + 26}" y="{ly}" class="legend">{E(s.name[:20])}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/></svg>')
    return "".join(out)


def top_series(per: Mapping[str, Sequence[float]]) -> list[Series]:
    """The biggest MAX_SERIES series by total, the rest summed as 'others'."""
    ranked = sorted(per, key=lambda k: (-sum(per[k]), k))
    keep = ranked if len(ranked) <= MAX_SERIES + 1 else ranked[:MAX_SERIES]
    out = [Series(k, tuple(per[k])) for k in keep]
    rest = [per[k] for k in ranked if k not in keep]
    if rest:
        out.append(Series(f"others ({len(rest)})", tuple(map(sum, zip(*rest)))))
    return out


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], cls: str = "") -> str:
    """An HTML table (cells escaped)."""
    head = "".join(f"<th>{E(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{E('' if v is None else str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _quantum(tables: Mapping[str, pl.DataFrame]) -> int:
    q = tables["nodepools"]["quantum"].drop_nulls()
    return int(q[0]) if len(q) else 15  # ducc.rm.share.quantum's default


def _owners(tables: Mapping[str, pl.DataFrame]) -> dict[int, tuple[str, str]]:
    """job -> (user, class), from the job's latest description."""
    # as every command reads them: work there before the log began is named by its later lines
    rows = (job_descriptions(tables).filter(pl.col("user").is_not_null()).sort(log_order("job_id"), nulls_last=False)
            .unique("job_id", keep="last").select("job_id", "user", "class"))
    return {j: (u, c or "?") for j, u, c in rows.iter_rows()}


def _waiting(tables: Mapping[str, pl.DataFrame], owners: Mapping[int, tuple[str, str]], top: int,
             epoch_of: Mapping[int, int | None]) -> list[tuple[Any, ...]]:
    """The jobs the RM published with a reason (not given what they asked for) in the most cycles."""
    s = tables["schedule"].filter(pl.col("reason").is_not_null() & pl.col("cycle").is_not_null())
    if s.is_empty():
        return []
    held = tables["schedule"].filter(pl.col("host").is_not_null() & (pl.col("kind") == "existing")).select(
        "cycle", "job_id").unique()
    agg = (s.sort(log_order("cycle")).group_by("job_id").agg(
        pl.col("cycle").n_unique().alias("n"), pl.col("cycle").min().alias("first"),
        pl.col("cycle").max().alias("last"), pl.col("reason").last().alias("reason"),
        pl.col("work_type").first().alias("type"))
        .join(held.join(s.select("cycle", "job_id").unique(), on=["cycle", "job_id"], how="semi")
              .group_by("job_id").len("with_shares"), on="job_id", **LEFT)
        .sort(pl.col("n"), pl.col("job_id"), descending=[True, False]).head(top))
    return [(r["job_id"], *owners.get(r["job_id"], ("?", "?")), r["type"], r["n"], r["with_shares"] or 0,
             f'{r["first"]}..{r["last"]} (epochs {epoch_of.get(r["first"])}..{epoch_of.get(r["last"])})', r["reason"])
            for r in agg.iter_rows(named=True)]


CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:12px;margin:8px 0} td,th{border:1px solid #ddd;padding:3px 7px;text-align:left}
th{background:#f3f3f3} .kv td:first-child{font-weight:600} .note{color:#555;font-size:13px}
svg.plot{display:block;margin:8px 0;background:#fff} .grid{stroke:#eee} .frame{fill:none;stroke:#999}
.tick{font-size:10px;fill:#555} .axis{font-size:11px;fill:#333} .ptitle{font-size:13px;font-weight:600}
.legend{font-size:11px} .ok{color:#2a7d2a} .bad{color:#b03030}
"""


# marks the page as rmreplay's: `report -o` replaces an existing file without --force only when it has this
GENERATOR = '<meta name="generator" content="rmreplay">'


def build_report(tables: Mapping[str, pl.DataFrame], title: str = "rmreplay report",
                 audit_result: AuditResult | None = None, top_waiting: int = 15, max_rows: int = 50,
                 sections: Sequence[str] = (), stored: Known | None = None) -> str:
    """The report as one HTML document (pass `audit_result` to include the audit's divergences;
    `sections`: more HTML sections, e.g. a simulation's, placed before the footer; `stored`: the
    machines and the logged takings as the stored audit keeps them, instead of computing them)."""
    cyc = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle")
    if cyc.is_empty():
        raise InputError("no published schedule in the log: nothing to report "
                         "(check that it has `createState  Schedule sent` records)")
    cycles = cyc["cycle"].to_list()
    epoch_of = epochs(cyc)
    orders: pl.DataFrame | None = None  # every job's order: found once, for the machines and the shares
    try:  # the machines, cycle by cycle, from the world model the audit runs on
        boot = bootstrap(tables)
        quantum, no_nodes = boot.config.quantum_gb, ""
        orders = work_orders(tables, quantum, boot)
        nodes: pl.DataFrame | None = stored.nodes if stored is not None else node_cycles(tables, boot, orders=orders)
    except InputError as exc:  # no bootstrap and no --config: the rest of the report still stands
        boot, nodes, quantum, no_nodes, orders = None, None, _quantum(tables), str(exc), None
    owners = _owners(tables)
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">{GENERATOR}<title>{E(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{E(title)}</h1>"]

    parts += _span_section(tables, cyc, cycles, epoch_of, quantum, boot)
    parts += _cluster_section(tables, nodes, no_nodes)
    parts += _shares_section(tables, cycles, owners, quantum, boot, orders)
    parts += _utilisation_section(cycles, nodes, no_nodes)
    parts += _preemptions_section(tables, cycles, epoch_of, stored, max_rows)
    parts += _deaths_section(tables, epoch_of, max_rows)
    parts += _audit_section(audit_result, epoch_of, max_rows)
    parts += _waiting_section(tables, owners, top_waiting, epoch_of)
    parts.extend(sections)
    parts.append("<p class=\"note\">Generated by rmreplay report.</p></body></html>\n")
    return "".join(parts)


def _span_section(tables: Mapping[str, pl.DataFrame], cyc: pl.DataFrame, cycles: list[int],
                  epoch_of: Mapping[int, int | None], quantum: int, boot: Bootstrap | None) -> list[str]:
    """The time span: first and last cycle, log files, quantum and release."""
    parts: list[str] = []
    files = sorted({f for f in cyc["file"].to_list() if f})
    parts.append("<h2 id=\"span\">Time span</h2>" + table(("", ""), [
        ("first cycle", f"{label(cycles[0], epoch_of.get(cycles[0]))} at {cyc['ts_start'][0]}"),
        ("last cycle", f"{label(cycles[-1], epoch_of.get(cycles[-1]))} at {cyc['ts_end'][-1]}"),
        ("cycles", f"{len(cycles):,}"), ("log files", ", ".join(files)), ("share quantum", f"{quantum} GB"),
        ("DUCC release", _release_text(tables, boot.release if boot else None)),
    ], "kv"))
    return parts


def _cluster_section(tables: Mapping[str, pl.DataFrame], nodes: pl.DataFrame | None, no_nodes: str) -> list[str]:
    """The cluster: nodepools, classes and the nodes the RM knew."""
    parts: list[str] = []
    known = (nodes.unique("host", keep="last", maintain_order=True) if nodes is not None
             else pl.DataFrame(schema={"host": pl.String, "nodepool": pl.String, "memory_mb": pl.Int64,
                                       "order": pl.Int64, "order_shown": pl.String}))
    # a pool with a node of unknown order (and memory) has no total to show: None, drawn "?"
    whole = pl.col("order").is_null().any().not_()
    pools = known.group_by("nodepool").agg(
        pl.len().alias("n"), pl.when(whole).then(pl.col("memory_mb").sum()).alias("mb"),
        pl.when(whole).then(pl.col("order").sum()).alias("q")).sort("nodepool")
    parts.append("<h2 id=\"cluster\">Cluster</h2>"
                 f"<p>{known.height} node(s) (arrived, or there before the log began), "
                 f"{tables['nodepools'].height} nodepool(s), {tables['classes'].height} class(es)."
                 + (f" Nodes unknown: {E(no_nodes)}" if nodes is None else "") + "</p>")
    parts.append(table(("nodepool", "parent", "quantum GB", "nodes", "memory GB", "quantum shares", "classes"), [
        (r["name"], r["parent"] or "", r["quantum"],
         *next(((p["n"], "?" if p["mb"] is None else p["mb"] // 1024, "?" if p["q"] is None else p["q"])
                for p in pools.iter_rows(named=True)
                if p["nodepool"] == r["name"]), (0, 0, 0)),
         ", ".join(r["classes"] or ())) for r in tables["nodepools"].iter_rows(named=True)]))
    parts.append(table(("class", "policy", "priority", "weight", "nodepool", "init cap", "cap"), [
        (r["name"], r["policy"], r["priority"], r["weight"], r["nodepool"], r["init_cap"],
         "unlimited" if str(r["cap"]) == str(UNLIMITED) else r["cap"])
        for r in tables["classes"].sort("priority", "name").iter_rows(named=True)]))
    if known.height:
        parts.append("<details><summary>nodes</summary>" + table(("host", "nodepool", "memory MB", "share order"), [
            (r["host"], r["nodepool"], "?" if r["memory_mb"] is None else r["memory_mb"], r["order_shown"])
            for r in known.sort("host").iter_rows(named=True)
        ]) + "</details>")
    return parts


def _own_quanta(boot: Bootstrap | None) -> str:
    """The shares note's words on the top-level pools with a share-quantum of their own ("" when none)."""
    if boot is None:
        return ""
    own = [f"{p.name} {p.quantum_gb} GB" for p in boot.nodepools if p.quantum_gb not in (0, boot.config.quantum_gb)]
    return f"; the pool trees with a quantum of their own count in it ({', '.join(own)})" if own else ""


def _shares_section(tables: Mapping[str, pl.DataFrame], cycles: list[int], owners: Mapping[int, tuple[str, str]],
                    quantum: int, boot: Bootstrap | None, orders: pl.DataFrame | None) -> list[str]:
    """Quantum shares held per user and per class over time (`orders`: every job's, None: found here)."""
    parts: list[str] = []
    held = logged_holdings(tables, quantum, boot, orders)
    own_quanta = _own_quanta(boot)
    per_user: dict[str, list[float]] = {}
    per_class: dict[str, list[float]] = {}
    for i, c in enumerate(cycles):
        for job, q in held.get(c, {}).items():
            user, cls = owners.get(job, ("?", "?"))
            per_user.setdefault(user, [0.0] * len(cycles))[i] += q
            per_class.setdefault(cls, [0.0] * len(cycles))[i] += q
    parts.append("<h2 id=\"shares\">Shares over time</h2><p class=\"note\">Quantum shares held after each "
                 f"cycle ({quantum} GB each{E(own_quanta)}): the published Existing shares less the Removals.</p>")
    parts.append(svg_plot("plot-users", "Shares per user", cycles, top_series(per_user), "quantum shares", "stacked"))
    parts.append(svg_plot("plot-classes", "Shares per class", cycles, top_series(per_class), "quantum shares",
                          "stacked"))
    return parts


def _utilisation_section(cycles: list[int], nodes: pl.DataFrame | None, no_nodes: str) -> list[str]:
    """Quantum shares in use over the online machines' capacity."""
    parts: list[str] = []
    parts.append("<h2 id=\"utilisation\">Utilisation</h2>")
    if nodes is None:
        parts.append(f"<p class=\"note\">Capacity unknown: {E(no_nodes)}</p>")
    else:
        per = {c: (k, u) for c, k, u in capacity_and_use(nodes).iter_rows()}
        # a cycle with an online machine of unknown order has no capacity to plot: left out, and said
        unknown = [c for c in cycles if c in per and per[c][0] is None]
        cycles = [c for c in cycles if c not in unknown]
        cap, used = ([per.get(c, (0, 0))[i] or 0 for c in cycles] for i in (0, 1))
        util = [100.0 * u / k if k else 0.0 for u, k in zip(used, cap)]
        parts.append(f"<p class=\"note\">Quantum shares in use (every process placed on an online machine, "
                     f"including those being preempted) over the online machines' capacity; mean "
                     f"{sum(util) / len(util) if util else 0.0:.1f}%."
                     + (f" Capacity unknown in {len(unknown)} cycle(s), left out: {E(_unsized(nodes))}." if unknown
                        else "")
                     + "</p>")
        parts.append(svg_plot("plot-utilisation", "Utilisation (%)", cycles,
                              [Series("used %", tuple(util))], "% of capacity", y_max=100.0))
        parts.append(svg_plot("plot-capacity", "Capacity and use (quantum shares)", cycles,
                              [Series("capacity", tuple(cap)), Series("in use", tuple(used))], "quantum shares"))
    return parts


def _unsized(nodes: pl.DataFrame) -> str:
    """Why an online node's order is not known, with a few of the nodes by name: in no line and
    not implied by the counters, or one of alike nodes some of which are down (nodes.split_alike)."""
    unknown = nodes.filter(pl.col("order").is_null())
    alike = pl.col("order_from") == ORDER_ALIKE
    out = []
    for rows, why in ((unknown.filter(~alike.fill_null(False)), "an online node's share order is in no line and the "
                       "counters do not imply it"),
                      (unknown.filter(alike.fill_null(False)), "of alike nodes that share their orders, which has "
                       "which no line tells, some are down: the capacity left depends on which, and is not assumed")):
        names = rows["host"].unique().sort().to_list()
        if names:
            out.append(f"{why} ({', '.join(names[:5])}{' ...' if len(names) > 5 else ''})")
    return "; ".join(out)


def _preemptions_section(tables: Mapping[str, pl.DataFrame], cycles: list[int], epoch_of: Mapping[int, int | None],
                         stored: Known | None, max_rows: int) -> list[str]:
    """Preemptions, defragmentation and needy jobs per cycle, as logged."""
    parts: list[str] = []
    logged = stored.takings if stored is not None else takings(logged_decisions(tables))
    ev = tables["evictions"].filter(pl.col("cycle").is_not_null())
    shrink = dict(ev.filter(pl.col("reason") == "shrink").group_by("cycle").len().iter_rows())
    purge = dict(ev.filter(pl.col("reason") == "node_purge").group_by("cycle").len().iter_rows())
    defrag = {c: sum(len(v) for v in jobs.values()) for c, jobs in logged.defrag.items()}
    needy = {c: len(v) for c, v in logged.needy.items()}
    parts.append("<h2 id=\"preemptions\">Preemptions and defragmentation</h2>"
                 f"<p>{sum(shrink.values())} process(es) preempted to rebalance fair shares (shrinkBy), "
                 f"{sum(defrag.values())} taken by defragmentation for needy jobs, {sum(purge.values())} purge "
                 f"line(s) for dead nodes; {sum(needy.values())} needy-job verdict(s).</p>")
    parts.append(svg_plot("plot-preemptions", "Evictions per cycle", cycles, [
        Series("preempted (shrink)", tuple(shrink.get(c, 0) for c in cycles)),
        Series("defragmentation", tuple(defrag.get(c, 0) for c in cycles)),
        Series("node purge", tuple(purge.get(c, 0) for c in cycles)),
        Series("needy jobs", tuple(needy.get(c, 0) for c in cycles))], "events", "bars", events=True))
    rows = sorted([(c, j, "preempted", f"{h} share {s}") for c, jobs in logged.evictions.items()
                   for j, v in jobs.items() for h, s in v if s is not None]
                  + [(c, j, "defragmentation", f"{h} share {s}") for c, jobs in logged.defrag.items()
                     for j, v in jobs.items() for h, s in v]
                  + [(c, j, "needy", f"needs {n} more") for c, jobs in logged.needy.items() for j, n in jobs.items()])
    parts.append(f"<details><summary>events ({len(rows)})</summary>"
                 + table(("cycle", "epoch", "job", "event", "detail"),
                         [(c, epoch_of.get(c), *rest) for c, *rest in rows[:max_rows * 4]]) + "</details>")
    return parts


def _deaths_section(tables: Mapping[str, pl.DataFrame], epoch_of: Mapping[int, int | None], max_rows: int) -> list[str]:
    """Node deaths and returns."""
    parts: list[str] = []
    nd = tables["nodes"].filter(pl.col("event").is_in(["death", "disable", "missed", "reactivate", "recover",
                                                      "recover_node"])).sort(log_order())
    deaths = nd.filter(pl.col("event") == "death").height
    parts.append(f"<h2 id=\"nodes\">Node deaths</h2><p>{deaths} node death(s).</p>"
                 + (table(("time", "cycle", "epoch", "host", "event", "nodepool"), [
                     (r["ts"], r["cycle"], epoch_of.get(r["cycle"]), r["host"], r["event"], r["nodepool"])
                     for r in nd.head(max_rows * 4).iter_rows(named=True)
                 ]) if nd.height else ""))
    return parts


def _audit_section(audit_result: AuditResult | None, epoch_of: Mapping[int, int | None], max_rows: int) -> list[str]:
    """The audit's agreement, divergences and assumptions (a note when not audited)."""
    parts: list[str] = []
    parts.append("<h2 id=\"audit\">Audit divergences</h2>")
    if audit_result is None:
        parts.append("<p class=\"note\">Not audited (run without --no-audit to include it).</p>")
    else:
        rep = audit_result.report()
        ok = rep["cycles_agree"] == rep["cycles_audited"]
        parts.append(f"<p class=\"{'ok' if ok else 'bad'}\">rmref reproduces {rep['cycles_agree']:,} of "
                     f"{rep['cycles_audited']:,} cycles; {len(audit_result.divergences):,} divergent decision(s); "
                     f"{len(audit_result.verified):,} of the RM's free choices verified (one of the choices "
                     f"rmref found equal).</p>")
        parts.append(table(("decision", "agree", "of which verified choices", "total"), [
            (k, v["agree"], rep["verified_choices"].get(k, 0), v["total"]) for k, v in rep["decisions"].items()]))
        if audit_result.skipped:
            parts.append(f"<p class=\"note\">{len(audit_result.skipped):,} cycle(s) not audited: "
                         f"{E(next(iter(audit_result.skipped.values())))}.</p>")
        assumed = [a for a in audit_result.assumed if a.source != "config"]
        if assumed:
            parts.append("<details><summary>settings and machines the log does not state (assumed)</summary>"
                         + table(("setting", "value", "source", "evidence"),
                                 [(a.setting, a.value, a.source, a.evidence) for a in assumed]) + "</details>")
        if audit_result.damaged:
            parts.append(f"<p class=\"note\">{len(audit_result.damaged):,} cycle(s) not audited: input damaged "
                         "(no verdict on the RM there).</p>")
            parts.append(table(("cycle", "epoch", "why"), [(c, d.epoch, d.text())
                                                           for c, d in list(audit_result.damaged.items())[:max_rows]]))
        if audit_result.divergences:
            parts.append(table(("cycle", "epoch", "job", "decision", "logged", "rmref", "why"),
                               [(d.cycle, epoch_of.get(d.cycle), d.job_id, d.decision, d.logged, d.reference,
                                 d.explanation) for d in audit_result.divergences[:max_rows]]))
    return parts


def _waiting_section(tables: Mapping[str, pl.DataFrame], owners: Mapping[int, tuple[str, str]], top_waiting: int,
                     epoch_of: Mapping[int, int | None]) -> list[str]:
    """The jobs that waited longest."""
    parts: list[str] = []
    waiting = _waiting(tables, owners, top_waiting, epoch_of)
    parts.append("<h2 id=\"waiting\">Jobs that waited longest</h2><p class=\"note\">Cycles the RM published "
                 "the job with a reason (it did not get all it asked for); the reason is the last one given.</p>")
    parts.append(table(("job", "user", "class", "type", "cycles waiting", "of which holding shares",
                        "cycles", "reason"), waiting) if waiting else "<p>No job waited.</p>")
    return parts
