"""The three RmCounter levels the job went through: its class's, its user's and its own block."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from replay.apps.explain.story import Competitor, Counting
from replay.model.inputs import CounterBlock
from rmref import apportion, n_shares_by_order


def _results(block: CounterBlock) -> tuple[dict[str, tuple[int, ...]], bool]:
    """Each entity's result: printed by a DEBUG log, else recomputed with rmref's counter."""
    if block.given:
        return block.given, True
    pool = None
    if block.descr == "countClassShares":  # classes of a nodepool: its shares bound their bonus
        vm = np.array(block.vmachines)
        pool = n_shares_by_order(np.array(vm, dtype=np.int64))
    return apportion(block.entities, block.vmachines, pool_shares=pool).given, False


def _counting(block: CounterBlock, mine: str, subpools: bool) -> Counting:
    given, logged = _results(block)
    competitors = tuple(Competitor(e.name, e.weight, e.wanted, given.get(e.name, (0,) * len(e.wanted)))
                        for e in block.entities)
    approximate = subpools and not logged and block.descr == "countClassShares"
    return Counting(block.descr, block.block, block.vmachines, competitors, logged, mine, approximate)


def _names(block: CounterBlock) -> set[str]:
    return {e.name for e in block.entities}


def _counter_chain(blocks: list[CounterBlock], job_id: int, class_name: str, user: str,
                   subpools: bool = False) -> tuple[Counting | None, Counting | None, Counting | None]:
    """The class, user and job blocks the job went through this cycle.

    The RM counts classes (nodepool by nodepool, the parent last), then for each class its users,
    then each user's jobs: the job's block names it; its user block is the nearest user block
    before it, the class block the nearest class block before that naming the class.
    """
    at_job = next((i for i, b in enumerate(blocks) if b.descr == "countJobShares" and str(job_id) in _names(b)), None)
    end = at_job if at_job is not None else len(blocks)
    at_user = None
    if at_job is not None:
        at_user = next((i for i in range(at_job - 1, -1, -1) if blocks[i].descr == "countUserShares"), None)
    before = at_user if at_user is not None else end
    at_class = next((i for i in range(before - 1, -1, -1)
                     if blocks[i].descr == "countClassShares" and class_name in _names(blocks[i])), None)
    if at_class is None:  # no job block: the class may still have been counted (and got nothing)
        at_class = next((i for i in range(len(blocks) - 1, -1, -1)
                         if blocks[i].descr == "countClassShares" and class_name in _names(blocks[i])), None)
    pick = lambda i, mine: _counting(blocks[i], mine, subpools) if i is not None else None  # noqa: E731
    classes, users = pick(at_class, class_name), pick(at_user, user)
    if classes is not None and users is not None and not classes.given_logged:
        classes = _with_given(classes, class_name, users.vmachines)
    return classes, users, pick(at_job, str(job_id))


def _with_given(counting: Counting, name: str, given: tuple[int, ...]) -> Counting:
    """The class's result taken from its user block, whose resource vector is exactly what the class got."""
    competitors = tuple(replace(c, given=given) if c.name == name else c for c in counting.competitors)
    return replace(counting, competitors=competitors)
