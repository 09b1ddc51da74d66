"""Shrink a failing scenario while it still fails the same way, re-running the real RM each step.

    python -m tests.oracle.shrink SCENARIO.json --out DIR [--level info|debug] [--kind KIND]
                                  [--source log|truth] [--jobs 2] [--commit NAME]

The target is the first failure of the original scenario (its decision kind, or the rmreplay
exception, or the RM's own exception); a candidate is kept when it still shows a failure of that
kind. Steps, repeated until none helps: cut max_cycles to just past the first failing cycle; drop
work items, nodes, node outages / vary-offs / late arrivals, classes and nodepools no remaining
work uses, users-file entries, properties, optional work fields. DIR gets scenario.json,
shrink.json (the target and every step) and oracle/ (the final run's logs, truth and resources);
--commit NAME also writes fixtures/NAME/ in the bundled fixtures' layout.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.pool import Pool
from pathlib import Path

from tests.oracle.check import LevelResult, check_level, load_truth
from tests.oracle.generate import CYCLE_MS, FIRST_CYCLE_MS
from rmref.releases import LATEST, RELEASES
from tests.oracle.builds import ensure_build
from tests.oracle.oracle import DEFAULT_CACHE, OracleRun, run_cached

ROOT = Path(__file__).resolve().parents[2]
_STANZA = re.compile(r"(Nodepool|Class|User)\s+(\S+)(?:\s+([^\s{]+))?\s*\{([^}]*)\}", re.S)


@dataclass(frozen=True)
class Target:
    """What "fails the same way" means: a decision kind (optionally from one source), or an error."""

    level: str
    kind: str  # a decision kind, "error" (rmreplay raised) or "oracle" (the RM run failed)
    source: str | None = None
    error: str | None = None  # for error/oracle: the exception type that must recur

    def describe(self) -> str:
        """One line for shrink.json and the console."""
        what = self.kind + (f" ({self.source})" if self.source else "")
        return f"{what} at {self.level}" + (f": {self.error}" if self.error else "")


@dataclass(frozen=True)
class Outcome:
    """One evaluation: whether the target failure shows, and the first failing cycle of that kind."""

    fails: bool
    cycle: int | None
    text: str


def _exception_type(line: str | None) -> str:
    """`ArrayIndexOutOfBoundsException` out of an error line."""
    m = re.search(r"([A-Za-z_.]*(?:Exception|Error))\b", line or "")
    return m.group(1).rsplit(".", 1)[-1] if m else (line or "")[:40]


def evaluate(scenario: dict, target: Target, build: Path, cache: Path) -> Outcome:
    """Run the oracle (cached) and look for the target failure."""
    run = run_cached(scenario, build, cache, debug=target.level == "debug")
    if target.kind == "oracle":
        same = not run.ok and _exception_type(run.error) == target.error
        return Outcome(same, None, run.error or "")
    if not run.ok:
        return Outcome(False, None, f"oracle failed: {run.error}")
    res = check_level(run.dir, target.level, load_truth(run.dir / "truth.jsonl"))
    if target.kind == "error":
        return Outcome(bool(res.error) and _exception_type(res.error) == target.error, None, res.error or "")
    rows = [f for f in res.failures if f.kind == target.kind and target.source in (None, f.source)]
    if not rows:
        return Outcome(False, None, "no such failure")
    first = min(rows, key=lambda f: (f.cycle, f.source != "log"))
    return Outcome(True, first.cycle, f"cycle {first.cycle} job {first.job} ({first.source}): {first.text}")


def _eval_task(args: tuple) -> Outcome:
    scenario, target, build, cache = args
    return evaluate(scenario, target, build, cache)


def initial_target(scenario: dict, level: str | None, kind: str | None, source: str | None,
                   build: Path, cache: Path) -> tuple[Target, Outcome]:
    """The target: the requested kind, else the first failure of the scenario (INFO before DEBUG)."""
    run = run_cached(scenario, build, cache, debug=True)
    if not run.ok:
        t = Target(level or "info", "oracle", error=_exception_type(run.error))
        return t, Outcome(True, None, run.error or "")
    truth = load_truth(run.dir / "truth.jsonl")
    for lv in ([level] if level else ["info", "debug"]):
        res: LevelResult = check_level(run.dir, lv, truth)
        if res.error and kind in (None, "error"):
            return Target(lv, "error", error=_exception_type(res.error)), Outcome(True, None, res.error)
        rows = [f for f in res.failures if kind in (None, f.kind) and source in (None, f.source)]
        if rows:
            first = min(rows, key=lambda f: (f.cycle, f.source != "log", f.kind))
            t = Target(lv, first.kind, source)
            return t, Outcome(True, first.cycle, f"cycle {first.cycle} job {first.job} ({first.source}): {first.text}")
    raise SystemExit("the scenario does not fail" + (f" with {kind}" if kind else "") + ": nothing to shrink")


# ---- the classes file, as stanzas --------------------------------------------------------------

@dataclass
class Stanza:
    """One `Nodepool`/`Class`/`User` block of ducc.classes or ducc.users."""

    type: str
    name: str
    parent: str | None
    body: dict[str, str]

    def render(self) -> str:
        """The stanza on one line."""
        body = "; ".join(f"{k} = {v}" for k, v in self.body.items())
        return f"{self.type} {self.name} {self.parent + ' ' if self.parent else ''}{{ {body} }}"


def parse_stanzas(text: str) -> list[Stanza]:
    """The stanzas of a classes or users file (comments dropped)."""
    text = re.sub(r"#[^\n]*", "", text)
    out = []
    for typ, name, parent, body in _STANZA.findall(text):
        pairs = {}
        for item in re.split(r"[;\n]", body):
            if "=" in item:
                k, v = item.split("=", 1)
                pairs[k.strip()] = v.strip()
        out.append(Stanza(typ, name, parent or None, pairs))
    return out


def render_stanzas(stanzas: list[Stanza]) -> str:
    """The file text, one stanza a line."""
    return "".join(s.render() + "\n" for s in stanzas)


# ---- reductions: each yields smaller candidate scenarios ------------------------------------------

def _horizon(max_cycles: int) -> int:
    return FIRST_CYCLE_MS + max_cycles * CYCLE_MS


def with_cycles(scenario: dict, cycles: int) -> dict:
    """The scenario stopped after `cycles` published schedules."""
    s = copy.deepcopy(scenario)
    s["max_cycles"] = cycles
    s["max_time_ms"] = _horizon(cycles) + 600_000
    return s


def _chunks(n: int) -> Iterator[tuple[int, int]]:
    """(start, stop) slices, halves first, then quarters, ... down to single items."""
    size = max(1, n // 2)
    while True:
        for start in range(0, n, size):
            yield start, min(n, start + size)
        if size == 1:
            return
        size = max(1, size // 2)


def drop_work(s: dict) -> Iterator[tuple[str, dict]]:
    """Without work submitted after the run ends, then without chunks of the work list."""
    late = [w for w in s["work"] if w.get("submit_ms", 0) > _horizon(s["max_cycles"])]
    if late:
        c = copy.deepcopy(s)
        c["work"] = [w for w in c["work"] if w.get("submit_ms", 0) <= _horizon(s["max_cycles"])]
        yield f"drop {len(late)} work items submitted after the end", c
    for a, b in _chunks(len(s["work"])):
        if b - a < len(s["work"]):
            c = copy.deepcopy(s)
            del c["work"][a:b]
            yield f"drop work {a + 1}..{b}", c


def drop_nodes(s: dict) -> Iterator[tuple[str, dict]]:
    """Without chunks of the node list (and their node-file lines)."""
    for a, b in _chunks(len(s["nodes"])):
        if b - a < len(s["nodes"]):
            c = copy.deepcopy(s)
            gone = {n.get("name") for n in c["nodes"][a:b]}
            del c["nodes"][a:b]
            for fname, text in list(c.get("files", {}).items()):
                if fname.endswith(".nodes"):
                    c["files"][fname] = "".join(ln + "\n" for ln in text.splitlines() if ln.strip() not in gone)
            yield f"drop nodes {a + 1}..{b}", c


def simplify_nodes(s: dict) -> Iterator[tuple[str, dict]]:
    """Without a node's outages, vary-offs or late arrival."""
    for i, node in enumerate(s["nodes"]):
        for key in ("outages", "varyoff", "arrive_ms"):
            if key in node:
                c = copy.deepcopy(s)
                del c["nodes"][i][key]
                yield f"node {node.get('name')}: no {key}", c


def simplify_work(s: dict) -> Iterator[tuple[str, dict]]:
    """Without a work item's optional fields."""
    for i, w in enumerate(s["work"]):
        for key in ("cancel_ms", "duration_ms", "processes_max", "description", "service_type"):
            if key in w:
                c = copy.deepcopy(s)
                del c["work"][i][key]
                yield f"work {i + 1}: no {key}", c


def _used_classes(s: dict, stanzas: list[Stanza]) -> set[str]:
    """Classes the remaining work names, their parents, and classes other classes name as debug."""
    used = {w["class"] for w in s["work"] if w.get("class")}
    if any(not w.get("class") for w in s["work"]):
        used |= {st.name for st in stanzas if st.type == "Class" and st.body.get("default") == "true"}
    used |= {st.body["debug"] for st in stanzas if st.type == "Class" and st.name in used and "debug" in st.body}
    by_name = {st.name: st for st in stanzas if st.type == "Class"}
    for name in list(used):
        while name in by_name and by_name[name].parent:
            name = by_name[name].parent
            used.add(name)
    return used


def _inherited(stanzas: list[Stanza], st: Stanza, key: str) -> str | None:
    """A class attribute, from the class or the nearest parent that sets it."""
    by_name = {x.name: x for x in stanzas if x.type == "Class"}
    while st is not None and key not in st.body:
        st = by_name.get(st.parent) if st.parent else None
    return st.body[key] if st is not None else None


def drop_classes(s: dict) -> Iterator[tuple[str, dict]]:
    """Without every class no remaining work uses (then one by one), and without unused leaf pools."""
    if not s.get("classes"):
        return
    stanzas = parse_stanzas(s["classes"])
    used = _used_classes(s, stanzas)
    unused = [st.name for st in stanzas if st.type == "Class" and st.name not in used]
    candidates = [unused] + [[n] for n in unused] if len(unused) > 1 else [unused] if unused else []
    for names in candidates:
        c = copy.deepcopy(s)
        c["classes"] = render_stanzas([st for st in stanzas if not (st.type == "Class" and st.name in names)])
        yield f"drop classes {' '.join(names)}", c
    bound = {_inherited(stanzas, st, "nodepool") for st in stanzas if st.type == "Class"}
    parents = {st.body.get("parent") for st in stanzas if st.type == "Nodepool"}
    for st in stanzas:
        if st.type == "Nodepool" and st.name not in bound and st.name not in parents and "parent" in st.body:
            c = copy.deepcopy(s)
            c["classes"] = render_stanzas([x for x in stanzas if x is not st])
            c.get("files", {}).pop(st.body.get("nodefile", ""), None)
            yield f"drop nodepool {st.name}", c


def drop_settings(s: dict) -> Iterator[tuple[str, dict]]:
    """Without a property, a users-file entry, or the users file."""
    for key in list(s.get("properties", {})):
        c = copy.deepcopy(s)
        del c["properties"][key]
        yield f"drop property {key}", c
    users = s.get("files", {}).get("ducc.users")
    if users is not None:
        c = copy.deepcopy(s)
        del c["files"]["ducc.users"]
        c["properties"].pop("ducc.rm.user.registry", None)
        yield "drop ducc.users", c
        stanzas = parse_stanzas(users)
        for st in stanzas if len(stanzas) > 1 else []:
            c = copy.deepcopy(s)
            c["files"]["ducc.users"] = render_stanzas([x for x in stanzas if x is not st])
            yield f"drop ducc.users entry {st.name}", c


REDUCTIONS: tuple[Callable[[dict], Iterator[tuple[str, dict]]], ...] = (
    drop_work, drop_nodes, drop_classes, simplify_nodes, drop_settings, simplify_work)


# ---- the search ---------------------------------------------------------------------------------

class Shrinker:
    """Greedy reduction: keep the first candidate that still fails, until a pass changes nothing."""

    def __init__(self, target: Target, build: Path, cache: Path, jobs: int, budget: int, drift: int | None = 0) -> None:
        self.target, self.build, self.cache, self.jobs, self.budget = target, build, cache, jobs, budget
        self.drift = drift  # how many cycles later than now the first failure may move (None: any)
        self.cycle: int | None = None  # the current first failing cycle
        self.evaluations = 0
        self.steps: list[dict] = []
        self._workers: Pool | None = None

    def _pool(self) -> Pool:
        """One worker pool for the whole search; spawned, since this process has run polars (a
        forked child of it can deadlock on polars' thread pool)."""
        if self._workers is None:
            self._workers = get_context("spawn").Pool(self.jobs)
        return self._workers

    def close(self) -> None:
        """Stop the workers."""
        if self._workers is not None:
            self._workers.terminate()
            self._workers = None

    def _first_failing(self, candidates: list[tuple[str, dict]]) -> tuple[str, dict, Outcome] | None:
        """The first candidate (in order) that still fails, evaluating `jobs` at a time."""
        for i in range(0, len(candidates), self.jobs):
            batch = candidates[i:i + self.jobs]
            if self.evaluations >= self.budget:
                return None
            self.evaluations += len(batch)
            args = [(c, self.target, self.build, self.cache) for _, c in batch]
            if self.jobs > 1 and len(batch) > 1:
                outcomes = self._pool().map(_eval_task, args)
            else:
                outcomes = [_eval_task(a) for a in args]
            for (label, cand), out in zip(batch, outcomes):
                if out.fails and self._same_place(out):
                    return label, cand, out
        return None

    def _same_place(self, out: Outcome) -> bool:
        """Cycles are simulated time (one per 10 s), so a failure that moved later is another one:
        the reduction removed the cause and uncovered a later failure of the same kind."""
        if self.drift is None or self.cycle is None or out.cycle is None:
            return True
        return out.cycle <= self.cycle + self.drift

    def _accept(self, label: str, scenario: dict, out: Outcome) -> None:
        self.cycle = out.cycle if out.cycle is not None else self.cycle
        self.steps.append({"step": label, "work": len(scenario["work"]), "nodes": len(scenario["nodes"]),
                           "max_cycles": scenario["max_cycles"], "failure": out.text[:300]})
        print(f"  [{self.evaluations:>3}] {label}: {len(scenario['work'])} work, {len(scenario['nodes'])} nodes, "
              f"{scenario['max_cycles']} cycles", flush=True)

    def cut_cycles(self, scenario: dict, out: Outcome) -> tuple[dict, Outcome]:
        """Stop the run one cycle after the first failing one."""
        if out.cycle is None or out.cycle + 1 >= scenario["max_cycles"]:
            return scenario, out
        found = self._first_failing([(f"max_cycles {out.cycle + 1}", with_cycles(scenario, out.cycle + 1))])
        if found:
            self._accept(*found)
            return found[1], found[2]
        return scenario, out

    def shrink(self, scenario: dict, out: Outcome) -> tuple[dict, Outcome]:
        """Reduce until no reduction keeps the failure (or the evaluation budget is spent)."""
        self.cycle = out.cycle
        scenario, out = self.cut_cycles(scenario, out)
        changed = True
        while changed and self.evaluations < self.budget:
            changed = False
            for reduce in REDUCTIONS:
                while self.evaluations < self.budget:
                    found = self._first_failing(list(reduce(scenario)))
                    if not found:
                        break
                    self._accept(*found)
                    scenario, out = found[1], found[2]
                    scenario, out = self.cut_cycles(scenario, out)
                    changed = True
        return scenario, out


def write_fixture(run: OracleRun, scenario: dict, dest: Path) -> None:
    """fixtures/NAME/: gzipped scenario, logs and truth, plus resources/, as the bundled fixtures."""
    dest.mkdir(parents=True, exist_ok=True)
    with gzip.open(dest / "scenario.json.gz", "wt") as fh:
        json.dump(scenario, fh, indent=1)
    for name in ("rm.log", "rm-debug.log", "truth.jsonl"):
        with (run.dir / name).open("rb") as src, gzip.open(dest / f"{name}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
    shutil.copytree(run.dir / "resources", dest / "resources", dirs_exist_ok=True)


def main(argv: list[str] | None = None) -> int:
    """CLI."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--level", choices=("info", "debug"), help="default: the first failing level")
    ap.add_argument("--kind", help="decision kind to keep failing (default: the first failure's)")
    ap.add_argument("--source", choices=("log", "truth"), help="keep the failure against this side only")
    ap.add_argument("--jobs", type=int, default=2, help="candidates evaluated in parallel")
    ap.add_argument("--budget", type=int, default=400, help="most oracle evaluations")
    ap.add_argument("--drift", type=int, default=0,
                    help="cycles the first failure may move later per step (-1: any; default 0: same cycle or earlier)")
    ap.add_argument("--release", choices=[r.name for r in RELEASES], default=LATEST.name,
                    help="the DUCC release whose real RM runs the scenario (default %(default)s)")
    ap.add_argument("--build", type=Path, help="an oracle build directory (default: the release's, built if needed)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--commit", metavar="NAME", help="also write fixtures/NAME/")
    a = ap.parse_args(argv)
    a.build = a.build or ensure_build(a.release)
    original = json.loads(a.scenario.read_text())
    target, out = initial_target(original, a.level, a.kind, a.source, a.build, a.cache)
    print(f"target: {target.describe()}\n  first failure: {out.text[:300]}", flush=True)
    shrinker = Shrinker(target, a.build, a.cache, a.jobs, a.budget, None if a.drift < 0 else a.drift)
    try:
        shrunk, out = shrinker.shrink(original, out)
    finally:
        shrinker.close()
    shrunk["name"] = a.commit or f"{original.get('name', 'scenario')}_shrunk"
    shrunk["description"] = (f"shrunk from {original.get('name')} ({target.describe()}): "
                             f"{original.get('description', '')}")
    run = run_cached(shrunk, a.build, a.cache, debug=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "scenario.json").write_text(json.dumps(shrunk, indent=1) + "\n")
    shutil.copytree(run.dir, a.out / "oracle", dirs_exist_ok=True)
    report = {"source": str(a.scenario), "target": target.describe(), "kind": target.kind, "level": target.level,
              "failure": out.text, "evaluations": shrinker.evaluations,
              "before": {"work": len(original["work"]), "nodes": len(original["nodes"]),
                         "max_cycles": original["max_cycles"]},
              "after": {"work": len(shrunk["work"]), "nodes": len(shrunk["nodes"]), "max_cycles": shrunk["max_cycles"]},
              "steps": shrinker.steps}
    (a.out / "shrink.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"shrunk: {report['before']} -> {report['after']} in {shrinker.evaluations} evaluations\n"
          f"  failure: {out.text[:300]}\n  written to {a.out}")
    if a.commit:
        write_fixture(run, shrunk, ROOT / "fixtures" / a.commit)
        print(f"  fixture: {ROOT / 'fixtures' / a.commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
