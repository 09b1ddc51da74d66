"""The DUCC release a log is replayed as: the one place every command reads it from.

In order: `--rm-release R` (the option, injected into the tables by `with_option`), the banner's
`DUCC Version` (`Scheduler.init` at boot), the message forms that differ between releases (a log
cut mid-stream), else the latest release rmreplay knows. A version that is not on the list
(rmref.releases) is replayed as the nearest earlier release on it, and the evidence says so.

The release reaches rmref as `Config.behaviours` (replay.model.start.bootstrap).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass

import polars as pl

from replay.model.reads import narrow
from replay.model.release_names import resolve
from replay.parsing.sources import InputError
from replay.model.logorder import log_order
from rmref.releases import LATEST, RELEASES, Release

BANNER, OPTION, INFERRED, DEFAULT = "banner", "option", "inferred", "default"
SETTING = "DUCC release"  # its name in the audit's `assumed` list
OPTION_TABLE = "rm_release_option"  # the --rm-release value, beside the parsed tables


@dataclass(frozen=True)
class ReleaseChoice:
    """The release a replay uses, where that came from (banner/option/inferred/default), and why."""

    release: Release
    source: str
    evidence: str

    def to_json(self) -> dict[str, str]:
        """report.json's `rm_release`."""
        return {"release": self.release.name, "source": self.source, "evidence": self.evidence}


def with_option(tables: MutableMapping[str, pl.DataFrame], option: str | None) -> None:
    """Record `--rm-release` beside the tables; InputError (exit 2) for a name that is no release."""
    if option:
        try:
            resolve(option)
        except ValueError as exc:
            raise InputError(f"--rm-release: {exc}") from None
        tables[OPTION_TABLE] = pl.DataFrame({"release": [option]})


# Message forms that differ between releases, found by running one scenario through every release's
# real RM (tests/oracle): (what the log shows, table, predicate, the releases that write it).
def _signals(tables: Mapping[str, pl.DataFrame]) -> list[tuple[str, set[str]]]:
    names = [r.name for r in RELEASES]
    upto_201, from_210, from_300 = set(names[:2]), set(names[2:]), set(names[names.index("3.0.0"):])
    from_220 = set(names[names.index("2.2.0"):])
    out: list[tuple[str, set[str]]] = []

    def rows(name: str, cols: tuple[str, ...]) -> pl.DataFrame:
        try:
            return narrow(tables, name, cols)
        except (KeyError, pl.exceptions.ColumnNotFoundError):  # a table or column this read leaves out
            return pl.DataFrame()

    tags = rows("job_events", ("tag",))
    if tags.height and tags["tag"].drop_nulls().len():
        spr = int((tags["tag"] == "[SPR]").sum())
        out.append(("`[SPR] State:` process events (2.0.x)" if spr else "`[P]/[S]/[R] State:` process events",
                    upto_201 if spr else from_210))
    sched = rows("schedule", ("memory_gb", "kind"))
    listed = sched.filter(pl.col("kind").is_not_null()) if sched.height else sched
    if listed.height:
        bare = listed["memory_gb"].is_null().all()
        out.append(("createState items without their memory (2.0.x)" if bare else "createState items with memory",
                    upto_201 if bare else from_210))
    # countFreeableMachines lists the machines a reservation could free before any is set aside for
    # clearing, so a log where setupPreemptions' order rule (2.2.0 on) can matter shows the form
    listed = rows("expansions", ("kind", "hosts"))
    if listed.height:
        hosts = listed.filter(pl.col("kind") == "freeable_order")["hosts"].explode().drop_nulls()
        if hosts.len():
            ordered = bool(hosts.str.contains(r":\d+$").all())
            out.append(("`Machines to search in order:` host:order (2.2.0 on)" if ordered
                        else "`Machines to search:` without orders (before 2.2.0)",
                        from_220 if ordered else set(names) - from_220))
    if _rule_takes_an_unmatched_host(rows("nodes", ("event", "short_name", "file", "line")),
                                     lambda: rows("messages", ("method", "text", "file", "line"))):
        out.append(("`getNodepoolByName node:H P add by rule.` for a host no rule matched (3.0.0)", {"3.0.0"}))
    msgs = rows("messages", ("cls", "method"))
    if msgs.height:
        head = msgs.filter((pl.col("cls") == "ResourceManagerComponent") & (pl.col("method") == "handleNewMaster"))
        arrivals = rows("cycles", ("cycle",)).height
        if head.height:
            out.append(("`handleNewMaster` on every Orchestrator publication (3.0.0 on)", from_300))
        elif arrivals > 1 or _publication_taken(msgs):
            out.append(("no `handleNewMaster` line in a log with Orchestrator publications (before 3.0.0)",
                        set(names) - from_300))
    return out


def _rule_takes_an_unmatched_host(nodes: pl.DataFrame, messages: Callable[[], pl.DataFrame]) -> bool:
    """Whether a node rule's pool takes a host whose findNodepoolByRule round (its heartbeat line,
    3.0.0 on) has no `match by` line: 3.0.0 keeps the last rule tried when none matches (UIMA-5742);
    trunk adds the host by rule only on a match (UIMA-6097). `messages` is read only for a log with
    heartbeat lines."""
    if not nodes.height:
        return False
    beats = nodes.filter(pl.col("event").is_in(("heartbeat", "rule_match")))
    if not beats.filter(pl.col("event") == "heartbeat").height:
        return False
    msgs = messages()
    if not msgs.height:
        return False
    adds = msgs.filter(pl.col("method") == "getNodepoolByName").select(
        pl.lit("add").alias("event"), pl.col("text").str.extract(r"^node:(\S+) \S+ add by rule\.$").alias("short_name"),
        "file", "line").filter(pl.col("short_name").is_not_null())
    if not adds.height:
        return False
    # the RM adds a host by rule right after its round (nodeArrives is synchronized, so rounds do
    # not interleave): an add whose line before is the same host's heartbeat follows no match
    seq = pl.concat([beats.select("event", "short_name", "file", "line"), adds]).sort(log_order())
    before = seq.with_columns(pl.col("event").shift(1).over("file").alias("prev"),
                              pl.col("short_name").shift(1).over("file").alias("prev_short"))
    return bool(before.filter((pl.col("event") == "add") & (pl.col("prev") == "heartbeat")
                              & (pl.col("prev_short") == pl.col("short_name"))).height)


def _publication_taken(msgs: pl.DataFrame) -> bool:
    """Whether the log shows an Orchestrator publication the RM took in whole: its `Event arrives`,
    its `OR state arrives`, then the next publication's `Event arrives`, with no `ignored` warning
    between (that warning has the `OR state arrives` method), so that 3.0.0's `handleNewMaster`
    would lie among them. A log of one published schedule shows no second cycle, yet the
    publications before it."""
    cls, method = pl.col("cls"), pl.col("method")
    listener = (cls == "ResourceManagerEventListener") & (method == "onOrchestratorStateUpdateEvent")
    arrives = (cls == "ResourceManagerComponent") & (method == "onJobManagerStateUpdate")
    seq = msgs.filter(listener | arrives).select(listener.alias("event_arrives"))["event_arrives"]
    return bool((seq.shift(1, fill_value=False) & ~seq & seq.shift(-1, fill_value=False)).any())


def _inferred(tables: Mapping[str, pl.DataFrame]) -> ReleaseChoice | None:
    signals = _signals(tables)
    if not signals:
        return None
    fits = set.intersection(*(s for _, s in signals))
    seen = "; ".join(text for text, _ in signals)
    if not fits:
        return ReleaseChoice(LATEST, DEFAULT, f"no banner; the release-specific message forms disagree ({seen}): "
                                              f"replayed as {LATEST.name}")
    ordered = [r for r in RELEASES if r.name in fits]
    span = ordered[0].name if len(ordered) == 1 else f"{ordered[0].name} to {ordered[-1].name}"
    return ReleaseChoice(ordered[-1], INFERRED, f"no banner; {seen}: written by {span}, replayed as the latest of "
                                                f"them, {ordered[-1].name} (name it with --rm-release)")


def choose(tables: Mapping[str, pl.DataFrame]) -> ReleaseChoice:
    """The release this log is replayed as (see the module docstring)."""
    banner = None
    config = tables.get("config")
    if config is not None and config.height:
        hit = config.filter(pl.col("key") == "DUCC Version")
        if hit.height:
            banner = (str(hit["value"][0]).strip(), hit["file"][0], hit["line"][0])
    rm_version = None
    if config is not None and config.height:
        rm = config.filter(pl.col("key") == "RM Version")
        rm_version = str(rm["value"][0]).strip() if rm.height else None
    said = f"the banner's DUCC Version {banner[0]} ({banner[1]} line {banner[2]})" if banner else None
    if rm_version and said:
        said += f", RM Version {rm_version}"
    option = tables.get(OPTION_TABLE)
    if option is not None and option.height:
        asked = str(option["release"][0])
        chosen, note = resolve(asked)
        why = f"--rm-release {asked}" + (f" ({note})" if note else "")
        return ReleaseChoice(chosen, OPTION, why + (f"; the log says {said}" if said else "; the log has no banner"))
    if banner:
        try:
            chosen, note = resolve(banner[0])
        except ValueError:
            chosen, note = LATEST, f"not a version: replayed as {LATEST.name}"
        return ReleaseChoice(chosen, BANNER, f"{said}: {note}" if note else str(said))
    return _inferred(tables) or ReleaseChoice(
        LATEST, DEFAULT, f"no banner and no release-specific message form in the log: replayed as {LATEST.name}")
