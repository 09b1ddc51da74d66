"""The three How Much levels the job went through, as the audit's own rmref run counted them.

rmref records every counter run (`HowMuch.runs`): the job's class among the classes of its
nodepool, its user among the class's users, the job among its user's jobs. Each level is shown
as rmref ran it, beside what the RM's log shows of the same count (its RmCounter block's
inputs, and the award when the log prints it: a DEBUG log, or the next level's block).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.apps.causes import Level, award, chain
from replay.apps.explain.story import Competitor, Counting
from replay.model.inputs import CounterBlock
from rmref import CounterRun, HowMuch
from rmref.model import ClassDef, CycleInput, Work


def _counting(level: Level, below: Level | None, blocks: Sequence[CounterBlock]) -> Counting | None:
    run: CounterRun | None = level.run
    if run is None:
        return None
    competitors = tuple(Competitor(e.name, e.weight, e.wanted, run.given.get(e.name, (0,) * len(e.wanted)))
                        for e in run.entities)
    block_no = blocks.index(level.block) + 1 if level.block is not None else None
    return Counting(run.descr, block_no or 0, run.vmachines, competitors, False, level.entity,
                    logged_vmachines=level.block.vmachines if level.block is not None else None,
                    logged_award=award(level, below))


def rmref_chain(inp: CycleInput, hm: HowMuch | None, work: Work | None, cls: ClassDef | None,
                blocks: Sequence[CounterBlock]) -> tuple[Counting | None, Counting | None, Counting | None]:
    """The class, user and job counts rmref ran for the job this cycle (None where it ran none)."""
    if hm is None or work is None or cls is None or cls.policy != "FAIR_SHARE":
        return None, None, None
    users = {w.user for w in inp.work if w.class_name == cls.name}
    jobs = {str(w.job_id) for w in inp.work if w.class_name == cls.name and w.user == work.user}
    levels = chain(hm.runs, blocks, cls.name, work.user, work.job_id, users, jobs)
    out = [_counting(lv, levels[i + 1] if i + 1 < len(levels) else None, blocks) for i, lv in enumerate(levels)]
    return out[0], out[1], out[2]
