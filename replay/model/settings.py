"""The settings a replay runs with, and where each one came from.

A log whose bootstrap section is present prints the RM's own configuration, and that wins. A
log that starts mid-stream gets its configuration from `--config DIR`, which may hold no more
than ducc.classes; what the folder does not give is read off the log where the log shows it,
and otherwise is DUCC's documented default (replay.model.resources.defaults):

* quantum: every job row prints the job's memory and its share order, order = ceil(memory /
  quantum), and every machine line its memory and order, order = floor(memory / quantum);
* fragmentation threshold: detectFragmentation caps a needy fair-share job's need at the
  threshold, and finds a job that holds the threshold or more not needy;
* defragmentation: detectFragmentation runs only when it is on;
* global allotment: every fixed-share and reservation count prints the allotment it checks;
* initialization cap, expand-by-doubling, prediction (for classes that do not set their own):
  the values that make rmref's cap chain give the caps the RM logged (see `choose_cap_settings`).

Each setting becomes an `Assumption` (setting, value, source, evidence); source is `config` (the
log's bootstrap or the --config files), `inferred` (from the log) or `default`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from replay.model.reads import narrow
from replay.model.resources.defaults import DEFAULTS_FILE, DOCUMENTED_DEFAULTS
from replay.model.logorder import log_order
from rmref import UNLIMITED, CapInput, job_caps
from rmref.model import ClassDef

CONFIG, INFERRED, DEFAULT = "config", "inferred", "default"

QUANTUM = "ducc.rm.share.quantum"
THRESHOLD = "ducc.rm.fragmentation.threshold"
DEFRAGMENTATION = "ducc.rm.defragmentation"
GLOBAL_ALLOTMENT = "ducc.rm.global_allotment"
USER_ALLOTMENTS = "user allotments (ducc.users)"
INIT_CAP = "ducc.rm.initialization.cap"
DOUBLING = "ducc.rm.expand.by.doubling"
PREDICTION = "ducc.rm.prediction"


@dataclass(frozen=True)
class Assumption:
    """One setting (or machine) the replay used: its value, where it came from and why."""

    setting: str
    value: str
    source: str  # config / inferred / default
    evidence: str


def shown(assumed: Iterable[Assumption]) -> list[str]:
    """Each assumption as the commands print it ("setting = value (source)"), once: the parts of a
    log between gaps each list what they assumed, often the same."""
    return list(dict.fromkeys(f"{a.setting} = {a.value} ({a.source})" for a in assumed))


def _where(file: str | None, line: int | None) -> str:
    if file == DEFAULTS_FILE:
        return f"DUCC's documented default ({DEFAULTS_FILE})"
    return f"{file} line {line}" if line is not None else f"{file}: not set, the RM's built-in default"


def from_config(setting: str, value: object, file: str | None, line: int | None) -> Assumption:
    """A value the log's bootstrap or the --config files give."""
    return Assumption(setting, _text(value), DEFAULT if file == DEFAULTS_FILE else CONFIG, _where(file, line))


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _documented(setting: str, why: str) -> Assumption:
    return Assumption(setting, DOCUMENTED_DEFAULTS.get(setting, "true"), DEFAULT,
                      f"{why}; DUCC's documented default ({DEFAULTS_FILE})")


# ---------------------------------------------------------------------------------------------
# quantum


def _interval(bounds: Iterable[tuple[float, float, bool]]) -> tuple[float, float] | None:
    """Intersection of [lo, hi) (closed_hi False) or (lo, hi] intervals as integer range bounds."""
    lo, hi = 1.0, math.inf
    for a, b, lower_open in bounds:
        lo = max(lo, math.floor(a) + 1 if lower_open else math.ceil(a))
        hi = min(hi, b)
    return (lo, hi) if lo <= hi else None


def infer_quantum(tables: Mapping[str, pl.DataFrame], classes: set[str] | None = None,
                  machines: bool = True) -> Assumption:
    """ducc.rm.share.quantum (GB) from the job rows (memory, order) of `classes` (default all) and,
    when every pool takes it (`machines`), the machine lines (memory, order)."""
    jobs = tables["jobs"].filter((pl.col("memory_gb") > 0) & (pl.col("order") > 0))
    if classes is not None:
        jobs = jobs.filter(pl.col("class").is_in(list(classes)))
    jobs = jobs.select("memory_gb", "order", "job_id").unique(["memory_gb", "order"], keep="first", maintain_order=True)
    # order = ceil(m / q): m/o <= q < m/(o-1)
    job_bounds = [(m / o, m / (o - 1) - 1e-9 if o > 1 else math.inf, False) for m, o, _ in jobs.iter_rows()]
    sized = pl.concat([
        tables["placements"].select("memory_mb", pl.col("m_order").alias("order")),
        tables["occupancy"].select("memory_mb", "order"),
        tables["nodes"].filter(pl.col("event") == "arrive").select("memory_mb", pl.col("share_order").alias("order")),
    ]).drop_nulls().filter(pl.col("order") > 0).unique(maintain_order=True)
    sized = sized if machines else sized.clear()
    # order = floor(M / q), M in GB: M/(o+1) < q <= M/o
    machine_bounds = [(mb / 1024 / (o + 1), mb / 1024 / o, True) for mb, o in sized.iter_rows()]
    published = _published_quanta(tables, classes)
    # the published schedule's memory is quantum x order exactly: it pins the quantum
    exact = [(q, q, False) for q in published]
    span = (_interval(job_bounds + machine_bounds + exact) or _interval(job_bounds + machine_bounds)
            or _interval(job_bounds))
    if not job_bounds and not machine_bounds or span is None:
        return _documented(QUANTUM, "no job or machine line shows memory with its order")
    lo, hi = span
    fits = [q for q in range(int(lo), int(min(hi, lo + 64)) + 1) if q <= hi]
    if not fits:
        return _documented(QUANTUM, "the job rows' memory and order fit no whole quantum")
    example = ", ".join(f"job {j}: {m} GB is order {o}" for m, o, j in jobs.head(3).iter_rows())
    seen = f"{jobs.height} job size(s) ({example}) and {sized.height} machine size(s)"
    if published and len(fits) == 1:
        return Assumption(QUANTUM, str(fits[0]), INFERRED,
                          f"{seen}, and the published schedule's memory per process (quantum x order: "
                          + ", ".join(f"job {j}: {m} GB at order {o}" for j, m, o in published.values())
                          + f") fit {fits[0]} only")
    if len(fits) == 1 and hi != math.inf:
        return Assumption(QUANTUM, str(fits[0]), INFERRED,
                          f"{seen}: order = ceil(memory / quantum) fits {fits[0]} only")
    pick = 1 if 1 in fits else fits[0]
    top = "or more" if hi == math.inf else f"to {int(hi)}"
    return Assumption(QUANTUM, str(pick), INFERRED, f"{seen} fit any quantum from {int(lo)} {top}; "
                      f"{'the documented default' if pick == 1 else 'the smallest'} taken")


def _published_quanta(tables: Mapping[str, pl.DataFrame],
                      classes: set[str] | None) -> dict[float, tuple[int, int, int]]:
    """The quantum (GB) each published job shows, its memory per process in the schedule over its
    printed order (the RM publishes quantum x order, from 2.1.0 on; 2.0.x prints none) -> one
    (job, memory, order) showing it, for jobs of `classes` (default all)."""
    orders = pl.concat([narrow(tables, name, ("job_id", "order", "class")) for name in ("jobs", "counts")]
                       + [narrow(tables, "job_caps", ("job_id", "order")).with_columns(pl.lit(None, pl.String)
                                                                                     .alias("class"))])
    orders = orders.filter(pl.col("order") > 0).unique("job_id", keep="first", maintain_order=True)
    if classes is not None:
        theirs = orders.filter(pl.col("class").is_in(list(classes)))["job_id"].to_list()
        orders = orders.filter(pl.col("job_id").is_in(theirs))
    memory = narrow(tables, "schedule", ("job_id", "memory_gb")).filter(pl.col("memory_gb") > 0).unique(
        "job_id", keep="first", maintain_order=True)
    out: dict[float, tuple[int, int, int]] = {}
    for job, m, o in memory.join(orders.select("job_id", "order"), on="job_id").iter_rows():
        out.setdefault(m / o, (job, m, o))
    return out


# ---------------------------------------------------------------------------------------------
# defragmentation


def _fair_analysis(tables: Mapping[str, pl.DataFrame], classes: Iterable[ClassDef]) -> pl.DataFrame:
    fair = [c.name for c in classes if c.policy == "FAIR_SHARE"]
    return tables["defrag"].filter((pl.col("kind") == "analysis") & pl.col("class").is_in(fair)).select(
        "cycle", "job_id", "pure_fs", "nsh", "counted", "needed").drop_nulls()


def threshold_reading(tables: Mapping[str, pl.DataFrame],
                      classes: Iterable[ClassDef]) -> tuple[Assumption, tuple[int, int] | None]:
    """ducc.rm.fragmentation.threshold as the log gives it, and the least and greatest values the
    log allows where it does not pin one (None: a line states it, or needy rows show it exactly).

    A job needs min(counted - current, threshold) when it holds fewer than the threshold (and
    fewer than its pure fair share); a job that holds the threshold or more needs nothing. A donor
    below the threshold is printed with it; a rich donor holds the threshold or more. Nothing but a
    fair-share job found needy bounds it from below: DUCC takes 0 (no fair-share job is ever needy)."""
    donors = narrow(tables, "defrag", ("cycle", "kind", "donor_job", "shares", "count")).filter(
        pl.col("kind").is_in(["below_threshold", "donor_candidate"]))
    stated = Counter(donors.filter(pl.col("kind") == "below_threshold")["count"].drop_nulls().to_list())
    if stated:
        value, n = stated.most_common(1)[0]
        return Assumption(THRESHOLD, str(value), INFERRED,
                          f"{n} doFinalEvictions line(s) print the donor's fragmentation threshold as {value}"), None
    rows = _fair_analysis(tables, classes)
    lo, hi, exact = 0, UNLIMITED, Counter[int]()
    lo_at = hi_at = None
    for cycle, job, held in donors.filter(pl.col("kind") == "donor_candidate").select(
            "cycle", "donor_job", "shares").drop_nulls().iter_rows():
        if held < hi:
            hi, hi_at = held, (cycle, job, f"a rich donor with {held} processes")
    for cycle, job, pure, current, counted, needed in rows.iter_rows():
        if needed > 0:
            if current + 1 > lo or needed > lo:
                lo, lo_at = max(lo, current + 1, needed), (cycle, job)
            if needed < counted - current:
                exact[needed] += 1
        elif current < pure and counted > current and current < hi:
            hi, hi_at = current, (cycle, job, f"holds {current} and is not needy")
    if exact:
        value, n = exact.most_common(1)[0]
        return Assumption(THRESHOLD, str(value), INFERRED,
                          f"{n} needy row(s) of detectFragmentation capped at {value} processes"), None
    if lo_at is None and hi_at is None:
        return _documented(THRESHOLD, "no detectFragmentation row bounds it"), (0, UNLIMITED)
    default = int(DOCUMENTED_DEFAULTS[THRESHOLD])
    value = min(max(default, lo), hi)
    pinned = lo == hi
    bounds = [f"at least {lo} (cycle {lo_at[0]} job {lo_at[1]} needy)" if lo_at else "",
              f"at most {hi} (cycle {hi_at[0]} job {hi_at[1]} {hi_at[2]})" if hi_at else ""]
    return Assumption(THRESHOLD, str(value), INFERRED if pinned or value != default else DEFAULT,
                      f"detectFragmentation (and doFinalEvictions) show {' and '.join(b for b in bounds if b)}"
                      + ("" if pinned else "; the documented default fits" if value == default
                         else f"; {value} is the nearest")), None if pinned else (lo, hi)


def infer_defragmentation(tables: Mapping[str, pl.DataFrame]) -> Assumption:
    """ducc.rm.defragmentation: detectFragmentation runs (and logs) only when it is on."""
    analysed = (narrow(tables, "defrag", ("cycle", "kind")).filter(pl.col("kind").is_in(["analysis", "bypassed"]))
                ["cycle"].drop_nulls().n_unique())
    if analysed:
        return Assumption(DEFRAGMENTATION, "true", INFERRED, f"detectFragmentation ran in {analysed} cycle(s)")
    fair = (narrow(tables, "counts", ("cycle", "kind")).filter(pl.col("kind") == "given")
            ["cycle"].drop_nulls().n_unique())
    if fair:
        return Assumption(DEFRAGMENTATION, "false", INFERRED,
                          f"no detectFragmentation line in {fair} cycle(s) that counted fair-share work")
    return Assumption(DEFRAGMENTATION, "true", DEFAULT, "the log shows no fair-share counting; the RM's default")


# ---------------------------------------------------------------------------------------------
# global allotment


def _allotment_lines(tables: Mapping[str, pl.DataFrame], overridden: set[str]) -> pl.DataFrame:
    """(cycle, file, line, job_id, allotment_gb, user) of every allotment the log shows a count checked
    against, in log order: every fixed-share and reservation count prints it, and every allotment
    deferral names it (users of `overridden` left out: their own allotment is known)."""
    # a job's cap lines name its user too: after a gap that took its submission, they are all that
    # keeps a user with an allotment of its own from reading as the global one
    named = [narrow(tables, t, ("job_id", "user")) for t in ("jobs", "job_caps") if t in tables]
    users = pl.concat(named).drop_nulls().unique("job_id", keep="first", maintain_order=True)
    checked = tables["allotments"].filter((pl.col("kind") == "current") & pl.col("allotment_gb").is_not_null()).select(
        "cycle", "file", "line", "job_id", "allotment_gb")
    # a deferral names the user (the job's submission, which names it too, may be before the log
    # or a gap in it)
    deferred = narrow(tables, "counts", ("cycle", "file", "line", "job_id", "reason")).filter(
        pl.col("reason").str.contains("allotment of")).select(
        "cycle", "file", "line", "job_id",
        pl.col("reason").str.extract(r"allotment of (\d+)GB").cast(pl.Int64).alias("allotment_gb"),
        pl.col("reason").str.extract(r"exceeded by user (\S+)").alias("named"))
    checked = checked.with_columns(pl.lit(None, pl.String).alias("named"))
    return (pl.concat([checked, deferred]).drop_nulls("allotment_gb").join(users, on="job_id", how="left")
            .with_columns(pl.coalesce("user", "named").alias("user")).drop("named")
            .filter(~pl.col("user").is_in(list(overridden)) | pl.col("user").is_null())
            .sort(log_order("cycle"), nulls_last=False))


def infer_global_allotment(tables: Mapping[str, pl.DataFrame], overridden: set[str]) -> Assumption:
    """ducc.rm.global_allotment (GB): the RM does not log it at bootstrap, but every fixed-share
    and reservation count prints the allotment it checks against, and every allotment deferral
    names it. A user with an allotment of its own (ducc.users) shows that one instead, so only
    the other users' lines tell; where users' lines disagree (`infer_user_allotments` keeps each
    one's), the value is what the users with no line at all are checked against (`_disagreeing`)."""
    unlimited = Assumption(GLOBAL_ALLOTMENT, str(UNLIMITED), DEFAULT,
                           "no allotment line; unset in DUCC's documented defaults (no limit)")
    if not {"jobs", "allotments", "counts"} <= tables.keys():  # resources alone, no log
        return unlimited
    seen = _allotment_lines(tables, overridden)
    if not seen.height:
        return unlimited
    by_value = _users_by_value(seen)
    if len(by_value) > 1:
        return _disagreeing(tables, seen, by_value)
    last = seen.row(-1, named=True)
    return Assumption(GLOBAL_ALLOTMENT, str(last["allotment_gb"]), INFERRED,
                      f"{seen.height} allotment check(s); the last, job {last['job_id']} in cycle {last['cycle']}, "
                      f"against {last['allotment_gb']} GB")


def _users_by_value(seen: pl.DataFrame) -> dict[int, list[str]]:
    """Each allotment the lines show -> the users whose last line shows it (a line whose job names
    no user stands as a user of its own, `job N`), in the order the values are first shown."""
    who = seen.with_columns(pl.coalesce("user", pl.format("job {}", "job_id")).alias("who"))
    last = who.group_by("who", maintain_order=True).agg(pl.col("allotment_gb").last())
    out: dict[int, list[str]] = {}
    for user, gb in last.iter_rows():
        out.setdefault(gb, []).append(user)
    return out


def _gb(value: int) -> str:
    return "unlimited" if value >= UNLIMITED else f"{value} GB"


def _disagreeing(tables: Mapping[str, pl.DataFrame], seen: pl.DataFrame,
                 by_value: dict[int, list[str]]) -> Assumption:
    """The global allotment where users' lines show different ones: one at least is a user's own
    (ducc.users), and the log does not tell which is the global one, if any. Each user with lines
    is checked against its own lines' value; the value taken here is only what the users with no
    line are checked against: the one most users' lines show, and of a tie the larger. Neither
    value makes up a verdict: the RM prints every allotment deferral it makes (naming the user),
    so a user with no line had none of its work deferred or capped for its allotment, and where
    rmref's value defers work of such a user that the RM counted, the cycle's counts are left
    unaudited (replay.apps.audit.cycle)."""
    value = max(by_value, key=lambda gb: (len(by_value[gb]), gb))
    shown = "; ".join(f"{_gb(gb)} ({', '.join(sorted(users))})" for gb, users in sorted(by_value.items()))
    lined = {u for users in by_value.values() for u in users}
    unlined = sorted(set(_non_fair_users(tables)) - lined)
    tied = [gb for gb, users in by_value.items() if len(users) == len(by_value[value])]
    taken = "the value most users' lines show" if len(tied) == 1 else "the larger of those most users' lines show"
    return Assumption(GLOBAL_ALLOTMENT, str(value), INFERRED,
                      f"{seen.height} allotment check(s) disagree: {shown}; one at least is a user's own "
                      "(ducc.users), which the log does not tell from the global one. Each of these users is "
                      "checked against its own lines' value; "
                      + (f"the users with no allotment line ({', '.join(unlined)})" if unlined
                         else "a user with no allotment line")
                      + f" against {_gb(value)}, {taken} (the RM deferred and capped none of their work "
                      "for its allotment in the log: it prints every such check)")


def _non_fair_users(tables: Mapping[str, pl.DataFrame]) -> list[str]:
    """The users of the log's work of a class that is not fair share (work an allotment bounds;
    a class the configuration does not define counts too), in the order the log names them."""
    fair = set(narrow(tables, "classes", ("name", "policy")).filter(pl.col("policy") == "FAIR_SHARE")["name"]
               .to_list()) if "classes" in tables else set()
    jobs = narrow(tables, "jobs", ("user", "class")).drop_nulls("user")
    return list(dict.fromkeys(u for u, c in jobs.iter_rows() if c not in fair))


def infer_user_allotments(tables: Mapping[str, pl.DataFrame], global_gb: int) -> tuple[tuple[str, int], ...]:
    """The allotment of each user whose own allotment lines show another than `global_gb`, where
    no ducc.users was read: the lines print the allotment the RM checked that user's count against,
    its own or the global one, so a user whose lines disagree with the global reading has one of
    its own (or the global reading is another user's own): either way, its lines give its count's."""
    if not {"jobs", "allotments", "counts"} <= tables.keys():
        return ()
    seen = _allotment_lines(tables, set()).drop_nulls("user")
    last = seen.group_by("user", maintain_order=True).agg(pl.col("allotment_gb").last())
    return tuple(sorted((u, gb) for u, gb in last.iter_rows() if gb != global_gb))


def user_allotments_assumed(users: tuple[tuple[str, int], ...]) -> Assumption:
    """The users' own allotments read off their allotment lines, as `assumed` names them."""
    shown = ", ".join(f"{u} {_gb(gb)}" for u, gb in users)
    return Assumption(USER_ALLOTMENTS, shown, INFERRED,
                      "no ducc.users was read; these users' allotment lines show an allotment other than the "
                      "global one read: each user's count is checked against its own lines' allotment")


USERS_UNREAD = "neither the log nor --config gives ducc.users, where a user's own allotment is set"


def rests_on_unread_allotment(reason: str, user: str | None, own: Mapping[str, int]) -> bool:
    """Whether a deferral (`reason`, rmref's) rests on `user`'s allotment where ducc.users was not
    read: the global one was checked, and the user may have one of its own."""
    return "allotment" in reason and user not in own


def users_shown_allotted(tables: Mapping[str, pl.DataFrame]) -> set[str]:
    """The users some allotment line of the log shows checked against their allotment: the one
    the RM held for them, whether their own or the global one."""
    if not {"jobs", "allotments", "counts"} <= tables.keys():
        return set()
    return set(_allotment_lines(tables, set())["user"].drop_nulls().to_list())


def user_allotment_assumed(user: str, job: int, reason: str, global_gb: int) -> Assumption:
    """A user's allotment a simulated deferral rests on, taken as the global one (no ducc.users read)."""
    return Assumption(f"user {user}'s allotment", f"{_gb(global_gb)} (the global one)", INFERRED,
                      f"the simulation defers job {job} for it ({reason}); {USERS_UNREAD}")


# ---------------------------------------------------------------------------------------------
# the cap chain's class settings


@dataclass(frozen=True)
class CapSettings:
    """The ducc.rm.* cap settings a class that sets none of its own takes."""

    init_cap: int
    expand_by_doubling: bool
    prediction: bool


DOCUMENTED_CAPS = CapSettings(int(DOCUMENTED_DEFAULTS[INIT_CAP]), DOCUMENTED_DEFAULTS[DOUBLING] == "true",
                              DOCUMENTED_DEFAULTS[PREDICTION] == "true")


_INPUT_FIELDS = {"init_cap": "init_cap", "expand_by_doubling": "expand_by_doubling", "prediction": "use_prediction"}


def _agree(samples: Counter[tuple[CapInput, int, frozenset[str]]], s: CapSettings) -> int:
    # a class's own settings (`own`) stand: only the ones it takes from ducc.rm.* are tried
    return sum(n for (inp, actual, own), n in samples.items()
               if job_caps(replace(inp, **{_INPUT_FIELDS[f]: getattr(s, f) for f in _INPUT_FIELDS
                                           if f not in own})).actual == actual)


def _documented_fields(s: CapSettings) -> int:
    """How many of the settings are DUCC's documented defaults (which an equal agreement keeps)."""
    return sum(getattr(s, f) == getattr(DOCUMENTED_CAPS, f) for f in ("init_cap", "expand_by_doubling", "prediction"))


CAP_FIELDS = {INIT_CAP: "init_cap", DOUBLING: "expand_by_doubling", PREDICTION: "prediction"}
CLASS_LABELS = {INIT_CAP: "Initialization Cap", DOUBLING: "Expand By Doubling", PREDICTION: "Use Prediction"}


def choose_cap_settings(samples: Sequence[tuple[CapInput, int]], known: Mapping[str, Any] | None = None,
                        owner: str | None = None,
                        own: Sequence[frozenset[str]] = ()) -> tuple[CapSettings, list[Assumption]]:
    """The initialization cap, doubling and prediction under which rmref's cap chain gives the
    most of the logged caps (`samples`: each job's cap input and the cap the RM logged, for the
    jobs of classes that take these settings from ducc.properties). `known`: the settings read
    (CapSettings field: value), kept as they are; `owner`: the one class whose block lost the
    others, which the assumptions then name (its own labels) in place of the ducc.rm.* settings;
    `own` (one per sample, or none): the CapSettings fields the sample's class sets itself, which
    its cap input already carries and no candidate replaces."""
    counted = Counter((inp, a, own[i] if own else frozenset()) for i, (inp, a) in enumerate(samples))
    known = known or {}
    # an initialization cap shows as the cap of a job still waiting to initialize, and of one that
    # held nothing once initialized (doubling restarts from it)
    candidates = sorted({DOCUMENTED_CAPS.init_cap, 2} | {a for inp, a, mine in counted
                                                         if (not inp.initialized or not inp.current) and a > 0
                                                         and "init_cap" not in mine})
    # every combination, not one setting at a time: doubling and prediction can each bound the
    # same caps, so turning either off alone may agree with no more of them than the defaults do
    combos = [CapSettings(c, d, p) for c in ([known["init_cap"]] if "init_cap" in known else candidates)
              for d in ([known["expand_by_doubling"]] if "expand_by_doubling" in known else (True, False))
              for p in ([known["prediction"]] if "prediction" in known else (True, False))]
    best = max(combos, key=lambda s: (_agree(counted, s), _documented_fields(s)))
    total, agree = sum(counted.values()), _agree(counted, best)
    out = []
    for setting, field in CAP_FIELDS.items():
        if field in known:
            continue
        value, documented = getattr(best, field), getattr(DOCUMENTED_CAPS, field)
        values: Iterable[Any] = (True, False) if isinstance(value, bool) else candidates
        other = [replace(best, **{field: v}) for v in values if v != value]
        tells = any(_agree(counted, o) < agree for o in other)
        if not total or (not tells and value == documented):
            said = _documented(setting, "the logged caps do not tell" if total else "no cap logged")
        else:
            said = Assumption(setting, _text(value), INFERRED,
                              f"rmref's cap chain gives {agree} of the {total} logged caps with it"
                              + ("" if tells else " (and as many without it)"))
        if owner is not None:  # a class block cut short: its own line lost, not a ducc.rm.* setting
            said = replace(said, setting=f"class {owner}: {CLASS_LABELS[setting]}",
                           evidence=f"its line lost from the class's block; {said.evidence}")
        out.append(said)
    return best, out
