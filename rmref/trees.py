"""Top-level nodepools: the RM runs one whole scheduler per top-level pool tree (Scheduler.schedule).

Each top-level nodepool has a NodepoolScheduler of its own, with its own share quantum (the
pool's `share-quantum`), the classes bound to any pool of its tree, and the machines of the
tree; the schedulers run one after the other in the order the configuration defines the pools.
A cycle's input splits into one input per tree, and each phase runs on each tree in turn.
"""

from __future__ import annotations

from dataclasses import replace

from rmref.model import ClassDef, CycleInput, Nodepool
from rmref.orders import job_order


def _roots(pools: tuple[Nodepool, ...]) -> list[Nodepool]:
    names = {p.name for p in pools}
    return [p for p in pools if p.parent not in names]  # in definition order: the RM's scheduler order


def _tree(pools: tuple[Nodepool, ...], root: str) -> set[str]:
    members, grew = {root}, True
    while grew:
        grew = False
        for p in pools:
            if p.parent in members and p.name not in members:
                members.add(p.name)
                grew = True
    return members


def trees(inp: CycleInput) -> list[CycleInput]:
    """The cycle's input split by top-level pool tree, in the RM's scheduler order.

    Work in a class no tree serves (an unknown class: the RM refuses it) goes with the first
    tree, where it is counted as nothing. With one tree the input comes back unchanged.
    """
    roots = _roots(inp.nodepools)
    if len(roots) <= 1:
        return [inp]
    out = []
    for i, root in enumerate(roots):
        members = _tree(inp.nodepools, root.name)
        classes = tuple(c for c in inp.classes if c.nodepool in members)
        names = {c.name for c in classes}
        known = {c.name for c in inp.classes}
        work = tuple(w for w in inp.work if w.class_name in names or (i == 0 and w.class_name not in known))
        jobs = {w.job_id for w in work}
        quantum = root.quantum_gb or inp.config.quantum_gb
        out.append(replace(
            inp, config=replace(inp.config, quantum_gb=quantum), classes=classes,
            nodepools=tuple(p for p in inp.nodepools if p.name in members),
            machines=tuple(m for m in inp.machines if m.nodepool in members),
            work=work, needy=tuple(j for j in inp.needy if j in jobs)))
    return out


def tree_quantum(pools: tuple[Nodepool, ...], pool: str, default: int) -> int:
    """The share quantum of the tree `pool` belongs to (its top-level pool's)."""
    by_name = {p.name: p for p in pools}
    node = by_name.get(pool)
    while node is not None and node.parent in by_name:
        node = by_name[node.parent]
    return (node.quantum_gb if node else 0) or default


def class_quantum(classes: tuple[ClassDef, ...], pools: tuple[Nodepool, ...], class_name: str | None,
                  default: int) -> int:
    """The share quantum a class's processes count in: its pool tree's (`default` for a class not defined)."""
    pool = next((c.nodepool for c in classes if c.name == class_name), None)
    return default if pool is None else tree_quantum(pools, pool, default)


def process_order(classes: tuple[ClassDef, ...], pools: tuple[Nodepool, ...], class_name: str | None,
                  memory_gb: int, default: int) -> int:
    """Quanta per process of a job of the class: its memory over the class's quantum, rounded up
    (a second top-level pool's `share-quantum` differs from the global one, `default`)."""
    return job_order(memory_gb, class_quantum(classes, pools, class_name, default))
