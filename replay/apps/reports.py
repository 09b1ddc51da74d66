"""report.json's contracts: the typed records `audit` and `whatif` build, serialised here alone.

A command builds its report as frozen dataclasses (`AuditReport`, `WhatIfReport`), so what each
key holds is declared once; `as_json` gives the plain mapping (JSON's shapes) that report.json,
the JUnit properties, the TUI and the HTML report read, and `report_json` its one text form.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
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


def as_json(report: AuditReport | WhatIfReport) -> dict[str, Any]:
    """The report as JSON's shapes (mappings, lists, numbers, strings)."""
    return dataclasses.asdict(report)


def report_json(report: dict[str, Any]) -> str:
    """report.json's text: keys sorted, two-space indent, one trailing newline (byte-identical per input)."""
    return json.dumps(report, indent=2, sort_keys=True) + "\n"
