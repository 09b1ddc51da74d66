"""Every call into the compiled scanner during one parse, replayed on two builds of it.

    python bench/bench_scan.py LOG OTHER_SO [--runs N] [--json OUT]

A one-core parse of LOG runs with every function of `replay.parsing._scan` wrapped, and each
call's arguments are kept. Then the kept calls are replayed, function by function, on this tree's
build (A) and on OTHER_SO (B: another build of the same sources, such as main's
replay/parsing/_scan.*.so copied aside), in turn (A B A B ...) `--runs` times (default 7). Per
function: the calls, the least CPU milliseconds of a replay on each build (the thread's CPU time,
which a shared machine stretches less than wall time), A/B, and whether both builds returned the
same bytes for every call (a speed-up that changes an output is a bug).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _kept(value: Any) -> Any:
    """`value` as it was at the call (arrays copied, views made bytes)."""
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (tuple, list)):
        return type(value)(_kept(v) for v in value)
    return value


def capture(log: Path) -> dict[str, list[tuple]]:
    """Every `_scan` call of a one-core parse of `log`: {function: [arguments, ...]}."""
    from replay.cli.process import main
    from replay.parsing import _scan

    calls: dict[str, list[tuple]] = {}

    def wrapped(name: str, fn: Any) -> Any:
        def call(*args: Any) -> Any:
            calls.setdefault(name, []).append(_kept(args))
            return fn(*args)
        return call

    originals = {name: getattr(_scan, name) for name in dir(_scan)
                 if callable(getattr(_scan, name)) and not isinstance(getattr(_scan, name), type)}
    for name, fn in originals.items():
        setattr(_scan, name, wrapped(name, fn))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            main(["parse", str(log), "-o", f"{tmp}/out", "-j", "1"])
    finally:
        for name, fn in originals.items():
            setattr(_scan, name, fn)
    return calls


def load(path: Path, tag: str) -> Any:
    """The extension module at `path`, loaded under its own name beside the installed one."""
    loader = importlib.machinery.ExtensionFileLoader(f"{tag}._scan", str(path))
    spec = importlib.util.spec_from_file_location(f"{tag}._scan", str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _bytes_of(result: Any) -> Any:
    """A call's result as plain bytes, to compare two builds' results."""
    if isinstance(result, (tuple, list)):
        return tuple(_bytes_of(r) for r in result)
    if isinstance(result, dict):
        return tuple(sorted((k, _bytes_of(v)) for k, v in result.items()))
    if result is None or isinstance(result, (bytes, int, float, str)):
        return result
    return bytes(memoryview(result))


def compare(calls: dict[str, list[tuple]], a: Any, b: Any, runs: int) -> dict[str, dict]:
    """{function: calls, least CPU ms on each build, A/B, same results} over `runs` turns."""
    out = {}
    for name, args in sorted(calls.items()):
        best = {"a": float("inf"), "b": float("inf")}
        for _ in range(runs):
            for tag, module in (("a", a), ("b", b)):
                fn = getattr(module, name)
                start = time.thread_time()
                for arg in args:
                    fn(*arg)
                best[tag] = min(best[tag], time.thread_time() - start)
        same = all(_bytes_of(getattr(a, name)(*arg)) == _bytes_of(getattr(b, name)(*arg)) for arg in args)
        out[name] = {"calls": len(args), "a_ms": best["a"] * 1e3, "b_ms": best["b"] * 1e3,
                     "a_over_b": best["a"] / best["b"] if best["b"] else float("nan"), "same": same}
    return out


def main() -> None:
    """Capture, replay on both builds, print the table (and write it as JSON with --json)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("other_so", type=Path, help="the other build of replay/parsing/_scan (B)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    calls = capture(args.log)
    this = next((ROOT / "replay" / "parsing").glob("_scan.*.so"))
    table = compare(calls, load(this, "this_tree"), load(args.other_so, "other_build"), args.runs)
    print(f"{'function':14} {'calls':>6} {'A ms':>8} {'B ms':>8} {'A/B':>6}  same")
    for name, row in table.items():
        print(f"{name:14} {row['calls']:6} {row['a_ms']:8.1f} {row['b_ms']:8.1f} {row['a_over_b']:6.2f}  {row['same']}")
    total_a, total_b = (sum(r[k] for r in table.values()) for k in ("a_ms", "b_ms"))
    print(f"{'all':14} {'':6} {total_a:8.1f} {total_b:8.1f} {total_a / total_b:6.2f}  "
          f"{all(r['same'] for r in table.values())}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
