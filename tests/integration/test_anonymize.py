"""`rmreplay anonymize` on every bundled log (INFO, DEBUG, a rolled set, a log cut mid-run).

Ground truth is the original log: the anonymized log, parsed, with every pseudonym turned back by
the mapping (written outside OUT, the folder meant for sending), must give the original's tables
exactly; audited, the same verdicts cycle by
cycle and decision by decision (rmref's own decisions and the divergences, names turned back);
and no original host, short name, IP, user, job name, domain or path may be left anywhere in it.
"""

from __future__ import annotations

import gzip
import json
import re
import stat
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from replay import parse
from replay.apps.anonymize import anonymize
from replay.apps.audit import audit, result_frames
from replay.cli import main
from replay.model.resources import read_resources
from tests.helpers import FIXTURES, LOGS, log_path, parsed
from tests.integration.test_rotation import _roll

PSEUDONYM = re.compile(r"host-[0-9a-z]{6}(?:\.dom-[0-9a-z]{6})?|(?:user|job|dom|file)-[0-9a-z]{6}|/path-[0-9a-z]{6}"
                       r"|10\.255\.\d{1,3}\.\d{1,3}")
KINDS = ("hosts", "short_names", "domains", "ips", "users", "jobs", "files")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("anonymize")


def _mapping(out: Path) -> Path:
    """Where the mapping goes by default: beside OUT (and the key, when it is there too), never inside it."""
    return out.parent / f"{out.name}.mapping.json"


def _anonymize(inputs: list[Path], out: Path, *extra: str) -> dict:
    assert main(["anonymize", *map(str, inputs), "-o", str(out), *extra]) == 0
    assert not (out / "mapping.json").exists()
    return json.loads(_mapping(out).read_text())


def _inverse(mapping: dict) -> dict[str, str]:
    back = {}
    for kind in KINDS:
        for original, pseudonym in mapping[kind].items():
            assert back.setdefault(pseudonym, original) == original, (pseudonym, original)  # one way back
    return back


def _turn(text: str, back: dict[str, str]) -> str:
    return PSEUDONYM.sub(lambda m: back[m.group()], text)


def _back(frame: pl.DataFrame, back: dict[str, str]) -> pl.DataFrame:
    """Every pseudonym in every string (and list of strings) turned back into its original."""
    exprs = []
    for column, dtype in frame.schema.items():
        if dtype not in (pl.String, pl.List(pl.String)):
            continue
        values = (frame[column].explode() if dtype == pl.List(pl.String) else frame[column]).drop_nulls().unique()
        turned = {v: t for v in values.to_list() if (t := _turn(v, back)) != v}
        expr = (pl.element() if dtype == pl.List(pl.String) else pl.col(column))
        expr = expr.replace(list(turned), list(turned.values()))
        exprs.append(pl.col(column).list.eval(expr) if dtype == pl.List(pl.String) else expr)
    return frame.with_columns(exprs)


def _log_lines(folder: Path) -> pl.Series:
    """Every line of the anonymized files."""
    parts = []
    for f in sorted(folder.iterdir()):
        if f.name != "mapping.json":
            data = f.read_bytes()
            raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
            parts += raw.decode("utf-8", "replace").splitlines()
    return pl.Series(parts, dtype=pl.String)


def _same_tables(original: dict, anonymized: dict, back: dict) -> None:
    for name, frame in original.items():
        try:
            assert_frame_equal(_back(anonymized[name], back), frame)
        except AssertionError as exc:
            raise AssertionError(f"table {name}: {exc}") from None


def _same_audit(original: dict, anonymized: dict, back: dict):
    a, b = audit(original), audit(anonymized)
    reports = [a.report(), json.loads(_turn(json.dumps(b.report()), back))]
    # the reason a cycle is skipped names the first few nodes by name: other names, other first few
    reasons = [re.sub(r"\([^()]*\)", "(nodes)", r["skipped"].pop("reason") or "") for r in reports]
    assert reports[1] == reports[0] and reasons[1] == reasons[0]
    assert [tuple(_turn(v, back) if isinstance(v, str) else v for v in d.row()) for d in b.divergences] == [
        d.row() for d in a.divergences]
    for name, frame in result_frames(a).items():  # rmref's decisions: the same rows (listed by host name)
        assert_frame_equal(_back(result_frames(b)[name], back).sort(pl.all()), frame.sort(pl.all()))
    return a


def _nothing_left(folder: Path, mapping: dict) -> None:
    """No original anywhere in the output, as a word of its own (`bob` may be in `bobby`)."""
    originals = [o for kind in KINDS for o in mapping[kind]]
    alternation = "|".join(re.escape(o) for o in sorted(originals, key=len, reverse=True))
    lines = _log_lines(folder)
    hits = lines.filter(lines.str.contains(f"(?:^|[^A-Za-z0-9_])(?:{alternation})(?:[^A-Za-z0-9_]|$)"))
    assert hits.is_empty(), f"{hits.len()} line(s) keep an original name: {hits[0]!r}"


@cache
def _fixture_run(name: str, level: str, root: str) -> tuple[Path, dict]:
    out = Path(root) / f"{name}-{level}"
    return out, _anonymize([log_path(name, level)], out)


@pytest.mark.parametrize(("name", "level"), [pytest.param(*lv, marks=pytest.mark.slow) if lv[0] == "i_mega24" else lv
                                             for lv in [*LOGS, ("i_mega24", "rm.log")]
                                             if lv != ("i_mega24", "rm-debug.log")])
def test_every_bundled_log_parses_and_audits_the_same(name, level, workdir, capsys):
    out, mapping = _fixture_run(name, level, str(workdir))
    capsys.readouterr()
    src = log_path(name, level)
    assert [p.name for p in sorted(out.iterdir())] == sorted(["manifest.json", src.name])
    assert ((out / src.name).read_bytes()[:2] == b"\x1f\x8b") == (src.suffix == ".gz")
    original = parsed(name, level).tables
    anonymized = parse([out / src.name]).tables
    back = _inverse(mapping)
    _same_tables(original, anonymized, back)
    _same_audit(original, anonymized, back)
    _nothing_left(out, mapping)
    assert mapping["hosts"] and mapping["users"] and mapping["jobs"] and mapping["kept"] == {}


def test_a_rolled_set_keeps_its_files_and_reads_as_one_stream(tmp_path, capsys):
    data = gzip.decompress(log_path("h_mega15", "rm-debug.log").read_bytes())
    logs = tmp_path / "logs"
    logs.mkdir()
    files = _roll(data, logs, 700 * 1024)
    mapping = _anonymize([logs], tmp_path / "out")
    capsys.readouterr()
    names = sorted(p.name for p in files)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([*names, "manifest.json"])
    for f in files:  # gzipped where the input was, line for line the same count
        out = (tmp_path / "out" / f.name).read_bytes()
        assert (out[:2] == b"\x1f\x8b") == (f.suffix == ".gz")
        raw = gzip.decompress(out) if f.suffix == ".gz" else out
        given = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        assert raw.count(b"\n") == given.count(b"\n")
    back = _inverse(mapping)
    original, anonymized = parse([logs]).tables, parse([tmp_path / "out"]).tables
    _same_tables(original, anonymized, back)
    _same_audit(original, anonymized, back)
    _nothing_left(tmp_path / "out", mapping)


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_a_log_cut_mid_run(level, tmp_path, capsys):
    """h_mega15 from its 60th scheduling loop: both logs audit with --config (the INFO log's nodes
    solved for from its counters); the anonymized logs do the same, with the pseudonyms."""
    with gzip.open(log_path("h_mega15", level), "rt") as fh:
        lines = fh.readlines()
    start = [i for i, line in enumerate(lines) if "Entering scheduling loop" in line][59]
    log = tmp_path / f"{level}.cut"
    log.write_text("".join(lines[start:]))
    mapping = _anonymize([log], tmp_path / "out")
    capsys.readouterr()
    back = _inverse(mapping)
    original, anonymized = parse([log]).tables, parse([tmp_path / "out" / log.name]).tables
    _same_tables(original, anonymized, back)
    config = read_resources(FIXTURES / "h_mega15" / "resources")
    original.update(config)
    anonymized.update(config)
    result = _same_audit(original, anonymized, back)
    assert len(result.cycles) == 69 and not result.divergences
    if level == "rm.log":  # the INFO log never sizes some nodes: inferred, and said so
        assert any(a.source == "inferred" for a in result.assumed)
    _nothing_left(tmp_path / "out", mapping)


def _tiny_with(tmp_path: Path, edit) -> Path:
    lines = log_path("a_tiny").read_text().splitlines(keepends=True)
    log = tmp_path / "rm.log"
    log.write_text("".join(edit(lines)))
    return log


def test_lines_it_does_not_understand(tmp_path, capsys):
    """A foreign line with a host in it is rewritten token by token; one without is passed through
    as it is; the summary counts one more of each than for the log without them."""
    with_host = ("garbage from a foreign appender about nodeB.sim.ducc and 10.0.0.2 (head ducchead.sim.ducc), "
                 "see /var/tmp/dump\n")
    without = "another foreign line, nothing of the site in it\n"
    log = _tiny_with(tmp_path, lambda lines: [*lines[:300], with_host, without, *lines[300:]])
    done = anonymize([str(log)], tmp_path / "out")
    plain = anonymize([str(log_path("a_tiny"))], tmp_path / "plain").lines
    mapping = json.loads(_mapping(tmp_path / "out").read_text())
    written = (tmp_path / "out" / "rm.log").read_text().splitlines(keepends=True)
    assert written[301] == without
    assert written[300] == (f"garbage from a foreign appender about {mapping['hosts']['nodeB.sim.ducc']} and "
                            f"{mapping['ips']['10.0.0.2']} (head {mapping['hosts']['ducchead.sim.ducc']}), "
                            f"see {mapping['files']['/var/tmp/dump']}\n")
    assert parse([log]).tables["unparsed"]["line"].to_list() == [301, 302]
    assert (done.lines.rewritten, done.lines.passed_through) == (plain.rewritten + 1, plain.passed_through + 1)
    assert (done.lines.understood, done.lines.lines) == (plain.understood, plain.lines + 2)
    assert main(["anonymize", str(log), "-o", str(tmp_path / "cli")]) == 0
    out = capsys.readouterr().out
    # piped, each row is one line, `name: value`
    assert f"\nothers, with a name in them: {done.lines.rewritten} rewritten token by token\n" in out
    assert f"\nothers, without one: {done.lines.passed_through} passed through\n" in out


def test_a_user_named_like_a_class_is_kept_and_the_log_still_reads_the_same(tmp_path, capsys):
    log = _tiny_with(tmp_path, lambda lines: [re.sub(r"(?<![\w-])bob(?![\w-])", "normal", x) for x in lines])
    mapping = _anonymize([log], tmp_path / "out")
    assert "normal" in mapping["kept"] and "normal" not in mapping["users"]
    assert "'normal': also a word the log uses otherwise" in capsys.readouterr().out
    back = _inverse(mapping)
    original, anonymized = parse([log]).tables, parse([tmp_path / "out" / "rm.log"]).tables
    _same_tables(original, anonymized, back)
    _same_audit(original, anonymized, back)


def test_the_key_makes_it_repeatable_and_consistent_across_logs(tmp_path, capsys):
    key = tmp_path / "site.key"
    info = _anonymize([log_path("h_mega15")], tmp_path / "a", "--key", str(key))
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and "new key saved" in capsys.readouterr().out
    again = _anonymize([log_path("h_mega15")], tmp_path / "b", "--key", str(key))
    assert "key read from" in capsys.readouterr().out
    for f in ("rm.log.gz", "manifest.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert _mapping(tmp_path / "a").read_bytes() == _mapping(tmp_path / "b").read_bytes()
    debug = _anonymize([log_path("h_mega15", "rm-debug.log")], tmp_path / "c", "--key", str(key))
    for kind in ("hosts", "ips", "users"):  # the site's other log: the same names, the same pseudonyms
        shared = info[kind].keys() & debug[kind].keys()
        assert shared and all(info[kind][n] == debug[kind][n] for n in shared), kind
    other = _anonymize([log_path("h_mega15")], tmp_path / "d")  # no key: new pseudonyms
    assert other["hosts"] != info["hosts"] and again == info
    assert stat.S_IMODE(_mapping(tmp_path / "a").stat().st_mode) == 0o600


def test_bad_key_file_and_duplicate_names_are_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.key"
    bad.write_text("not a key\n")
    assert main(["anonymize", str(log_path("a_tiny")), "-o", str(tmp_path / "out"), "--key", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not an rmreplay anonymization key" in err and len(err.strip().splitlines()) == 1
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "rm.log").write_bytes(log_path("a_tiny").read_bytes())
    twins = [str(tmp_path / "x" / "rm.log"), str(tmp_path / "y" / "rm.log")]
    assert main(["anonymize", *twins, "-o", str(tmp_path / "o")]) == 2
    assert "same file name" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_the_mapping_stays_out_of_the_folder_to_send(tmp_path, capsys):
    """Beside the key by default (named after OUT), where --mapping says otherwise, never inside OUT;
    the run says where it went; the summary piped is whole lines (no table wrapped to 80 columns)."""
    key = tmp_path / "keys" / "site.key"
    assert main(["anonymize", str(log_path("a_tiny")), "-o", str(tmp_path / "send"), "--key", str(key)]) == 0
    out = capsys.readouterr().out
    mapping = key.parent / "send.mapping.json"
    assert json.loads(mapping.read_text())["hosts"] and sorted(p.name for p in (tmp_path / "send").iterdir()) == [
        "manifest.json", "rm.log"]
    assert f"keep {mapping} at your site" in out
    assert any(line.startswith("mapping: ") and str(mapping) in line for line in out.splitlines())
    assert all(len(line) <= 80 or ": " in line for line in out.splitlines())  # rows are never cut into columns
    assert any(len(line) > 80 and line.startswith("HashMap order: ") for line in out.splitlines())
    inside = tmp_path / "send2" / "map.json"
    assert main(["anonymize", str(log_path("a_tiny")), "-o", str(tmp_path / "send2"), "--mapping", str(inside)]) == 2
    assert "cannot go inside" in capsys.readouterr().err and not (tmp_path / "send2").exists()
    elsewhere = tmp_path / "site" / "m.json"
    assert main(["anonymize", str(log_path("a_tiny")), "-o", str(tmp_path / "send3"), "--mapping", str(elsewhere)]) == 0
    assert f"keep {elsewhere} at your site" in capsys.readouterr().out and elsewhere.exists()


def test_a_parse_directory_is_refused_as_help_says(tmp_path, capsys):
    from replay.cli.parser import build_parser

    anonymize_help = build_parser()._subparsers._group_actions[0].choices["anonymize"].format_help()
    assert "not a `rmreplay parse -o` directory" in " ".join(anonymize_help.split())
    assert main(["parse", str(log_path("a_tiny")), "-o", str(tmp_path / "parsed")]) == 0
    capsys.readouterr()
    assert main(["anonymize", str(tmp_path / "parsed"), "-o", str(tmp_path / "out")]) == 2
    assert "already parsed" in capsys.readouterr().err
