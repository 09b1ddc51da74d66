"""The stale free space the replay infers, held to the values the real RM printed.

Where the RM prints an unschedulable machine's free space ("bad virtual machine list", "found a
share of size N on a machine with only V free slots"), the inference, made blind to those lines,
must give the same value in the first cycle the machine's work is accounted there (later ones
drift: the RM moves the size as it accounts the work, which the log shows only by those lines)."""

from __future__ import annotations

from replay.apps.audit import audit
from replay.model.stale import StaleFree, logged_stale_free
from replay.model.start import bootstrap, cycle_inputs
from tests.helpers import CORPUS, SCENARIOS, UNSETTLED, parsed


def _first_accounted(name: str, level: str) -> list[tuple[int, str, int | None, int]]:
    """(cycle, host, inferred, logged) for each first cycle of a stretch the RM printed a size in."""
    tables = parsed(name, level).tables
    logged = logged_stale_free(tables["nodes"])
    if not logged:
        return []
    boot = bootstrap(tables)
    blind = StaleFree({}, boot.nodepools, boot.config.quantum_gb)
    accounted: set[str] = set()  # unschedulable hosts whose work a cycle of this stretch accounted
    out = []
    for inp in cycle_inputs(tables, boot, stale=blind):
        occupied = {s.host for w in inp.work for s in w.shares}
        for m in inp.machines:
            if m.online and not m.blacklisted:
                accounted.discard(m.name)
                continue
            if (inp.cycle, m.name) in logged and m.name not in accounted:
                out.append((inp.cycle, m.name, m.stale_free, logged[(inp.cycle, m.name)]))
            if m.name in occupied:
                accounted.add(m.name)
    return out


def test_the_inference_gives_what_the_rm_printed():
    checked = [(name, *row) for name in SCENARIOS + CORPUS + UNSETTLED for level in ("rm.log", "rm-debug.log")
               for row in _first_accounted(name, level)]
    assert len(checked) >= 20  # (13 stretches in each level when written)
    assert [row for row in checked if row[3] != row[4]] == []


def test_the_audit_says_where_it_inferred():
    """Seed 29's scenario 115, shrunk: no line states the varied-off machine's free space."""
    result = audit(parsed("corpus/varied_off_silent_stale").tables)
    assumed = {a.setting: a for a in result.assumed}
    summary = assumed["unschedulable nodes' free space"]
    assert summary.source == "inferred" and "inferred for 1 node(s)" in summary.value
    assert any(s.endswith("stale free space") and s.startswith("node ") for s in assumed)
    assert all(a == t for a, t in result.tally.values())  # and the cycles it was used in agree
