"""What the defragmentation phase reads of the RM's logged decisions: the state What Of and
doEvictions left (`logged_phase_outputs`), the RM's needy jobs and orders (`phase_arguments`) and
what the RM cleared on each machine (`cleared_by_rm`). The audit and the threshold inference
(replay.model.threshold) both run the phase on them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from replay.model.logged import Logged
from rmref.choices import Clearing
from rmref.constants import PURGE
from rmref.model import CycleInput, Eviction, Placement


def logged_phase_outputs(inp: CycleInput, logged: Logged) -> tuple[list[Placement], list[Eviction]]:
    """What Of's and doEvictions' logged decisions, as the defragmentation phase reads them."""
    c = inp.cycle
    placed = [Placement(j, h, o) for j, h, o, _sid in sorted(logged.connected.get(c, ()), key=lambda r: r[3] or 0)]
    held: dict[tuple[int, str], list[Any]] = {}
    for w in inp.work:
        for share in w.shares:
            held.setdefault((w.job_id, share.host), []).append(share)
    gone: list[Eviction] = []
    for job, host, sid, order, reason in logged.shrunk.get(c, ()):
        if sid is None:  # a purge line names the host, not the share: every share the job has there
            there = held.get((job, host), [])
            marked = [s for s in there if s.purged]
            if marked and not inp.config.behaviours.has("purge_by_policy"):
                there = marked  # before 2.1.0 the walk may stop at a reservation's process: ^P says which went
            gone += [Eviction(job, host, s.share_id, s.order, PURGE) for s in there]
        else:
            gone.append(Eviction(job, host, sid, order or 0, reason))
    return placed, gone


def phase_arguments(cycle: int, logged: Logged, wealth: Mapping[str, int] | None,
                    stale: Mapping[str, int] | None) -> dict[str, Any]:
    """The defragmentation phase's keyword arguments for `cycle` (rmref.defrag.defragment): the
    RM's pure fair shares, job order and searched machines, the users' `wealth` carried in, the
    unschedulable machines' `stale` start and, where the log shows detectFragmentation, the RM's
    needy jobs to serve (takeFromTheRich serves those, as every phase reads the RM's upstream
    decisions: rmref's own verdict may rest on a tally order the log lacks)."""
    serve = {"serve": logged.needy.get(cycle, {})} if cycle in logged.detected else {}
    return dict(pure_fair_share=logged.pure_fair_share.get(cycle, {}), job_order=logged.job_order.get(cycle, ()),
                wealth=wealth, **serve, **({"stale_left": stale} if stale else {}),
                **({"searched": logged.searched[cycle]} if cycle in logged.searched else {}))


def cleared_by_rm(placed: Sequence[tuple[int, str, int, int]], published: Mapping[int, object],
                  taken: Mapping[int, Sequence[tuple[str, int]]]) -> dict[str, Clearing]:
    """Host -> the (job, share id; 0 for a new process) the RM's defragmentation cleared there: the
    running shares it took (`taken`), and the new processes What Of placed that the published
    schedule does not add for their job (handed over or dropped)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for job, shares in taken.items():
        for host, sid in shares:
            out.setdefault(host, []).append((job, sid))
    added: Counter[tuple[int, str]] = Counter()
    for job, pub in published.items():
        additions = pub[0] if isinstance(pub, tuple) else ()
        added.update((job, h) for h in additions)
    gone = Counter((job, host) for job, host, _o, _s in placed) - added
    for (job, host), n in gone.items():
        out.setdefault(host, []).extend([(job, 0)] * n)
    return {h: tuple(sorted(v)) for h, v in out.items()}
