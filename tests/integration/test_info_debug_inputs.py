"""One RM run logged at INFO and at DEBUG gives rmref the same input in every cycle.

Every bundled scenario's two logs come from the same run of the real RM, so each cycle's rebuilt
input (configuration, machines, work, shares, cap inputs, needy list) must be the same whichever
log it is read from: the DEBUG log only says more. Where it does say more than INFO can, the two
may differ only in that direction: ties in submission order (jobs submitted in the same
millisecond, which DEBUG's "Expand needy" lines show: of two tied jobs found needy, the RM's needy
list keeps one), where INFO takes ids in order, the nearest reading.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from replay.model.start import cycle_inputs
from tests.helpers import FIXTURES, parsed

# small scenarios (the big generated ones cost minutes and add no kind of line)
BOTH = sorted(str(p.parent.relative_to(FIXTURES)) for p in FIXTURES.rglob("scenario.json.gz")
              if (p.parent / "rm-debug.log.gz").exists() and (p.parent / "rm.log.gz").exists()
              and (p.parent / "rm-debug.log.gz").stat().st_size < 400_000)


def differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(field path, a's value, b's value) wherever two records differ, field by field."""
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return [d for f in dataclasses.fields(a) for d in differences(getattr(a, f.name), getattr(b, f.name),
                                                                       f"{path}.{f.name}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return [d for k in a for d in differences(a[k], b[k], f"{path}[{k!r}]")]
    return [] if a == b else [(path, a, b)]


def _inputs(name: str, level: str) -> dict[int, Any]:
    tables = parsed(name, level).tables
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    # the cycle's number differs where one log's loop count starts elsewhere: compared by epoch
    return {epochs[i.cycle]: dataclasses.replace(i, cycle=0) for i in cycle_inputs(tables)}


@pytest.mark.parametrize("name", BOTH)
def test_info_and_debug_logs_of_one_run_give_the_same_input(name):
    """Each cycle both logs publish: the same input, but for a tie in submission order only DEBUG shows."""
    info, debug = _inputs(name, "rm.log"), _inputs(name, "rm-debug.log")
    assert info.keys() == debug.keys()
    left = []
    for epoch in sorted(info):
        seq = {w.job_id: w.submit_seq for w in debug[epoch].work}
        for path, i, d in differences(info[epoch], debug[epoch]):
            if not (_tie_only_debug_shows(path, i, d, seq)):
                left.append((epoch, path, i, d))
    assert not left, left[:5]


def _tie_only_debug_shows(path: str, info: Any, debug: Any, seq: dict[int, int]) -> bool:
    """A job takes the place of the earliest job it ties with; of tied jobs the needy list keeps one."""
    if path.endswith(".submit_seq"):
        return bool(debug <= info)
    if path == ".needy":
        kept = iter(info)
        dropped = [job for job in info if job not in debug]
        return (all(job in kept for job in debug)  # the same order, some left off
                and all(any(seq.get(job) == seq.get(other) for other in debug) for job in dropped))
    return False
