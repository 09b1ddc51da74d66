"""Damaged copies of a bundled log (tests/damaged.py): the audit never blames the RM for them.

Ground truth: truth.jsonl, the real RM's own state after every published schedule, says the RM
agreed with itself in every cycle. So on a damaged copy no divergence may be reported at all,
every cycle the damage touches is `input damaged` (not audited), and in every other cycle
rmref's counts are truth's (by the RM's epoch: a gap renumbers the cycles).
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import re
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from replay import parse
from replay.apps.audit import audit
from replay.cli import main
from replay.model.configdir import apply_config
from replay.model.damage import BAD_BYTES, CUT, GAP, NUL, UNPARSED, damaged_cycles
from replay.model.resources import read_resources
from tests import damaged
from tests.damaged import agrees_with_truth
from tests.helpers import log_path
from tests.midstream import classes_only, cut

NAME = damaged.NAME


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("damaged")


@cache
def _garbage(tmp: Path):
    log, numbers = damaged.garbage(tmp / "garbage.log")
    tables = parse([log]).tables
    return tables, audit(tables), numbers


def test_garbage_lines_damage_their_cycles_only(tmp):
    tables, result, numbers = _garbage(tmp)
    agrees_with_truth(NAME, tables, result)
    unparsed = tables["unparsed"]
    # every garbage line is accounted for: unparsed, or a line of a generic message (whose
    # continuation lines are its text: a stack trace, say)
    text = (tmp / "garbage.log").read_bytes().splitlines()
    header = re.compile(rb"^\d\d [A-Z][a-z][a-z] \d{4} ")
    generic = set(tables["messages"]["line"])
    for n in set(numbers) - set(unparsed["line"]):
        start = next(i for i in range(n - 1, 0, -1) if header.match(text[i - 1]))
        assert start in generic, n
    # the cycle of each line is the same however the log is cut into chunks
    assert parse([tmp / "garbage.log"], chunk_bytes=1 << 16, workers=2).tables["unparsed"].equals(unparsed)
    touched = set(unparsed["cycle"].drop_nulls())
    # a line before its cycle's loop-entry line follows the cycle before's "Schedule sent" line: it
    # may be a line of the schedule that cycle published, so that cycle is damaged too
    entry = dict(tables["cycles"].filter(pl.col("started")).select("cycle", "line").iter_rows())
    tails = {c - 1 for c, n in unparsed.select("cycle", "line").drop_nulls().iter_rows()
             if c - 1 in entry and n < entry.get(c, n + 1)}
    # a schedule a cycle published, unread (a garbage line inside it rejects the record), is the
    # input of the cycle after it: that cycle is damaged too
    dump = re.compile(r"RM\.JobManagerConverter - \S+ T\[\d+\] createState\s*$")
    heads = {c + 1 for c, t in unparsed.select("cycle", "text").drop_nulls().iter_rows() if dump.search(t)}
    heads &= set(tables["cycles"]["cycle"])
    assert tails and heads - touched and touched | tails | heads == set(result.damaged)
    assert all(d.reasons[0][0] == UNPARSED for d in result.damaged.values())
    assert len(result.cycles) >= 0.7 * tables["cycles"].height  # the rest is audited


def test_a_range_of_damaged_cycles_only_is_one_line(tmp, capsys):
    _tables, result, _numbers = _garbage(tmp)
    cycle = next(iter(result.damaged))
    assert main(["audit", str(tmp / "garbage.log"), "--no-cache", "--cycles", str(cycle)]) == 2
    err = capsys.readouterr().err
    assert "nothing to audit: the input of every cycle in range is damaged" in err and "garbage.log:" in err


def test_a_nul_run_inside_a_line_is_damage_not_a_parsed_line(tmp):
    line = 10_000
    tables = parse([damaged.nul_run(tmp / "nul.log", line)]).tables
    result = audit(tables)
    agrees_with_truth(NAME, tables, result)
    rows = tables["unparsed"].filter(pl.col("reason").str.starts_with("NUL bytes"))
    assert rows.height == 1
    # the line is in no table of records: every line of its record is reported unparsed
    assert line in set(tables["unparsed"]["line"])
    assert line not in set(tables["messages"]["line"]) | set(tables["job_events"]["line"])
    (cycle, d), = result.damaged.items()
    assert d.reasons[0][0] == NUL and d.reasons[0][2] == rows["line"][0]
    # the cycle the RM was in when the line was written: the last loop entered before it
    text = damaged.lines()[:line]
    entered = [int(m.group(1)) for t in text if (m := re.search(rb"-------- (\d+) ------- Entering", t))]
    assert d.epoch in (entered[-1], entered[-1] + 1)


def test_a_run_of_bad_bytes_is_damage_a_lone_one_a_legacy_name(tmp):
    """Bytes a disk scrambled (a run that is not UTF-8) damage their cycle; a user name in
    Latin-1, printed in every cycle, does not: it is read with U+FFFD in place of the byte."""
    src = damaged.lines()
    src[12_000] = src[12_000].replace(b" ", b" \xff\xfe\x9c ", 1)
    log = tmp / "bad.log"
    log.write_bytes(b"".join(src))
    tables = parse([log]).tables
    result = audit(tables)
    agrees_with_truth(NAME, tables, result)
    assert [d.reasons[0][0] for d in result.damaged.values()] == [BAD_BYTES]
    latin = tmp / "latin1.log"
    latin.write_bytes(b"".join(src[:12_000] + src[12_001:]).replace(b"Hilaria", b"Hil\xe9ria"))
    parsed_latin = parse([latin])
    assert parsed_latin.summary.bad_utf8_lines > 100 and not damaged_cycles(parsed_latin.tables)
    assert "Hil\ufffdria" in set(parsed_latin.tables["job_caps"]["user"])
    agrees_with_truth(NAME, parsed_latin.tables, audit(parsed_latin.tables))


@pytest.mark.parametrize("kind", ["counter", "schedule", "between"])
def test_a_cut_first_cycle_is_damaged(tmp, kind):
    """Cut inside a cycle's RmCounter block, inside its createState block (the lines left of it
    belong to no cycle of the log) or between cycles: only a cycle the log starts inside is damaged."""
    log = cut(NAME, "rm.log", kind, tmp / f"cut-{kind}.log")
    tables = parse([log]).tables
    tables.update(read_resources(classes_only(NAME, tmp / "config")))
    result = audit(tables)
    agrees_with_truth(NAME, tables, result)
    started = tables["cycles"]["started"][0]
    assert started == (kind != "counter")
    assert {c: [r for r, *_ in d.reasons] for c, d in result.damaged.items()} == ({} if started else {1: [CUT]})
    assert not result.skipped


def test_a_rolled_set_with_a_member_lost(tmp, capsys):
    folder = damaged.rolled(tmp / "gap", drop="rm.log.1")
    tables = parse([folder]).tables
    result = audit(tables)  # no traceback: a record cut by the lost file is damage, not a crash
    agrees_with_truth(NAME, tables, result)
    epochs = tables["cycles"]["epoch"].to_list()
    jump = next(i for i, (a, b) in enumerate(zip(epochs, epochs[1:])) if b != a + 1)
    gap = {jump + 1, jump + 2}  # cycle numbers of the two cycles on either side
    assert {c for c, d in result.damaged.items() if GAP in [r for r, *_ in d.reasons]} == gap
    assert damaged_cycles(tables) == result.damaged or set(result.damaged) >= gap
    out = tmp / "gap-audit"
    assert main(["audit", str(folder), "--no-cache", "-o", str(out)]) == 0
    text = capsys.readouterr()
    assert "missing from the rolled set: rm.log.1" in text.err
    assert f"cycle {jump + 1} " in text.out and "input damaged" in text.out
    report = json.loads((out / "report.json").read_text())
    assert report["damaged"]["by_reason"][GAP] == 2
    assert report["cycles_agree"] + report["damaged"]["cycles"] + report["skipped"]["cycles"] == report["cycles"]


def _plain(text: str) -> str:
    """Command output without what varies run to run (seconds, cycles per second)."""
    return re.sub(r"\([\d.]+ s, [\d,]+ cycles/s\)", "(time)", text)


@pytest.mark.parametrize("ext", ["tar", "tgz", "tar.gz", "zip"])
def test_an_archive_reads_as_the_folder(tmp, capsys, ext):
    """The folder packed (its rolled set, rm.log.2 gzipped inside, beside another daemon's log and
    a subfolder): every command gives what it gives on the folder."""
    folder = damaged.rolled(tmp / ext / "logs", gzipped=True)
    archive = damaged.packed(folder, tmp / ext / f"logs.{ext}")
    (folder / "sub").mkdir(exist_ok=True)
    with tarfile.open(archive, "a") if ext == "tar" else contextlib.nullcontext() as tf:
        if tf is not None:  # a member in a subfolder: named, not read (as a folder's subfolder)
            info = tarfile.TarInfo("logs/sub/x.log")
            tf.addfile(info, io.BytesIO(b""))
    outs = {}
    for name, src in (("folder", folder), ("archive", archive)):
        code = main(["audit", str(src), "--no-cache", "-o", str(tmp / f"{name}-{ext}")])
        text = capsys.readouterr()
        outs[name] = (code, _plain(text.out).replace(str(tmp / f"{name}-{ext}"), "OUT"), text.err,
                      (tmp / f"{name}-{ext}" / "report.json").read_text())
    assert outs["folder"][0] == 0 and "cycles agree" in outs["folder"][1]
    assert outs["archive"][:2] == outs["folder"][:2] and outs["archive"][3] == outs["folder"][3]
    assert "ignored or.log (the Orchestrator's log)" in outs["archive"][2]
    if ext == "tar":
        assert outs["archive"][2] == outs["folder"][2].replace(str(folder), str(archive))
    # the tables are the folder's, file names included
    a, f = parse([archive]).tables, parse([folder]).tables
    for table in ("cycles", "counts", "unparsed", "schedule"):
        assert a[table].equals(f[table]), table
    job = int(f["counts"]["job_id"][0])
    for cmd in (["explain", "--job", str(job)],) if ext == "tgz" else ():
        assert main([cmd[0], str(archive), *cmd[1:]]) == 0
        text_a = capsys.readouterr().out
        assert main([cmd[0], str(folder), *cmd[1:]]) == 0
        assert text_a == capsys.readouterr().out


def test_an_archive_without_an_rm_log_or_cut_short_is_one_line(tmp, capsys):
    folder = tmp / "other" / "logs"
    folder.mkdir(parents=True)
    (folder / "or.log").write_bytes(b"01 Jan 2015 00:00:00,000  INFO OR.OrchestratorComponent - N/A T[1] start  up\n")
    archive = damaged.packed(folder, tmp / "other" / "logs.tgz")
    assert main(["audit", str(archive), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert f"{archive}: no RM log here" in err and "or.log (the Orchestrator's log)" in err
    cut_short = tmp / "other" / "cut.tgz"
    whole = damaged.packed(damaged.rolled(tmp / "cut" / "logs"), tmp / "cut" / "logs.tgz").read_bytes()
    cut_short.write_bytes(whole[: len(whole) // 2])
    assert main(["audit", str(cut_short), "--no-cache"]) == 2
    assert "cannot read the archive" in capsys.readouterr().err


FOREIGN_CLASSES = """\
Nodepool site-b { }
Class batch { policy = FAIR_SHARE; nodepool = site-b; priority = 10; weight = 100; default = true }
Class pinned { policy = FIXED_SHARE; nodepool = site-b; priority = 5; default = true }
Class JobDriver { policy = FIXED_SHARE; nodepool = site-b; priority = 9 }
Class held { policy = RESERVE; nodepool = site-b; priority = 1; default = true }
"""


def _config(tmp: Path, name: str, classes: str | None = None, fixture: str = NAME) -> Path:
    """A resources folder: the fixture's, or its ducc.properties with `classes` as ducc.classes."""
    folder = tmp / name
    folder.mkdir(exist_ok=True)
    src = Path(__file__).resolve().parents[2] / "fixtures" / fixture / "resources"
    for p in src.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    if classes is not None:
        (folder / "ducc.classes").write_text(classes)
    return folder


def _weight_changed(tmp: Path) -> Path:
    src = (Path(__file__).resolve().parents[2] / "fixtures" / NAME / "resources" / "ducc.classes").read_text()
    line = "Class normal         fair-base  { weight = 100; default = true }"
    assert line in src  # the only class h_mega15's jobs run in
    return _config(tmp, "heavier", src.replace(line, line.replace("100", "300")))


@pytest.mark.parametrize("midstream", [False, True])
def test_a_config_that_contradicts_the_log_is_named_and_loses(tmp, capsys, midstream):
    """Another fixture's config (quantum 4 GB where the log's is 1 GB) and the log's own with one
    class weight changed: each contradiction is one line and in report.json, the log's value is
    used, so the audit agrees with truth as on the log alone."""
    log = cut(NAME, "rm.log", "between", tmp / "mid-between.log") if midstream else log_path(NAME)
    for config, setting in ((_config(tmp, "c", fixture="c_nodepools"), "nodepool --default-- quantum"),
                            (_weight_changed(tmp), "class normal weight")):
        out = tmp / f"conflict-{midstream}-{config.name}"
        code = main(["audit", str(log), "--config", str(config), "-o", str(out), "--force"])
        text = capsys.readouterr().out
        report = json.loads((out / "report.json").read_text())
        assert code == 0 and report["cycles_agree"] == report["cycles_audited"], text
        assert [c["setting"] for c in report["config_conflicts"]] == [setting]
        lines = [ln for ln in text.splitlines() if ln.startswith("--config contradicts the log")]
        assert len(lines) == 1 and setting in lines[0] and "the log's value is used" in lines[0]
    # truth's counts in every audited cycle, the foreign quantum and the changed weight overruled
    for config in (_config(tmp, "c", fixture="c_nodepools"), _weight_changed(tmp)):
        tables = parse([log]).tables
        apply_config(tables, str(config))
        agrees_with_truth(NAME, tables, audit(tables))


def test_a_config_of_another_cluster_is_refused(tmp, capsys):
    config = _config(tmp, "site-b", FOREIGN_CLASSES)
    log = str(log_path(NAME))
    assert main(["audit", log, "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "this config does not belong to this log" in err and "site-b" in err
    assert main(["audit", log, "--config", str(config), "--force"]) == 0
    assert "does not belong to this log (--force)" in capsys.readouterr().out


def test_report_and_explain_say_which_cycles_are_damaged(tmp, capsys):
    """The HTML report lists the damaged cycles apart from the verdict; explain on a damaged cycle
    says that nothing there is a verdict on the RM."""
    log = damaged.nul_run(tmp / "nul-report.log", 10_000)
    html = tmp / "report.html"
    assert main(["report", str(log), "-o", str(html), "--no-cache"]) == 0
    text = html.read_text()
    assert "1 cycle(s) not audited: input damaged" in text and 'class="ok">rmref reproduces' in text
    tables = parse([log]).tables
    (cycle, damage), = damaged_cycles(tables).items()
    job = int(tables["counts"].filter(pl.col("cycle") == cycle)["job_id"][0])
    capsys.readouterr()
    assert main(["explain", str(log), "--job", str(job), "--cycle", str(cycle), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"Cycle {cycle}: input damaged, not audited ({damage.text()})" in out


def test_a_log_cut_before_its_first_schedule_is_one_line(tmp, capsys):
    """a_tiny's first 30,000 bytes hold no "Schedule sent" line (checked on the text): no cycle
    was published, so the audit has nothing to audit and says so in one line (it used to end in a
    polars SchemaError: a cycle column typed null where no cycle has a next one)."""
    text = log_path("a_tiny").read_bytes()[:30000]
    assert b"createState  Schedule sent" not in text and b"Nodepool" in text
    (tmp / "before-first.log").write_bytes(text)
    assert main(["audit", str(tmp / "before-first.log"), "--no-cache", "-o", str(tmp / "before-first")]) == 2
    err = capsys.readouterr().err
    assert "nothing to audit: no published schedule" in err and "Traceback" not in err
