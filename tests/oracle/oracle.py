"""Run the real RM (replay/javarm/run.py) on a scenario dict, cached by scenario content and build.

A cache entry is CACHE/<key>/ with run.py's outputs (rm.log, rm-debug.log, truth.jsonl, resources/)
plus scenario.json and oracle.json (status, seconds, the RM's own exceptions). The key hashes the
scenario and a fingerprint of the oracle build (its release, its classes) and of run.py, so another
release's build or a rebuilt oracle reruns the JVM.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from replay.javarm.harness import RUN_PY

DEFAULT_BUILD = Path("/tmp/oracle/build-trunk")  # tests/oracle/builds.py builds it (ensure_build)
DEFAULT_CACHE = Path("/tmp/corpus/cache")


@dataclass(frozen=True)
class OracleRun:
    """Where one oracle run's outputs are, and whether the RM ran cleanly."""

    dir: Path
    ok: bool  # run.py exited 0 and the RM logged no FATAL record or exception
    error: str | None  # one line: why not ok
    seconds: float
    cached: bool

    @property
    def has_debug(self) -> bool:
        """True when rm-debug.log was written."""
        return (self.dir / "rm-debug.log").exists()


@lru_cache(maxsize=None)
def build_fingerprint(build: Path) -> str:
    """A hash of the compiled oracle (its release, file names, sizes, mtimes), its classpath and run.py."""
    h = hashlib.sha256()
    h.update(RUN_PY.read_bytes())
    for name in ("release", "classpath", "default.ducc.properties", "default.ducc.classes"):
        if (build / name).exists():
            h.update((build / name).read_bytes())
    for root, _dirs, files in sorted(os.walk(build / "classes")):
        for f in sorted(files):
            st = (Path(root) / f).stat()
            h.update(f"{root}/{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def scenario_key(scenario: dict, build: Path) -> str:
    """The cache key of a scenario on a build."""
    text = json.dumps(scenario, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{build_fingerprint(build)}\n{text}".encode()).hexdigest()[:20]


def _first_exception(log: Path) -> str | None:
    """The first Java exception line (class: message) in the log, else the first FATAL record.

    ERROR records alone are not failures: the RM logs "bad virtual machine list" at ERROR whenever
    a node with shares dies (the bundled f_node_failure has four) and carries on.
    """
    if not log.exists():
        return None
    text = log.read_text(errors="replace")
    m = re.search(r"^(\S*(?:Exception|Error)\b.*)$", text, re.M)
    if m:
        after = text[m.end():].lstrip("\n").split("\n", 1)[0].strip()  # the frame that threw
        return f"{m.group(1).strip()} {after}".strip()
    m = re.search(r"^.* FATAL .*$", text, re.M)
    return m.group(0).strip() if m else None


def run_cached(scenario: dict, build: Path = DEFAULT_BUILD, cache: Path = DEFAULT_CACHE, debug: bool = True,
               timeout: float = 600) -> OracleRun:
    """The oracle's outputs for the scenario, from the cache or a fresh run (INFO, and DEBUG if asked)."""
    key = scenario_key(scenario, build)
    out = cache / key
    meta = out / "oracle.json"
    if meta.exists():
        status = json.loads(meta.read_text())
        if status["ok"] is False or not debug or (out / "rm-debug.log").exists():
            return OracleRun(out, status["ok"], status["error"], status["seconds"], cached=True)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=cache))
    (tmp / "scenario.json").write_text(json.dumps(scenario, indent=1) + "\n")
    cmd = [sys.executable, str(RUN_PY), str(tmp / "scenario.json"), str(tmp), "--build", str(build)]
    if not debug:
        cmd.append("--no-debug")
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        rc, output = p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        rc, output = -1, f"timed out after {timeout:.0f} s"
    seconds = round(time.monotonic() - start, 2)
    error = None
    if rc != 0:
        tail = [ln for ln in output.strip().splitlines() if ln.strip()]
        error = f"run.py exit {rc}: " + (next((ln for ln in tail if "Exception" in ln), tail[-1] if tail else "?"))
    else:
        for log in ("rm.log", "rm-debug.log"):
            found = _first_exception(tmp / log)
            if found:
                error = f"the RM threw ({log}): {found}"
                break
        if error is None and not (tmp / "truth.jsonl").stat().st_size:
            error = "no schedule was published (empty truth.jsonl)"
    (tmp / "oracle.json").write_text(json.dumps({"ok": error is None, "error": error, "seconds": seconds,
                                                 "debug": debug}, indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    try:
        tmp.rename(out)
    except OSError:  # another process cached the same scenario meanwhile: the runs are identical
        shutil.rmtree(tmp, ignore_errors=True)
    return OracleRun(out, error is None, error, seconds, cached=False)
