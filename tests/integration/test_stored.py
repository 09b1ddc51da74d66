"""The stored audit (replay.apps.stored): what every command reads after the first audit.

Held to a fresh audit, which replays every cycle from the log's start: the stored one must give
the same outputs byte for byte (files, printout, explain's stories, the report), whatever reads
it; a change of configuration, release or rmreplay never reads an audit stored under another;
an interrupted audit leaves nothing half stored.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import zlib
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from replay.apps import stored as st
from replay.apps.audit import Finding, audit, trace_cycle
from replay.model.conflicts import CONFLICTS
from replay.model.release import with_option
from replay.apps.explain import explain_job, render
from replay.cli import main
from replay.model.start import bootstrap
from replay.parsing.cache import open_input
from rmref.behaviours import Behaviours
from rmref.releases import RELEASES
from tests import damaged
from tests.helpers import LOGS, log_path, parsed

SMALL = [(n, lv) for n, lv in LOGS if n != "i_mega24"]


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _printed(text: str) -> str:
    """A printout without what differs between runs: the time taken, and where the audit came from."""
    return re.sub(r"\((the stored audit, read in )?[\d.]+ s(, [\d,]+ cycles/s)?\)", "(TIME)", text)


def _audit_three_ways(log: Path, tmp: Path, capsys, *args: str) -> list[tuple[int, str, dict[str, bytes]]]:
    """`audit -o` fresh (no cache), first with the cache (run and stored), second (read)."""
    runs = []
    for name, extra in (("fresh", ["--no-cache"]), ("first", []), ("second", [])):
        out = tmp / f"{name}{'-'.join(('', *args)).replace('/', '_')}"
        code, text, err = _run(capsys, "audit", str(log), "-o", str(out), *args, *extra)
        assert "Traceback" not in err
        assert ("(the stored audit, read in" in text) == (name == "second")
        runs.append((code, _printed(text.replace(str(out), "OUT")), _files(out)))
    return runs


def _check_same(runs: list) -> None:
    fresh = runs[0]
    for other in runs[1:]:
        assert other[0] == fresh[0] and other[1] == fresh[1]
        assert other[2] == fresh[2]  # every file, manifest.json included, byte for byte


@pytest.mark.parametrize(("name", "level"), SMALL, ids=[f"{n}/{lv}" for n, lv in SMALL])
def test_the_stored_audit_writes_what_a_fresh_one_does(name, level, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    runs = _audit_three_ways(log_path(name, level), tmp_path, capsys)
    _check_same(runs)
    stored = list((tmp_path / "cache").glob("*/audits/*/manifest.json"))
    assert len(stored) == 1  # stored once, read the second time


@pytest.mark.slow
def test_the_stored_audit_of_i_mega24_writes_what_a_fresh_one_does(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    parse_dir = tmp_path / "parsed"
    assert main(["parse", str(log_path("i_mega24")), "-o", str(parse_dir)]) == 0
    capsys.readouterr()
    _check_same(_audit_three_ways(parse_dir, tmp_path, capsys))


@pytest.mark.parametrize(("name", "level"), [("h_mega15", "rm.log"), ("g_reservations_services", "rm-debug.log"),
                                             ("d_fragmentation", "rm.log"), ("f_node_failure", "rm.log")])
def test_every_cycle_re_entered_tells_the_story_a_fresh_audit_tells(name, level, tmp_path, monkeypatch):
    """explain's rmref side from a checkpoint (no replay from the start) against the fresh audit's
    own run of that cycle, for every job of every published cycle."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    opened = open_input([str(log_path(name, level))])
    tables = opened.tables
    boot = bootstrap(tables)
    kept = st.stored_audit(tables, boot, st.place_of(opened.slot, opened.root, boot, None))
    assert kept.stored is not None and not kept.read
    fresh = audit(tables, rerunnable=True)
    schedule = tables["schedule"].drop_nulls(["cycle", "job_id"]).unique(["cycle", "job_id"]).sort("cycle", "job_id")
    pairs = schedule.select("job_id", "cycle").rows()
    assert pairs
    for job, cycle in pairs[:: max(1, len(pairs) // 150)]:
        assert render(explain_job(tables, job, cycle, kept.result)) == render(explain_job(tables, job, cycle, fresh))
    for cycle in fresh.cycles:  # the re-entered run is the audit's own: the same input, every phase's result
        again, ran = kept.stored.trace(tables, cycle), trace_cycle(tables, fresh, cycle)
        assert again is not None and ran is not None
        assert replace(again, logged=None) == replace(ran, logged=None), cycle


@pytest.mark.parametrize("args", [["--job", "5"], ["--job", "5", "--cycle", "42"], ["--job", "12", "--json"],
                                  ["--job", "999"], ["--job", "12", "--cycle", "60"]])
def test_explain_from_the_stored_audit_prints_what_a_fresh_one_does(args, tmp_path, capsys, monkeypatch):
    """The command reads one job's rows and one cycle's (replay.apps.explain.scope) and the
    checkpoint; without the cache it reads the whole log and replays up to the cycle."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    log = str(log_path("h_mega15"))
    fresh = _run(capsys, "explain", log, *args, "--no-cache")
    assert _run(capsys, "explain", log, *args) == fresh  # runs the audit, stores it
    assert _run(capsys, "explain", log, *args) == fresh  # reads it


def test_the_report_from_the_stored_audit_is_the_fresh_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    log = str(log_path("d_fragmentation"))
    pages = []
    for name, extra in (("fresh", ["--no-cache"]), ("first", []), ("second", []), ("no-audit", ["--no-audit"]),
                        ("no-audit-fresh", ["--no-audit", "--no-cache"])):
        out = tmp_path / f"{name}.html"
        assert _run(capsys, "report", log, "-o", str(out), "--title", "t", *extra)[0] == 0
        pages.append(out.read_bytes())
    assert pages[0] == pages[1] == pages[2] and pages[3] == pages[4]


def _reentered_as_run(tables, kept) -> None:
    """Every cycle re-entered from its checkpoint is the audit's own run of it (`trace=`: the
    traces the fresh audit kept as it ran, after a gap too, where the audit starts again)."""
    ran = audit(tables, trace=range(tables["cycles"].height + 1))
    assert ran.cycles and set(ran.traces) == set(ran.cycles) == set(kept.stored.index)
    for cycle, trace in ran.traces.items():
        again = kept.stored.trace(tables, cycle)
        assert again is not None and replace(again, logged=None) == replace(trace, logged=None), cycle


@pytest.mark.parametrize("kind", ["gap", "garbage"])
def test_a_damaged_log_stored_is_the_fresh_audit_and_re_enters_after_a_gap(kind, tmp_path, capsys, monkeypatch):
    """A rolled set with a member lost (the audit starts again after the gap) and garbage lines
    (damaged cycles): the files and printout, `damaged` and `skipped` included, and every cycle
    re-entered, as the fresh audit has them."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    log = (damaged.rolled(tmp_path / "gap", drop="rm.log.1") if kind == "gap"
           else damaged.garbage(tmp_path / "garbage.log")[0])
    runs = _audit_three_ways(log, tmp_path, capsys)
    _check_same(runs)
    report = json.loads(runs[0][2]["report.json"])
    assert report["damaged"]["cycles"] > 0 and report["cycles_audited"] < report["cycles"]
    opened = open_input([str(log)])
    boot = bootstrap(opened.tables)
    kept = st.stored_audit(opened.tables, boot, st.place_of(opened.slot, opened.root, boot, None, opened.tables))
    assert kept.read and kept.stored is not None
    assert kept.result.damaged == audit(opened.tables).damaged
    _reentered_as_run(opened.tables, kept)


@pytest.mark.parametrize("name", ["releases/2.2.2_node_ip", "releases/2.0.0/gen12-004", "releases/2.1.0/a_tiny"])
def test_an_older_release_stored_is_the_fresh_audit_node_ips_inferred_again(name, tmp_path, capsys, monkeypatch):
    """Logs of releases before 3.0.0, which never show node IPs: where the audit verifies the RM's
    choice by IPs it infers (replay.apps.verify.follow_node_ips), the cycle's input it ran on has
    them; the re-entered cycle infers them again, and the verified choices are stored."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    _check_same(_audit_three_ways(log_path(name), tmp_path, capsys))
    opened = open_input([str(log_path(name))])
    boot = bootstrap(opened.tables)
    kept = st.stored_audit(opened.tables, boot, st.place_of(opened.slot, opened.root, boot, None, opened.tables))
    assert kept.read and kept.stored is not None and kept.result.rm_release is not None
    if name.endswith("node_ip"):
        assert any("IP" in v.explanation for v in kept.result.verified)
        again = kept.stored.trace(opened.tables, 1)
        assert again is not None and any(m.ip for m in again.input.machines)  # inferred again on re-entry
    _reentered_as_run(opened.tables, kept)


def test_rm_release_option_is_its_own_stored_audit(tmp_path, capsys, monkeypatch):
    """`--rm-release` changes the key whether or not it changes the release replayed: the report
    names where the release came from (the option, not the banner)."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    log = log_path("releases/2.2.2_node_ip")
    plain = _audit_three_ways(log, tmp_path, capsys)
    for release in ("2.2.2", "3.0.0"):
        runs = _audit_three_ways(log, tmp_path, capsys, "--rm-release", release)
        _check_same(runs)
        report = json.loads(runs[0][2]["report.json"])
        assert report["rm_release"]["release"] == release and runs[0][2] != plain[0][2]
    assert len(list((tmp_path / "cache").glob("*/audits/*/manifest.json"))) == 3
    opened = open_input([str(log)])
    keys = set()
    for option in (None, "2.2.2", "3.0.0"):
        with_option(opened.tables, option)
        boot = bootstrap(opened.tables)
        keys.add(st.place_of(opened.slot, opened.root, boot, None, opened.tables).key)
    assert len(keys) == 3


def test_config_conflicts_are_stored_and_keyed(tmp_path, capsys, monkeypatch):
    """A --config that contradicts the log: its conflicts are stored with the audit and given back
    as a fresh audit gives them; the same files in another folder read that audit (the conflicts
    name the file, not the folder); other conflicts are another key."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    src = Path(__file__).resolve().parents[2] / "fixtures" / "h_mega15" / "resources"
    line = "Class normal         fair-base  { weight = 100; default = true }"
    folders = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        for p in src.iterdir():
            (folder / p.name).write_bytes(p.read_bytes())
        classes = (src / "ducc.classes").read_text()
        (folder / "ducc.classes").write_text(classes.replace(line, line.replace("100", "300")))
        folders.append(folder)
    log = log_path("h_mega15")
    runs = _audit_three_ways(log, tmp_path, capsys, "--config", str(folders[0]))
    _check_same(runs)
    assert [c["setting"] for c in json.loads(runs[0][2]["report.json"])["config_conflicts"]] == ["class normal weight"]
    fresh, cached = (_run(capsys, "audit", str(log), "-o", str(tmp_path / f"b{i}"), "--config", str(folders[1]), *extra)
                     for i, extra in enumerate((["--no-cache"], [])))
    assert "(the stored audit, read in" in cached[1]
    assert _printed(cached[1].replace("b1", "OUT")) == _printed(fresh[1].replace("b0", "OUT"))
    assert _files(tmp_path / "b1") == _files(tmp_path / "b0")
    opened = open_input([str(log)])
    boot = bootstrap(opened.tables)
    without = st.place_of(opened.slot, opened.root, boot, None, opened.tables)
    opened.tables[CONFLICTS] = pl.DataFrame([{"setting": "s", "log": "1", "config": "2", "where": "x"}])
    assert st.place_of(opened.slot, opened.root, boot, None, opened.tables).key != without.key


# -- never stale --

def _stored(tmp_path: Path, boot_change=None, config: str | None = None):
    opened = open_input([str(log_path("b_classes"))])
    boot = bootstrap(opened.tables)
    if boot_change is not None:
        boot = boot_change(boot)
    place = st.place_of(opened.slot, opened.root, boot, config)
    return opened.tables, boot, place


@pytest.mark.parametrize("change", [
    lambda b: replace(b, config=replace(b.config, behaviours=Behaviours(RELEASES[0].name))),
    lambda b: replace(b, config=replace(b.config, fragmentation_threshold=b.config.fragmentation_threshold + 1)),
    lambda b: replace(b, config=replace(b.config, quantum_gb=b.config.quantum_gb * 2)),
    lambda b: replace(b, classes=tuple(replace(c, weight=c.weight + 1) for c in b.classes)),
], ids=["release", "threshold", "quantum", "class-weight"])
def test_another_configuration_or_release_never_reads_the_stored_audit(change, tmp_path, monkeypatch):
    """An audit stored under one configuration is at another key: the changed one runs again,
    and a mark left in the stored one never shows."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    tables, boot, place = _stored(tmp_path)
    first = st.stored_audit(tables, boot, place)
    assert first.stored is not None and st.stored_audit(tables, boot, place).read
    marked = replace(first.stored.result, reenter=None)
    marked.divergences.append(Finding(0, 0, "caps", "MARK", "MARK", "MARK", "", ""))
    (place.path / st.RESULT).write_bytes(pickle.dumps(marked))
    _, changed_boot, changed = _stored(tmp_path, change)
    assert changed is not None and changed.key != place.key
    again = st.stored_audit(tables, changed_boot, changed)
    assert not again.read and all(d.logged != "MARK" for d in again.result.divergences)
    assert st.stored_audit(tables, changed_boot, changed).read  # and is stored under its own key


def test_another_config_folder_or_rmreplay_version_never_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    tables, boot, place = _stored(tmp_path)
    st.stored_audit(tables, boot, place)
    assert st.load(place) is not None
    _, _, with_config = _stored(tmp_path, config="0123456789abcdef")
    assert with_config is not None and with_config.key != place.key and st.load(with_config) is None
    monkeypatch.setattr(st, "rmreplay_version", lambda: "9.9.9")
    _, _, newer = _stored(tmp_path)
    assert newer is not None and newer.key != place.key and st.load(newer) is None


def test_changed_source_never_reads_it(tmp_path, monkeypatch):
    """A developer's edit of replay or rmref changes the code digest, hence the key."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    tables, boot, place = _stored(tmp_path)
    monkeypatch.setattr(st, "code_fingerprint", lambda: "edited")
    assert st.audit_key(st.tables_id(place.folder.parent / "tables"), boot, None) != place.key


def test_a_damaged_stored_audit_is_run_again(tmp_path, monkeypatch):
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    tables, boot, place = _stored(tmp_path)
    st.stored_audit(tables, boot, place)
    (place.path / st.RESULT).write_bytes(b"damaged")
    assert st.load(place) is None and not st.stored_audit(tables, boot, place).read


def test_opened_for_its_frames_alone_the_result_is_read_on_use(tmp_path, monkeypatch):
    """The TUI's first screen opens the stored audit without its result (`whole=False`): read on
    first use it is the fresh audit's; with the result gone the folder counts as absent."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    tables, boot, place = _stored(tmp_path)
    st.stored_audit(tables, boot, place)
    light = st.load(place, whole=False)
    assert light is not None and light._result is None  # noqa: SLF001 - not read yet
    fresh = audit(parsed("b_classes").tables)
    assert light.result.report() == fresh.report() and light.result.reenter is not None
    (place.path / st.RESULT).unlink()
    assert st.load(place, whole=False) is None and st.load(place) is None


def test_an_unwritable_cache_does_not_stop_the_audit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    tables, boot, place = _stored(tmp_path)
    place.folder.parent.joinpath("audits").write_text("not a folder")  # nothing can be stored
    kept = st.stored_audit(tables, boot, place)
    assert not kept.read and kept.stored is None
    assert kept.result.report() == audit(parsed("b_classes").tables).report()


# -- interrupted --

def _audit_command(log: Path) -> list[str]:
    return [sys.executable, "-c", "import sys; from replay.cli import main; sys.exit(main())", "audit", str(log)]


@pytest.fixture(scope="module")
def interrupted_input(tmp_path_factory):
    """h_mega15's DEBUG log parsed to a directory, and how long its audit takes to run and store."""
    root = tmp_path_factory.mktemp("interrupt")
    parse_dir = root / "parsed"
    assert main(["parse", str(log_path("h_mega15", "rm-debug.log")), "-o", str(parse_dir)]) == 0
    start = time.perf_counter()
    subprocess.run(_audit_command(parse_dir), env={**os.environ, "RMREPLAY_CACHE": str(root / "ref")},
                   capture_output=True)
    return parse_dir, time.perf_counter() - start, root / "ref"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["INT", "TERM", "KILL"])
@pytest.mark.parametrize("at", [0.3, 0.6, 0.85, 0.95, 1.05])
def test_an_interrupted_audit_stores_all_or_nothing(interrupted_input, sig, at, tmp_path):
    """Whenever the signal lands, the slot's audits folder holds no audit or a whole one, equal
    to one stored by an uninterrupted run; the next audit reads or stores a whole one."""
    parse_dir, seconds, reference = interrupted_input
    env = {**os.environ, "RMREPLAY_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(_audit_command(parse_dir), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(at * seconds)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    assert b"Traceback" not in err
    want = next(reference.glob("*/audits/*"))
    for folder in (tmp_path / "cache").glob("*/audits/*"):
        if folder.name.startswith(".tmp-"):
            assert sig == signal.SIGKILL  # only a killed run leaves its sibling behind
            continue
        assert folder.name == want.name and _tree(folder) == _tree(want)  # whole
    done = subprocess.run(_audit_command(parse_dir), env=env, capture_output=True)
    assert done.returncode in (0, 1) and b"Traceback" not in done.stderr
    folders = list((tmp_path / "cache").glob("*/audits/*"))
    assert [f.name for f in folders] == [want.name] and _tree(folders[0]) == _tree(want)  # leftovers removed


def _tree(folder: Path) -> dict[str, object]:
    """Every file's bytes; the pickles as what they hold (a pickled set's bytes follow the process's
    string hashing, a dict's the order a query grouped its rows in: their content does not)."""
    files: dict[str, object] = {p.relative_to(folder).as_posix(): pickle.loads(p.read_bytes())
                                if p.suffix == ".pickle" else p.read_bytes() for p in sorted(folder.rglob("*"))
                                if p.is_file() and not p.name.startswith("checkpoints")}
    stored = st.load(st.Place(folder.parent, folder.name))
    assert stored is not None
    with open(folder / st.CHECKPOINTS, "rb") as fh:
        blob = fh.read()
    files["checkpoints"] = [(c, pickle.loads(zlib.decompress(blob[o:o + n]))) for c, (o, n) in stored.index.items()]
    return files
