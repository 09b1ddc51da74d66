"""An audit's tables (ref_*, divergences, verified_choices, skipped) and report.json."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from replay.apps.audit.result import AuditResult
from replay.apps.reports import report_json
from replay.model.cycleref import rows_frame
from replay.parsing.tables import Schema

EPOCH = {"epoch": pl.Int64}  # last: every frame names its cycle both ways (replay.model.cycleref)
REF_SCHEMAS: dict[str, Schema] = {
    "caps": {"cycle": pl.UInt32, "job_id": pl.Int64, "base_cap": pl.Int64, "projected_cap": pl.Int64,
             "potential_cap": pl.Int64, "actual_cap": pl.Int64, **EPOCH},
    "counts": {"cycle": pl.UInt32, "job_id": pl.Int64, "order": pl.Int64, "shares_given": pl.Int64, **EPOCH},
    "placements": {"cycle": pl.UInt32, "job_id": pl.Int64, "host": pl.String, "order": pl.Int64, **EPOCH},
    "evictions": {"cycle": pl.UInt32, "job_id": pl.Int64, "host": pl.String, "share_id": pl.Int64,
                  "reason": pl.String, **EPOCH},
    "defrag": {"cycle": pl.UInt32, "needy_job": pl.Int64, "donor_job": pl.Int64, "host": pl.String,
               "share_id": pl.Int64, "unsettled": pl.String, **EPOCH},
    "schedule": {"cycle": pl.UInt32, "job_id": pl.Int64, "kind": pl.String, "host": pl.String,
                 "share_id": pl.Int64, **EPOCH},
}
# cycles, or decision kinds of a cycle, the audit did not audit, and why (report.json 'skipped', 'coverage')
SKIPPED_SCHEMA: Schema = {"cycle": pl.UInt32, "decisions": pl.String, "reason": pl.String, **EPOCH}
DIVERGENCE_SCHEMA: Schema = {"cycle": pl.UInt32, "job_id": pl.Int64, "decision": pl.String, "logged": pl.String,
                     "reference": pl.String, "explanation": pl.String, "step": pl.String, "detail": pl.String,
                     **EPOCH}


def result_frames(result: AuditResult) -> dict[str, pl.DataFrame]:
    """ref_<kind> and divergences as data frames (rows in cycle order, as decided), each cycle with its epoch."""
    frames = {f"ref_{k}": rows_frame(result.ref[k], s, result.epochs) for k, s in REF_SCHEMAS.items()}
    frames["divergences"] = rows_frame([d.row() for d in result.divergences], DIVERGENCE_SCHEMA, result.epochs)
    frames["verified_choices"] = rows_frame([v.row() for v in result.verified], DIVERGENCE_SCHEMA, result.epochs)
    frames["skipped"] = rows_frame(skipped_rows(result), SKIPPED_SCHEMA, result.epochs)
    return frames


def skipped_rows(result: AuditResult) -> list[tuple[int, str, str]]:
    """(cycle, decision kinds not audited, why) per cycle the audit left out wholly ("all") or in part."""
    per: dict[tuple[int, str], list[str]] = {}
    for kind in result.audited:
        for cycle, why in result.skipped_kinds.get(kind, {}).items():
            per.setdefault((cycle, why), []).append(kind)
    return [(c, "all" if c in result.skipped else ", ".join(kinds), why) for (c, why), kinds in sorted(per.items())]


def write_audit(result: AuditResult, out: Path) -> None:
    """OUT/report.json, OUT/ref_*.parquet and OUT/divergences.parquet."""
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in result_frames(result).items():
        frame.write_parquet(out / f"{name}.parquet", compression="zstd", statistics=False)
    (out / "report.json").write_text(report_json(result.report()))
