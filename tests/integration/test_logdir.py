"""A copy of `$DUCC_HOME/logs` as DUCC writes it: the RM's rolled set is read, every other file is named.

The folder holds every daemon's log side by side; the other daemons' files below are small samples
in DUCC's log4j layout (`%d{DATE} %5p %X{COMPONENT}.%c{1} - %X{JID} T[%X{TID}] %X{METHOD} %m`),
with the logger prefixes each daemon writes (OR., PM., SM., WS., DB., JD.).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from replay import parse
from replay.cli import main
from replay.parsing.logdir import find_inputs
from tests.helpers import log_path
from tests.integration.test_rotation import _same_tables

# (file, what the note calls it, lines) of the other daemons
FOREIGN = {
    "or.log": ("the Orchestrator's log", [
        "INFO OR.OrchestratorComponent - N/A T[1] start  ##### warm #####",
        "INFO OR.OrchestratorComponent - N/A T[1] start  ducc.signature.required: on",
        "INFO OR.StateManager - 1204 T[35] update  JobState: WaitingForResources -> Assigned",
        "INFO OR.OrchestratorEventListener - N/A T[17] onRmStateDuccEvent  RM state received: 12 jobs",
        "WARN OR.JobDriverStateExchanger - 1204 T[41] run  no JD state for 1204 (timeout 60000)",
    ]),
    "pm.log": ("the Process Manager's log", [
        "INFO PM.ProcessManagerComponent - N/A T[1] start  Process Manager started",
        "INFO PM.ProcessManagerComponent - 1204 T[33] dispatchStateUpdateToAgents  ............. DuccType:Job",
        ("INFO PM.ProcessManagerEventListener - N/A T[30] onOrchestratorStateDuccEvent  "
         "Transport received Event. Body Type:OrchestratorStateDuccEvent"),
    ]),
    "sm.log": ("the Service Manager's log", [
        "INFO SM.ServiceManagerComponent - N/A T[1] init  Service Manager starting",
        "INFO SM.ServiceSet - 14 T[29] start  START INSTANCE",
        "INFO SM.ServiceSet - 14 T[29] start  Request to start service 14 accepted as service instance 3",
        "INFO SM.ServiceSet - 14 T[29] start  START INSTANCE COMPLETE",
    ]),
    "ws.log": ("the Web Server's log", [
        "INFO WS.DuccWebServer - N/A T[1] start  port 42133",
        "INFO WS.DuccHandler - N/A T[60] handleDuccServletLoginLink  login bob success",
        "INFO WS.DuccHandler - N/A T[61] handleDuccServletLogoutLink  logout bob success",
    ]),
    "db.log": ("the database's log", [
        "INFO DB.DbHandle - N/A T[1] init  Database connection opened to localhost",
        "WARN DB.HistoryManagerDb - 1204 T[38] saveJob  retrying save of job 1204",
    ]),
    "jd.err.log": ("a Job Driver's log", [
        "INFO JD.JobDriver - T[21] initialize  work items: 400",
        "ERROR JD.JobDriverHelper - T[21] getUserErrorString  java.lang.RuntimeException: bad item",
    ]),
}


def _daemon_log(lines: list[str]) -> bytes:
    """A few minutes of a daemon's log, every line in DUCC's layout (a stack trace line unheaded)."""
    out = []
    for i in range(40):
        level, rest = lines[i % len(lines)].split(" ", 1)
        out.append(f"01 Jan 2015 00:{i // 60:02}:{i % 60:02},{i:03} {level:>5} {rest}\n")
        if level == "ERROR":
            out.append("\tat org.apache.uima.ducc.container.jd.JobDriverHelper.run(JobDriverHelper.java:88)\n")
    return "".join(out).encode()


def _roll(data: bytes, pieces: int) -> list[bytes]:
    """Cut at line ends into `pieces` parts, oldest first."""
    size = len(data) // pieces
    parts, start = [], 0
    for _ in range(pieces - 1):
        end = data.index(b"\n", start + size) + 1
        parts.append(data[start:end])
        start = end
    return [*parts, data[start:]]


def ducc_logs(folder: Path, prefix: str = "") -> Path:
    """$DUCC_HOME/logs after some days: h_mega15's rm.log rolled as rm.log.3.gz, rm.log.2.gz, rm.log.1,
    rm.log, every other daemon's log beside it, a job's log folder and a stray file."""
    folder.mkdir(parents=True, exist_ok=True)
    data = gzip.decompress(log_path("h_mega15").read_bytes())
    for age, part in enumerate(reversed(_roll(data, 4))):
        name = f"{prefix}rm.log" + (f".{age}" if age else "")
        (folder / (name + ".gz" if age >= 2 else name)).write_bytes(gzip.compress(part, mtime=0) if age >= 2 else part)
    for name, (_what, lines) in FOREIGN.items():
        (folder / f"{prefix}{name}").write_bytes(_daemon_log(lines))
    (folder / f"{prefix}or.log.1.gz").write_bytes(gzip.compress(_daemon_log(FOREIGN["or.log"][1]), mtime=0))
    (folder / "1204").mkdir()
    (folder / "1204" / "jd.out.log").write_bytes(_daemon_log(FOREIGN["jd.err.log"][1]))
    (folder / "ducc.pid").write_text("31337\n")
    return folder


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("prefix", ["", "head1."], ids=["rm.log", "host.rm.log"])
def test_a_ducc_log_folder_reads_the_rms_rolled_set_only(tmp_path, prefix):
    """The folder parses to exactly the tables of the whole rm.log; every file left out is named with
    what it is (DUCC 1.x names rm.log, 2.x <host>.rm.log)."""
    folder = ducc_logs(tmp_path / "logs", prefix)
    got = parse([folder])
    assert [Path(f).name for f in got.summary.files] == [f"{prefix}rm.log.3.gz", f"{prefix}rm.log.2.gz",
                                                         f"{prefix}rm.log.1", f"{prefix}rm.log"]
    _same_tables(parse([log_path("h_mega15")]), got)
    note = got.summary.note
    for name, (what, _lines) in FOREIGN.items():
        assert f"{prefix}{name} ({what})" in note
    assert f"{prefix}or.log.1.gz (the Orchestrator's log)" in note
    assert "ducc.pid (not a DUCC log)" in note and "1 folder(s)" in note


def test_every_command_reads_the_folder_and_says_what_it_left_out(tmp_path, capsys):
    folder = ducc_logs(tmp_path / "logs")
    code, _, err = _run(capsys, "parse", str(folder))
    assert code == 0 and len(err.strip().splitlines()) == 1 and "or.log (the Orchestrator's log)" in err
    code, out, err = _run(capsys, "audit", str(folder))
    assert code == 0 and "cycles agree" in out
    assert len(err.strip().splitlines()) == 1 and "ws.log (the Web Server's log)" in err


def _one_line_error(capsys, *args: str) -> str:
    code, _, err = _run(capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_folder_without_an_rm_log(tmp_path, capsys):
    folder = ducc_logs(tmp_path / "logs")
    for p in folder.glob("rm.log*"):
        p.unlink()
    err = _one_line_error(capsys, "parse", str(folder))
    assert "no RM log" in err and "or.log (the Orchestrator's log)" in err


def test_two_rm_streams_in_one_folder(tmp_path, capsys):
    """rm.log beside rm-debug.log (the same run at two levels): read as one they doubled every cycle."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "rm.log").write_bytes(gzip.decompress(log_path("a_tiny", "rm-debug.log").read_bytes()))
    (folder / "rm-debug.log").write_bytes(gzip.decompress(log_path("a_tiny", "rm-debug.log").read_bytes()))
    (folder / "rm.log").write_bytes(log_path("a_tiny").read_bytes())
    err = _one_line_error(capsys, "parse", str(folder))
    assert "two RM logs" in err and "rm.log" in err and "rm-debug.log" in err


def test_two_interleaved_rm_streams(tmp_path, capsys):
    """Two logs of the same hours named as one rolled set: rm.log.1 ends after rm.log begins."""
    lines = log_path("a_tiny").read_text().splitlines(keepends=True)
    loops = [i for i, line in enumerate(lines) if "Entering scheduling loop" in line]
    older, newer = [], []
    for k, (a, b) in enumerate(zip(loops, [*loops[1:], len(lines)])):
        (older if k % 2 else newer).extend(lines[a:b])
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "rm.log.1").write_text("".join(older))
    (folder / "rm.log").write_text("".join(newer))
    err = _one_line_error(capsys, "parse", str(folder))
    assert "overlap in time" in err and "rm.log.1" in err and "rm.log," in err


def test_a_member_twice_must_be_the_same_log(tmp_path, capsys):
    """rm.log and rm.log.gz: one copy when they hold the same bytes, refused when they do not."""
    folder = tmp_path / "logs"
    folder.mkdir()
    data = log_path("a_tiny").read_bytes()
    (folder / "rm.log").write_bytes(data)
    (folder / "rm.log.gz").write_bytes(gzip.compress(data, mtime=0))
    got = parse([folder])
    assert [Path(f).name for f in got.summary.files] == ["rm.log"]
    assert "rm.log.gz (the same as rm.log)" in got.summary.note
    (folder / "rm.log.gz").write_bytes(gzip.compress(data[: len(data) // 2], mtime=0))  # an older copy
    err = _one_line_error(capsys, "parse", str(folder))
    assert "rm.log.gz" in err and "different" in err


@pytest.mark.parametrize("name", list(FOREIGN))
def test_another_daemons_log_given_by_name(tmp_path, capsys, name):
    """Not '0 cycles' and exit 0: the file is named for what it is."""
    folder = ducc_logs(tmp_path / "logs")
    err = _one_line_error(capsys, "parse", str(folder / name))
    assert f"this is {FOREIGN[name][0]} ({name}), not the RM's" in err


def test_an_unreadable_file_in_the_folder(tmp_path, capsys):
    """A file the folder holds but that cannot be read might be part of the RM's log: said so, naming it."""
    folder = ducc_logs(tmp_path / "logs")
    (folder / "pm.log.1.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 100)  # a damaged copy
    err = _one_line_error(capsys, "parse", str(folder))
    assert "pm.log.1.gz" in err and "gzip" in err
    (folder / "pm.log.1.gz").unlink()
    (folder / "rm.log.4").symlink_to(folder / "gone")
    err = _one_line_error(capsys, "audit", str(folder))
    assert "rm.log.4" in err and "broken link" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_file_without_read_permission(tmp_path, capsys):
    folder = ducc_logs(tmp_path / "logs")
    (folder / "sm.log").chmod(0)
    err = _one_line_error(capsys, "parse", str(folder))
    assert "sm.log" in err and "cannot read" in err


def test_a_gap_in_the_rolled_set_is_named(tmp_path):
    folder = ducc_logs(tmp_path / "logs")
    (folder / "rm.log.2.gz").unlink()
    assert "rm.log.2" in find_inputs([folder]).note()


def test_a_file_named_as_the_rms_that_is_not(tmp_path, capsys):
    """rm.log holding the Orchestrator's records is not skipped in silence: the newest part would be lost."""
    folder = ducc_logs(tmp_path / "logs")
    (folder / "rm.log").write_bytes(_daemon_log(FOREIGN["or.log"][1]))
    err = _one_line_error(capsys, "parse", str(folder))
    assert "rm.log: named as the RM's log but it is the Orchestrator's log" in err


def test_a_files_head_names_its_daemon_by_its_loggers():
    """head_of: the RM as soon as one RM logger is seen (it stops reading there), else the
    commonest COMPONENT; headers without DUCC's logger layout name none."""
    from replay.parsing.logdir import Head, head_of

    def line(component: str) -> bytes:
        return f"01 Jan 2015 00:00:00,000  INFO {component}.Scheduler - N/A T[1] go  text\n".encode()

    assert head_of(line("OR") + line("RM") + line("OR") * 5) == Head(False, True, "RM")
    assert head_of(line("OR") * 2 + line("PM") + b"a stack line\n") == Head(False, True, "OR")
    assert head_of(line("PM") + line("OR") * 2) == Head(False, True, "OR")
    assert head_of(b"01 Jan 2015 00:00:00,000 not a logger\n") == Head(False, True, None)
    assert head_of(b"plain text\n") == Head(False, False, None)
    assert head_of(b"  \n") == Head(True, False, None)
