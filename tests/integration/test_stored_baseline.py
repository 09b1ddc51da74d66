"""rmref unchanged, read from the stored audit: the baseline of `whatif` and `check` (replay.apps.baseline).

The baseline is the audit's chained run, which follows the RM's verified free choices: held to the
RM's logged decisions, a cycle the audit calls agreeing is reproduced by the baseline. Read from
the stored audit it gives the same outputs, byte for byte, as an audit run now; an audit stored
under another configuration or release, or in another format, is never read.
"""

from __future__ import annotations

import pickle
import re
from dataclasses import replace
from pathlib import Path

import pytest

from replay.apps import stored as st
from replay.apps.audit import audit
from replay.apps.baseline import logged_values
from replay.apps.change import Change
from replay.apps.whatif import whatif
from replay.cli import main
from replay.model.logged import logged_decisions
from replay.model.start import bootstrap
from tests.helpers import log_path, parsed
from tests.integration.test_whatif import FIRST_FIT

# logs where the RM made free choices the audit verifies (What Of's host ties, detectFragmentation's
# tally order, takeFromTheRich's equally ranked shares, node IPs a log before DUCC 3.0.0 never shows),
# and one without
TIES = ["ties/walk_order", "unsettled/tally_order", "unsettled/share_map", "releases/2.2.2/reservation-ip"]
LOGS = ["a_tiny", *TIES]


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _printed(text: str) -> str:
    """A command's printout without what differs from run to run (its time, its speed)."""
    return " ".join(re.sub(r"[\d.]+ s, [\d,]+ cycles/s", "", text).split())


def _stored(cache: Path) -> list[Path]:
    return sorted(p for p in cache.glob("*/audits/*") if not p.name.startswith("."))


@pytest.mark.parametrize("name", TIES)
def test_a_cycle_the_audit_calls_agreeing_is_reproduced_by_the_baseline(name):
    """Held to the RM's logged decisions: rmref unchanged reproduces every decision of every cycle
    the audit finds agreeing (its verified choices included), and decides each verified choice as
    the RM did."""
    tables = parsed(name).tables
    audited, result = audit(tables), whatif(tables)
    assert audited.verified, "the log holds a free choice of the RM's that the audit verifies"
    divergent = {d.cycle for d in audited.divergences}
    assert result.unreproduced_cycles <= divergent
    assert result.cycles == audited.cycles
    logged = logged_decisions(tables)
    kinds = {"placements": "placements", "defrag": "needy", "schedule": "placements"}
    for v in audited.verified:
        if v.cycle in divergent or v.job_id is None:
            continue
        kind = kinds.get(v.decision, v.decision)
        want = logged_values(logged, v.cycle)[kind].get(v.job_id)
        base = audited.baseline[v.cycle].values[kind].get(v.job_id)
        assert base == want, (v.cycle, v.job_id, kind)


@pytest.mark.parametrize("name", TIES)
def test_a_change_that_changes_nothing_follows_the_same_choices(name):
    """A change whose settings are the log's own: every choice the baseline followed is still the
    change's own free choice, so nothing changes, and what the baseline leaves unreproduced stays."""
    tables = parsed(name).tables
    threshold = bootstrap(tables).config.fragmentation_threshold
    same = whatif(tables, Change(sets=(("ducc.rm.fragmentation.threshold", str(threshold)),)))
    plain = whatif(tables)
    assert same.cycles_changed == 0 and same.unreproduced == plain.unreproduced


@pytest.mark.parametrize("name", LOGS)
def test_whatif_from_the_stored_audit_is_the_fresh_computation(name, tmp_path, capsys, monkeypatch):
    """The same files and printout whether the baseline is audited now (no cache), audited and
    stored, or read from the store (the audit then never runs)."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    plugin = tmp_path / "first_fit.py"
    plugin.write_text(FIRST_FIT)
    log = str(log_path(name))
    for change in (["--set", "ducc.rm.share.quantum=2"], ["--scheduler", f"{plugin}:PHASES"]):
        runs = []
        for how in ("fresh", "stored", "read"):
            if how == "read":
                monkeypatch.setattr(st, "audit", _no_audit)
            out = tmp_path / f"{how}{len(runs)}{change[0]}"
            code, text = _run(capsys, "whatif", log, *change, "-o", str(out), *(["--no-cache"] if how == "fresh"
                                                                                 else []))
            runs.append((code, _printed(text.replace(str(out), "OUT")), _files(out)))
            monkeypatch.undo()
            monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
        assert runs[0] == runs[1] == runs[2]
        assert len(_stored(tmp_path / "cache")) == 1


def _no_audit(*_args, **_kwargs):
    raise AssertionError("the stored audit is there: no audit runs")


@pytest.mark.parametrize("name", ["a_tiny", "ties/walk_order"])
def test_check_from_the_stored_audit_is_the_fresh_computation(name, tmp_path, capsys, monkeypatch):
    """check's verdict, printout and JUnit file (its timings aside) alike every way."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    log = str(log_path(name))
    runs = []
    for how in ("fresh", "stored", "read"):
        if how == "read":
            monkeypatch.setattr(st, "audit", _no_audit)
        junit = tmp_path / f"{how}.xml"
        code, text = _run(capsys, "check", log, "--set", "ducc.rm.share.quantum=2", "--junit", str(junit),
                          *(["--no-cache"] if how == "fresh" else []))
        xml = re.sub(r'time="[\d.]+"', "", junit.read_text())
        runs.append((code, _printed(text.replace(str(junit), "FILE")), xml))
    assert runs[0] == runs[1] == runs[2]


def _tamper(folder: Path) -> None:
    """A stored baseline that says rmref unchanged decides nothing: read, it shows."""
    path = folder / st.BASELINE
    baseline = pickle.loads(path.read_bytes())
    empty = {c: replace(b, values={k: {} for k in b.values}) for c, b in baseline.items()}
    path.write_bytes(pickle.dumps(empty))


def test_a_stale_stored_baseline_is_never_read(tmp_path, capsys, monkeypatch):
    """Tampered, the stored baseline is read under its own key (so it is what whatif reads); under
    another release or with `--config`, or stored in another format, it is not: the output is the
    fresh computation's."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    log = str(log_path("a_tiny"))

    def report(*extra: str) -> bytes:
        out = tmp_path / "out"
        assert _run(capsys, "whatif", log, "--set", "class.normal.weight=3", "-o", str(out), "--force", *extra)[0] == 0
        return (out / "report.json").read_bytes()

    fresh = report("--no-cache")
    assert report() == fresh
    (folder,) = _stored(tmp_path / "cache")
    _tamper(folder)
    assert report() != fresh  # the tampered baseline, under its own key: read
    for extra in (["--rm-release", "2.2.1"], ["--config", str(log_path("a_tiny").parent / "resources")]):
        assert report(*extra) == report("--no-cache", *extra)
    manifest = folder / st.MANIFEST
    manifest.write_text(manifest.read_text().replace(st.FORMAT, "rmreplay-audit/2"))
    assert report() == fresh  # another format: audited again


def test_a_bad_change_is_refused_before_any_audit(tmp_path, capsys, monkeypatch):
    """A --set that does not apply is one line on stderr (exit 2), and no audit is run or stored for it."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(st, "audit", _no_audit)
    code = main(["whatif", str(log_path("a_tiny")), "--set", "class.normal.nodepool=gpu", "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "--set class.normal.nodepool=gpu" in err and len(err.strip().splitlines()) == 1
    assert _stored(tmp_path / "cache") == []
