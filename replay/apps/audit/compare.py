"""One decision kind of one cycle compared with the log, job by job: tallies and findings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from replay.apps.audit.result import AuditResult, Finding
from replay.apps.causes import Cause
from replay.apps.verify import Verified


def compare(result: AuditResult, kind: str, cycle: int, logged: Mapping[int, object],
            ref: Mapping[int, object], explain: Callable[[int, object, object], Cause],
            verified: Mapping[int, Verified] | None = None, step: str | Callable[[int], str] = "") -> None:
    """Tally one decision kind of one cycle, job by job, and record every disagreement with its cause
    (and every agreement that is a verified choice, `verified`: job -> rmref's own pick and why, under
    the RM's method `step`, or `step(job)` where it depends on the job)."""
    for job in sorted(set(logged) | set(ref) | set(verified or ())):
        lv, rv = logged.get(job), ref.get(job)
        result.tally[kind][1] += 1
        if lv == rv:
            result.tally[kind][0] += 1
            if verified and job in verified:
                v, named = verified[job], step if isinstance(step, str) else step(job)
                result.verified.append(Finding(cycle, job, kind, str(lv), str(v.own),
                                               f"{named}, job {job}: {v.sentence}", named, v.sentence))
        else:
            cause = explain(job, lv, rv)
            if not cause.entity:
                cause = replace(cause, entity=f"job {job}")
            result.divergences.append(Finding(cycle, job, kind, str(lv), str(rv), cause.sentence(), cause.step,
                                              cause.detail))
