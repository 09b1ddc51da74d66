"""Outputs written whole or not at all (replay/parsing/outdir.py) and their manifest (manifest.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal

import polars as pl
import pytest

from replay.cli import main
from replay.parsing.manifest import MANIFEST, check_manifest
from replay.parsing.outdir import (
    atomic_output_dir,
    atomic_output_file,
    interrupted_line,
    remove_stale,
    submitted,
)
from replay.parsing.sources import InputError
from replay.parsing.store import read_tables
from replay.parsing.tables import SCHEMAS
from tests.helpers import log_path, parsed


def _siblings(path):
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


def test_a_block_that_finishes_renames_its_files_into_place_with_a_manifest(tmp_path):
    out = tmp_path / "out"
    with atomic_output_dir(out, command="test") as tmp:
        assert not out.exists() and tmp.parent == tmp_path
        (tmp / "a.txt").write_text("hello")
        pl.DataFrame({"x": [1, 2, 3]}).write_parquet(tmp / "t.parquet")
    manifest = json.loads((out / MANIFEST).read_text())
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", MANIFEST, "t.parquet"]
    assert manifest["command"] == "test" and manifest["tables"] == {"t": 3} and manifest["input"] is None
    assert manifest["files"]["a.txt"] == {"bytes": 5, "sha256": hashlib.sha256(b"hello").hexdigest()}
    assert _siblings(out) == []


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
@pytest.mark.parametrize("before", ["absent", "empty", "earlier"])
def test_a_block_that_raises_leaves_the_folder_as_it_was(tmp_path, error, before):
    out = tmp_path / "out"
    if before != "absent":
        out.mkdir()
    if before == "earlier":
        with atomic_output_dir(out, command="test") as tmp:
            (tmp / "a.txt").write_text("earlier")
    was = {p.name: p.read_bytes() for p in out.iterdir()} if out.exists() else None
    with pytest.raises(error), atomic_output_dir(out, command="test") as tmp:
        (tmp / "a.txt").write_text("half")
        raise error
    assert ({p.name: p.read_bytes() for p in out.iterdir()} if out.exists() else None) == was
    assert _siblings(out) == []


def test_an_interrupt_just_after_the_folder_is_made_leaves_nothing(tmp_path, monkeypatch):
    made = os.mkdir

    def mkdir_then_ctrl_c(path, *args):  # the signal lands between making the folder and using it
        made(path, *args)
        raise KeyboardInterrupt

    monkeypatch.setattr("replay.parsing.outdir.os.mkdir", mkdir_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt), atomic_output_dir(tmp_path / "out", command="test"):
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_ctrl_c_while_a_thread_starts_lands_once_it_has_started():
    done, delivered = [], []

    class Pool:  # the signal arrives inside submit, where ThreadPoolExecutor starts its thread
        def submit(self, fn, *args):
            os.kill(os.getpid(), signal.SIGINT)
            done.append(fn(*args))  # what Thread.start() does after the signal: not cut short

    # a handler of its own records when the signal lands: a process started in the background (as CI
    # runs the suite) inherits SIGINT ignored, so KeyboardInterrupt cannot be counted on
    previous = signal.signal(signal.SIGINT, lambda _signum, _frame: delivered.append(len(done)))
    try:
        submitted(Pool(), lambda x: x + 1, 41)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert done == [42] and delivered == [1]  # the Ctrl-C came once submit had finished, and still came


def test_an_earlier_result_is_replaced_whole(tmp_path):
    out = tmp_path / "out"
    with atomic_output_dir(out, command="test") as tmp:
        (tmp / "old.txt").write_text("1")
    with atomic_output_dir(out, command="test") as tmp:
        (tmp / "new.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "new.txt"]  # no file of the first run is left
    assert _siblings(out) == []


def test_what_may_be_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match="not written by rmreplay.*--force"):
        with atomic_output_dir(foreign, command="parse"):
            pass
    assert (foreign / "thesis.tex").exists()
    with atomic_output_dir(tmp_path / "parsed", command="parse") as tmp:
        (tmp / "x").write_text("x")
    with pytest.raises(InputError, match="holds a `rmreplay parse` output"), \
            atomic_output_dir(tmp_path / "parsed", command="audit"):
        pass
    with atomic_output_dir(foreign, True, command="parse") as tmp:
        (tmp / "x").write_text("x")
    assert not (foreign / "thesis.tex").exists()
    afile = tmp_path / "notes.txt"
    afile.write_text("notes")
    with pytest.raises(InputError, match="not a directory"), atomic_output_dir(afile, command="parse"):
        pass
    # never, even with --force: the current directory or a directory holding an input
    log = tmp_path / "logs" / "rm.log"
    log.parent.mkdir()
    log.write_text("x")
    for guarded, inputs in ((tmp_path, ()), (log.parent, (log,))):
        with pytest.raises(InputError, match="holds the current directory or an input"), \
                atomic_output_dir(guarded, True, command="parse", inputs=inputs):
            pass
    assert log.exists()


def test_a_file_output_is_replaced_only_when_rmreplay_wrote_it(tmp_path):
    page = tmp_path / "report.html"
    page.write_text("<html>someone's page</html>")
    with pytest.raises(InputError, match="not written by rmreplay"), atomic_output_file(page, marker=b"rmreplay"):
        pass
    with atomic_output_file(page, True, marker=b"rmreplay") as tmp:
        tmp.write_text("<meta name=rmreplay> one")
    with atomic_output_file(page, marker=b"rmreplay") as tmp:
        tmp.write_text("<meta name=rmreplay> two")
    with pytest.raises(KeyboardInterrupt), atomic_output_file(page, marker=b"rmreplay") as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert page.read_text() == "<meta name=rmreplay> two" and _siblings(page) == []


def test_leftovers_of_killed_runs_are_removed_by_the_next(tmp_path):
    out = tmp_path / "out"
    dead, alive = tmp_path / ".out.rmreplay-999999999-ab.tmp", tmp_path / f".out.rmreplay-{os.getpid()}-cd.tmp"
    for p in (dead, alive):
        p.mkdir()
        (p / "cycles.parquet").write_text("half")
    remove_stale(out)
    assert not dead.exists() and alive.exists()  # a live process's sibling is its own business


def test_signals_wait_for_the_rename(tmp_path, monkeypatch):
    """A Ctrl-C that arrives while the result is renamed into place is raised after it: OUT is complete."""
    from replay.parsing import outdir

    exchange = outdir._exchange

    def interrupted_exchange(a, b):
        os.kill(os.getpid(), signal.SIGINT)  # the Ctrl-C lands in the middle of the rename
        return exchange(a, b)

    monkeypatch.setattr(outdir, "_exchange", interrupted_exchange)
    out = tmp_path / "out"
    out.mkdir()
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a program starts, whatever ran before
    try:
        with pytest.raises(KeyboardInterrupt), atomic_output_dir(out, command="test") as tmp:
            (tmp / "a.txt").write_text("whole")
    finally:
        signal.signal(signal.SIGINT, before)
    assert (out / "a.txt").read_text() == "whole" and (out / MANIFEST).exists()
    assert interrupted_line(out) == f"interrupted: {out}/ was written completely before the interrupt"
    assert interrupted_line(tmp_path / "other") == f"interrupted: nothing written to {tmp_path / 'other'}/"


def test_parse_manifest_against_the_tables_and_the_input(tmp_path, capsys):
    log = log_path("b_classes")
    assert main(["parse", str(log), "-o", str(tmp_path / "p")]) == 0
    manifest = check_manifest(tmp_path / "p", "parse")
    tables = parsed("b_classes").tables
    assert manifest["tables"] == {name: tables[name].height for name in SCHEMAS}
    assert manifest["input"]["files"] == [{"name": log.name, "bytes": log.stat().st_size,
                                           "sha256": hashlib.sha256(log.read_bytes()).hexdigest()}]
    assert set(manifest["files"]) == {f"{name}.parquet" for name in SCHEMAS}


def test_readers_refuse_an_incomplete_parse_directory(tmp_path, capsys):
    src = tmp_path / "p"
    assert main(["parse", str(log_path("a_tiny")), "-o", str(src)]) == 0
    capsys.readouterr()
    assert read_tables(src)["cycles"].height == 20
    cut = tmp_path / "cut"  # what an interrupted parse of an older rmreplay left: tables, no manifest
    shutil.copytree(src, cut)
    (cut / MANIFEST).unlink()
    with pytest.raises(InputError, match="not a complete rmreplay parse output.*interrupted"):
        read_tables(cut)
    swapped = tmp_path / "swapped"  # a table that is not the one the manifest lists
    shutil.copytree(src, swapped)
    pl.read_parquet(src / "schedule.parquet").head(3).write_parquet(swapped / "schedule.parquet")
    with pytest.raises(InputError, match="schedule.parquet is missing or changed"):
        read_tables(swapped)


def test_cli_refuses_a_foreign_folder_in_one_line_and_replaces_it_with_force(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["audit", str(log_path("a_tiny")), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not written by rmreplay" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert (out / "keep.txt").exists()
    assert main(["audit", str(log_path("a_tiny")), "-o", str(out), "--force"]) == 0
    assert not (out / "keep.txt").exists() and check_manifest(out, "audit")["tables"]["ref_caps"] > 0
