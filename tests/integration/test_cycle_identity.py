"""A cycle keeps its name, the RM's epoch, in a log cut anywhere: checked against truth.jsonl's `epoch`.

A cut log numbers its cycles from 1, so the number changes with the cut; the epoch does not. Every
output that names a cycle carries the epoch beside the number, and `--cycles`, `--cycle` and the
TUI's `g` take either.
"""

from __future__ import annotations

import gzip
import json

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay import InputError, parse
from replay.cli import main
from replay.model.cycleref import CycleRef, CycleSpan, parse_ref, parse_span, resolve, resolve_span
from tests.helpers import FIXTURES, log_path, truth

SENT = "createState  Schedule sent to Orchestrator"
# where a production log may begin: (what, the line to look for from 40% of the log on, lines after it)
CUTS = [("inside an RmCounter block", "RmCounter Start", 2),
        ("inside a createState structure", "createState  \n", 2),
        ("between cycles", "Scheduling loop returns", 1)]


def _lines(name: str, level: str) -> list[str]:
    path = log_path(name, level)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return fh.readlines()


def _cut(lines: list[str], marker: str, after: int) -> int:
    """The index of the first line a log cut there keeps."""
    start = int(len(lines) * 0.4)
    return next(i for i in range(start, len(lines)) if marker in lines[i]) + after


@pytest.mark.parametrize("where, marker, after", CUTS, ids=[c[0] for c in CUTS])
def test_a_cut_log_names_its_cycles_by_truths_epochs(fixture_log, where, marker, after, tmp_path):
    """Cycle k of the cut log is truth's cycle k + (schedules published before the cut): same epoch,
    the first one too when the cut leaves it without its loop-entry line."""
    name, level = fixture_log
    lines = _lines(name, level)
    cut = _cut(lines, marker, after)
    before = sum(SENT in line for line in lines[:cut])
    log = tmp_path / "rm.log"
    log.write_text("".join(lines[cut:]))
    cycles = parse([log]).tables["cycles"].sort("cycle")
    want = [rec["epoch"] for rec in truth(name)[before:]]
    assert cycles["cycle"].to_list() == list(range(1, len(want) + 1))
    assert cycles["epoch"].to_list() == want, where


def _cut_h_mega15(tmp_path, loop: int = 60):
    """h_mega15's DEBUG log from its `loop`-th scheduling loop on (the audit can rebuild it with --config)."""
    lines = _lines("h_mega15", "rm-debug.log")
    start = [i for i, line in enumerate(lines) if "Entering scheduling loop" in line][loop - 1]
    log = tmp_path / "cut.log"
    log.write_text("".join(lines[start:]))
    return log, sum(SENT in line for line in lines[:start])


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_audit_outputs_carry_truths_epoch_and_select_by_it(tmp_path, capsys):
    """The audit of a cut log: every ref_* and report row names the epoch truth gives that cycle; the
    same epochs select the same decisions in the cut log and in the whole log."""
    log, before = _cut_h_mega15(tmp_path)
    config = str(FIXTURES / "h_mega15" / "resources")
    epoch_of = {rec["cycle"]: rec["epoch"] for rec in truth("h_mega15")}
    first, last = epoch_of[before + 3], epoch_of[before + 9]
    span = f"e{first}:e{last}"
    _run(capsys, "audit", str(log), "--config", config, "--cycles", span, "-o", str(tmp_path / "cut"))
    _run(capsys, "audit", str(log_path("h_mega15", "rm-debug.log")), "--cycles", span, "-o", str(tmp_path / "all"))
    for out in ("cut", "all"):
        caps = pl.read_parquet(tmp_path / out / "ref_caps.parquet")
        offset = before if out == "cut" else 0
        assert caps.height and all(epoch_of[c + offset] == e for c, e in caps.select("cycle", "epoch").iter_rows())
        report = json.loads((tmp_path / out / "report.json").read_text())
        assert (report["span"]["first"]["epoch"], report["span"]["last"]["epoch"]) == (first, last)
        assert report["cycles"] == 7
    cut, whole = (pl.read_parquet(tmp_path / o / "ref_counts.parquet").drop("cycle").sort(pl.all())
                  for o in ("cut", "all"))
    assert cut.height and cut.equals(whole)


def test_explain_and_whatif_name_the_epoch(tmp_path, capsys):
    """explain --cycle eN tells truth's cycle with that epoch (text and JSON); what-if's changes name epochs."""
    rec = truth("a_tiny")[9]
    job = rec["jobs"][0]["id"]
    log = str(log_path("a_tiny"))
    code, by_epoch, _ = _run(capsys, "explain", log, "--job", str(job), "--cycle", f"e{rec['epoch']}")
    _, by_number, _ = _run(capsys, "explain", log, "--job", str(job), "--cycle", str(rec["cycle"]))
    assert code == 0 and by_epoch == by_number and f"Cycle {rec['cycle']} (epoch {rec['epoch']})" in by_epoch
    _, text, _ = _run(capsys, "explain", log, "--job", str(job), "--cycle", f"e{rec['epoch']}", "--json")
    story = json.loads(text)
    assert (story["cycle"], story["epoch"]) == (rec["cycle"], rec["epoch"])
    epoch_of = {r["cycle"]: r["epoch"] for r in truth("a_tiny")}
    assert all(e["epoch"] == epoch_of[e["cycle"]] for e in story["life"])
    _run(capsys, "whatif", log, "--set", "ducc.rm.share.quantum=8", "-o", str(tmp_path / "w"))
    changes = pl.read_parquet(tmp_path / "w" / "changes.parquet")
    assert changes.height and all(epoch_of[c] == e for c, e in changes.select("cycle", "epoch").iter_rows())


@pytest.mark.parametrize("bad", ["e3", "e999", "x7", "e", "e12:e9"])
def test_an_epoch_that_names_no_cycle_is_a_usage_error(capsys, bad):
    """a_tiny's cycles have epochs 6-25: e3 never published, e999 never came."""
    code, _, err = _run(capsys, "audit", str(log_path("a_tiny")), "--cycles", bad)
    assert code == 2 and "--cycles" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _cycles(epochs: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame({"cycle": range(1, len(epochs) + 1), "epoch": epochs},
                        schema={"cycle": pl.UInt32, "epoch": pl.Int64})


def test_an_epoch_the_rm_counted_twice_is_ambiguous():
    """The RM counts from 0 again when it restarts: an epoch both runs reached names two cycles."""
    cycles = _cycles([5, 6, 7, 2, 3, 4, 5, 6])
    with pytest.raises(InputError, match="names cycles 2, 8"):
        resolve(CycleRef(6, epoch=True), cycles)
    assert resolve(CycleRef(7, epoch=True), cycles) == 3
    with pytest.raises(InputError, match="no published cycle has epoch 1"):  # no snapping across a restart
        resolve_span(parse_span("e1:e7"), cycles)


@given(st.lists(st.integers(1, 5), min_size=1, max_size=30), st.integers(0, 120), st.integers(0, 120))
def test_an_epoch_range_is_the_cycles_whose_epochs_lie_in_it(steps, a, b):
    """One RM run (epochs only grow, with gaps): eA:eB is every cycle with A <= epoch <= B."""
    epochs = [sum(steps[: i + 1]) for i in range(len(steps))]
    cycles = _cycles(epochs)
    lo, hi = min(a, b), max(a, b)
    inside = [c for c, e in enumerate(epochs, 1) if lo <= e <= hi]
    try:
        got = resolve_span(parse_span(f"e{lo}:e{hi}"), cycles)
    except InputError:
        assert not inside
        return
    assert list(got) == inside
    for c, e in enumerate(epochs, 1):
        assert resolve_span(parse_span(f"e{e}"), cycles) == range(c, c + 1)


def test_cycle_syntax():
    """N and eN; either end of A:B may be open."""
    assert parse_ref("12") == CycleRef(12) and parse_ref("E118") == CycleRef(118, epoch=True)
    assert parse_span("e100:") == CycleSpan(CycleRef(100, epoch=True), None)
    assert parse_span("7") == CycleSpan(CycleRef(7), CycleRef(7), exact=True)
    span = parse_span(":e7")
    assert span.first is None and span.last == CycleRef(7, epoch=True) and not span.exact
    assert resolve_span(parse_span("3:e7"), _cycles([4, 5, 6, 7, 8])) == range(3, 5)
    for bad in ("0", "-1", "e-2", "12x", ""):
        with pytest.raises(InputError):
            parse_ref(bad)
