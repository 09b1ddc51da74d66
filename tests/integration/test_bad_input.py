"""Bad input gives a one-line error (exit 2) or counted unparsed rows, never a traceback."""

from __future__ import annotations

import gzip
import json
import random

import polars as pl
import pytest

from replay import parse
from replay.cli import main
from tests.helpers import log_path, parsed

SAMPLE = log_path("a_tiny")


def _lines() -> list[str]:
    return SAMPLE.read_text().splitlines(keepends=True)


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _accounted(result) -> int:
    """Lines in records (header + continuation) plus unparsed orphans must be every line."""
    return result.summary.lines


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file_is_a_one_line_error(tmp_path, capsys, content):
    f = tmp_path / "rm.log"
    f.write_bytes(content)
    code, _, err = _run(capsys, "parse", str(f))
    assert code == 2
    assert str(f) in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_random_bytes_are_not_an_rmlog(tmp_path, capsys):
    f = tmp_path / "junk.bin"
    f.write_bytes(random.Random(7).randbytes(50_000))
    code, _, err = _run(capsys, "parse", str(f))
    assert code == 2 and "not an rm.log" in err and str(f) in err


def test_other_log_format_is_not_an_rmlog(tmp_path, capsys):
    f = tmp_path / "syslog"
    f.write_text("Nov 22 03:21:00 host sshd[1]: Accepted publickey\n" * 50)
    code, _, err = _run(capsys, "parse", str(f))
    assert code == 2 and "not an rm.log" in err


def test_missing_file_and_damaged_gzip(tmp_path, capsys):
    code, _, err = _run(capsys, "parse", str(tmp_path / "nope.log"))
    assert code == 2 and "no such file" in err
    bad = tmp_path / "rm.log.gz"
    bad.write_bytes(gzip.compress(SAMPLE.read_bytes())[:5000])
    code, _, err = _run(capsys, "parse", str(bad))
    assert code == 2 and "gzip" in err


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    lines = _lines()
    lines[300] = lines[300].replace("share", "sh\udcffare")
    f = tmp_path / "rm.log"
    f.write_bytes("".join(lines).encode("utf-8", errors="surrogateescape"))
    result = parse([f])
    assert result.summary.bad_utf8_lines == 1
    assert result.summary.lines == len(lines)


def test_file_cut_mid_line_and_mid_record(tmp_path):
    text = SAMPLE.read_text()
    cut = text.index("\tAdditions[1]: nodeB.sim.ducc.1^0") + 12  # inside a createState structure, mid-line
    f = tmp_path / "rm.log"
    f.write_text(text[:cut])
    result = parse([f])
    unparsed = result.tables["unparsed"]
    n_lines = text[:cut].count("\n") + 1
    header = text[:cut].rfind("createState  \n")
    header_line = text[:header].count("\n") + 1
    # the truncated structure is rejected as a whole, and each of its lines is reported
    assert unparsed["line"].to_list() == list(range(header_line, n_lines + 1))
    assert "schedule_state" in unparsed["reason"][0]
    assert result.summary.lines == n_lines
    assert result.summary.cycles == text[:cut].count("Schedule sent to Orchestrator") == 1


def test_interleaved_line_is_counted_not_dropped(tmp_path):
    lines = _lines()
    at = next(i for i, ln in enumerate(lines) if "initJobCap" in ln) + 1
    lines.insert(at, "garbage from another writer\n")
    f = tmp_path / "rm.log"
    f.write_text("".join(lines))
    unparsed = parse([f]).tables["unparsed"]
    assert unparsed.select("line", "text").rows() == [(at + 1, "garbage from another writer")]
    assert "interleaved" in unparsed["reason"][0]


def test_unknown_message_is_kept_as_a_generic_record(tmp_path):
    lines = _lines()
    lines.insert(200, "01 Jan 2015 00:01:00,000  INFO RM.Brandnew - N/A T[19] doSomething  a message nobody knows\n")
    f = tmp_path / "rm.log"
    f.write_text("".join(lines))
    result = parse([f])
    msgs = result.tables["messages"].filter(pl.col("cls") == "Brandnew")
    assert msgs.select("method", "text", "line").rows() == [("doSomething", "a message nobody knows", 201)]
    assert result.tables["unparsed"].height == 0


def test_known_message_with_unknown_body_is_unparsed(tmp_path):
    lines = _lines()
    lines.insert(200, "01 Jan 2015 00:01:00,000  INFO RM.RmJob - 1 T[19] initJobCap  alice something new\n")
    f = tmp_path / "rm.log"
    f.write_text("".join(lines))
    unparsed = parse([f]).tables["unparsed"]
    assert unparsed.select("line").to_series().to_list() == [201]
    assert "RmJob.initJobCap" in unparsed["reason"][0]


def test_log_starting_mid_cycle_without_bootstrap(tmp_path):
    lines = _lines()
    start = next(i for i, ln in enumerate(lines) if "Additions[1]: nodeB.sim.ducc.2" in ln)
    f = tmp_path / "rm.log"
    f.write_text("".join(lines[start:]))
    result = parse([f])
    assert result.tables["config"].height == 0 and result.tables["classes"].height == 0
    unparsed = result.tables["unparsed"]
    assert unparsed.height == 2 and set(unparsed["line"].to_list()) == {1, 2}
    assert all("starts mid-record" in r for r in unparsed["reason"].to_list())
    full = parsed("a_tiny").tables["cycles"]
    assert result.summary.cycles == full.height - 1  # the first, half-seen schedule is not counted


def test_every_input_line_is_accounted_for(fixture_log):
    result = parsed(*fixture_log)
    s = result.summary
    assert s.lines == s.records + s.continuation_lines + s.orphan_lines


@pytest.mark.parametrize("command", ["audit", "explain"])
def test_a_parse_directory_without_a_column_this_version_reads_is_a_one_line_error(tmp_path, capsys, command):
    # a `parse -o` directory of an older version: its nodes table has no `down` column (the
    # reason NodePool.disable's lines give), which the audit reads; it used to end in polars'
    # ColumnNotFoundError
    out = tmp_path / "parsed"
    assert main(["parse", str(SAMPLE), "-o", str(out)]) == 0
    pl.read_parquet(out / "nodes.parquet").drop("down").write_parquet(out / "nodes.parquet")
    manifest = json.loads((out / "manifest.json").read_text())  # as that version wrote it: no columns recorded
    manifest["files"]["nodes.parquet"] = {"bytes": (out / "nodes.parquet").stat().st_size, "sha256": ""}
    manifest.pop("columns", None)
    (out / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    args = [command, str(out), "--no-cache"] + (["--job", "1"] if command == "explain" else [])
    code, _, err = _run(capsys, *args)
    assert code == 2
    assert err.strip().endswith("without the nodes.down column(s) this version reads; parse the log again")


def test_a_parse_directory_whose_manifest_records_its_columns_is_opened_without_reading_a_footer(tmp_path, capsys,
                                                                                                 monkeypatch):
    # the 22 footers took about 10 ms of every command that opens a parse directory; the manifest
    # records each table's columns as the parse wrote them, and a record that lacks one this
    # version reads (another version's) is the same one-line error, exit 2
    out = tmp_path / "parsed"
    assert main(["parse", str(SAMPLE), "-o", str(out)]) == 0
    footers: list[str] = []
    monkeypatch.setattr(pl, "read_parquet_schema", lambda path: footers.append(str(path)) or {})
    capsys.readouterr()
    code, _, err = _run(capsys, "audit", str(out), "--no-cache")
    assert code == 0, err
    assert footers == []
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["columns"]["nodes"].remove("down")
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = _run(capsys, "audit", str(out), "--no-cache")
    assert code == 2 and footers == []
    assert err.strip().endswith("without the nodes.down column(s) this version reads; parse the log again")
