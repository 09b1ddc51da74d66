"""report.json's contracts: the typed records `audit`, `whatif` and `simulate` build, serialised here alone.

A command builds its report as frozen dataclasses (`AuditReport`, `WhatIfReport`, `SimulateReport`), so what each
key holds is declared once; `as_json` gives the plain mapping (JSON's shapes) that report.json,
the JUnit properties, the TUI and the HTML report read, and `report_json` its one text form.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from replay.model.settings import Assumption

Span = dict[str, dict[str, int | None]]  # {"first": {"cycle", "epoch"}, "last": {...}} (cycleref.span_of)
PerSide = dict[str, int]  # a figure as logged, by rmref unchanged and with the change (whatif.SIDES)


@dataclass(frozen=True)
class Agreement:
    """One decision kind's tally: decisions agreeing, of all compared."""

    agree: int
    total: int


@dataclass(frozen=True)
class LeftOut:
    """Cycles a command left out, and the first reason."""

    cycles: int
    reason: str | None


@dataclass(frozen=True)
class Coverage:
    """One decision kind: cycles audited for it, cycles not, and how many for each reason."""

    cycles_audited: int
    cycles_skipped: int
    skipped_because: dict[str, int]


@dataclass(frozen=True)
class AuditReport:
    """`rmreplay audit`'s report.json."""

    cycles: int  # audited, damaged and skipped
    cycles_audited: int
    cycles_agree: int  # verified choices count as agreeing
    damaged: dict[str, Any]  # replay.model.damage.damage_report
    config_conflicts: list[dict[str, str]]
    decisions: dict[str, Agreement]
    verified_choices: dict[str, int]
    audited: list[str]
    skipped: LeftOut
    span: Span | None
    coverage: dict[str, Coverage]
    assumed: list[Assumption]
    rm_release: dict[str, str] | None  # replay.model.release.ReleaseChoice.to_json


@dataclass(frozen=True)
class Partly:
    """Cycles whose machines are unknown, where only the decisions that do not read them are compared."""

    cycles: int
    decisions: list[str]
    reason: str | None


@dataclass(frozen=True)
class WhatIfReport:
    """`rmreplay whatif`'s report.json (every figure per side: logged, baseline, whatif)."""

    cycles: int
    cycles_changed: int
    jobs_changed: int
    baseline_divergent_cycles: int
    per_user: dict[str, dict[str, float]]
    preemptions: PerSide
    evictions: PerSide
    defrag_takes: PerSide
    fairness: dict[str, float | None]
    decisions_changed: dict[str, int]
    unreproduced: int
    set: dict[str, str]
    scheduler: str | None
    open_loop: bool
    span: Span | None
    skipped: LeftOut
    partly: Partly
    assumed: list[Assumption]


@dataclass(frozen=True)
class WorkloadSummary:
    """Where a simulation's workload came from, how much of it, and the work the log does not end or begin."""

    source: str = field(metadata={"key": "from"})  # "log", or the --workload file
    work: int
    node_events: int
    start_processes: int
    projected: list[int]  # jobs that run past the log's end: their remaining work projected
    present_from_start: list[int]  # jobs there before the log began


@dataclass(frozen=True)
class SimAssumed:
    """What a simulation took for what the log does not settle."""

    epoch_ms: float
    start_delay_s: float | None
    stop_delay_s: float | None
    settings: list[Assumption]


@dataclass(frozen=True)
class SimulateReport:
    """`rmreplay simulate`'s report.json (every figure per side: logged, baseline, sim)."""

    cycles: int
    set: dict[str, str]
    scheduler: str | None
    changed: bool
    workload: WorkloadSummary
    jobs: list[dict[str, Any]]  # jobs.parquet's rows
    identity: dict[str, Any]  # the baseline against the log (metrics.identity)
    per_class: dict[str, dict[str, float | None]]
    per_user: dict[str, dict[str, float | None]]
    preemptions: dict[str, int]
    defrag_takes: dict[str, int]
    utilisation: dict[str, float | None]
    fairness: dict[str, float | None]
    assumed: SimAssumed
    # the real Java RM's runs (`simulate --rm`, replay.javarm): absent from report.json without them
    rm: dict[str, Any] | None = field(default=None, metadata={"omit_if_none": True})


def as_json(report: AuditReport | WhatIfReport | SimulateReport) -> dict[str, Any]:
    """The report as JSON's shapes (mappings, lists, numbers, strings): a field is named by its
    `key` metadata where it has one, and one marked `omit_if_none` is left out when None."""
    out: dict[str, Any] = _json(report)
    return out


def _json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if v is None and f.metadata.get("omit_if_none"):
                continue
            out[f.metadata.get("key", f.name)] = _json(v)
        return out
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_json(v) for v in value)
    return value


def report_json(report: dict[str, Any], allow_nan: bool = True) -> str:
    """report.json's text: keys sorted, two-space indent, one trailing newline (byte-identical per input)."""
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=allow_nan) + "\n"
