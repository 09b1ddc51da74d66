"""The RM's class table, its priority bands (NodepoolScheduler.setClasses), and its job order.

The scheduler keeps its classes in a java.util.HashMap keyed by class (whose hash is its
name's), and builds each priority band by walking that map: classes of one band are taken in
that order wherever nothing else sorts them (howMuchFixed, howMuchReserve, whatOfFixedShare,
accountForNonPreemptable), and a sort by weight keeps it among equal weights.
"""

from __future__ import annotations

from collections.abc import Sequence

from rmref.javahash import hashmap_order
from rmref.model import ClassDef, Work


def class_map_order(classes: Sequence[ClassDef]) -> list[ClassDef]:
    """The classes in the RM's class-map iteration order (put in definition order)."""
    by_name = {c.name: c for c in classes}
    return [by_name[name] for name in hashmap_order([c.name for c in classes])]


def priority_bands(classes: Sequence[ClassDef]) -> list[list[ClassDef]]:
    """Classes grouped by priority, best (lowest number) first, each band in class-map order."""
    bands: dict[int, list[ClassDef]] = {}
    for c in class_map_order(classes):
        bands.setdefault(c.priority, []).append(c)
    return [bands[p] for p in sorted(bands)]


def by_submission(work: Work) -> tuple[int, int]:
    """JobByTimeSorter's key: oldest first, a tie to the larger order; sorted stably, so jobs that
    still tie keep the order of the RM's job table (`CycleInput.work`)."""
    return (work.submit_seq, -work.order)
