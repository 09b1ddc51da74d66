"""Check one oracle run: audit each log (rmref vs the logged decisions) and rmref vs truth.jsonl.

For the INFO and the DEBUG log separately: parse, `replay.apps.audit.audit`, tally the audit report's
decision kinds (every kind it has, so a kind added later is picked up), and compare rmref's own
reference decisions (`result_frames`) with the real scheduler's state per cycle the way
tests/integration/test_audit_truth.py does. Units: caps, counts, placements and evictions per
(cycle, job); defrag per cycle (the ordered list of actions).

When truth.jsonl has no defragmentation section (the oracle does not capture it yet: no job has
`in_needy_list` and no action is recorded) defrag is not checked against truth, and the shares
defragmentation moved are taken from the RM's own log instead: the new removals the log's shrink
and purge lines do not account for (`Logged.defrag`), the reassigned and cancelled connectShare
lines (`Logged.connected` against truth's Additions).
"""

from __future__ import annotations

import gzip
import json
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl

from replay import parse
from replay.apps.audit import audit, result_frames
from replay.model.logged import Logged, logged_decisions
from rmref.constants import NOT_NEW

LEVELS = {"info": "rm.log", "debug": "rm-debug.log"}


@dataclass
class Failure:
    """One disagreement: rmref against the log (source "log") or against truth.jsonl ("truth")."""

    cycle: int
    job: int | None
    kind: str
    source: str
    expected: str
    got: str
    text: str


@dataclass
class LevelResult:
    """The audit and the truth check of one log level."""

    cycles: int = 0
    cycles_agree_log: int = 0
    cycles_agree_truth: int = 0
    audit: dict[str, list[int]] = field(default_factory=dict)  # kind -> [agree, total]
    verified: dict[str, int] = field(default_factory=dict)  # kind -> the RM's free choices verified (agreeing)
    verified_truth: dict[str, int] = field(default_factory=dict)  # the same, against truth.jsonl
    truth: dict[str, list[int] | None] = field(default_factory=dict)  # None: truth cannot tell
    failures: list[Failure] = field(default_factory=list)
    error: str | None = None  # an exception of rmreplay, one line
    skipped: int = 0

    def first_failure(self, kind: str | None = None) -> Failure | None:
        """The earliest failure (of `kind`, when given), log before truth within a cycle."""
        rows = [f for f in self.failures if kind in (None, f.kind)]
        return min(rows, key=lambda f: (f.cycle, f.source != "log", f.kind, f.job or 0), default=None)

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)


def _one_line(exc: BaseException) -> str:
    """`Type: message (file:line in function)` of the innermost frame."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" ({Path(tb[-1].filename).name}:{tb[-1].lineno} in {tb[-1].name})" if tb else ""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {msg}{where}"[:400]


def _plain_or_gz(path: Path) -> Path:
    """`path`, or its gzipped copy (committed fixtures are gzipped)."""
    gz = path.with_name(path.name + ".gz")
    return gz if not path.exists() and gz.exists() else path


def load_truth(path: Path) -> list[dict]:
    """truth.jsonl (or .gz) records, one per published schedule."""
    path = _plain_or_gz(path)
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def truth_has_defrag(truth: list[dict]) -> bool:
    """Whether the truth records capture defragmentation (the bundled fixtures do, the oracle may not)."""
    return any("in_needy_list" in j for r in truth for j in r["jobs"]) or any(
        r.get("defrag", {}).get("actions") for r in truth)


def _tally(res: LevelResult, kind: str, cycle: int, expected: dict, got: dict, describe: Callable) -> None:
    """Count one kind's per-job units of a cycle and record each disagreement (`describe` says why)."""
    tally = res.truth.setdefault(kind, [0, 0])
    for job in sorted(set(expected) | set(got), key=lambda j: (j is None, j or 0)):
        e, g = expected.get(job), got.get(job)
        tally[1] += 1
        if e == g:
            tally[0] += 1
        else:
            why = describe(job, e, g)
            res.failures.append(Failure(cycle, job, kind, "truth", str(e), str(g), why))


def _defrag_words(expected: list, ours: list, unsettled: list) -> str:
    """rmref's defragmentation actions against truth's; when they first part at or after an action
    the audit marks unsettled (a choice by an order of shares the log does not show), it says so."""
    text = f"rmref's defragmentation actions {ours}, truth's {expected}"
    first = next((i for i, (e, g) in enumerate(zip(expected, ours)) if e != g), min(len(expected), len(ours)))
    if first < len(unsettled) and unsettled[first]:
        text += (f"; from action {first + 1} on, takeFromTheRich chose by an order of shares the log does not "
                 f"show ({unsettled[first]}), and the audit did not find truth's choice among rmref's")
    return text


def _open_order_only(expected: list, ours: list, unsettled: list) -> bool:
    """Whether rmref cleared truth's shares and only their order differs, from an action the
    audit marks unsettled on: the order a round clears equally ranked shares in is open (no
    published decision shows it), so truth's order is one of rmref's equal choices."""
    if expected == ours or sorted(expected) != sorted(ours):
        return False
    first = next(i for i, (e, g) in enumerate(zip(expected, ours)) if e != g)
    return bool(unsettled[first])


def _group(rows: Iterable[tuple], key: Callable, value: Callable) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(key(r), []).append(value(r))
    return out


def _removals(record: dict) -> set[tuple[int, str, int]]:
    """(job, host, share id) of every share the published schedule lists as removed."""
    hosts = {(j["id"], s["id"]): s["host"] for j in record["jobs"] for s in j["shares"]}
    return {(j["id"], hosts.get((j["id"], s), "?"), s) for j in record["jobs"] for s in j["preempted"]}


def _truth_defrag_evictions(record: dict) -> set[tuple[int, str, int]]:
    return {(a["donor_job"], a["host"], a["share"]) for a in record["defrag"]["actions"] if a["action"] == "evict"}


def _logged_defrag_evictions(logged: Logged, cycle: int) -> set[tuple[int, str, int]]:
    return {(job, host, sid) for job, taken in logged.defrag.get(cycle, {}).items() for host, sid in taken}


def _expected_placements(record: dict, logged: Logged | None) -> Counter:
    """What Of's placements as truth shows them, with defragmentation's moves put back (from truth's
    defrag section, or when it has none from the log's connectShare lines)."""
    out: Counter = Counter()
    added: dict[int, tuple[int, str, int]] = {}
    for j in record["jobs"]:
        ids = set(j["added"])
        for s in j["shares"]:
            if s["id"] in ids:
                added[s["id"]] = (j["id"], s["host"], s["order"])
    out.update(added.values())
    if logged is None:
        for a in record["defrag"]["actions"]:
            if a["action"] in ("cancel_pending", "reassign_pending"):
                out[(a["donor_job"], a["host"], a["order"])] += 1
            if a["action"] == "reassign_pending":
                out[(a["needy_job"], a["host"], a["order"])] -= 1
        return +out
    known = {s["id"] for j in record["jobs"] for s in j["shares"]}
    for job, host, order, sid in logged.connected.get(record["cycle"], ()):
        if sid in added and added[sid][0] != job:  # placed for `job`, handed to a needy job
            out[added[sid]] -= 1
            out[(job, host, order)] += 1
        elif sid is not None and sid not in known:  # placed, then cancelled by defragmentation
            out[(job, host, order)] += 1
    return +out


def _per_job(items: Iterable[tuple]) -> dict[int, list]:
    """(job, *rest) rows as job -> sorted list of rest."""
    out: dict[int, list] = {}
    for job, *rest in items:
        out.setdefault(job, []).append(tuple(rest))
    return {j: sorted(v) for j, v in out.items()}


def check_truth(res: LevelResult, frames: dict[str, pl.DataFrame], truth: list[dict], logged: Logged,
                cycles: Iterable[int]) -> None:
    """rmref's reference decisions against the real scheduler's recorded state, for the audited cycles."""
    with_defrag = truth_has_defrag(truth)
    audited = set(cycles)
    rows = {k: frames[f"ref_{k}"].drop("epoch").rows() for k in ("caps", "counts", "placements", "evictions", "defrag")}
    caps = _group(rows["caps"], lambda r: r[0], lambda r: (r[1], r[5]))
    counts = _group(rows["counts"], lambda r: r[0], lambda r: (r[1], r[3]))
    placed = _group(rows["placements"], lambda r: r[0], lambda r: r[1:])
    # a share shrinkBy marks while it is leaving anyway is no new removal (truth lists new ones)
    evicted = _group([r for r in rows["evictions"] if r[4] not in NOT_NEW], lambda r: r[0], lambda r: r[1:4])
    defrag = _group(rows["defrag"], lambda r: r[0], lambda r: tuple(r[1:]))
    before: set = set()
    for record in truth:
        cycle = record["cycle"]
        now = _removals(record)
        new_removals, before = now - before, now
        if cycle not in audited:
            continue  # the audit skipped it (an input the log lacks): rmref decided nothing
        jobs = {j["id"]: j for j in record["jobs"]}
        ref_caps = dict(caps.get(cycle, ()))
        _tally(res, "caps", cycle, {j: jobs[j]["job_cap"] if j in jobs else None for j in ref_caps}, ref_caps,
               lambda j, e, g: f"rmref's cap {g}, truth's job_cap {e}")
        _tally(res, "counts", cycle, {j: v["nshares_given"] for j, v in jobs.items()}, dict(counts.get(cycle, ())),
               lambda j, e, g: f"rmref counts {g} processes, truth's nshares_given {e}")
        want = _expected_placements(record, None if with_defrag else logged)
        _tally(res, "placements", cycle, _per_job(want.elements()), _per_job(placed.get(cycle, ())),
               lambda j, e, g: f"rmref places on {g or 'nothing'}, truth's Additions {e or 'nothing'}")
        taken = _truth_defrag_evictions(record) if with_defrag else _logged_defrag_evictions(logged, cycle)
        _tally(res, "evictions", cycle, _per_job(new_removals - taken), _per_job(evicted.get(cycle, ())),
               lambda j, e, g: f"rmref evicts {g or 'nothing'}, truth's new Removals (less defrag's) {e or 'nothing'}")
        if with_defrag:
            expected = [(a["needy_job"], a["donor_job"], a["host"], a["share"] if a["action"] == "evict" else 0)
                        for a in record["defrag"]["actions"]]
            ours = [r[:4] for r in defrag.get(cycle, [])]
            unsettled = [r[4] for r in defrag.get(cycle, [])]
            if _open_order_only(expected, ours, unsettled):
                res.verified_truth["defrag"] = res.verified_truth.get("defrag", 0) + 1
                ours = expected
            if expected or ours:
                needy = (expected or ours)[0][0]
                _tally(res, "defrag", cycle, {needy: expected}, {needy: ours},
                       lambda j, e, g: _defrag_words(e, g, unsettled))
    if not with_defrag:
        res.truth["defrag"] = None  # not captured: cannot tell
    for name in frames:  # a reference kind added later has no truth check here yet: say so
        if name.startswith("ref_"):
            res.truth.setdefault(name.removeprefix("ref_"), None)


def check_level(run_dir: Path, level: str, truth: list[dict]) -> LevelResult:
    """Parse, audit and truth-check one log of an oracle run; an rmreplay exception is the result's error."""
    res = LevelResult()
    try:
        tables = parse([_plain_or_gz(run_dir / LEVELS[level])]).tables
        result = audit(tables)
        report = result.report()
        res.cycles, res.cycles_agree_log = report["cycles"], report["cycles_agree"]
        res.skipped = report.get("skipped", {}).get("cycles", 0) or 0
        res.audit = {k: [v["agree"], v["total"]] for k, v in report["decisions"].items()}
        res.verified = dict(report["verified_choices"])
        for d in result.divergences:
            res.failures.append(Failure(int(d.cycle), d.job_id, d.decision, "log", d.logged, d.reference,
                                        d.explanation))
        check_truth(res, result_frames(result), truth, logged_decisions(tables), result.cycles)
    except Exception as exc:  # noqa: BLE001 - a crash of rmreplay is a result, not the end of the run
        res.error = _one_line(exc)
        return res
    bad_truth = {f.cycle for f in res.failures if f.source == "truth"}
    res.cycles_agree_truth = sum(1 for c in result.cycles if c not in bad_truth)
    return res


def check_run(run_dir: Path, levels: Iterable[str] = ("info", "debug")) -> dict[str, LevelResult]:
    """Every requested level of one oracle run."""
    truth = load_truth(run_dir / "truth.jsonl")
    return {lv: check_level(run_dir, lv, truth) for lv in levels if _plain_or_gz(run_dir / LEVELS[lv]).exists()}
