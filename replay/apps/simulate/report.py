"""The simulation's section of `rmreplay report --simulation OUT`: logged against simulated, in the
report's own self-contained SVG style (`replay.apps.report`): shares per user over time, mean
turnaround per class, cumulative preemptions, and the figures of report.json."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from replay.apps.report import MAX_SERIES, PALETTE, E, Series, axis_ticks, svg_plot, table
from replay.apps.report import tick_label as tick
from replay.apps.simulate.reconstruct import projected_rates
from replay.parsing.sources import InputError

FILES = ("report.json", "shares.parquet", "cycles.parquet", "jobs.parquet")


def load_simulation(out: str | Path) -> tuple[dict[str, Any], pl.DataFrame, pl.DataFrame]:
    """(report.json, shares.parquet, cycles.parquet) of a `rmreplay simulate -o OUT` directory."""
    out = Path(out)
    missing = [f for f in FILES if not (out / f).is_file()]
    if missing:
        raise InputError(f"--simulation {out}: not a `rmreplay simulate -o` directory (no {', '.join(missing)})")
    try:
        return (json.loads((out / "report.json").read_text()), pl.read_parquet(out / "shares.parquet"),
                pl.read_parquet(out / "cycles.parquet"))
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"--simulation {out}: cannot read it ({type(exc).__name__}: {exc})") from None


def _user_series(shares: pl.DataFrame, cycles: Sequence[int], side: str, keep: Sequence[str]) -> list[Series]:
    """Quantum shares per user per cycle on one side, the `keep` users and the rest as "others"."""
    per = (shares.group_by("cycle", "user").agg(pl.col(f"qshares_{side}").sum())
           .pivot(on="user", index="cycle", values=f"qshares_{side}").fill_null(0))
    by_cycle = {r["cycle"]: r for r in per.iter_rows(named=True)}
    series = [Series(u, tuple(float(by_cycle.get(c, {}).get(u, 0)) for c in cycles)) for u in keep]
    rest = [u for u in per.columns if u not in keep and u != "cycle"]
    if rest:
        series.append(Series(f"others ({len(rest)})", tuple(
            float(sum(by_cycle.get(c, {}).get(u, 0) for u in rest)) for c in cycles)))
    return series


def svg_bars(plot_id: str, title: str, groups: Mapping[str, Mapping[str, float | None]], y_label: str) -> str:
    """Grouped bars, one group per category (x) and one bar per series (logged, baseline, sim)."""
    w, h, left, right, top, bottom = 900, 260, 60, 150, 28, 48
    pw, ph = w - left - right, h - top - bottom
    names = list(groups)
    sides = list(next(iter(groups.values()), {}))
    peak = max((v for g in groups.values() for v in g.values() if v), default=0) or 1
    out = [(f'<svg class="plot" id="{plot_id}" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" role="img"><title>{E(title)}</title>'),
           f'<text x="{left}" y="16" class="ptitle">{E(title)}</text>',
           (f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" text-anchor="middle" '
            f'class="axis">{E(y_label)}</text>')]
    slot = pw / max(len(names), 1)
    bar = min(slot * 0.8 / max(len(sides), 1), 40.0)
    for t in axis_ticks(0, peak):
        y = top + ph - t / peak * ph
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{tick(t)}</text>')
    for i, name in enumerate(names):
        x0 = left + i * slot + (slot - bar * len(sides)) / 2
        out.append(f'<text x="{left + (i + 0.5) * slot:.1f}" y="{top + ph + 16}" text-anchor="middle" class="tick">'
                   f'{E(name[:14])}</text>')
        for k, side in enumerate(sides):
            v = groups[name][side]
            if v is None:
                continue
            bh = v / peak * ph
            out.append(f'<rect class="series" data-series="{E(side)}" x="{x0 + k * bar:.1f}" y="{top + ph - bh:.1f}" '
                       f'width="{bar:.1f}" height="{bh:.1f}" fill="{PALETTE[k % len(PALETTE)]}"/>')
    for k, side in enumerate(sides):
        ly = top + 12 + k * 16
        colour = PALETTE[k % len(PALETTE)]
        out.append(f'<rect x="{left + pw + 12}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{left + pw + 26}" y="{ly}" class="legend">{E(side)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/></svg>')
    return "".join(out)


def _fmt(v: object, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.{digits}f}" if isinstance(v, float) else str(v)


def java_note(rep: dict[str, Any]) -> str:
    """The section's opening note when the sides are runs of the real Java RM (`simulate --rm`)."""
    rm = rep["rm"]
    sides, ident = rm["sides"], rm["identity_sim"]
    text = (f'The recorded workload run closed loop at the log\'s own cycles ({rep["cycles"]:,}): <b>baseline</b> is '
            f'{E(sides["baseline"])}, <b>sim</b> is {E(sides["sim"])} (the real Java RM on rmreplay\'s harness, its '
            f'rm.log read by rmreplay\'s parser). <b>sim</b> holds what the log shows in '
            f'{_fmt(None if ident["shares_match"] is None else 100 * ident["shares_match"], 1)}% of '
            f'{ident["job_cycles"]:,} job-cycles; completion error median {_fmt(ident["finish_error_median_pct"], 2)}% '
            f'(p90 {_fmt(ident["finish_error_p90_pct"], 2)}%) over {ident["jobs"]} job(s).')
    vs = rm.get("vs")
    if vs:
        first = vs["first_difference"]
        text += (f' The two builds differ in {vs["schedules_differ"]:,} job-cycle schedule(s)'
                 + (f', first at cycle {first["cycle"]}, job {first["job_id"]}.' if first else '.'))
    assumed = "".join(f"<li>{E(line)}</li>" for line in rm["runs"][0]["assumed"])
    return f'<p class="note">{text}</p><p class="note">Assumed (the log cannot settle it):</p><ul>{assumed}</ul>'


def _notes(out: str | Path, jobs: Sequence[int]) -> dict[int, str]:
    """Each of `jobs`' workload note (workload.parquet; empty where the directory has none)."""
    path = Path(out) / "workload.parquet"
    notes = {job: "" for job in jobs}
    if path.is_file():
        work = pl.read_parquet(path, columns=["kind", "job_id", "note"]).filter(
            (pl.col("kind") == "work") & pl.col("job_id").is_in(list(jobs)))
        notes |= {job: note or "" for job, note in work.select("job_id", "note").iter_rows()}
    return notes


def simulation_section(out: str | Path) -> str:
    """The report's "Simulation" section for a `rmreplay simulate -o OUT` directory."""
    rep, shares, cyc = load_simulation(out)
    cycles = cyc["cycle"].to_list()
    change = ", ".join(f"{k}={v}" for k, v in rep["set"].items()) or ""
    if rep.get("scheduler"):
        change = f"{change}, scheduler {rep['scheduler']}" if change else f"scheduler {rep['scheduler']}"
    ident = rep["identity"]
    parts = ['<h2 id="simulation">Simulation</h2>']
    if rep.get("rm"):  # the real Java RM in the loop (replay.javarm): say what the sides are
        parts.append(java_note(rep))
    else:
        parts.append(f'<p class="note">The recorded workload simulated closed loop through rmref at the log\'s '
             f'own cycles '
             f'({rep["cycles"]:,}); <b>baseline</b> is the simulation with nothing changed, <b>sim</b> the one with '
             f'{E(change) if change else "nothing changed (the same as the baseline)"}. The baseline reproduces the '
             f'logged completion times with a median error of {_fmt(ident["finish_error_median_pct"], 2)}% '
             f'(p90 {_fmt(ident["finish_error_p90_pct"], 2)}%) of the turnaround over {ident["jobs"]} job(s), and the '
             f'published shares in {_fmt(None if ident["shares_match"] is None else 100 * ident["shares_match"], 1)}% '
             f'of {ident.get("job_cycles", 0):,} job-cycles.</p>')
    rows = [(key, *(_fmt(rep[key][s]) for s in ("logged", "baseline", "sim")))
            for key in ("preemptions", "defrag_takes", "utilisation", "fairness")]
    parts.append(table(("", "logged", "baseline", "sim"), rows, "kv"))
    projected = rep["workload"]["projected"]
    if projected:
        rate = projected_rates(_notes(out, projected))
        parts.append(f'<p class="note">{len(projected)} job(s) run past the log\'s end; their remaining work is '
                     f"projected at {E(rate)} (workload.parquet, note).</p>")

    totals = shares.group_by("user").agg(pl.col("qshares_logged").sum() + pl.col("qshares_sim").sum())
    ranked = [u for u, _ in sorted(totals.iter_rows(), key=lambda r: (-r[1], r[0]))]
    keep = ranked if len(ranked) <= MAX_SERIES + 1 else ranked[:MAX_SERIES]
    logged, simulated = _user_series(shares, cycles, "logged", keep), _user_series(shares, cycles, "sim", keep)
    peak = max([sum(v) for v in zip(*(s.values for s in logged), strict=True)]
               + [sum(v) for v in zip(*(s.values for s in simulated), strict=True)] + [1])
    parts.append(svg_plot("plot-sim-users-logged", "Shares per user, logged", cycles, logged, "quantum shares",
                          "stacked", y_max=peak))
    parts.append(svg_plot("plot-sim-users-sim", "Shares per user, simulated", cycles, simulated, "quantum shares",
                          "stacked", y_max=peak))

    per_class = rep["per_class"]
    groups = {c: {s: v[f"mean_turnaround_{s}"] for s in ("logged", "baseline", "sim")} for c, v in per_class.items()
              if any(v[f"mean_turnaround_{s}"] is not None for s in ("logged", "baseline", "sim"))}
    parts.append(svg_bars("plot-sim-turnaround", "Mean turnaround per class", groups, "seconds") if groups
                 else '<p class="note">No job finished inside the log: no turnaround to compare.</p>')
    parts.append(table(("class", "jobs", "finished (logged/baseline/sim)", "mean turnaround s (logged/baseline/sim)",
                        "mean wait s", "mean quantum shares"), [
        (c, v["jobs"], " / ".join(str(v[f"finished_{s}"]) for s in ("logged", "baseline", "sim")),
         *(" / ".join(_fmt(v[f"{key}_{s}"]) for s in ("logged", "baseline", "sim"))
           for key in ("mean_turnaround", "mean_wait", "mean_shares"))) for c, v in per_class.items()]))

    cumulative = [Series(side, tuple(float(x) for x in cyc[f"preemptions_{side}"].cum_sum().to_list()))
                  for side in ("logged", "baseline", "sim")]
    parts.append(svg_plot("plot-sim-preemptions", "Cumulative preemptions", cycles, cumulative, "processes"))
    return "".join(parts)
