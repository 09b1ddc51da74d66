"""Lines several commands print: what was assumed, and the cycles left out and why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay.apps.audit import AuditResult
    from replay.apps.simulate.simulation import Simulated
    from replay.apps.whatif import WhatIfResult


def ids(jobs: Sequence[int]) -> str:
    """At most ten job ids, then '...'."""
    return ", ".join(map(str, jobs[:10])) + (", ..." if len(jobs) > 10 else "")


def assumed_block(result: AuditResult | WhatIfResult | Simulated) -> list[str]:
    """One line per setting the log's bootstrap and --config did not give (defaulted or inferred),
    and one for the machines; report.json has every one with its evidence."""
    from replay.model.settings import shown  # (the results hold polars already; this module loads none)

    lines = [f"  {text}" for text in shown(a for a in result.assumed
                                           if a.source != "config" and not a.setting.startswith("node "))]
    return ["assumed or inferred (the evidence for each: report.json 'assumed'):", *lines] if lines else []


def skipped_line(skipped: Mapping[int, str], done: str = "audited") -> str | None:
    """The cycles a command left out as the audit does, and why (None when none)."""
    if not skipped:
        return None
    return f"[yellow]{len(skipped):,} cycle(s) not {done}: {next(iter(skipped.values()))}[/]"


def partly_line(partly: Mapping[int, str]) -> str | None:
    """The cycles a what-if compared only the decisions that do not read the machines in, and why."""
    if not partly:
        return None
    from replay.model.start import NODE_FREE

    return (f"[yellow]{len(partly):,} cycle(s) compared for {', '.join(NODE_FREE)} only: "
            f"{next(iter(partly.values()))}[/]")


def baseline_line(report: dict[str, Any]) -> str:
    """What the changes are counted against: rmref unchanged, and where it already differs from the log."""
    n, cycles, decisions = report["baseline_divergent_cycles"], report["cycles"], report["unreproduced"]
    if not n:
        return f"rmref unchanged reproduces every logged decision ({decisions:,} unreproduced)"
    return (f"rmref unchanged already differs from the log in {n:,} of {cycles:,} cycles ({decisions:,} "
            f"decision{'s' if decisions != 1 else ''} unreproduced; `rmreplay audit` shows why); changes are "
            "counted against it")
