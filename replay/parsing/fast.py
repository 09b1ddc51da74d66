"""Vectorised fast paths for the high-volume families (polars regexes over whole columns).

Each fast path must give exactly the rows the grammar's Transformer gives for the same records
(same field names, same string values, same row order); tests/integration/test_engines.py runs
both engines over every fixture and compares every table. Families without a fast path here go
through lark in both engines.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from replay.parsing.records import full_bodies


_I = r"-?\d+"
_SHARE = r"(?P<host>\S+)\.(?P<share_id>\d+)"
_MACHINE = (
    rf"(?P<m_host>\S+) +(?P<m_blacklisted>\S+) +(?P<m_order>{_I}) +(?P<m_active>{_I}) +"
    rf"(?P<m_unused>{_I}) +(?P<memory_mb>{_I}) +(?:<none>|(?P<m_jobs_list>[0-9][0-9 ]*))"
)
_RMJOB = (
    rf"(?P<type_code>[JSMRA?])_*(?P<job_id>\d+) +(?P<job_name>\S+) +(?P<user>\S+) +(?P<class>\S+) +"
    rf"(?P<shares>{_I}) +(?P<order>{_I}) +(?P<qshares>{_I}) +(?P<threads>{_I}) +(?P<memory_gb>{_I}) +"
    rf"(?P<nquest>{_I}) +(?P<remaining>{_I}) +(?P<init_wait>\S+) +(?P<max_processes>{_I})"
)
# the grammar's NUM | INT: a double as Java prints it, or an integer
_NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|NaN|Infinity)"
# the grammar's REST, stripped: from a non-blank to a non-blank
_TEXT = r"(?P<text>\S(?:.*\S)?)"
# a plain character class: nested quantifiers here cost 10x in the capture engine
_VALUES = r"(?P<values_list>[-0-9 ]*)"

# family -> regex over the (trimmed) first body line; named groups are the grammar's field names.
REGEXES: dict[str, str] = {
    "rmc_start": r"^(?P<descr>\S+) RmCounter Start$",
    "rmc_end": r"^(?P<descr>\S+) RmCounter End$",
    "rmc_maxorder": rf"^(?P<descr>\S+) maxorder = +(?P<maxorder>{_I})$",
    "rmc_names": r"^(?P<descr>\S+) entity_names = *(?P<names_list>.*)$",
    "rmc_weights": rf"^(?P<descr>\S+) weights += *{_VALUES}$",
    "rmc_wanted": rf"^(?P<descr>\S+) wantedby\.(?P<entity>\S+) = *{_VALUES}$",
    "rmc_vmachines": rf"^(?P<descr>\S+) vmachines = *{_VALUES}$",
    "rmc_final": r"^(?P<descr>\S+) Final apportionment:$",
    "rmc_given": rf"^(?P<descr>\S+) +(?P<entity>\S+) gbo *{_VALUES}$",
    "rmc_vshares": rf"^(?P<descr>\S+) vshares *{_VALUES}$",
    "rmc_nshares": rf"^(?P<descr>\S+) nshares *{_VALUES}$",
    "frag_header": r"^Nodepool +User +PureFS +NSh +Counted +Needed +O +Class: +(?P<class>\S+)$",
    "frag_row": (
        rf"^(?P<nodepool>\S+) +(?P<user>\S+) +(?P<pure_fs>{_I}) +(?P<nsh>{_I}) +(?P<counted>{_I}) +"
        rf"(?P<needed>{_I}) +(?P<order>{_I})(?: +(?P<potentially_needy>POTENTIALLY NEEDY))?$"
    ),
    "frag_free": (
        rf"^NP (?P<nodepool>\S+) After check: (?P<space_kind>virtual|cumulative) +free Space *{_VALUES}$"
    ),
    "frag_needy": (
        rf"^NP: +(?P<nodepool>\S+) User: +(?P<user>\S+) Pure fs: +(?P<pure_fs>{_I}) needed +"
        rf"(?P<needed>{_I}) O\[(?P<order>{_I})\] ACTUALLY NEEDY$"
    ),
    "frag_none": r"^No needy jobs, defragmentation bypassed\.$",
    "frag_detected": r"^NEEDY JOBS DETECTED$",
    "rich_candidate": r"^Candidate machine: +(?P<host>\S+)$",
    "rich_not_candidate": r"^Not a candidate, insufficient free space \+ candidate shares: +(?P<host>\S+)$",
    "rich_found": rf"^Found (?P<count>{_I}) machines to be searched in this order:$",
    "rich_eligible": r"^Eligible machines: *(?P<hosts_list>.*)$",
    "evict_header": r"^Counted Current Needed Order +\((?P<nodepool>\S+)\)$",
    # 2.0.0-2.1.0 print the nodepool first (a word, never an integer: the grammar's evict_pool)
    "evict_row": (rf"^(?:(?P<nodepool>\S*[^\s\d-]\S*) +)?(?P<counted>{_I}) +(?P<current>{_I}) +"
                  rf"(?P<needed>{_I}) +(?P<order>{_I})$"),
    "node_heartbeat": rf"^(?P<rule_count>{_I}) (?P<host>\S+) (?P<short_name>\S+) (?P<ip>\S+)$",
    "prj_cannot_predict": (
        r"^(?P<user>\S+) Cannot predict cap: init_wait (?P<init_wait>\S+) \|\| time_per_item "
        rf"(?P<time_per_item>{_NUM})$"
    ),
    "prj_cap": (
        rf"^(?P<user>\S+) O (?P<order>{_I}) T (?P<prj_t>{_I}) NTh (?P<prj_nth>{_I}) TI (?P<prj_ti>{_I}) "
        rf"TR (?P<prj_tr>{_NUM}) R (?P<prj_r>{_NUM}) QR (?P<prj_qr>{_I}) P (?P<prj_p>{_I}) F (?P<prj_f>{_I}) "
        rf"ST (?P<prj_st>{_I}) return (?P<prj_return>{_I})$"
    ),
    "init_job_cap": (
        rf"^(?P<user>\S+) O (?P<order>{_I}) Base cap: (?P<base_cap>{_I}) Expected future cap: "
        rf"(?P<expected_cap>{_I}) potential cap (?P<potential_cap>{_I}) actual cap (?P<actual_cap>{_I})$"
    ),
    "what_of_fair_share": (
        rf"^Scheduling job in class +(?P<class>\S+) : (?P<shares_given>{_I}) shares given, order (?P<order>{_I})$"
    ),
    "how_much_fair_share": rf"^Scheduling job in class +\S+ : +{_RMJOB}$",
    "submit_row": rf"^submit +{_RMJOB}$",
    "job_update": (
        rf"^tot: (?P<total>{_I}) (?P<state_from>\S+) -> (?P<state_to>\S+) compl: (?P<completed>\S+) "
        rf"err: (?P<errors>\S+) rem: (?P<remaining>{_I}) mean: (?P<mean>{_NUM})(?: skew: (?P<skew>{_NUM}))?$"
    ),
    "connect_share": rf"^share {_SHARE} order (?P<order>{_I}) machine +{_MACHINE}$",
    "connect_new_share": rf"^Connecting new share {_SHARE}$",
    "loop_enter": rf"^-+ (?P<epoch>{_I}) -+ Entering scheduling loop -+$",
    "loop_return": rf"^-+ (?P<epoch>{_I}) -+ Scheduling loop returns +-+$",
    "total_arrivals": rf"^Total arrivals: (?P<count>{_I})$",
    "schedule_summary": rf"^Scheduling (?P<new_jobs>{_I}) +new jobs\. +Existing jobs: (?P<existing_jobs>{_I})$",
    "schedule_run": rf"^Run scheduler {_I} with top-level nodepool (?P<nodepool>\S+)$",
    "schedule_sent": r"^Schedule sent to Orchestrator$",
    "fixed_to_class": r"^Scheduling job to class: (?P<class>\S+)$",
    "fixed_counting": r"^Counting shares for (?P<type_code>[JSMRA?])\.(?P<job_id>\d+)(?: in class (?P<class>\S+))?$",
    "fixed_stable": rf"^\[stable\] assigned (?P<shares>{_I}) processes, +(?P<qshares>{_I}) QS$",
    "fixed_granted": (
        rf"^\+\+\+\+\+ nodepool (?P<nodepool>\S+) class (?P<class>\S+) order (?P<order>{_I}) shares (?P<nqm>\d+Q\d+)$"
    ),
    "expansion_order": r"^(?P<nodepool>\S+) Doing expansions in this order: *(?P<pools_list>.*)$",
    "proc_new": rf"^New process +{_SHARE} (?P<rss>{_I}) (?P<state_to>\S+) (?P<pid>\S+)$",
    "proc_state": (
        rf"^Process +(?P<pid>\S+) (?:{_SHARE}|<none>) State: (?P<state_from>\S+) -> (?P<state_to>\S+) "
        rf"(?P<init_ms>{_I}) (?P<run_ms>{_I})$"
    ),
    "proc_completion": rf"^Process +(?P<pid>\S+) Completion: {_SHARE}$",
    "proc_completed": r"^Process +(?P<pid>\S+) +completed due to state (?P<state_to>\S+)$",
    "proc_ignored": r"^Process +(?P<pid>\S+) ignoring update because of state (?P<state_to>\S+)$",
    "proc_vacate": rf"^Job vacate signal share: +{_SHARE}$",
    "rich_failed": rf"^Could not get enough from the rich\. Asked for (?P<needed>{_I}) still needing (?P<count>{_I})$",
    "rich_satisfied": r"^Satisfied needs of job by taking from (?P<rich_from>the rich\.|all candidates\.)$",
    "shrink_by": rf"^Removing share +{_SHARE}$",
    "ev_non_schedulable": r"^Received non-schedulable job, state = +(?P<state_to>\S+)$",
    "ev_incoming": r"^Incoming, state = +(?P<state_to>\S+)$",
    "ev_remove_unschedulable": r"^Removing unschedulable: +(?P<state_from>\S+) -> (?P<state_to>\S+)$",
    "job_initialized": r"^Set Initialized\.$",
    "job_schedule_new": r"^Scheduling as new\.$",
    "job_arrives": rf"^total_work (?P<total>{_I}) completed_work (?P<completed>\S+) "
                   rf"remaining_work (?P<remaining>{_I})$",
    "job_completion_signal": r"^Job completion signal(?:\.|: +(?P<text>.*\S)) *$",
    "job_completes": r"^Job completes\.$",
    "jobs_arrive": r"^Jobs arrive:$",
    "submit_header": (
        r"^submit +ID +JobName +User +Class +Shares +Order +QShares +NTh +Memory +nQuest +Ques +Rem +InitWait "
        r"+Max +P/Nst$"
    ),
    "prj_init_zero": r"^(?P<user>\S+) Initialization time is 0, project cap and investment will be inaccurate\.$",
    "node_map": r"^Map (?P<host>\S+) to (?P<nodepool>\S+)$",
    "node_added": (
        rf"^Nodepool: (?P<nodepool>\S+) Host added: \S+ : +(?P<host>\S+) Nodefile: (?P<text_word>\S+) shares +"
        rf"(?P<share_order>{_I}) total +(?P<count>{_I}): +{_MACHINE}$"
    ),
    "node_blacklist": (
        rf"^(?P<host>\S+) (?P<share_id>{_I}) (?P<uuid>[0-9a-fA-F-]{{8,}}) procs (?P<count>{_I}) shares left "
        rf"(?P<free_shares>{_I}) / (?P<share_order>{_I})$"
    ),
    # the bootstrap records the grammar alone read (lark loaded for them, 0.1 s of start-up): the class
    # table's title, header and rule (no table: only whether they parse counts) and the JD host
    "class_table_title": r"^Classes:$",
    "class_table_header": (r"^Class +Name +Policy +Prio +Wgt +AbsCap +InitCap +Dbling +Prdct +PFudge +Shr +Enforce "
                           r"+Nodepool$"),
    "class_table_rule": r"^-{2,}(?: +-{2,})*$",
    "jd_host_class": r"^(?P<value>jd\.host\.class=\S+ jd\.host\.user=\S+)$",
    # the counts families with a reason (a template's `text` would send every chunk's counts the
    # reference way, `columns._counts`): the regex path sends only the chunks that have one
    "defer": rf"^{_TEXT}$",
    "res_deferred": rf"^Deferred because +{_TEXT}$",
    "fixed_deferring": rf"^Deferring, +{_TEXT}$",
    "fixed_out_of_shares": rf"^Nodepool is out of shares: +{_TEXT}$",
    # the C defrag table reads it otherwise: the regex path sends the chunk's defrag rows the reference way
    "rich_retry": rf"^Could not clear sufficient space from rich candidates\.(?: +{_TEXT})?$",
}


def _regex_plan(part: pl.DataFrame, regex: str) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(rows, failures) of a single-line family as lazy queries: the named groups of `regex`."""
    body = part.lazy()
    if "(?P<" not in regex:
        matched = pl.col("body").str.contains(regex)
        return body.filter(matched).select("rec"), body.filter(~matched).select("rec")
    got = body.select("rec", "body", pl.col("body").str.extract_groups(regex).alias("g")).unnest("g")
    # a regex that opens with a group matched iff that group did; others need their own test
    first = re.match(r"\^\(\?P<(\w+)>", regex)
    matched = pl.col(first[1]).is_not_null() if first else pl.col("body").str.contains(regex)
    return got.filter(matched).drop("body"), got.filter(~matched).select("rec")


def regex_rows(parts: dict[str, pl.DataFrame]) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """(rows, failures) of several single-line families at once: one polars call runs every query
    (a few small queries per family cost more in calls than in work)."""
    names = list(parts)
    plans = [q for name in names for q in _regex_plan(parts[name], REGEXES[name])]
    done = pl.collect_all(plans) if plans else []
    out = {}
    for i, name in enumerate(names):
        rows, failed = done[2 * i], done[2 * i + 1]
        lists = [split_words(rows[c]) for c in rows.columns if c.endswith("_list")]
        out[name] = (rows.with_columns(lists) if lists else rows, failed)
    return out


def split_words(col: pl.Series) -> pl.Series:
    """A string column split at runs of ASCII blanks, as Arrow's ascii_split_whitespace splits it
    (polars, not Arrow: pyarrow.compute takes 0.07 s to load, more than these few rows cost)."""
    words = col.str.replace_all(r"[\t\n\x0b\x0c\r ]+", " ").str.split(" ")
    # a split of "" is [""]; the grammar's list of no words is []
    blank = col.str.strip_chars() == ""
    no_words = pl.lit([], dtype=pl.List(pl.String))
    return pl.select(pl.when(blank).then(no_words).otherwise(words)).to_series().alias(col.name)


def _explode_expansions(part: pl.DataFrame, _cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """doExpansion: one row per `<job>:found|notfound`, one row with no job when the list is empty."""
    regex = r"^NP: +(?P<nodepool>\S+) Expansions in this order:(?P<rest>(?: +\d+:(?:found|notfound))*) *$"
    matched = part["body"].str.contains(regex)
    got = part.filter(matched).select("rec", pl.col("body").str.extract_groups(regex).alias("g")).unnest("g")
    entries = got.with_columns(pl.col("rest").str.extract_all(r"\d+:\w+").alias("e"))
    rows = entries.explode("e", empty_as_null=True).select(
        "rec", "nodepool",
        pl.col("e").str.split(":").list.get(0, null_on_oob=True).alias("job_id"),
        pl.col("e").str.split(":").list.get(1, null_on_oob=True).alias("found"),
    )
    return rows, part.filter(~matched).select("rec")


_CS_ITEM = r"^(?P<work_type>\S+) (?P<job_id>\d+) (?P<memory_gb>\d+)GB(?: +(?P<reason>.*\S))? *$"
_CS_REFUSED_ITEM = r"^(?P<work_type>\S+) (?P<job_id>\d+) *$"
# 2.0.x print no memory: "<work_type> <job_id>[ <reason>]" (bare, it reads like a refused item's header)
_CS_BARE_ITEM = r"^(?P<work_type>\S+) (?P<job_id>\d+)(?: +(?P<reason>.*\S))? *$"
_CS_LIST = r"^\t(?P<kind>Existing|Additions|Removals)\[\d+\]: *(?P<res>.*)$"
_CS_RES = r"\S+\.\d+\^\d+(?:\^P)?"


def _schedule_state(part: pl.DataFrame, cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The Orchestrator structure (R1), line by line with vectorised classification."""
    lines = cont.join(part.select("rec"), on="rec", how="semi").with_columns(
        pl.col("text").str.strip_chars_end(" \r")
    ).filter(pl.col("text").str.strip_chars() != "")
    t = pl.col("text")
    lines = lines.with_columns(
        pl.when(t.str.contains(_CS_ITEM)).then(pl.lit("item"))
        .when(t.str.contains(r"^\tRefused: ")).then(pl.lit("refused"))
        .when(t.str.contains(_CS_REFUSED_ITEM)).then(pl.lit("refused_item"))
        .when(t.str.contains(_CS_BARE_ITEM) & ~t.str.starts_with("\t")).then(pl.lit("bare_item"))
        .when(t.str.contains(_CS_LIST)).then(pl.lit("list"))
        .when(t.str.contains(rf"^\t *(?:{_CS_RES} *)+$")).then(pl.lit("wrap"))
        .otherwise(None).alias("shape")
    )
    heads = ["item", "refused_item", "bare_item"]
    lines = lines.with_columns(pl.col("shape").is_in(heads).cum_sum().over("rec").alias("item_no"))
    # a bare header followed by share lists is a 2.0.x item (memory not printed), not a refused one
    listed = lines.group_by("rec", "item_no").agg((pl.col("shape") == "list").any().alias("_listed"))
    lines = lines.join(listed, on=["rec", "item_no"], how="left").with_columns(
        pl.when(pl.col("shape").is_in(["refused_item", "bare_item"]) & pl.col("_listed"))
        .then(pl.lit("bare_item")).otherwise(pl.col("shape")).alias("shape")).drop("_listed")
    # the grammar's shape: every item is a header and its three lists, or a header and `Refused:`
    per_item = lines.group_by("rec", "item_no").agg(
        pl.col("shape").first().alias("head"), (pl.col("shape") == "list").sum().alias("lists"),
        (pl.col("shape") == "refused").sum().alias("refusals"), pl.col("shape").is_null().any().alias("odd"),
    )
    broken = per_item.filter(
        pl.col("odd") | (pl.col("item_no") == 0)
        | (pl.col("head").is_in(["item", "bare_item"]) & ((pl.col("lists") != 3) | (pl.col("refusals") > 0)))
        | ((pl.col("head") == "refused_item") & ((pl.col("refusals") != 1) | (pl.col("lists") > 0)))
    ).select("rec").unique()
    lines = lines.join(broken, on="rec", how="anti")
    item = t.str.extract_groups(_CS_ITEM)
    ref = t.str.extract_groups(_CS_REFUSED_ITEM)
    bare = t.str.extract_groups(_CS_BARE_ITEM)
    lines = lines.with_columns(
        pl.when(pl.col("shape") == "item").then(item.struct.field("work_type"))
        .when(pl.col("shape") == "refused_item").then(ref.struct.field("work_type"))
        .when(pl.col("shape") == "bare_item").then(bare.struct.field("work_type")).alias("work_type"),
        pl.when(pl.col("shape") == "item").then(item.struct.field("job_id"))
        .when(pl.col("shape") == "refused_item").then(ref.struct.field("job_id"))
        .when(pl.col("shape") == "bare_item").then(bare.struct.field("job_id")).alias("job_id"),
        pl.when(pl.col("shape") == "item").then(item.struct.field("memory_gb")).alias("memory_gb"),
        pl.when(pl.col("shape") == "item").then(item.struct.field("reason"))
        .when(pl.col("shape") == "bare_item").then(bare.struct.field("reason"))
        .when(pl.col("shape") == "refused").then(t.str.replace(r"^\tRefused: *", "").str.strip_chars())
        .alias("reason"),
        pl.when(pl.col("shape") == "list").then(t.str.extract(_CS_LIST, 1)).alias("kind"),
        pl.when(pl.col("shape").is_in(["list", "wrap"])).then(t.str.extract_all(_CS_RES)).alias("res"),
    )
    # carry each item's header down to its list lines, and each list's kind down to its wraps
    lines = lines.with_columns(
        pl.col("work_type", "job_id", "memory_gb").forward_fill().over("rec", "item_no"),
        pl.col("kind").forward_fill().over("rec", "item_no"),
        pl.col("reason").forward_fill().over("rec", "item_no"),
    )
    refused = lines.filter(pl.col("shape") == "refused").select("rec", "line", "work_type", "job_id", "reason")
    lists = lines.filter(pl.col("shape").is_in(["list", "wrap"]))
    # an empty list still yields one row (so a job with nothing keeps its reason); a wrap never does
    lists = lists.filter((pl.col("shape") == "list") | (pl.col("res").list.len() > 0))
    shares = lists.explode("res", empty_as_null=True).with_columns(
        pl.col("res").str.extract(r"^(\S+)\.\d+\^", 1).alias("host"),
        pl.col("res").str.extract(r"\.(\d+)\^", 1).alias("share_id"),
        pl.col("res").str.extract(r"\^(\d+)", 1).alias("init_ms"),
        pl.when(pl.col("res").is_null()).then(None)
        .otherwise(pl.col("res").str.ends_with("^P").cast(pl.String).str.to_lowercase()).alias("purged"),
    ).select("rec", "line", "work_type", "job_id", "memory_gb", "reason", "kind", "host", "share_id", "init_ms",
             "purged")
    rows = pl.concat([shares, refused], how="diagonal").sort("rec", "line", maintain_order=True).drop("line")
    return rows, broken


def _record_lines(part: pl.DataFrame, cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rec, line, k, text) of the records' continuation lines, the trailing blank ones dropped (the
    grammar reads the stripped text), k numbering each record's lines; and the recs with none."""
    lines = cont.join(part.select("rec"), on="rec", how="semi").select("rec", "line", "text")
    blank = pl.col("text").str.strip_chars() == ""
    last = pl.when(~blank).then(pl.int_range(pl.len())).max().over("rec")
    lines = lines.filter(pl.int_range(pl.len()).over("rec") <= last).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over("rec").alias("k"))
    return lines, part.select("rec").join(lines.select("rec").unique(), on="rec", how="anti")


# tokens a field of any token holds that the grammar's lexer may read as another terminal (see
# replay/parsing/csrc/templates.c is_word): such a record is left to the grammar
_NOT_A_WORD = r"^(?:[=:]+|wantedby\.\S+)$"
_OCC_HEADER = r"^ *Name +Blacklisted +Order +Active +Shares +Unused +Shares +Memory +\(MB\) +Jobs *$"
_OCC_RULE = r"^ *(?:-{2,} +)+\.\.\. *$"
_OCC_ROW = rf"^ *{_MACHINE} *(?:\[(?P<free>\d+)\])? *$"


def _occupancy_table(part: pl.DataFrame, cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The DEBUG occupancy table (O1): a header line, a rule line, then one row per machine (a
    table with no machine is one row with no fields, as the grammar's Transformer gives it)."""
    lines, bare = _record_lines(part, cont)
    t, k = pl.col("text"), pl.col("k")
    row = t.str.extract_groups(_OCC_ROW)
    lines = lines.with_columns(row.alias("g")).unnest("g")
    ok = (pl.when(k == 0).then(t.str.contains(_OCC_HEADER)).when(k == 1).then(t.str.contains(_OCC_RULE))
          .otherwise(pl.col("m_host").is_not_null() & ~pl.col("m_host").str.contains(_NOT_A_WORD)
                     & ~pl.col("m_blacklisted").str.contains(_NOT_A_WORD)))
    per_rec = lines.group_by("rec").agg(ok.all().alias("ok"), pl.len().alias("n"))
    broken = pl.concat([bare, per_rec.filter(~pl.col("ok") | (pl.col("n") < 2)).select("rec")])
    good = per_rec.filter(pl.col("ok") & (pl.col("n") >= 2))
    rows = lines.filter(k >= 2).join(good.select("rec"), on="rec", how="semi").drop("line", "k", "text")
    rows = rows.with_columns(split_words(rows["m_jobs_list"].str.strip_chars()))  # "2 1 [4]": no word after 1
    empty = good.filter(pl.col("n") == 2).select("rec")  # a header and a rule: the table has no machine
    out = pl.concat([rows, empty], how="diagonal").sort("rec", maintain_order=True)
    return out, broken


_SECTION = r"^ *(?P<section>Expanded|Shrunken|Stable|Dormant|Reserved) *: *$"
_JOB_HEADER = (r"^ *ID +JobName +User +Class +Shares +Order +QShares +NTh +Memory +nQuest +Ques +Rem +InitWait "
               r"+Max +P/Nst *$")
_JOB_ROW = rf"^ *{_RMJOB} *$"
_RMJOB_FIELDS = re.findall(r"\?P<(\w+)>", _RMJOB)
# the grammar's order of a section's lines: its name, then <none> or a header and job rows (no
# blank line inside a section; blank lines, or none, between sections)
_SECTION_STEPS = {("", "section"), ("section", "none"), ("section", "header"), ("none", "blank"),
                  ("none", "section"), ("header", "row"), ("header", "blank"), ("header", "section"),
                  ("row", "row"), ("row", "blank"), ("row", "section"), ("blank", "blank"), ("blank", "section")}


def _sched_sections(part: pl.DataFrame, cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The DEBUG pretty-printed schedule (R2): per section, one row per job, or one row with only
    the section when it has none (as the grammar's Transformer gives them)."""
    lines, bare = _record_lines(part, cont)
    t = pl.col("text")
    lines = lines.with_columns(t.str.extract_groups(_JOB_ROW).alias("g")).unnest("g").with_columns(
        t.str.extract(_SECTION, 1).alias("section"),
        pl.when(t.str.contains(_SECTION)).then(pl.lit("section")).when(t.str.contains(r"^ *<none> *$"))
        .then(pl.lit("none")).when(t.str.contains(_JOB_HEADER)).then(pl.lit("header"))
        .when(pl.col("job_id").is_not_null()).then(pl.lit("row")).when(t.str.strip_chars() == "")
        .then(pl.lit("blank")).alias("shape"))
    prev = pl.col("shape").shift(1, fill_value="").over("rec")
    nxt = pl.col("shape").shift(-1, fill_value="").over("rec")
    step = pl.concat_str(prev, pl.lit(">"), pl.col("shape").fill_null("?"))
    allowed = [f"{a}>{b}" for a, b in sorted(_SECTION_STEPS)]
    words = pl.any_horizontal(pl.col("job_name", "user", "class", "init_wait").str.contains(_NOT_A_WORD))
    lines = lines.with_columns(
        (step.is_in(allowed) & ((pl.col("shape") != "row") | ~words.fill_null(False))).alias("ok"),
        pl.col("section").forward_fill().over("rec"), nxt.alias("next"))
    per_rec = lines.group_by("rec").agg(pl.col("ok").all(), pl.col("shape").last().is_in(["none", "header", "row"])
                                        .alias("ends"))
    broken = pl.concat([bare, per_rec.filter(~pl.col("ok") | ~pl.col("ends")).select("rec")])
    keep = (pl.col("shape").is_in(["row", "none"])) | ((pl.col("shape") == "header") & (pl.col("next") != "row"))
    rows = lines.join(broken, on="rec", how="anti").filter(keep).with_columns(
        pl.when(pl.col("shape") == "row").then(pl.col(c)).alias(c) for c in _RMJOB_FIELDS)
    return rows.select("rec", "section", *_RMJOB_FIELDS), broken


# family -> handler(records of the family, continuation lines) -> (rows, failures)
# the grammar's nodes_list splits a token such as "12," into INT and WORD: such a token, or any byte
# its lexer reads otherwise (other blanks, non-ASCII), leaves the record to the grammar
_NODE_TOKEN = re.compile(r"-?\d+|[^\s\d-][^\s]*|-(?:[^\s\d][^\s]*)?")
_NODE_TEXT = re.compile(r"[\x21-\x7e \t\f\r\n]+")


def _node_list(text: str) -> list[str] | None:
    """The grammar's nodes_list of `text` (tokens over lines, none lost), or None: left to it."""
    lines = text.split("\n")
    if not _NODE_TEXT.fullmatch(text) or not lines[0].split() or text.startswith("<None>"):
        return None
    tokens = [t for line in lines for t in line.replace("\t", " ").replace("\f", " ").replace("\r", " ").split(" ")
              if t]
    return tokens if all(_NODE_TOKEN.fullmatch(t) for t in tokens) else None


def _np_nodes(part: pl.DataFrame, cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """printNodepool's node list (`<None>`: the grammar's row with no field), read from the whole
    body as the grammar reads it (trimmed); a body it would lex otherwise goes on to the grammar.
    (The compiled reader, replay.parsing.boot_scan, takes a chunk's canonical ones before this.)"""
    recs, lists, failed = [], [], []
    for rec, text in full_bodies(part, cont).iter_rows():
        got = [] if text == "<None>" else _node_list(text or "")
        if got is None:
            failed.append(rec)
        else:
            recs.append(rec)
            lists.append(got or None)
    rows = pl.DataFrame({"rec": recs}, schema={"rec": pl.UInt32})
    if any(lists):
        rows = rows.with_columns(pl.Series("nodes_list", lists, dtype=pl.List(pl.String)))
    return rows, pl.DataFrame({"rec": failed}, schema={"rec": pl.UInt32})


# a WORD or INT token the grammar's lexer reads whole (not "12," an INT and a WORD)
_TOK = r"(?:-?\d+|[^\s\d-]\S*|-(?:[^\s\d]\S*)?)"
_PURGE = (rf"^Nodepool: (?P<nodepool>{_TOK}) (?P<down>Host dead:|Host offline:|Host dead/offline:) "
          rf"(?P<work_type>{_TOK}) purge: (?P<host>{_TOK})$",
          rf"^Nodepool: (?P<nodepool>{_TOK}) Purge (?P<work_type>{_TOK}) on dead/offline: (?P<host>{_TOK})$")


def _node_purge(part: pl.DataFrame, _cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Both shapes of a purge (the 2.0.x one names no HOST_DOWN); other bodies go on to the grammar."""
    first = part.select("rec", pl.col("body").str.extract_groups(_PURGE[0]).alias("g")).unnest("g")
    second = part.select("rec", pl.col("body").str.extract_groups(_PURGE[1]).alias("g")).unnest("g")
    a, b = first["host"].is_not_null(), second["host"].is_not_null() & first["host"].is_null()
    rows = pl.concat([first.filter(a), second.filter(b)], how="diagonal_relaxed").sort("rec", maintain_order=True)
    return rows, part.filter(~(a | b)).select("rec")


HANDLERS: dict[str, Callable[[pl.DataFrame, pl.DataFrame], tuple[pl.DataFrame, pl.DataFrame]]] = {
    "do_expansion": _explode_expansions,
    "np_nodes": _np_nodes,
    "node_purge": _node_purge,
    "schedule_state": _schedule_state,
    "occupancy_table": _occupancy_table,
    "sched_sections": _sched_sections,
}


def fast_rows(family: str, part: pl.DataFrame, cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, failures) of one family; failures are the `rec` of records it could not take."""
    if family in HANDLERS:
        return HANDLERS[family](part, cont)
    return regex_rows({family: part})[family]
