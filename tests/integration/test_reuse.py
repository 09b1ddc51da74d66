"""One parse, reused: every command reads a `rmreplay parse -o` directory, or the cache, as it reads the log."""

from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest
from polars.testing import assert_frame_equal

from replay import parse, write_tables
from replay.cli import main
from replay.parsing.cache import cache_root, open_input
from replay.parsing.digest import content_digest
from replay.parsing.logdir import find_inputs
from replay.parsing.manifest import MANIFEST, read_manifest
from replay.parsing.tables import SCHEMAS
from tests.helpers import FIXTURES, log_path, parsed


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _same(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for name, frame in a.items():
        assert_frame_equal(frame, b[name], check_dtypes=True)


@pytest.fixture(scope="module")
def parse_dir(tmp_path_factory):
    """`rmreplay parse c_nodepools -o OUT`."""
    out = tmp_path_factory.mktemp("parsed") / "c_nodepools"
    assert main(["parse", str(log_path("c_nodepools")), "-o", str(out)]) == 0
    return out


def test_a_parse_directory_has_a_manifest_written_last(parse_dir):
    """It names every table, the input file and the digest of the input's bytes (the cache's)."""
    manifest = read_manifest(parse_dir)
    assert manifest is not None and manifest["command"] == "parse" and set(manifest["tables"]) == set(SCHEMAS)
    assert [f["name"] for f in manifest["input"]["files"]] == ["rm.log.gz"]
    source = find_inputs([str(log_path("c_nodepools"))]).sources
    assert manifest["input"]["sha256"] == content_digest(source)  # one digest: the cache's key too
    assert manifest["input"]["files"][0]["sha256"] == hashlib.sha256(log_path("c_nodepools").read_bytes()).hexdigest()
    written = {p.name: p.stat().st_mtime_ns for p in parse_dir.iterdir()}
    assert written[MANIFEST] >= max(written.values())
    assert json.loads((parse_dir / MANIFEST).read_text()) == manifest
    _same(open_input([str(parse_dir)]).tables, parsed("c_nodepools").tables)


@pytest.mark.parametrize("command", [
    ["audit"], ["explain", "--job", "7"], ["explain", "--job", "7", "--cycle", "e40"],
    ["whatif", "--set", "class.normal.weight=300", "-o", "{out}"], ["check"],
    ["report", "--no-audit", "--title", "t", "-o", "{out}/r.html"]],
    ids=["audit", "explain", "explain-cycle", "whatif", "check", "report"])
def test_every_command_reads_a_parse_directory_as_the_log(parse_dir, tmp_path, capsys, command):
    """The same exit status, printout and files from the parse directory as from the log."""
    results = []
    for source, name in ((log_path("c_nodepools"), "log"), (parse_dir, "dir")):
        out = tmp_path / name
        out.mkdir()
        args = [a.replace("{out}", str(out)) for a in command]
        code, text, err = _run(capsys, args[0], str(source), *args[1:], "--no-cache")
        assert "Traceback" not in err
        files = {p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
        # the paths and the time a command took are printed; the rest must be the same
        text = re.sub(r"[\d.]+ s, [\d,]+ cycles/s", "", text.replace(str(source), "LOG").replace(str(out), "OUT"))
        results.append((code, " ".join(text.split()), files))
    assert results[0] == results[1]


@pytest.mark.parametrize("command", [["explain", "--job", "7"], ["report", "--title", "t", "-o", "{out}/r.html"],
                                     ["audit", "-o", "{out}/again"]], ids=["explain", "report", "audit"])
def test_an_audit_folder_reads_as_the_log_it_audited(tmp_path, monkeypatch, capsys, command):
    """A command given an `audit -o` folder answers as for the log it audited (the folder's manifest
    names the input by digest: the cached parse); with that parse gone from the cache, or --no-cache,
    one line says what to give instead."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    log, folder = log_path("c_nodepools"), tmp_path / "audited"
    assert _run(capsys, "audit", str(log), "-o", str(folder))[0] == 0
    results = []
    for source, name in ((log, "log"), (folder, "folder")):
        out = tmp_path / name
        out.mkdir()
        code, text, err = _run(capsys, *[a.replace("{out}", str(out)) for a in (command[0], str(source), *command[1:])])
        assert code == 0 and "Traceback" not in err
        files = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
                 if p.is_file() and p.name != MANIFEST}  # a manifest names its input's path
        text = re.sub(r"[\d.]+ s\b", "", text.replace(str(source), "IN").replace(str(out), "OUT"))
        results.append((" ".join(text.split()), files))
    assert results[0] == results[1]
    rest = [a.replace("{out}", str(tmp_path / "x")) for a in command[1:]]
    for args in ([str(folder), "--no-cache"], [str(folder), str(log)]):
        code, _, err = _run(capsys, command[0], *args, *rest)
        assert code == 2 and "output of `rmreplay audit` of rm.log.gz" in err and len(err.strip().splitlines()) == 1
    shutil.rmtree(tmp_path / "cache")
    code, _, err = _run(capsys, command[0], str(folder), *rest)
    assert code == 2 and "not in the cache: give rm.log.gz itself" in err and len(err.strip().splitlines()) == 1


def test_the_second_run_reads_the_cache(tmp_path, monkeypatch):
    """First a parse (cached on the way), then the cache; --no-cache parses again; an edited log is new."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    log = tmp_path / "rm.log"
    shutil.copy(log_path("a_tiny"), log)
    first = open_input([str(log)])
    assert not first.from_cache and first.slot is not None and read_manifest(first.slot / "tables")
    second = open_input([str(log)])
    assert second.from_cache and second.slot == first.slot
    _same(second.tables, parse([log]).tables)
    assert not open_input([str(log)], use_cache=False).from_cache
    log.write_text(log.read_text().replace("nodeB", "nodeC"))
    assert not open_input([str(log)]).from_cache


def test_a_damaged_cache_slot_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    slot = open_input([str(log_path("a_tiny"))]).slot
    (slot / "tables" / MANIFEST).unlink()  # a run killed while it wrote the slot
    again = open_input([str(log_path("a_tiny"))])
    assert not again.from_cache and again.tables["cycles"].height == 20
    assert open_input([str(log_path("a_tiny"))]).from_cache


def test_a_read_only_cache_does_not_stop_a_command(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RMREPLAY_CACHE", str(blocker / "cache"))
    assert cache_root() == blocker / "cache"
    code, out, _ = _run(capsys, "explain", str(log_path("a_tiny")), "--job", "1")
    assert code == 0 and "Job 1" in out


def test_tables_without_a_manifest_are_refused(tmp_path, capsys):
    """A folder of tables an interrupted parse left (or an older rmreplay wrote) is not taken for whole."""
    out = tmp_path / "out"
    write_tables(parsed("a_tiny").tables, out)
    (out / MANIFEST).unlink()
    code, _, err = _run(capsys, "explain", str(out), "--job", "1")
    assert code == 2 and "without a manifest.json" in err and len(err.strip().splitlines()) == 1
    write_tables(parsed("a_tiny").tables, out, force=True)  # not rmreplay's output any more: forced
    (out / "nodes.parquet").unlink()
    code, _, err = _run(capsys, "audit", str(out))
    assert code == 2 and "nodes" in err and len(err.strip().splitlines()) == 1


def test_tui_config_fills_a_rolled_away_bootstrap(tmp_path, monkeypatch):
    """`rmreplay tui --config DIR` as `audit --config`: the log without its bootstrap opens and audits."""
    from replay.cli.parser import build_parser
    from tui.load import load, run_audit

    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    lines = log_path("a_tiny").read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "Entering scheduling loop" in line)
    log = tmp_path / "rm.log"
    log.write_text("".join(lines[start:]))
    config = str(FIXTURES / "a_tiny" / "resources")
    assert build_parser().parse_args(["tui", str(log), "--config", config]).config == config
    loaded = load([str(log)], config=config)
    frames, _ = run_audit(loaded)
    assert frames["ref_caps"].height and frames["divergences"].height == 0
    assert loaded.place is not None and (loaded.place.path / "manifest.json").exists()  # stored, keyed by --config
    assert load([str(log)]).tables["classes"].is_empty()  # the cached parse is the log's own


COLUMNS = {"cycles": ["cycle", "started"], "rmcounter": list(SCHEMAS["rmcounter"])[:4]}


def _columns_of(tables) -> dict:
    return {name: tables[name].select(cols) for name, cols in COLUMNS.items()}


def test_a_first_parse_for_columns_reads_them_from_its_slot(tmp_path, monkeypatch):
    """With `columns` (the audit) the first run holds no copy of the tables: it reads the slot it
    just wrote, as the second run does, and both equal the parse's own tables."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    want = _columns_of(parse([log_path("b_classes")]).tables)
    first = open_input([str(log_path("b_classes"))], columns=COLUMNS)
    assert not first.from_cache and first.slot is not None and not isinstance(first.tables, dict)
    _same(_columns_of(first.tables), want)
    _same(_columns_of(open_input([str(log_path("b_classes"))], columns=COLUMNS).tables), want)


def test_a_log_that_grew_while_read_still_gives_its_tables(tmp_path, monkeypatch):
    """A live log that changed during the parse is not cached under its old digest; the command
    still gets the tables of what it read."""
    import replay.parsing.cache as cache

    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    ticks = iter(range(1_000))
    monkeypatch.setattr(cache, "stat_key", lambda _path: next(ticks))  # every look sees a new size
    opened = open_input([str(log_path("b_classes"))], columns=COLUMNS)
    assert opened.slot is None and not list((tmp_path / "cache").glob("tmp-*"))
    _same(_columns_of(opened.tables), _columns_of(parse([log_path("b_classes")]).tables))


def test_a_disk_that_fails_part_way_costs_a_second_parse_not_the_tables(tmp_path, monkeypatch):
    import replay.parsing.cache as cache

    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    calls = {"n": 0}
    real_add = cache.ParquetSink.add

    def full_after_one(self, tables):
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(28, "No space left on device")
        real_add(self, tables)

    monkeypatch.setattr(cache.ParquetSink, "add", full_after_one)
    opened = open_input([str(log_path("h_mega15"))], columns=COLUMNS)
    assert calls["n"] >= 2 and opened.slot is None
    _same(_columns_of(opened.tables), _columns_of(parse([log_path("h_mega15")]).tables))
