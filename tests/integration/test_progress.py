"""Every long command reports its progress as `replay.progress.Progress` records: within a stage
`done` never goes back and ends at the stage's total (the input's bytes, the log's published
cycles: truth.jsonl has one row per published schedule); the CLI draws it only on a terminal."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from collections import defaultdict

import pytest
from rich.console import Console

from replay.apps.anonymize import anonymize
from replay.apps.audit import audit
from replay.apps.simulate.simulation import simulate
from replay.apps.change import Change
from replay.apps.whatif import whatif
from replay.cli.show import progress_display
from replay.parsing.pipeline import MemorySink, run
from replay.progress import Progress, counted
from tests.helpers import ROOT, log_path, parsed, truth


def _recorder() -> tuple[list[Progress], object]:
    seen: list[Progress] = []
    return seen, seen.append


def _stages(seen: list[Progress]) -> dict[str, list[Progress]]:
    by: dict[str, list[Progress]] = defaultdict(list)
    for p in seen:
        by[p.stage].append(p)
    return by


def _assert_counted(steps: list[Progress], total: int) -> None:
    """One counted stage: done rises (never back) from 0 to `total`, every record with that total."""
    done = [p.done for p in steps]
    assert done == sorted(done), done
    assert done[0] == 0 and done[-1] == total, done
    assert {p.total for p in steps} == {total}


def test_counted_reports_the_first_every_step_and_the_last():
    seen, say = _recorder()
    assert list(counted(range(7), 7, say, "x", step=3)) == list(range(7))
    assert [p.done for p in seen] == [0, 3, 6, 7]


def test_progress_in_words():
    assert Progress("auditing", 1200, 5000, "cycles").text() == "auditing: 1,200 of 5,000 cycles"
    assert Progress("parsing", 3_000_000, 10_000_000, "bytes").text() == "parsing: 3 of 10 MB"
    assert Progress("hashing the input").text() == "hashing the input"
    assert Progress("x", 5, 10, "lines").fraction == 0.5 and Progress("x").fraction is None


@pytest.mark.parametrize("name", ["a_tiny", "h_mega15"])
def test_parse_counts_the_bytes_read_to_the_input_size(name):
    seen, say = _recorder()
    path = log_path(name)
    size = len(gzip.decompress(path.read_bytes())) if path.suffix == ".gz" else path.stat().st_size
    run([str(path)], MemorySink(), progress=say, chunk_bytes=1 << 16)
    steps = _stages(seen)["parsing"]
    assert len(steps) > 2  # a record per chunk, not only the first and last
    done = [p.done for p in steps]
    assert done == sorted(done) and done[0] == 0 and done[-1] == size
    assert steps[-1].total == size and all(p.total == size for p in steps)  # a trailer's size is exact here
    assert seen[-1].stage == "assembling cycles and configuration"


def test_audit_and_whatif_count_every_published_cycle():
    """A what-if without a stored audit audits first (its baseline is the audit's chained run),
    then replays: each stage counts every published cycle."""
    cycles = len(truth("h_mega15"))
    for command, stages in ((audit, ("auditing",)), (lambda t, progress: whatif(t, Change(), progress=progress),
                                                     ("auditing", "replaying"))):
        seen, say = _recorder()
        command(parsed("h_mega15").tables, progress=say)
        by = _stages(seen)
        assert list(by) == list(stages)
        for stage in stages:
            _assert_counted(by[stage], cycles)


def test_a_cycle_range_counts_the_cycles_in_it():
    first = truth("h_mega15")[0]["cycle"]
    seen, say = _recorder()
    result = audit(parsed("h_mega15").tables, cycles=range(first + 10, first + 40), progress=say)
    _assert_counted(seen, 30)
    assert len(result.cycles) + len(result.skipped) == 30


def test_simulate_counts_each_run():
    seen, say = _recorder()
    simulate(parsed("a_tiny").tables, Change(sets=(("class.normal.weight", "3"),)), progress=say)
    stages = _stages(seen)
    assert set(stages) == {"simulating (baseline)", "simulating (changed)"}
    for steps in stages.values():
        _assert_counted(steps, len(truth("a_tiny")))


def test_anonymize_reports_lines_in_rising_order(tmp_path):
    seen, say = _recorder()
    anonymize([str(log_path("a_tiny"))], tmp_path / "out", tmp_path / "key", progress=say)
    lines = [p.done for p in seen if p.stage.startswith("anonymizing ")]
    assert lines and lines == sorted(lines)
    assert [p.stage for p in seen][-1] == "checking that the anonymized log parses to the same tables"


def test_the_display_draws_on_a_terminal_and_nothing_elsewhere():
    for terminal in (True, False):
        out = io.StringIO()
        console = Console(file=out, force_terminal=terminal, width=100)
        with progress_display(console, "auditing") as show:
            for i in range(0, 101, 50):
                show(Progress("auditing", i, 100, "cycles"))
        assert ("auditing" in out.getvalue()) is terminal, out.getvalue()


def test_piped_commands_print_no_progress(tmp_path):
    """Run without a terminal: stdout holds the results alone (no progress line, no blank line left by one)."""
    done = subprocess.run([sys.executable, "-m", "replay.cli", "audit", str(log_path("a_tiny")), "-o",
                           str(tmp_path / "a"), "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not done.stdout.startswith("\n") and "\n\n" not in done.stdout
    assert "of 20 cycles" not in done.stdout.replace("20 of 20 cycles agree", "")
    assert "parsing" not in done.stdout and "auditing" not in done.stdout and done.stderr == ""
