"""Each job's place in submission order (JobByTimeSorter's key), with the ties the log shows."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.model.needy import needy_ties


def submission_order(tables: Mapping[str, pl.DataFrame],
                     left_off: Mapping[int, set[int]] | None = None) -> dict[int, int]:
    """Each job's place in submission order (JobByTimeSorter's key), equal for jobs that tie.

    The Orchestrator numbers work in submission order, so job ids order it; the timestamps are
    not logged. Two jobs submitted in the same millisecond tie, and the RM then keeps its job
    table's order, which can put the later id first: wherever the log lists jobs in
    JobByTimeSorter's order (a pool's "Expansions in this order", a fixed-share or reserve class's
    counting lines) and does so, the two tie. `left_off`: `needy_left_off` of the tables, when
    already read (else read here).
    """
    classes = dict(tables["jobs"].select("job_id", "class").drop_nulls().unique("job_id", keep="last").iter_rows())
    expansions = tables["expansions"].filter((pl.col("kind") == "do_expansion") & pl.col("job_id").is_not_null())
    # grouped from rows, not a frame per group (a log's thousands of cycles)
    listings: dict[tuple[int, str, int], list[int]] = {}
    for cycle, file, line, job in expansions.select("cycle", "file", "line", "job_id").iter_rows():
        listings.setdefault((cycle, file, line), []).append(job)
    sequences = list(listings.values())
    counted = tables["counts"].filter(pl.col("job_id").is_not_null() & (
        ((pl.col("kind") == "class") & (pl.col("policy") == "FIXED_SHARE"))
        | ((pl.col("kind") == "counting") & (pl.col("policy") == "RESERVE"))))
    by_cycle: dict[int, dict[str, list[int]]] = {}
    for cycle, job, named in counted.select("cycle", "job_id", "class").iter_rows():
        by_class = by_cycle.setdefault(cycle, {})
        cls = named or classes.get(job)
        if cls:  # (jobs of classes unknown are no one listing: no evidence of a tie)
            by_class.setdefault(cls, []).append(job)
    for by_class in by_cycle.values():
        sequences += by_class.values()
    tied: dict[int, int] = {}  # job -> the earliest job it ties with (union-find parent)

    def root(job: int) -> int:
        while tied.get(job, job) != job:
            job = tied[job]
        return job

    pairs = [(earlier, later) for seq in sequences for i, later in enumerate(seq) for earlier in seq[i + 1:]
             if earlier < later]  # listed after a later-submitted job: the two tie
    for x, y in pairs + needy_ties(tables, left_off):
        a, b = sorted((root(x), root(y)))
        if a != b:
            tied[b] = a
    return {job: root(job) for job in tied}

