"""What a killed process leaves behind is removed; what a live one is writing is not."""

from __future__ import annotations

import os

from replay.cli import main
from replay.parsing.leftovers import pid_alive, remove_left, temp_name
from tests.helpers import log_path

DEAD = 999_999_999  # above Linux's pid_max (4,194,304): no process has it


def test_temp_names_carry_the_writer_and_only_dead_writers_are_cleared(tmp_path):
    assert pid_alive(os.getpid()) and not pid_alive(DEAD)
    mine = tmp_path / temp_name(".tmp-", ".json")
    assert mine.name.startswith(f".tmp-{os.getpid()}-") and mine.name.endswith(".json")
    dead_dir, dead_file = tmp_path / f".tmp-{DEAD}-aa", tmp_path / f".tmp-{DEAD}-bb.json"
    live, other = tmp_path / f".tmp-{os.getppid()}-cc", tmp_path / f"keep-{DEAD}-dd"
    (dead_dir / "sub").mkdir(parents=True)
    for path in (dead_file, mine, other):
        path.write_text("x")
    live.mkdir()
    remove_left(tmp_path, ".tmp-")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, live.name, other.name])
    remove_left(tmp_path / "missing", ".tmp-")  # a folder not there yet: nothing to do, no error


def test_a_cached_parse_clears_slots_half_written_by_a_killed_parse(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("RMREPLAY_CACHE", str(cache))
    left = cache / f"tmp-{DEAD}-0123456789ab" / "tables"
    left.mkdir(parents=True)
    (left / "jobs.parquet").write_bytes(b"PAR1")
    assert main(["audit", str(log_path("a_tiny"))]) == 0
    assert not any(p.name.startswith("tmp-") for p in cache.iterdir())
