"""Seeded generator of random, valid oracle scenarios drawn from the whole RM policy space.

`generate(seed, focus, release)` returns one scenario.json dict (tests/oracle/README.md documents the
format), valid for the real RM of `release` (rmref.releases; default the latest);
`python -m tests.oracle.generate --n 20 --seed 1 --out DIR [--focus bands] [--release R]` writes them to files.

The configuration rules it respects are the RM's own (uima-ducc-common NodeConfiguration): classes of
one priority share one scheduling policy; one default class per policy; only the top-level pool
without a node file may lack one; `share-quantum` only on top-level pools; a node in at most one
node file; services and managed reservations never in a FAIR_SHARE class (the RM refuses them, which
the generator does on purpose now and then). `description` lists what was drawn. Before 2.1.0
(UIMA-4569) a nodepool may not state a `share-quantum` at all: for those releases the same draw is
made and the pools' own quanta are left out, so every pool takes ducc.rm.share.quantum.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from rmref.releases import LATEST, RELEASES

FOCI = ("all", "bands", "nodepools", "reserve", "fragmentation", "nodes", "wide")
FAIR, FIXED, RESERVE = "FAIR_SHARE", "FIXED_SHARE", "RESERVE"
CYCLE_MS = 10_000  # ducc.orchestrator.state.publish.rate: one schedule per publication
FIRST_CYCLE_MS = 60_000  # init stability (2 agent periods) before the first schedule
DEFAULT_POOL = "--default--"
MEMORY_PALETTE = (8, 12, 15, 16, 20, 24, 30, 31, 32, 40, 47, 48, 56, 63, 64, 72, 79, 80, 96, 128)
USERS = ("ann", "ben", "cat", "dan", "eve", "fay", "gus", "hal", "ivy", "jon", "kim", "lou")
QUANTA = (1, 2, 3, 4, 4, 5, 6, 8, 10, 12, 15, 16)
POOL_QUANTUM_SINCE = "2.1.0"  # UIMA-4569: NodeConfiguration accepts a nodepool's share-quantum from here on

# the knobs every family shares; a focus overrides some of them (probabilities and ranges)
BASE_KNOBS: dict[str, object] = {
    "bands": (0.45, 0.35, 0.20),  # P(1, 2, 3 fair-share priority bands)
    "depth": (0.35, 0.35, 0.30),  # P(nodepool tree of 1, 2, 3 levels)
    "second_top": 0.04,  # a second top-level nodepool with its own node file
    "fixed_classes": (1, 2),
    "reserve_classes": (1, 2),
    "fair_per_band": (1, 3),
    "kinds": (0.62, 0.13, 0.13, 0.12),  # job, service, reservation, ap
    "jobdriver": 0.35,
    "outage": 0.08,
    "late": 0.10,
    "varyoff": 0.05,
    "cancel": 0.08,
    "defrag_off": 0.20,
    "nodes": (3, 14),
    "work": (3, 28),
    "global_allotment": 0.30,
    "users_file": 0.30,
    "misfit": 0.04,  # work sent to a class whose policy (or user list) refuses it
    "restricted": 0.08,  # a class with an authorized `users` list
    "big_jobs": 0.12,  # share of jobs that want half a node or more
    "inverted": 0.06,  # a fair-share band ranked above the fixed-share classes
    "mid_pools": (1, 2),  # second-level pools under --default-- in a deeper tree
    "cycles": (50, 300),  # max_cycles, skewed towards the low end
    "class_orders": (0, 0),  # distinct process orders drawn per fair-share class (0: sizes drawn per job)
}
FOCUS_KNOBS: dict[str, dict[str, object]] = {
    "all": {},
    "bands": {"bands": (0.0, 0.55, 0.45), "fair_per_band": (2, 4), "kinds": (0.85, 0.05, 0.05, 0.05),
              "work": (8, 40), "inverted": 0.12},
    "nodepools": {"depth": (0.0, 0.3, 0.7), "second_top": 0.2, "nodes": (6, 25), "fair_per_band": (2, 4)},
    "reserve": {"kinds": (0.3, 0.22, 0.28, 0.2), "fixed_classes": (1, 3), "reserve_classes": (1, 3),
                "jobdriver": 0.7, "global_allotment": 0.7, "users_file": 0.7, "misfit": 0.1},
    "fragmentation": {"nodes": (4, 14), "defrag_off": 0.05, "big_jobs": 0.35, "kinds": (0.85, 0.05, 0.05, 0.05),
                      "work": (8, 36)},
    "nodes": {"outage": 0.35, "late": 0.3, "varyoff": 0.25, "nodes": (4, 20)},
    # large clusters and long runs; every fair-share class runs processes of several orders side by
    # side, up to 4 fair-share bands of up to 4 classes, wider nodepool trees
    "wide": {"bands": (0.1, 0.3, 0.35, 0.25), "fair_per_band": (1, 4), "depth": (0.25, 0.4, 0.35),
             "second_top": 0.15, "mid_pools": (1, 4), "nodes": (20, 130), "work": (30, 110),
             "cycles": (200, 460), "class_orders": (3, 5), "kinds": (0.8, 0.07, 0.07, 0.06),
             "big_jobs": 0.15, "inverted": 0.1},
}


@dataclass
class Pool:
    """A nodepool of the drawn tree and the nodes its node file lists."""

    name: str
    parent: str | None
    level: int
    nodes: list[dict] = field(default_factory=list)
    quantum: int | None = None  # share-quantum of a top-level pool, when it sets its own

    @property
    def nodefile(self) -> str | None:
        """The node file name, None for the default pool."""
        return None if self.name == DEFAULT_POOL else f"{self.name}.nodes"


@dataclass
class Klass:
    """A scheduling class of the drawn ducc.classes."""

    name: str
    policy: str
    priority: int
    nodepool: str
    attrs: dict[str, str] = field(default_factory=dict)
    users: tuple[str, ...] = ()
    default: bool = False


class Draw:
    """One scenario's random choices, seeded; `notes` collects what was drawn for `description`."""

    def __init__(self, seed: int, focus: str) -> None:
        self.rng = random.Random(seed)
        self.focus = focus
        self.knobs = {**BASE_KNOBS, **FOCUS_KNOBS[focus]}
        self.notes: list[str] = []
        self.class_orders: dict[str, list[int]] = {}  # the wide focus's process orders per class

    def p(self, knob: str) -> bool:
        """True with the knob's probability."""
        return self.rng.random() < float(self.knobs[knob])  # type: ignore[arg-type]

    def span(self, knob: str) -> int:
        """An integer in the knob's (low, high) range."""
        lo, hi = self.knobs[knob]  # type: ignore[misc]
        return self.rng.randint(lo, hi)

    def pick(self, knob: str) -> int:
        """An index drawn with the knob's weights."""
        weights = self.knobs[knob]
        return self.rng.choices(range(len(weights)), weights=weights)[0]  # type: ignore[arg-type]


def _pools(d: Draw) -> list[Pool]:
    """A nodepool tree under --default-- of 1-3 levels, and sometimes a second top-level pool."""
    depth = d.pick("depth") + 1
    pools = [Pool(DEFAULT_POOL, None, 1)]
    if depth >= 2:
        for i in range(d.span("mid_pools")):
            pools.append(Pool(f"np{i + 1}", DEFAULT_POOL, 2))
    if depth >= 3:
        for mid in [p for p in pools if p.level == 2]:
            for j in range(d.rng.choice((0, 1, 1, 2))):
                pools.append(Pool(f"{mid.name}{'abc'[j]}", mid.name, 3))
        if not any(p.level == 3 for p in pools):
            pools.append(Pool("np1a", "np1", 3))
    if d.p("second_top"):
        pools.append(Pool("alt", None, 1, quantum=d.rng.choice(QUANTA)))
    return pools


def _nodes(d: Draw, pools: list[Pool], horizon: int) -> list[dict]:
    """Nodes spread over the pools, each pool with its own few memory sizes (not all multiples of
    the quantum), with late arrivals, short outages (missed heartbeats), long ones (death, return)
    and vary-off intervals."""
    total = max(d.span("nodes"), len(pools))
    counts = {p.name: 1 for p in pools}
    for _ in range(total - len(pools)):
        counts[d.rng.choice(pools).name] += 1
    if len(pools) > 2 and d.rng.random() < 0.15:  # an empty subpool: classes bound to it wait forever
        empty = d.rng.choice([p for p in pools if p.parent])
        counts[empty.name] = 0
        d.notes.append(f"empty pool {empty.name}")
    nodes: list[dict] = []
    late = outages = varied = 0
    for pi, pool in enumerate(pools):
        palette = d.rng.sample(MEMORY_PALETTE, d.rng.randint(1, 3))
        prefix = "n" if pool.name == DEFAULT_POOL else pool.name
        for i in range(counts[pool.name]):
            node: dict = {"name": f"{prefix}{i + 1:02d}.sim.ducc", "ip": f"10.{pi + 1}.{i // 250}.{i % 250 + 2}",
                          "memory_gb": d.rng.choice(palette)}
            if d.p("late"):
                node["arrive_ms"] = d.rng.randrange(FIRST_CYCLE_MS, max(FIRST_CYCLE_MS + 1, horizon * 6 // 10), 1000)
                late += 1
            if d.p("outage"):
                node["outages"] = _outages(d, horizon)
                outages += 1
            if d.p("varyoff"):
                start = d.rng.randrange(FIRST_CYCLE_MS, max(FIRST_CYCLE_MS + 1, horizon), 1000)
                node["varyoff"] = [[start, start + d.rng.randrange(20_000, 600_000, 1000)]]
                varied += 1
            pool.nodes.append(node)
            nodes.append(node)
    for top in [p for p in pools if p.parent is None]:
        # the largest node of each top-level tree is there from the start: see _order_limit
        tree = [n for p in _subtree(pools, top.name) for n in p.nodes]
        if tree:
            biggest = max(tree, key=lambda n: n["memory_gb"])
            late -= biggest.pop("arrive_ms", None) is not None
    d.notes.append(f"{len(nodes)} nodes ({late} late, {outages} with outages, {varied} varied off)")
    return nodes


def _outages(d: Draw, horizon: int) -> list[list[int]]:
    """One or two outages: short ones only miss heartbeats, long ones kill the node (it may return)."""
    out, t = [], FIRST_CYCLE_MS + 30_000
    for _ in range(d.rng.choice((1, 1, 2))):
        start = d.rng.randrange(t, max(t + 1, horizon), 1000)
        if d.rng.random() < 0.5:
            length = d.rng.randrange(31_000, 120_000, 1000)  # below ducc.rm.node.stability periods
        else:
            length = d.rng.randrange(240_000, 900_000, 1000)  # declared dead, then back
        out.append([start, start + length])
        t = start + length + 30_000
    return out


def _priorities(d: Draw, bands: int) -> dict[str, list[int]]:
    """Priorities per policy, disjoint across policies (the RM requires one policy per priority)."""
    reserve = sorted(d.rng.sample(range(1, 4), d.rng.randint(1, 2)))
    fixed = sorted(d.rng.sample(range(4, 10), d.rng.randint(1, 2)))
    fair = sorted(d.rng.sample(range(10, 31), bands))
    if d.p("inverted"):  # a fair-share band evaluated before the fixed-share classes
        free = [p for p in range(2, 10) if p not in reserve + fixed]
        fair[0] = d.rng.choice(free)
        d.notes.append(f"fair band {fair[0]} ranked above fixed {fixed}")
    return {FAIR: sorted(fair), FIXED: fixed, RESERVE: reserve}


def _fair_attrs(d: Draw) -> dict[str, str]:
    """Per-class overrides of the cap rules (else the ducc.properties defaults apply)."""
    attrs: dict[str, str] = {"weight": str(d.rng.choice((1, 10, 50, 100, 100, 150, 200, 400)))}
    if d.rng.random() < 0.3:
        attrs["initialization-cap"] = str(d.rng.randint(1, 4))
    if d.rng.random() < 0.3:
        attrs["expand-by-doubling"] = d.rng.choice(("true", "false"))
    if d.rng.random() < 0.3:
        attrs["use-prediction"] = d.rng.choice(("true", "false"))
    if d.rng.random() < 0.2:
        attrs["prediction-fudge"] = str(d.rng.choice((0, 5000, 10000, 60000, 120000)))
    return attrs


def _classes(d: Draw, pools: list[Pool]) -> list[Klass]:
    """Classes of every policy at several priorities, bound to pools at every level."""
    bands = d.pick("bands") + 1
    prios = _priorities(d, bands)
    tree = [p.name for p in pools if p.name != "alt"]
    classes: list[Klass] = []
    for prio in prios[FAIR]:
        for i in range(d.span("fair_per_band")):
            classes.append(Klass(f"fair{prio}{'abcd'[i]}", FAIR, prio, d.rng.choice(tree), _fair_attrs(d)))
    for i in range(d.span("fixed_classes")):
        classes.append(Klass(f"fixed{'abc'[i]}", FIXED, d.rng.choice(prios[FIXED]), d.rng.choice(tree)))
    for i in range(d.span("reserve_classes")):
        attrs = {"enforce": "false"} if d.rng.random() < 0.15 else {}
        classes.append(Klass(f"rsv{'abc'[i]}", RESERVE, d.rng.choice(prios[RESERVE]), d.rng.choice(tree), attrs))
    # every pool serves some class, so squatters and residents both occur
    for pool in pools:
        if not any(c.nodepool == pool.name for c in classes) and (pool.name == "alt" or d.rng.random() < 0.8):
            prio = d.rng.choice(prios[FAIR])
            classes.append(Klass(f"fair{prio}{pool.name}", FAIR, prio, pool.name, _fair_attrs(d)))
    if d.p("jobdriver"):
        classes.append(Klass("JobDriver", FIXED, max(prios[FIXED]), DEFAULT_POOL))
    for policy in (FAIR, FIXED, RESERVE):
        own = [c for c in classes if c.policy == policy and c.name != "JobDriver"]
        if own:
            d.rng.choice(own).default = True
    for c in classes:
        if c.name != "JobDriver" and d.p("restricted"):
            c.users = tuple(d.rng.sample(USERS[:6], d.rng.randint(1, 2)))
    fixed = [c.name for c in classes if c.policy == FIXED and c.name != "JobDriver"]
    for c in classes:
        if c.policy == FAIR and fixed and d.rng.random() < 0.1:
            c.attrs["debug"] = d.rng.choice(fixed)
    d.notes.append(f"priorities fair {prios[FAIR]} fixed {prios[FIXED]} reserve {prios[RESERVE]}")
    return classes


def _classes_text(d: Draw, pools: list[Pool], classes: list[Klass], quantum: int) -> str:
    """ducc.classes: the nodepools, then the classes, some through an abstract parent."""
    lines = []
    for pool in pools:
        body = []
        if pool.nodefile:
            body.append(f"nodefile = {pool.nodefile}")
        if pool.parent:
            body.append(f"parent = {pool.parent}")
        elif pool.quantum:  # the pool's own quantum (legal only on top-level pools)
            body.append(f"share-quantum = {pool.quantum}")
        if pool.parent and d.rng.random() < 0.15:
            body.append(f"search-order = {d.rng.choice((50, 100, 150, 200))}")
        lines.append(f"Nodepool {pool.name} {{ {' ; '.join(body)} }}")
    by_group: dict[tuple[str, int], list[Klass]] = {}
    for c in classes:
        by_group.setdefault((c.policy, c.priority), []).append(c)
    for (policy, prio), group in by_group.items():
        base = None
        if len(group) > 1 and d.rng.random() < 0.5:
            base = f"{policy.split('_')[0].lower()}-base-{prio}"
            weight = "; weight = 100" if policy == FAIR else ""
            lines.append(f"Class {base} {{ policy = {policy}; nodepool = {DEFAULT_POOL}; priority = {prio}{weight}; "
                         "abstract = true }")
        for c in group:
            body = {} if base else {"policy": policy, "priority": str(prio)}
            body["nodepool"] = c.nodepool
            body.update(c.attrs)
            if c.users:
                body["users"] = " ".join(c.users)
            if c.default:
                body["default"] = "true"
            if not base and policy == FAIR and "weight" not in body:
                body["weight"] = "100"
            text = "; ".join(f"{k} = {v}" for k, v in body.items())
            lines.append(f"Class {c.name} {base + ' ' if base else ''}{{ {text} }}")
    return "\n".join(lines) + "\n"


def _properties(d: Draw, quantum: int) -> dict[str, str]:
    """ducc.properties overrides: quantum, cap rules, fragmentation, allotment."""
    props = {"ducc.rm.share.quantum": str(quantum)}
    if d.rng.random() < 0.5:
        props["ducc.rm.initialization.cap"] = str(d.rng.randint(1, 4))
    if d.rng.random() < 0.5:
        props["ducc.rm.expand.by.doubling"] = d.rng.choice(("true", "false"))
    if d.rng.random() < 0.5:
        props["ducc.rm.prediction"] = d.rng.choice(("true", "false"))
    if d.rng.random() < 0.4:
        props["ducc.rm.prediction.fudge"] = str(d.rng.choice((0, 10000, 60000, 120000)))
    if d.rng.random() < 0.6 or d.focus == "fragmentation":
        props["ducc.rm.fragmentation.threshold"] = str(d.rng.randint(0, 10))
    if d.p("defrag_off"):
        props["ducc.rm.defragmentation"] = "false"
    if d.p("global_allotment"):
        props["ducc.rm.global_allotment"] = str(d.rng.choice((8, 16, 24, 32, 48, 64, 100, 200)))
    if d.focus == "nodes" and d.rng.random() < 0.5:
        props["ducc.rm.node.stability"] = str(d.rng.randint(3, 6))
    return props


def _users_file(d: Draw, classes: list[Klass]) -> str:
    """ducc.users: per-user max-allotment (GB); now and then the per-class key form."""
    lines = []
    limited = [c.name for c in classes if c.policy != FAIR]
    for user in d.rng.sample(USERS[:8], d.rng.randint(1, 3)):
        if limited and d.rng.random() < 0.1:
            key = f"max-allotment.{d.rng.choice(limited)}"
        else:
            key = "max-allotment"
        lines.append(f"User {user} {{ {key} = {d.rng.choice((8, 16, 32, 48, 64, 100, 200))} }}")
    return "\n".join(lines) + "\n"


def _order_limit(pools: list[Pool], pool: str, quantum: int) -> int:
    """The largest process (GB) the RM can take in this pool's top-level tree.

    The real RM throws ArrayIndexOutOfBoundsException in every later cycle (NodePool.
    countAssignableShares from ResourceClass.canUseBonus) once a job's share order exceeds the
    largest machine order of its top-level tree: its per-order arrays were sized before the job's
    order raised the tree's maximum. So no work is drawn larger than the tree's biggest node.
    """
    top = _top_pool(pools, pool)
    quantum = top.quantum or quantum
    sizes = [n["memory_gb"] for p in _subtree(pools, top.name) for n in p.nodes]
    return max(1, max(sizes, default=quantum) // quantum * quantum)


def _top_pool(pools: list[Pool], name: str) -> Pool:
    """The top-level pool of the tree that holds pool `name`."""
    pool = next(p for p in pools if p.name == name)
    while pool.parent is not None:
        pool = next(p for p in pools if p.name == pool.parent)
    return pool


def _job_memory(d: Draw, quantum: int, sizes: list[int]) -> int:
    """A process size: mostly a few quanta, sometimes half a node or more."""
    biggest = max(sizes) if sizes else 32
    if d.rng.random() < float(d.knobs["big_jobs"]):  # type: ignore[arg-type]
        return d.rng.randint(max(1, biggest // 2), biggest)
    return d.rng.randint(1, max(1, min(biggest, quantum * d.rng.choice((1, 2, 3, 4)))))


ORDER_PALETTE = (1, 2, 2, 3, 3, 4, 5, 6, 8, 8, 10, 12, 16, 24, 32)


def _class_job_memory(d: Draw, klass: Klass, pools: list[Pool], quantum: int) -> int:
    """A process size from the class's own few share orders (drawn at its first job), so that one
    class at one priority runs processes of three or more orders side by side."""
    top = _top_pool(pools, klass.nodepool)
    q = top.quantum or quantum
    max_order = _order_limit(pools, klass.nodepool, quantum) // q
    orders = d.class_orders.get(klass.name)
    if orders is None:
        fitting = sorted({o for o in ORDER_PALETTE if o <= max_order} | {max_order})
        orders = sorted(d.rng.sample(fitting, min(len(fitting), d.span("class_orders"))))
        d.class_orders[klass.name] = orders
        d.notes.append(f"{klass.name} orders {orders}")
    order = d.rng.choice(orders)
    return max(1, order * q - d.rng.randrange(q))  # any memory that rounds up to that order


def _reservation_memory(d: Draw, quantum: int, sizes: list[int]) -> int:
    """A reservation: often a node's size exactly (RESERVE matches whole machines), or a bit less."""
    if sizes and d.rng.random() < 0.75:
        size = d.rng.choice(sizes)
        return max(1, size - d.rng.choice((0, 0, 0, 1, quantum // 2)))
    return d.rng.randint(1, 64)


def _subtree(pools: list[Pool], name: str) -> list[Pool]:
    """The pool and every pool under it."""
    out = [p for p in pools if p.name == name]
    for p in pools:
        if p.parent == name:
            out += _subtree(pools, p.name)
    return out


def _class_for(d: Draw, kind: str, classes: list[Klass]) -> Klass:
    """A class for a piece of work: one whose policy takes it, or now and then one that refuses it."""
    usable = [c for c in classes if c.name != "JobDriver"]
    if d.p("misfit"):
        misfit = d.rng.choice(usable)
        # never a reservation in a FAIR_SHARE class: the Orchestrator rejects it at submission
        # (Validate.request), and the RM, which refuses it without telling anyone, would throw
        # "cannot find job to remove" when the user cancels it (tests/oracle/DIFF.md)
        if kind != "reservation" or misfit.policy != FAIR:
            return misfit
    wanted = {"job": ((FAIR, 0.85), (FIXED, 0.1), (RESERVE, 0.05)),
              "service": ((FIXED, 0.6), (RESERVE, 0.4)), "ap": ((FIXED, 0.6), (RESERVE, 0.4)),
              "reservation": ((RESERVE, 0.75), (FIXED, 0.25))}[kind]
    policies = [(p, w) for p, w in wanted if any(c.policy == p for c in usable)]
    if not policies:
        return d.rng.choice(usable)
    policy = d.rng.choices([p for p, _ in policies], weights=[w for _, w in policies])[0]
    return d.rng.choice([c for c in usable if c.policy == policy])


def _work(d: Draw, classes: list[Klass], pools: list[Pool], quantum: int, horizon: int) -> list[dict]:
    """Jobs, services, reservations and managed reservations submitted over the run."""
    out: list[dict] = []
    if any(c.name == "JobDriver" for c in classes):
        out.append({"type": "reservation", "user": "System", "class": "JobDriver", "memory_gb": 2,
                    "submit_ms": 0, "description": "Job Driver"})
    n = d.span("work")
    kinds = ("job", "service", "reservation", "ap")
    for _ in range(n):
        kind = kinds[d.pick("kinds")]
        klass = _class_for(d, kind, classes)
        user = d.rng.choice(USERS[:d.rng.randint(3, len(USERS))])
        if klass.users and d.rng.random() < 0.7:
            user = d.rng.choice(klass.users)
        if klass.policy == FAIR:
            reach = _subtree(pools, klass.nodepool)
        else:
            reach = [p for p in pools if p.name == klass.nodepool]
        sizes = [n["memory_gb"] for p in reach for n in p.nodes]
        submit = d.rng.randrange(0, 30_000) if d.rng.random() < 0.3 else d.rng.randrange(0, horizon * 3 // 4)
        if d.focus == "fragmentation" and kind == "job" and d.rng.random() < 0.5:
            submit = d.rng.randrange(horizon // 4, horizon * 3 // 4)  # large jobs into a full cluster
        if out and d.rng.random() < 0.04:
            # the same submission time: JobByTimeSorter then falls back to the RM's job-map order
            submit = d.rng.choice(out)["submit_ms"]
        w: dict = {"type": kind, "user": user, "class": klass.name, "submit_ms": submit}
        if kind == "reservation":
            w["memory_gb"] = _reservation_memory(d, quantum, sizes)
        elif klass.policy == FAIR and kind == "job" and d.knobs["class_orders"] != (0, 0):
            w["memory_gb"] = _class_job_memory(d, klass, pools, quantum)
        else:
            w["memory_gb"] = _job_memory(d, quantum, sizes)
            w["threads"] = d.rng.choice((1, 2, 4, 4, 8))
            w["init_ms"] = d.rng.choice((0, 1000, 5000, 10000, 20000, 30000, 60000, 120000))
        w["memory_gb"] = min(w["memory_gb"], _order_limit(pools, klass.nodepool, quantum))
        if kind == "job":
            w["items"] = int(10 ** d.rng.uniform(1, 3.6))
            w["item_ms"] = int(10 ** d.rng.uniform(3.3, 5.1)) // 100 * 100
            if d.rng.random() < 0.6:
                w["processes_max"] = str(d.rng.choice((1, 2, 4, 8, 16, 32, 64, 100)))
        elif kind == "service":
            w["service_type"] = d.rng.choice(("uima", "custom"))
        if kind != "job" and d.rng.random() < 0.5:
            w["duration_ms"] = d.rng.randrange(60_000, 1_500_000, 1000)
        if d.p("cancel"):
            w["cancel_ms"] = submit + d.rng.randrange(20_000, 600_000, 1000)
        if d.rng.random() < 0.02:
            # a class the configuration lacks: the RM refuses the work (the Orchestrator always sends a
            # class, "normal" when the user names none, so the RM's default-class path is out of reach)
            w["class"] = "nosuchclass"
        out.append(w)
    out.sort(key=lambda w: w["submit_ms"])  # DuccIds follow the list order, as submissions would
    counts = {k: sum(1 for w in out if w["type"] == k) for k in kinds}
    cancelled = sum(1 for w in out if "cancel_ms" in w)
    d.notes.append("work " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
                   + (f", {cancelled} cancelled" if cancelled else ""))
    return out


def pool_quantum_legal(release: str) -> bool:
    """Whether the real RM of `release` accepts a nodepool's own share-quantum."""
    names = [r.name for r in RELEASES]
    return names.index(release) >= names.index(POOL_QUANTUM_SINCE)


def generate(seed: int, focus: str = "all", release: str = LATEST.name) -> dict:
    """One valid scenario for the real RM of `release`, drawn from the policy space (weighted towards `focus`)."""
    if focus not in FOCI:
        raise ValueError(f"unknown focus {focus!r}: one of {', '.join(FOCI)}")
    d = Draw(seed, focus)
    lo, hi = d.knobs["cycles"]  # type: ignore[misc]
    max_cycles = lo + int((hi - lo) * d.rng.random() ** 1.6)
    horizon = FIRST_CYCLE_MS + max_cycles * CYCLE_MS
    quantum = d.rng.choice(QUANTA)
    pools = _pools(d)
    if d.rng.random() < 0.1:  # --default-- states the quantum itself instead of ducc.properties
        pools[0].quantum = quantum
    if not pool_quantum_legal(release):  # drawn all the same, so the rest of the draw is unchanged
        for pool in pools:
            pool.quantum = None
    nodes = _nodes(d, pools, horizon)
    classes = _classes(d, pools)
    props = _properties(d, quantum)
    files = {p.nodefile: "".join(f"{n['name']}\n" for n in p.nodes) for p in pools if p.nodefile}
    if d.p("users_file"):
        files["ducc.users"] = _users_file(d, classes)
        props["ducc.rm.user.registry"] = "ducc.users"
    work = _work(d, classes, pools, quantum, horizon)
    tree = " ".join(f"{p.name}>{p.parent}" if p.parent else p.name for p in pools)
    summary = [f"focus {focus}", f"quantum {quantum}", f"pools {tree}",
               f"{len(classes)} classes ({sum(c.policy == FAIR for c in classes)} fair)", *d.notes,
               "props " + " ".join(f"{k.removeprefix('ducc.rm.')}={v}" for k, v in props.items())]
    return {
        "name": f"gen_{focus}_{seed}",
        "description": "; ".join(summary),
        "seed": seed,
        "max_cycles": max_cycles,
        "max_time_ms": horizon + 600_000,  # a stop even if schedules stop being published
        "properties": props,
        "classes": _classes_text(d, pools, classes, quantum),
        "files": files,
        "timing": {"process_start_ms": d.rng.choice((2000, 5000, 5000, 8000)),
                   "process_stop_ms": d.rng.choice((5000, 10000, 10000, 15000))},
        "nodes": nodes,
        "work": work,
    }


def scenario_seed(base: int, index: int) -> int:
    """The seed of the index-th scenario of a run with base seed `base`."""
    return base * 100_000 + index


def main(argv: list[str] | None = None) -> None:
    """CLI: write N scenarios (SEED*100000 + i) as OUT/NNN.json."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--focus", choices=FOCI, default="all")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--release", choices=[r.name for r in RELEASES], default=LATEST.name,
                    help="the release whose real RM the scenarios must be valid for")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    for i in range(a.n):
        scen = generate(scenario_seed(a.seed, i), a.focus, a.release)
        (a.out / f"{i:03d}.json").write_text(json.dumps(scen, indent=1) + "\n")
    print(f"wrote {a.n} scenarios to {a.out}")


if __name__ == "__main__":
    main()
