"""`rmreplay check --simulate`: gate a change on what the closed loop says it does, with JUnit XML.

Per class, the change's mean turnaround over the jobs that finished both with and without it,
against the baseline's over the same jobs (`--max-turnaround-increase PCT`); a job that finishes
without the change but no longer does with it fails its class whatever the threshold. In all,
the processes the change's scheduler takes from running work (`--max-preemptions N`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import polars as pl

from replay.apps.junit import Case, Failure, Suite
from replay.apps.junit import junit_xml as suite_xml

SUMMARY_KEYS = ("cycles", "set", "scheduler", "identity", "preemptions", "defrag_takes", "utilisation", "fairness",
                "rm")


@dataclass(frozen=True)
class Gate:
    """One threshold checked on one log."""

    name: str
    ok: bool
    message: str


def turnaround_gates(jobs: pl.DataFrame, max_increase: float) -> list[Gate]:
    """Per class with jobs that finished in the baseline: the change's paired mean turnaround increase."""
    gates = []
    for (cls,), rows in sorted(jobs.group_by("class"), key=lambda g: g[0][0]):
        ended = rows.filter(pl.col("turnaround_baseline").is_not_null())
        if ended.is_empty():
            continue
        both = ended.filter(pl.col("turnaround_sim").is_not_null())
        lost = ended.height - both.height
        base, new = both.select(pl.mean("turnaround_baseline", "turnaround_sim")).row(0)  # None when empty
        increase = (new - base) / base * 100.0 if base else 0.0
        ok = lost == 0 and increase <= max_increase
        message = (f"class {cls}: mean turnaround {base or 0:,.1f} s -> {new or 0:,.1f} s over {both.height} job(s) "
                   f"({increase:+.1f}%, allowed +{max_increase:g}%)")
        if lost:
            message += f"; {lost} job(s) that finished without the change no longer finish inside the log"
        gates.append(Gate(f"class {cls} turnaround increase <= {max_increase:g}%", ok, message))
    return gates


def vs_gate(vs: dict[str, Any], max_changed: int) -> Gate:
    """`--vs`: the second Java build may change the schedule of at most N job-cycles of the first's."""
    n, first = vs["schedules_differ"], vs["first_difference"]
    where = f"; first at cycle {first['cycle']}, job {first['job_id']}" if first else ""
    return Gate(f"{vs['sim']} vs {vs['baseline']}: changed job-cycles <= {max_changed}", n <= max_changed,
                f"{n:,} job-cycle schedule(s) differ ({vs['job_cycles_differ']:,} hold different processes; "
                f"allowed {max_changed:,}){where}")


def gates(report: dict[str, Any], jobs: pl.DataFrame, max_increase: float | None, max_preemptions: int | None,
          max_changed: int = 0) -> list[Gate]:
    """Every gate asked for, on one simulated log (with `--vs`, the builds' difference too)."""
    out = turnaround_gates(jobs, max_increase) if max_increase is not None else []
    if "vs" in report.get("rm", {}):
        out.append(vs_gate(report["rm"]["vs"], max_changed))
    if max_preemptions is not None:
        n = report["preemptions"]["sim"]
        out.append(Gate(f"preemptions <= {max_preemptions}", n <= max_preemptions,
                        f"{n:,} process(es) preempted with the change (baseline {report['preemptions']['baseline']:,}, "
                        f"logged {report['preemptions']['logged']:,}; allowed {max_preemptions:,})"))
    return out


def junit_xml(results: list[tuple[str, list[Gate], dict[str, Any], float]]) -> str:
    """A JUnit XML document: one testsuite per log, one testcase per gate."""
    suites = []
    for name, checked, report, seconds in results:
        cases = tuple(Case("rmreplay.check.simulate", g.name, "0", g.message,
                           None if g.ok else Failure(g.message, "Threshold", g.message)) for g in checked)
        summary = {k: report[k] for k in SUMMARY_KEYS if k in report}
        suites.append(Suite(name, f"{seconds:.3f}", cases, output=json.dumps(summary, sort_keys=True)))
    return suite_xml("rmreplay check --simulate", suites)
