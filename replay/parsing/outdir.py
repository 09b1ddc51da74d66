"""Outputs written whole or not at all: a temporary sibling, renamed into place when complete.

Every command that writes a directory does it through `atomic_output_dir`:

    from replay.parsing.outdir import atomic_output_dir

    with atomic_output_dir(args.out, args.force, command="simulate", inputs=args.logs) as tmp:
        write_everything_into(tmp)           # any files; tmp is an empty directory
    # here OUT holds exactly those files plus OUT/manifest.json (replay/parsing/manifest.py)

- The files go into a hidden sibling, `.OUT.rmreplay-<pid>-<random>.tmp`. When the block ends
  normally the manifest is written last, then the sibling is renamed to OUT, replacing an earlier
  result in one step (Linux `renameat2(RENAME_EXCHANGE)`; elsewhere two renames). SIGINT and
  SIGTERM are held during the rename. When the block raises (Ctrl-C included) the sibling is
  removed and OUT is as it was: absent, or the earlier result, never a mix.
- A sibling left by a run that was killed (SIGKILL, power loss) is removed by the next run that
  writes beside it, once its process is gone.
- OUT may be replaced without `force` only when it is absent, an empty directory, or an output
  that the same command wrote (its manifest says so). Never, even with `force`, a directory that
  holds the current directory or one of the inputs.

`atomic_output_file` does the same for one file (`report -o report.html`): a temporary sibling,
`os.replace`d into place.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from replay.parsing.leftovers import remove_left, temp_name
from replay.parsing.logdir import input_record
from replay.parsing.manifest import MANIFEST, build_manifest, read_manifest, write_manifest
from replay.parsing.sources import InputError

T = TypeVar("T")
_TMP_TAG = ".rmreplay-"
_committed: set[Path] = set()  # outputs this process renamed into place (for the interrupt message)


def was_written(path: str | Path) -> bool:
    """Whether this process renamed `path` into place (complete) at some point."""
    return Path(path).absolute() in _committed


def interrupted_line(out: str | Path | None, directory: bool = True) -> str:
    """The one line printed on Ctrl-C or SIGTERM, saying what became of OUT (a directory or a file)."""
    if not out:
        return "interrupted"
    shown = f"{os.fspath(out).rstrip('/')}/" if directory else os.fspath(out)
    if was_written(out):
        return f"interrupted: {shown} was written completely before the interrupt"
    return f"interrupted: nothing written to {shown}"


def _holds(outer: Path, inner: Path) -> bool:
    outer, inner = outer.resolve(), inner.resolve()
    return inner == outer or outer in inner.parents


def check_replaceable(target: Path, force: bool, command: str, inputs: Iterable[str | Path] = ()) -> None:
    """Raise InputError (one line, what to do) unless `command` may write `target` (see module doc)."""
    if not os.path.lexists(target):
        return
    guarded = [Path.cwd(), *(Path(p) for p in inputs)]
    if target.is_dir() and any(_holds(target, p) for p in guarded):
        raise InputError(f"{target}: holds the current directory or an input file; choose another output directory")
    if force:
        return
    if target.is_dir():
        if not any(target.iterdir()):
            return
        manifest = read_manifest(target)
        if manifest is None:
            raise InputError(f"{target}: exists and was not written by rmreplay (no manifest.json); "
                             "choose another directory, or add --force to replace it")
        if manifest.get("command") != command:
            raise InputError(f"{target}: holds a `rmreplay {manifest.get('command')}` output; choose "
                             f"another directory, or add --force to replace it with this {command} output")
        return
    raise InputError(f"{target}: exists and is not a directory; choose another name, or add --force to replace it")


def remove_stale(target: Path) -> None:
    """Remove temporary siblings of `target` left by rmreplay runs that no longer exist."""
    remove_left(target.parent, f".{target.name}{_TMP_TAG}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _sibling(target: Path) -> Path:
    return target.with_name(temp_name(f".{target.name}{_TMP_TAG}", ".tmp"))


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is over (then are delivered as they came)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: got.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if got:
            os.kill(os.getpid(), got[0])


def submitted(pool: Executor, fn: Callable[..., T], *args: Any) -> Future[T]:
    """`pool.submit(fn, *args)` with SIGINT and SIGTERM held while it may start a thread: a Ctrl-C
    inside Thread.start() can leave the new thread blocked on a lock the interrupted start still
    holds, and the process then hangs at exit waiting for it (CPython's threading)."""
    with signals_held():
        return pool.submit(fn, *args)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2); False where the system cannot."""
    fn = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), os.fspath(b))


def _commit(tmp: Path, target: Path) -> None:
    """Put the finished `tmp` where `target` is, replacing whatever is there in one step."""
    with signals_held():
        if target.is_dir() and not target.is_symlink():
            if not _exchange(tmp, target):
                aside = _sibling(target)
                os.rename(target, aside)
                os.rename(tmp, target)
                tmp = aside
            _remove(tmp)  # the earlier result, now at the temporary name
        elif os.path.lexists(target) and tmp.is_dir():  # a file (replaced with --force) cannot be renamed over
            _remove(target)
            os.rename(tmp, target)
        else:
            os.replace(tmp, target)
        _committed.add(target.absolute())


@contextmanager
def _discarded_on_error(tmp: Path) -> Iterator[None]:
    try:
        yield
    except BaseException:
        with signals_held():  # a second Ctrl-C does not interrupt the clean-up
            _remove(tmp)
        raise


@contextmanager
def atomic_output_dir(path: str | Path, force: bool = False, *, command: str, inputs: Iterable[str | Path] = (),
                      extra: Mapping[str, object] | None = None) -> Iterator[Path]:
    """Yield an empty temporary directory; on success write its manifest (unless the body wrote its
    own, as `parse -o` does with the input's digests computed beside the parse) and rename it to `path`."""
    inputs = list(inputs)
    target = Path(path)
    check_replaceable(target, force, command, inputs)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target)
    tmp = _sibling(target)
    with _discarded_on_error(tmp):
        # made inside the guard: a Ctrl-C just after it must not leave the folder behind
        os.mkdir(tmp)  # the umask applies, as it would to a directory made in place
        yield tmp
        if not (tmp / MANIFEST).exists():
            write_manifest(tmp, build_manifest(tmp, command, input_record(inputs), extra))
        _commit(tmp, target)


def check_replaceable_file(target: Path, force: bool, marker: bytes | None = None) -> None:
    """Raise InputError unless a file may be written at `target` (see `atomic_output_file`)."""
    if target.is_dir():
        raise InputError(f"{target}: is a directory; give a file name")
    if os.path.lexists(target) and not force and marker is not None and not _is_ours(target, marker):
        raise InputError(f"{target}: exists and was not written by rmreplay; choose another name, "
                         "or add --force to replace it")


def _is_ours(path: Path, marker: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            return marker in fh.read(4096)
    except OSError:
        return False


@contextmanager
def atomic_output_file(path: str | Path, force: bool = False, *, marker: bytes | None = None) -> Iterator[Path]:
    """Yield a temporary sibling file name; on success rename it to `path`. An existing file is
    replaced without `force` only when its first 4 kB hold `marker` (rmreplay wrote it)."""
    target = Path(path)
    check_replaceable_file(target, force, marker)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target)
    tmp = _sibling(target)
    with _discarded_on_error(tmp):
        yield tmp
        _commit(tmp, target)
