"""The per-table assembly steps: a bucket's family rows into one table (cycles, caps, counts, RmCounter,
the published schedule, placements, evictions, defragmentation, occupancy, configuration, classes,
nodepools), shared by both engines."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from replay.parsing.tables import FIXED_METHODS, I64, LEFT, RESERVE_METHODS, S


def _fam(name: str) -> pl.Expr:
    return pl.col("_family") == name


def cycles(lines: pl.DataFrame) -> pl.DataFrame:
    sent = lines.filter(_fam("schedule_sent")).select("cycle", "ts", "file", "line")
    enter = lines.filter(_fam("loop_enter") & pl.col("cycle").is_not_null()).group_by("cycle").agg(
        pl.col("epoch").last(), pl.col("ts").last().alias("ts_start"), pl.col("file").last().alias("efile"),
        pl.col("line").last().alias("eline"),
    )
    # a loop-return line closes the cycle before the one it is counted in (the last one: none);
    # epochs restart with every RM incarnation, so match on both
    closes = pl.when(pl.col("cycle").is_null()).then(sent["cycle"].max()).otherwise(pl.col("cycle") - 1)
    returns = lines.filter(_fam("loop_return")).select(
        closes.cast(pl.UInt32).alias("cycle"), "epoch", pl.col("ts").alias("ts_end"))
    ret = returns.unique(["cycle", "epoch"], keep="first")
    # a log that starts inside a cycle lacks its loop-entry line: the first return after the
    # schedule names the same epoch, so the cycle keeps the number the whole log gives it
    first_return = returns.unique("cycle", keep="first").select("cycle", pl.col("epoch").alias("_epoch"))
    last: Callable[[str, str, str], pl.DataFrame]
    last = lambda fam, col, alias: lines.filter(_fam(fam) & pl.col("cycle").is_not_null()).group_by("cycle").agg(  # noqa: E731
        pl.col(col).last().alias(alias))
    out = (sent.join(enter, on="cycle", **LEFT).join(first_return, on="cycle", **LEFT)
           .with_columns(pl.coalesce("epoch", "_epoch").alias("epoch")).drop("_epoch")
           .join(ret, on=["cycle", "epoch"], **LEFT))
    for fam, col, alias in (("total_arrivals", "count", "total_arrivals"), ("schedule_summary", "new_jobs", "new_jobs"),
                            ("schedule_summary", "existing_jobs", "existing_jobs")):
        out = out.join(last(fam, col, alias), on="cycle", **LEFT)
    # whether the cycle's loop-entry line is in the log (a log cut inside a cycle lacks it)
    return out.with_columns(
        pl.col("eline").is_not_null().alias("started"),
        pl.coalesce("ts_start", "ts").alias("ts_start"),
        pl.coalesce("efile", "file").alias("file"), pl.coalesce("eline", "line").alias("line"),
    ).sort("cycle")


def caps(lines: pl.DataFrame) -> pl.DataFrame:
    """initJobCap rows, each with the getPrjCap line its job logged last before it in the cycle,
    and whether the job logged "Initialization time is 0" in the cycle."""
    prj = _fam("prj_cap") | _fam("prj_cannot_predict")
    prj_cols = [c for c in lines.columns if c.startswith("prj_") or c in ("init_wait", "time_per_item")]
    job_cycle = ("job_id", pl.col("cycle").fill_null(0))
    last = pl.when(prj).then(pl.col("_i")).forward_fill().over(*job_cycle)  # the row of its last getPrjCap
    kind = pl.when(_fam("prj_cap")).then(pl.lit("predicted")).otherwise(pl.lit("cannot_predict"))
    return lines.with_row_index("_i").with_columns(
        *[pl.col(c).gather(last) for c in prj_cols], kind.gather(last).alias("prj_kind"),
        _fam("prj_init_zero").any().over(*job_cycle).alias("init_time_zero"),
    ).filter(_fam("init_job_cap"))


def counts(rows: pl.DataFrame) -> pl.DataFrame:
    nqm_n = pl.col("nqm").str.extract(r"^(\d+)Q", 1).cast(I64)
    shares = pl.col("shares").cast(I64, strict=False)
    given = pl.col("shares_given").cast(I64, strict=False)
    return rows.with_columns(
        pl.coalesce(
            pl.col("policy"),
            pl.when(pl.col("method").is_in(FIXED_METHODS)).then(pl.lit("FIXED_SHARE"))
            .when(pl.col("method").is_in(RESERVE_METHODS)).then(pl.lit("RESERVE")),
        ).alias("policy"),
        pl.coalesce(given, pl.when(pl.col("kind") == "granted").then(pl.coalesce(nqm_n, pl.lit(1))),
                    pl.when(pl.col("kind") == "stable").then(shares),
                    # a deferral is a decision to give nothing this cycle
                    pl.when(pl.col("kind").is_in(["deferred", "deferring", "out_of_shares"])).then(pl.lit(0))
                    ).alias("shares_given"),
        pl.col("detail").alias("reason"),
    )


def rmcounter(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    lines = lines.select("_family", "ts", "cycle", "file", "line", "descr", "maxorder", "names", "values", "entity")
    lines = lines.with_columns(_fam("rmc_start").cast(I64).cum_sum().alias("_blk"))
    start = lines.filter(_fam("rmc_start")).select("_blk", "ts", "cycle", "file", "line", "descr")
    start = start.with_columns(pl.col("_blk").rank("ordinal").over("cycle").cast(I64).alias("block"))
    def per_block(fam: str, col: str, alias: str, by: tuple[str, ...] = ("_blk",)) -> pl.DataFrame:
        # unique(keep=last) rather than group_by().last(): list aggregation is slow
        got = lines.filter(_fam(fam)).select(*by, pl.col(col).alias(alias))
        return got.unique(list(by), keep="last", maintain_order=True)

    names = lines.filter(_fam("rmc_names")).select("_blk", "names")
    weights = per_block("rmc_weights", "values", "weights")
    entities = names.join(weights, on="_blk", **LEFT).with_columns(
        pl.int_ranges(0, pl.col("names").list.len()).alias("_i")
    ).explode("names", "_i").select(
        "_blk", pl.col("names").alias("entity"),
        pl.col("weights").list.get(pl.col("_i"), null_on_oob=True).alias("weight"),
    ).filter(pl.col("entity").is_not_null())
    wanted = per_block("rmc_wanted", "values", "wanted", ("_blk", "entity"))
    given = per_block("rmc_given", "values", "given", ("_blk", "entity"))
    out = start.join(entities, on="_blk", **LEFT).join(wanted, on=["_blk", "entity"], **LEFT)
    out = out.join(per_block("rmc_vmachines", "values", "vmachines"), on="_blk", **LEFT)
    out = out.join(per_block("rmc_maxorder", "maxorder", "maxorder"), on="_blk", **LEFT)
    out = out.join(given, on=["_blk", "entity"], **LEFT) if given.height else out
    return out.sort("_blk", maintain_order=True)


def rmcounter_assembled(rows: pl.DataFrame, info: pl.DataFrame) -> pl.DataFrame:
    """RmCounter rows the scanner assembled (replay.parsing.scan.rmcounter_rows): the Start line's time,
    cycle and place, and the block's number within its cycle, as `_rmcounter` gives them."""
    where = info.select("ts", "cycle", "file", "line").select(pl.all().gather(rows["rec"]))
    return rows.hstack(where).with_columns(pl.col("rec").rank("dense").over("cycle").cast(I64).alias("block"))


def schedule(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    kind = pl.col("kind").replace_strict({"Existing": "existing", "Additions": "addition", "Removals": "removal"},
                                         default=None, return_dtype=S)
    # an empty structure (no work at all) is a record with no rows
    lines = lines.filter(pl.col("job_id").is_not_null())
    # a refused item has no share lists (2.0.x print no memory for any item, so memory cannot tell)
    lines = lines.with_columns(kind.alias("kind"), pl.col("kind").is_null().alias("refused"))
    has_share = pl.col("host").is_not_null().any().over("rec", "job_id")
    keep = pl.col("host").is_not_null() | (~has_share & (pl.int_range(pl.len()).over("rec", "job_id") == 0))
    return lines.filter(keep).with_columns(
        pl.when(pl.col("host").is_null()).then(None).otherwise(pl.col("kind")).alias("kind")
    )


def placements(lines: pl.DataFrame, schedule: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    new = lines.filter(_fam("connect_new_share")).select("cycle", "host", "share_id").unique()
    new = new.with_columns(_new=pl.lit(True))
    conn = lines.filter(_fam("connect_share")).join(new, on=["cycle", "host", "share_id"], nulls_equal=True, **LEFT)
    conn = conn.with_columns(
        pl.when(pl.col("_new")).then(pl.lit("new"))
        .when(pl.col("order").cast(I64) == pl.col("m_order").cast(I64)).then(pl.lit("whole_machine"))
        .otherwise(pl.lit("recovered")).alias("kind")
    )
    # defragmentation can hand a share placed for one job to a needy job in the same cycle: the
    # placement belongs to the job the published schedule adds it to
    adds = schedule.filter(pl.col("kind") == "addition").select(
        "cycle", "host", pl.col("share_id").cast(S), pl.col("job_id").alias("_sched_job"))
    first_add = adds.unique(["cycle", "host", "share_id"], keep="first", maintain_order=True)
    conn = conn.join(first_add, on=["cycle", "host", "share_id"], nulls_equal=True, **LEFT)
    moved = pl.col("_sched_job").is_not_null() & (pl.col("_sched_job") != pl.col("job_id"))
    return conn.with_columns(
        pl.when(moved).then(pl.col("job_id")).otherwise(None).alias("placed_for"),
        moved.alias("reassigned"),
        pl.when(moved).then(pl.col("_sched_job")).otherwise(pl.col("job_id")).alias("job_id"),
    )


def eviction_counts(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    hdr = _fam("evict_header")
    lines = lines.with_columns(
        pl.when(hdr).then(pl.col("nodepool")).forward_fill().alias("nodepool"),
        hdr.cast(I64).cum_sum().over("cycle").alias("block"),
    )
    return lines.filter(_fam("evict_row"))


DEFRAG_KINDS = {
    "frag_header": "class_header", "frag_row": "analysis", "frag_free": "free_space", "frag_needy": "needy",
    "frag_vmachines": "vmachines", "frag_max_size": "max_size_warning", "frag_none": "bypassed",
    "frag_detected": "needy_detected", "rich_candidate": "candidate_machine",
    "rich_not_candidate": "not_candidate_machine", "rich_found": "machines_found",
    "rich_eligible": "eligible_machines", "rich_bypass": "bypass_machine", "rich_satisfied": "satisfied",
    "rich_retry": "retry_all_candidates", "rich_failed": "failed", "rich_candidate_job": "donor_candidate",
    "rich_below_threshold": "below_threshold", "rich_looking": "looking", "rich_attempt": "attempt",
    "clear_share": "clear_share", "needy_assign": "expand_needy_assign", "needy_expand": "expand_needy",
}


def defrag(lines: pl.DataFrame) -> pl.DataFrame:
    """The defrag rows; `class` is the class of the row's own job (null for a row naming none).

    detectFragmentation prints a `Class:` header, then that class's jobs: those rows take the
    header's class. Every later line of the cycle naming a job (needy, takeFromTheRich,
    clearShare, ...) takes the class its job was listed under, not whichever header came last.
    """
    if lines.is_empty():
        return lines
    header = _fam("frag_header")
    block = pl.when(header).then(pl.col("class")).forward_fill().over("cycle")
    lines = lines.with_columns(pl.when(header | _fam("frag_row")).then(block).alias("class"))  # header, rows
    own = pl.col("class").drop_nulls().first().over("cycle", "job_id")
    return lines.with_columns(
        pl.col("_family").replace_strict(DEFRAG_KINDS, default=None).alias("kind"),
        pl.when(pl.col("job_id").is_not_null()).then(own).otherwise(pl.col("class")).alias("class"),
        pl.coalesce("rich_from", "clear_kind", "needy_what", "detail").alias("detail"),
    )


def occupancy(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    pool = pl.when(_fam("occupancy_begin")).then(pl.col("nodepool")).forward_fill()
    lines = lines.with_columns(pool.alias("nodepool"))
    return lines.filter(_fam("occupancy_table") & pl.col("m_host").is_not_null()).select(
        "rec", "ts", "cycle", "nodepool", pl.col("m_host").alias("host"), pl.col("m_blacklisted").alias("blacklisted"),
        pl.col("m_order").alias("order"), pl.col("m_active").alias("active"), pl.col("m_unused").alias("unused"),
        "memory_mb", pl.col("m_jobs").alias("jobs"),
        "free", "file", "line",
    )


def config(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    owner = pl.when(_fam("class_begin")).then(pl.concat_str(pl.lit("class."), "class")).when(
        _fam("user_begin")).then(pl.concat_str(pl.lit("user."), "user")).when(
        ~_fam("property")).then(pl.lit(""))
    lines = lines.with_columns(owner.forward_fill().alias("_owner"))
    params = lines.filter(_fam("init_param")).select(pl.col("prop_key").alias("key"), "value", "file", "line")
    users = lines.filter(_fam("property") & pl.col("_owner").str.starts_with("user.")).select(
        pl.concat_str("_owner", pl.lit("."), "prop_key").alias("key"), "value", "file", "line")
    jd = lines.filter(_fam("jd_host_class")).select(pl.lit("jd.host").alias("key"), "value", "file", "line")
    out = pl.concat([params, users, jd], how="diagonal_relaxed")
    return out.unique("key", keep="last", maintain_order=True)


_PROPS = {"Policy": "policy", "Priority": "priority", "Weight": "weight", "Nodepool": "nodepool",
          "Initialization Cap": "init_cap", "Expand By Doubling": "expand_by_doubling",
          "Use Prediction": "prediction", "Prediction Fudge": "prediction_fudge",
          "Enforce Memory Size": "enforce", "Max Allotment": "max_allotment", "max-allotment": "max_allotment",
          "Cap": "cap", "Debug": "debug", "Authorized Users": "authorized_users"}


def classes(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    lines = lines.with_columns(
        pl.when(_fam("class_begin")).then(pl.col("class")).when(_fam("user_begin") | _fam("class_row")).then(pl.lit(""))
        .forward_fill().alias("_cls"))
    props = lines.filter(_fam("property") & (pl.col("_cls") != "")).with_columns(
        pl.col("prop_key").replace_strict(_PROPS, default=None).alias("_k")).filter(pl.col("_k").is_not_null())
    begins = lines.filter(_fam("class_begin")).select(pl.col("class").alias("name"), "file", "line")
    begins = begins.unique("name", keep="last")
    wide = props.select(pl.col("_cls").alias("name"), "_k", "value").unique(["name", "_k"], keep="last").pivot(
        "_k", index="name", values="value") if props.height else pl.DataFrame({"name": []}, schema={"name": S})
    table_columns = [c for c in ("policy", "priority", "weight", "nodepool", "init_cap", "expand_by_doubling",
                                 "prediction", "prediction_fudge", "enforce") if c in lines.columns]
    table = lines.filter(_fam("class_row")).select(
        pl.col("class").alias("name"), *table_columns, pl.col("file").alias("tfile"), pl.col("line").alias("tline"),
    ).unique("name", keep="last") if lines.filter(_fam("class_row")).height else None
    out = begins.join(wide, on="name", how="full", coalesce=True)
    if table is not None:
        out = out.join(table, on="name", how="full", coalesce=True, suffix="_t")
        for col in [c for c in out.columns if c.endswith("_t")]:
            out = out.with_columns(pl.coalesce(col, col.removesuffix("_t")).alias(col.removesuffix("_t"))).drop(col)
        out = out.with_columns(pl.coalesce("file", "tfile").alias("file"), pl.coalesce("line", "tline").alias("line"))
    return out.sort("name")


def nodepools(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    lines = lines.with_columns(pl.when(_fam("np_name")).then(pl.col("nodepool")).forward_fill().alias("name"))
    def last(fam: str, col: str, alias: str) -> pl.DataFrame:
        return lines.filter(_fam(fam)).group_by("name").agg(pl.col(col).last().alias(alias))
    out = lines.filter(_fam("np_name")).select("name", "file", "line").unique("name", keep="last", maintain_order=True)
    for fam, col, alias in (("np_quantum", "quantum", "quantum"), ("np_search_order", "search_order", "search_order"),
                            ("np_node_file", "detail", "node_file"), ("np_node_rule", "detail", "node_rule"),
                            ("np_classes", "classes", "classes"), ("np_subpools", "subpools", "subpools"),
                            ("np_nodes", "nodes", "nodes")):
        out = out.join(last(fam, col, alias), on="name", **LEFT)
    parents = out.select(pl.col("name").alias("parent"), pl.col("subpools").alias("child")).explode("child")
    out = out.join(parents.filter(pl.col("child").is_not_null()), left_on="name", right_on="child", **LEFT)
    return out
