"""Benchmark the rmreplay TUI on i_mega24 (2,500 cycles): open time, cached open time, cycle switching.

    python bench/bench_tui.py [--log PATH] [--switches N] [--json OUT]

Headless (Textual's `run_test`, 160x45), in this process:
* cold open: parse in the worker until the first cycle is on screen (usable), then until the
  audit has filled in the divergences (an empty cache directory);
* cached open: the same input again (Parquet cache keyed by the log's hash);
* cycle switch: `n` pressed N times on each of the Jobs, Nodes and Log tabs, and `g` jumps to
  random cycles; each sample runs from the key press to the end of the first screen refresh
  (compositor paint) that shows the new cycle. The budget is 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_LOG = ROOT / "fixtures" / "i_mega24" / "rm.log.gz"
SIZE = (160, 45)
PAINTS: list[float] = []


def _hook_paints() -> None:
    """Record when each screen refresh (the compositor's paint) ends."""
    from textual.screen import Screen

    paint = Screen._compositor_refresh

    def timed(self) -> None:
        paint(self)
        PAINTS.append(time.perf_counter())

    Screen._compositor_refresh = timed


async def _switch(pilot, app, *keys: str) -> float:
    """Seconds from pressing the keys to the paint that shows another cycle."""
    t, before = time.perf_counter(), app.cycle
    await pilot.press(*keys)
    while not (PAINTS and PAINTS[-1] > t and app.cycle != before):
        await asyncio.sleep(0.001)
    took = PAINTS[-1] - t
    await pilot.pause(0.05)  # a person reads the screen between keys
    return took


def _stats(samples: list[float]) -> dict:
    ms = sorted(s * 1000 for s in samples)
    return {"n": len(ms), "median_ms": round(statistics.median(ms), 1),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1), "max_ms": round(ms[-1], 1)}


async def _until(pilot, done, timeout: float = 600.0) -> None:
    end = time.perf_counter() + timeout
    while not done():
        if time.perf_counter() > end:
            raise TimeoutError("the TUI did not get there in time")
        await pilot.pause(0.01)


async def open_once(log: Path, switches: int = 0) -> dict:
    """Open the log; time the first usable screen and the audit; optionally time cycle switches."""
    from tui.app import RmReplayApp

    out: dict = {}
    start = time.perf_counter()
    app = RmReplayApp([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.ready or app.error)
        if app.error:
            raise SystemExit(f"bench: {app.error}")
        out["first_screen_s"] = round(time.perf_counter() - start, 2)
        await _until(pilot, lambda: app.audit_done)
        out["audited_s"] = round(time.perf_counter() - start, 2)
        out["from_cache"] = app.loaded.from_cache
        if switches:
            out["switch"] = {}
            for tab, key in (("jobs", "1"), ("nodes", "2"), ("log", "4")):
                await pilot.press(key, "g", *"1000", "enter")
                await pilot.pause()
                samples = [await _switch(pilot, app, "n") for _ in range(switches)]
                out["switch"][f"n_{tab}"] = _stats(samples)
            await pilot.press("1")
            rnd = random.Random(4)
            samples = []
            for _ in range(max(switches // 4, 10)):
                target = str(rnd.randint(1, app.browse.total))
                await pilot.press("g", *target)
                samples.append(await _switch(pilot, app, "enter"))
            out["switch"]["goto_jobs"] = _stats(samples)
            out["cycles"] = app.browse.total
        await pilot.press("q")
    return out


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, default=DEFAULT_LOG)
    ap.add_argument("--switches", type=int, default=100)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    _hook_paints()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["RMREPLAY_CACHE"] = cache
        cold = asyncio.run(open_once(args.log))
        warm = asyncio.run(open_once(args.log, args.switches))
    result = {"log": str(args.log), "mb": round(args.log.stat().st_size / 1e6, 1), "cold": cold, "cached": warm}
    print(json.dumps(result, indent=2))
    worst = max(s["p95_ms"] for s in warm["switch"].values())
    print(f"cycle switch p95 {worst:.0f} ms ({'within' if worst < 100 else 'OVER'} the 100 ms budget); "
          f"first screen {cold['first_screen_s']} s cold, {warm['first_screen_s']} s cached")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
