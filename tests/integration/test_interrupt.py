"""`rmreplay parse -o` interrupted at random points (SIGINT, SIGTERM, SIGKILL) in a real process.

Whatever the moment, the folder afterwards is as it was (absent, empty, or the earlier complete
result, byte for byte) or complete and byte-identical to an uninterrupted run: never anything
else. Hypothesis chooses when the signal lands, from the start of the process to past its end.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import log_path

LOG = log_path("h_mega15", "rm-debug.log")  # 65 MB of DEBUG log in 1 MB chunks: several writes to interrupt
EARLIER = log_path("b_classes")  # what the folder held before, when it held something
ARGS = ["--chunk-mb", "1"]


def _command(log: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from replay.cli import main; sys.exit(main())",
            "parse", str(log), "-o", str(out), *ARGS, *extra]


def _default_sigint() -> None:
    """In the child: SIGINT as a shell gives it, whatever this test process inherited or was left
    with (an ignored SIGINT passes to exec'd programs, and Python then never raises on it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _snapshot(folder: Path) -> dict[str, bytes] | None:
    if not folder.exists():
        return None
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@cache
def _reference(kind: str, root: str) -> tuple[dict[str, bytes], float]:
    """An uninterrupted run's files (and how long it took, start-up included)."""
    out = Path(root) / f"reference-{kind}"
    start = time.perf_counter()
    subprocess.run(_command(LOG if kind == "log" else EARLIER, out), check=True, capture_output=True)
    return _snapshot(out), time.perf_counter() - start


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("ref"))
    return _reference("log", root), _reference("earlier", root)


def _prepare(folder: Path, before: str, earlier: dict[str, bytes]) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    for p in folder.parent.glob(f".{folder.name}.*"):
        shutil.rmtree(p)
    if before != "absent":
        folder.mkdir(parents=True)
    if before == "earlier":
        for name, data in earlier.items():
            (folder / name).write_bytes(data)


def _interrupt(folder: Path, sig: int, delay: float, from_start: bool = True) -> subprocess.CompletedProcess:
    """Run the parse, send `sig` `delay` seconds after the process started (or, `from_start`
    False, after the command began to write: its temporary folder is there)."""
    proc = subprocess.Popen(_command(LOG, folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_default_sigint)
    while not from_start and proc.poll() is None and not list(folder.parent.glob(f".{folder.name}.rmreplay-*")):
        time.sleep(0.005)
    time.sleep(delay)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


def _check(folder: Path, before: str, earlier: dict[str, bytes], complete: dict[str, bytes]) -> str:
    """The folder is as it was, or complete; say which."""
    now = _snapshot(folder)
    was = {"absent": None, "empty": {}, "earlier": earlier}[before]
    if now == complete:
        return "complete"
    assert now == was, f"{folder} holds {sorted(now or {})}: neither as it was ({before}) nor complete"
    return "as it was"


SCENARIOS = st.sampled_from(["absent", "empty", "earlier"])


@settings(max_examples=6)
@given(before=SCENARIOS, fraction=st.floats(0.0, 1.1), sig=st.sampled_from([signal.SIGINT, signal.SIGTERM]))
def test_ctrl_c_or_sigterm_leaves_the_folder_as_it_was_or_complete(tmp_path_factory, references, before, fraction, sig):
    (complete, seconds), (earlier, _) = references
    folder = tmp_path_factory.mktemp("run") / "out"
    _prepare(folder, before, earlier)
    # from the moment the command begins to write (Python's own start-up is not rmreplay's to handle)
    run = _interrupt(folder, sig, fraction * seconds, from_start=False)
    state = _check(folder, before, earlier, complete)
    assert not [p.name for p in folder.parent.iterdir() if p.name.startswith(".out.")]  # nothing left beside it
    if run.returncode == 0:
        assert state == "complete"
    else:  # one line, which says what became of the folder
        assert run.returncode == 130 and run.stderr.count("\n") == 1, run
        assert run.stderr.startswith("rmreplay: interrupted"), run.stderr
        assert state == ("complete" if "written completely" in run.stderr else "as it was"), run.stderr


@settings(max_examples=6)
@given(before=SCENARIOS, fraction=st.floats(0.0, 1.1))
def test_sigkill_leaves_the_folder_as_it_was_or_complete(tmp_path_factory, references, before, fraction):
    (complete, seconds), (earlier, _) = references
    folder = tmp_path_factory.mktemp("run") / "out"
    _prepare(folder, before, earlier)
    _interrupt(folder, signal.SIGKILL, fraction * seconds)
    _check(folder, before, earlier, complete)
    # what the killed run left beside the folder goes with the next run, which completes
    subprocess.run(_command(EARLIER, folder, "--force"), check=True, capture_output=True)
    assert _snapshot(folder) == earlier
    assert not [p.name for p in folder.parent.iterdir() if p.name.startswith(".out.")]


def test_ctrl_c_in_the_middle_says_nothing_was_written(tmp_path, references):
    """Interrupted while it parses (the temporary folder is there): exit 130 and exactly this line."""
    folder = tmp_path / "out"
    for _attempt in range(3):  # a loaded machine can let a whole parse pass between two looks
        proc = subprocess.Popen(_command(LOG, folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_default_sigint)
        while not list(tmp_path.glob(".out.rmreplay-*")) and proc.poll() is None:
            time.sleep(0.01)
        if proc.poll() is None:
            break
        proc.communicate()
        shutil.rmtree(folder)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    assert (proc.returncode, err.decode()) == (130, f"rmreplay: interrupted: nothing written to {folder}/\n")
    assert sorted(tmp_path.iterdir()) == []
