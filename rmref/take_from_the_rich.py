"""takeFromTheRich (NodepoolScheduler): clear space for one actually needy job on the eligible
machines of its pool tree, richest owner first, round by round (rmref.defrag, step 3).

Where the RM's choice rests on an order of shares or machines the input does not settle, the
round is recorded (`Unsettled`) and the caller's `choose` followed when given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Sequence
from itertools import islice, permutations

from rmref.choices import open_prefixes, rest, within
from rmref.constants import CANCEL, EVICT, REASSIGN
from rmref.defrag_state import (
    INVESTMENT, MEMORY, NODE_IP, SHARE_MAP, DJob, DNode, DShare, DState, Unsettled, all_machines, identity_hash,
    user_of,
)
from rmref.evictions import HeldShare, investment_key
from rmref.javahash import JavaHashMap
from rmref.model import RESERVE, DefragAction

# beyond the orders rmref.choices.open_prefixes walks, the rankings of the RM's donor jobs tried (4 jobs: all 24)
MAX_JOB_RANKINGS = 24


def _forceable(share: DShare) -> bool:
    return not share.evicted


def _machine_wealth(state: DState, node: DNode) -> int:
    """EligibleMachineSorter: the wealth of the richest user with a process on the machine."""
    return max((state.wealth.get(user_of(state, s.job_id), 0) for s in node.shares), default=0)


def _sort_key(state: DState, name: str) -> tuple[int, int]:
    """EligibleMachineSorter's key: the richest owner first, then the larger machine."""
    node = state.nodes[name]
    return (-_machine_wealth(state, node), -node.machine.memory_mb)


def _sorted_machines(state: DState, names: Sequence[str]) -> list[str]:
    """A TreeMap on EligibleMachineSorter filled in `names` order: a newcomer goes before its equals."""
    out: list[str] = []
    keys: list[tuple[int, int]] = []
    for name in names:
        key = _sort_key(state, name)
        at = next((i for i, k in enumerate(keys) if k >= key), len(keys))
        out.insert(at, name)
        keys.insert(at, key)
    return out


def _rehash(state: DState, names: Sequence[str]) -> list[str]:
    """new HashMap<Machine, Machine>().putAll(treemap): machines in Machine.hashCode order."""
    table = JavaHashMap()
    table.put_all((name, identity_hash(state.nodes[name].machine)) for name in names)
    return list(table)


def _share_key(state: DState, share: DShare) -> tuple[int, tuple[int, int, int, int, int]]:
    """ShareByWealthSorter: richest owner first, then the least investment (RmJob.compareInvestment)."""
    # no map_rank: ties here keep the machine's share map order, not the job's (see _undecided)
    held = HeldShare(share.share_id, share.host, share.initialized, share.init_ms, share.investment,
                     state.nodes[share.host].machine.memory_mb)
    return (-state.wealth.get(user_of(state, share.job_id), 0), investment_key(held))


def _undecided(state: DState, a: DShare, b: DShare) -> str | None:
    """Why the input does not settle the RM's order of two shares (None: it does)."""
    owners = (state.wealth.get(user_of(state, a.job_id), 0), state.wealth.get(user_of(state, b.job_id), 0))
    if owners[0] != owners[1] or a.initialized != b.initialized:
        return None
    if not a.initialized:
        if a.init_ms != b.init_ms:
            return None
        interchangeable = a.pending and b.pending and a.job_id == b.job_id  # same job, no ids yet
        return None if interchangeable else SHARE_MAP
    return INVESTMENT if a.job_id != b.job_id and state.inp.investment_ranked else None


def _pick(ordered: Sequence[DShare], cand: Container[int], virtual: int, want: int) -> list[DShare] | None:
    """One round on one machine, its shares in the RM's order (`cand`: positions of the candidates):
    the shares it clears, or None when they cannot make room. It takes candidates until there is
    room (an exact fit first in the list), then clears from that list until there is room. The
    room test follows every share, candidate or not: when the free space alone suffices, the round
    stops at the first share and clears it only if it is a candidate."""
    room, chosen = virtual, list[DShare]()
    for i, share in enumerate(ordered[:_stop(ordered, cand, virtual, want)]):
        if i in cand:
            room += share.order
            if share.order == want:
                chosen.insert(0, share)
            else:
                chosen.append(share)
    if room < want:
        return None
    room, cleared = virtual, list[DShare]()
    for share in chosen:
        room += share.order
        cleared.append(share)
        if room >= want:
            break
    return cleared


def _stop(ordered: Sequence[DShare], cand: Container[int], virtual: int, want: int) -> int:
    """How many of the round's shares it looks at: up to the one after which there is room."""
    room = virtual
    for i, share in enumerate(ordered):
        if i in cand:
            room += share.order
        if room >= want:
            return i + 1
    return len(ordered)


def _ids(shares: Sequence[DShare]) -> tuple[tuple[int, int], ...]:
    return tuple((s.job_id, s.share_id) for s in shares)


def _alternatives(state: DState, ordered: Sequence[DShare], cand: Container[int], virtual: int, want: int,
                  left: Sequence[tuple[int, int]] | None = None) -> tuple[list[list[DShare]], bool]:
    """What the round clears for every order of the machine's shares that keeps the order of each
    pair the input settles (of two shares neither a candidate, rmref's), and whether they were too
    many to list (`Unsettled.partial`): then rmref's own clearing and, given the RM's clearing
    (`left`), those allowed orders putting `left`'s shares first give, in rmref's order, then one
    per ranking of the jobs in `left`, each listed once whatever the order it clears them in."""
    n = len(ordered)
    # every share, not only those open with one rmref's own order looks at: in another order the
    # round looks further, at shares whose own order is open too
    settled = {(x, y) for x in range(n) for y in range(x + 1, n)
               if (x not in cand and y not in cand) or _undecided(state, ordered[x], ordered[y]) is None}

    def decided(prefix: tuple[int, ...]) -> bool:
        """Whether the round has room after these shares: what follows them is not looked at. It looks
        at one share at least, even where the free space alone makes room."""
        return bool(prefix) and virtual + sum(ordered[k].order for k in prefix if k in cand) >= want

    perms = open_prefixes(n, settled, decided)
    partial = perms is None
    if perms is None:
        if left is None:
            return [_pick(ordered, cand, virtual, want) or []], partial
        # the RM's clearing here may span several rounds, each taking one job's shares before
        # another's: one order per ranking of the jobs in it (a handful of jobs at most)
        jobs = list(dict.fromkeys(job for job, _ in left))
        perms = [tuple(range(n)), _leftmost(ordered, settled, left),
                 *(_leftmost(ordered, settled, left, ranked)
                   for ranked in islice(permutations(jobs), MAX_JOB_RANKINGS))]
    out: dict[tuple[tuple[int, int], ...], list[DShare]] = {}
    seen: set[frozenset[tuple[int, int]]] = set()
    for perm in perms:
        cleared = _pick([ordered[k] for k in perm], {i for i, k in enumerate(perm) if k in cand}, virtual, want) or []
        if partial:  # (the same shares in another order: one choice, not two)
            if frozenset(_ids(cleared)) in seen:
                continue
            seen.add(frozenset(_ids(cleared)))
        out.setdefault(_ids(cleared), cleared)
    return list(out.values()), partial


def _leftmost(members: Sequence[DShare], settled: Container[tuple[int, int]],
              left: Sequence[tuple[int, int]], ranked: Sequence[int] = ()) -> tuple[int, ...]:
    """An order of `members` keeping every `settled` pair (x, y), x first, that puts the shares of
    `left` as early as those pairs allow (each step: the placeable share in `left` whose job comes
    first in `ranked`, else the first placeable one). Its clearing is a choice the RM could have
    made, whatever it turns out."""
    rank = {job: i for i, job in enumerate(ranked)}
    n = len(members)
    wanted = Counter(left)
    before = [sum((x, y) in settled for x in range(y)) for y in range(n)]  # unplaced settled predecessors
    placed: list[int] = []
    todo = list(range(n))
    while todo:
        free = [y for y in todo if before[y] == 0]
        # failing a share of `left`, one that must precede a share of `left` (an earlier round's
        # clearing, say, still on the machine): any other would go needlessly before those
        paving = _predecessors(settled, [y for y in todo if wanted[(members[y].job_id, members[y].share_id)] > 0])
        ready = [y for y in free if wanted[(members[y].job_id, members[y].share_id)] > 0]
        pick = min(ready, key=lambda y: (rank.get(members[y].job_id, len(rank)), y)) if ready else next(
            (y for y in free if y in paving), free[0])
        wanted[(members[pick].job_id, members[pick].share_id)] -= 1
        placed.append(pick)
        todo.remove(pick)
        for y in range(pick + 1, n):
            before[y] -= (pick, y) in settled
    return tuple(placed)


def _predecessors(settled: Container[tuple[int, int]], targets: Sequence[int]) -> set[int]:
    """The members some `settled` pair chain puts before one of `targets`."""
    found: set[int] = set()
    todo = list(targets)
    while todo:
        y = todo.pop()
        for x in range(y):
            if (x, y) in settled and x not in found:
                found.add(x)
                todo.append(x)
    return found


def _round(state: DState, nj: DJob, name: str, ordered: Sequence[DShare], candidates: set[int]) -> list[DShare] | None:
    """The shares one round clears on machine `name` (None: it cannot make room). Where that rests
    on an order of candidates the input does not settle, the round is recorded (`Unsettled`, with
    every alternative) and the RM's clearing is followed when the caller gives it (`choose`)."""
    node, want = state.nodes[name], nj.work.order
    cand = {i for i, s in enumerate(ordered) if _forceable(s) and s.job_id in candidates}
    cleared = _pick(ordered, cand, node.virtual, want)
    if cleared is None:
        return None
    # A pair of shares matters when one of them is a candidate and the round looked at the first
    # (its order decides which candidates come before the round stops, and in what order).
    scanned = range(_stop(ordered, cand, node.virtual, want))
    doubtful: dict[int, None] = {}
    reasons: dict[str, None] = {}
    between_candidates = False
    for i in scanned:
        for k in range(i + 1, len(ordered)):
            why = _undecided(state, ordered[i], ordered[k]) if i in cand or k in cand else None
            if why:
                doubtful.update({i: None, k: None})
                reasons[why] = None
                between_candidates |= i in cand and k in cand
    if not doubtful:
        return cleared
    rm = state.choose.get(name)
    # what the RM cleared there less what earlier rounds of this cycle already cleared
    left = None if rm is None else rest(rm, [(a.donor_job, a.share_id) for a in state.actions if a.host == name])
    alternatives, partial = _alternatives(state, ordered, cand, node.virtual, want, left)
    if not between_candidates and len(alternatives) == 1:
        return cleared  # the open order of a share the round passes over changed nothing
    if left is not None:  # the RM's clearing, when it is one of the alternatives (the fullest such)
        fits = [alt for alt in alternatives if within(_ids(alt), left)]
        fullest = [alt for alt in fits if len(alt) == max(map(len, fits))]
        if len(fullest) > 1:  # only a later round tells them apart: the caller's `picks` decide
            at = len(state.branches)
            state.branches.append(len(fullest))
            cleared = fullest[state.picks[at] if at < len(state.picks) else 0]
        elif fullest:
            cleared = fullest[0]
    taken = next((i for i, alt in enumerate(alternatives) if _ids(alt) == _ids(cleared)), 0)
    shares = tuple(sorted({(ordered[i].job_id, ordered[i].share_id) for i in doubtful}))
    state.unsettled.append(Unsettled(nj.work.job_id, name, shares, tuple(reasons), len(state.actions),
                                     tuple(_ids(a) for a in alternatives), taken, partial=partial))
    return cleared


def _open_pair(state: DState, a: str, b: str) -> str | None:
    """Why the input does not settle EligibleMachineSorter's order of two eligible machines (None: it
    does). Of equal owner wealth, they are met by memory, larger first: where the memory of one is
    not stated (`Machine.memory_stated`) and it may be as large as the other's, that order is open
    (MEMORY); of equal memory, they are met in the order of a map hashed on their IPs, open where the
    log shows no node IP (behaviour node_ip_logged absent) or not theirs (the log, or its part after
    a gap, began after they arrived: NODE_IP)."""
    ma, mb = state.nodes[a].machine, state.nodes[b].machine
    if _machine_wealth(state, state.nodes[a]) != _machine_wealth(state, state.nodes[b]):
        return None
    # without node_ip_logged any IP a machine has here was inferred (replay.apps.verify): the order stays open
    logged = state.inp.config.behaviours.has("node_ip_logged")
    if ma.memory_mb == mb.memory_mb and not (logged and ma.ip and mb.ip):
        return NODE_IP
    # an unstated memory is order x quantum at least, and no more is known of it
    if any(not x.memory_stated and y.memory_mb >= x.memory_mb for x, y in ((ma, mb), (mb, ma))):
        return MEMORY
    return None


def _note_machine_tie(state: DState, nj: DJob, name: str, eligible: Sequence[str], chosen: Sequence[DShare]) -> None:
    """Record the round's machine as unsettled when its order with other eligible machines is open
    (`_open_pair`)."""
    why = {other: _open_pair(state, name, other) for other in eligible if other != name}
    tied = [other for other, reason in why.items() if reason]
    if tied:
        reasons = tuple(r for r in (NODE_IP, MEMORY) if r in why.values())
        state.unsettled.append(Unsettled(nj.work.job_id, name, tuple(sorted((s.job_id, s.share_id) for s in chosen)),
                                         reasons, len(state.actions), tied=tuple(tied)))


def _shown_order(state: DState, nj: DJob, eligible: Sequence[str]) -> list[str] | None:
    """The first round's machines (rmref's order, `eligible`) in the order the log shows the RM met
    them (`DState.searched`, this call's list) wherever rmref's order leaves two of them open: a tie
    of EligibleMachineSorter's key (`_same_key`, the node map's order) or a memory the log does not
    state (`_open_pair`, MEMORY). Where it lists every one of them; None: not shown."""
    job = nj.work.job_id
    call = sum(1 for c in state.calls if c.needy_job == job)  # the calls before this one
    shown = state.searched.get(job, ())
    if call >= len(shown) or not set(eligible) <= set(shown[call]):
        return None
    at = {name: i for i, name in enumerate(shown[call])}
    out = list(eligible)
    # rmref's order stands between machines it ranks apart: a log contradicting it is a divergence to
    # show; neighbours it leaves open swap into the printed order until none is out of it
    moved = True
    while moved:
        moved = False
        for i in range(len(out) - 1):
            a, b = out[i], out[i + 1]
            if at[b] < at[a] and (_same_key(state, a, b) or _open_pair(state, a, b) == MEMORY):
                out[i], out[i + 1], moved = b, a, True
    return out


def _rm_left(state: DState, name: str) -> bool:
    """Whether the RM cleared shares on `name` (`choose`) that no earlier round of the cycle has cleared."""
    rm = state.choose.get(name, ())
    return bool(rest(rm, [(a.donor_job, a.share_id) for a in state.actions if a.host == name]))


def _rm_machines_first(state: DState, eligible: list[str]) -> list[str]:
    """Eligible machines where the RM cleared what no earlier round has (`choose`, `_rm_left`) first
    among those whose order with them is open (`_open_pair`). Each round meets machines of equal
    memory in another open order (the first in the pool's node map, the later ones in the rehash of
    Machine.hashCode), so a machine whose RM clearing is done is no longer put first. A machine goes
    ahead of those between only when its order with each of them is open, or they tie."""
    if not state.choose:
        return eligible
    out = list(eligible)
    for i, name in enumerate(out):
        if _rm_left(state, name):
            continue
        ahead = next((j for j in range(i + 1, len(out))
                      if _rm_left(state, out[j]) and _open_pair(state, out[j], name)
                      and all(_open_pair(state, out[j], out[k]) or _same_key(state, out[j], out[k])
                              for k in range(i + 1, j))), None)
        if ahead is not None:
            out.insert(i, out.pop(ahead))
    return out


def _same_key(state: DState, a: str, b: str) -> bool:
    """Whether EligibleMachineSorter ranks the two machines alike as rmref reads them (wealth, memory)."""
    return _sort_key(state, a) == _sort_key(state, b)


def _clear(state: DState, share: DShare, nj: DJob) -> None:
    """clearShare: hand over a same-size new process, drop a different-size one, evict a running one."""
    donor = state.jobs[share.job_id]
    node = state.nodes[share.host]
    if share.pending:
        donor.shares.remove(share)
        node.shares.remove(share)
        if share.order == nj.work.order:
            kind = REASSIGN
            share.job_id = nj.work.job_id
            nj.shares.append(share)
            node.shares.append(share)  # removed and put back: it goes to the end of its bucket
        else:
            kind = CANCEL
    else:
        kind = EVICT
        share.evicted = True
    state.actions.append(DefragAction(kind, nj.work.job_id, donor.work.job_id, share.host, share.share_id, share.order))


def take_from_the_rich(state: DState, nj: DJob, needed: int, candidates: set[int]) -> int:
    """Clear space for up to `needed` processes of the needy job; returns how many it made room for."""
    want = nj.work.order
    eligible: list[str] = []
    for name in all_machines(state, nj.pool):
        node = state.nodes[name]
        if node.machine.order < want:
            continue
        if nj.policy == RESERVE:  # a reservation wants a whole machine of its size
            if node.machine.order != want or any(s.job_id not in candidates for s in node.shares):
                continue
        room = node.virtual + sum(state.jobs[s.job_id].work.order for s in node.shares
                                  if _forceable(s) and s.job_id in candidates)
        if room >= want:
            eligible.append(name)
    eligible = _sorted_machines(state, eligible)
    shown = _shown_order(state, nj, eligible)
    eligible = _rm_machines_first(state, eligible) if shown is None else shown
    given = 0
    while True:
        cleared, room = 0, 0
        for name in eligible:
            node = state.nodes[name]
            ordered = sorted(node.shares, key=lambda s: _share_key(state, s))
            chosen = _round(state, nj, name, ordered, candidates)
            if chosen is None:
                continue
            if shown is None:
                _note_machine_tie(state, nj, name, eligible, chosen)
            room = node.virtual
            for share in chosen:
                room += share.order
                cleared += 1
                owner = user_of(state, share.job_id)
                _clear(state, share, nj)
                state.wealth[owner] = state.wealth.get(owner, 0) - share.order
            break  # one machine per round
        if cleared:
            shown = None  # later rounds meet the machines rehashed (Machine.hashCode): an order no log prints
            eligible = _rm_machines_first(state, _sorted_machines(state, _rehash(state, eligible)))
            given += room // want
        if cleared == 0 or given >= needed:
            return given
