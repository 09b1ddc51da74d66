"""The recorded workload (replay.apps.simulate.workload) as a harness scenario (replay/javarm/run.py).

Times: the workload counts seconds from the log's first cycle; the harness's clock starts at 0 with
every node reporting. The scenario is shifted so that the earliest event of the workload is at 0
(`shift_ms`): a log that begins at the RM's boot then has its first cycle where the harness has its.
What the log cannot settle is said in `assumed` (one line each).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import polars as pl

from replay.apps.simulate.orchestrator import item_model
from replay.apps.simulate.reconstruct import median_gap
from replay.apps.simulate.workload import NodeEvent, Workload, WorkSpec
from replay.javarm.hash_orders import share_hashes
from replay.javarm.hashes import Hashes, hash_buckets
from replay.javarm.node_walks import node_ips
from replay.javarm.node_walks import note as ip_note
from replay.javarm.order import addition_orders, investment_orders
from replay.model.start import bootstrap
from replay.model.submission import submission_order
from replay.parsing.sources import InputError
from replay.model.logorder import log_order
from rmref.constants import UNLIMITED

TYPES = {"Job": "job", "Service": "service", "Reservation": "reservation", "ManagedReservation": "ap"}
# ducc.properties keys a scenario takes from a resources directory (the rest is the tree's default)
KEPT = re.compile(r"ducc\.rm\..*|ducc\.orchestrator\.state\.publish\.rate|ducc\.agent\.node\.metrics\.publish\.rate"
                  r"|ducc\.jd\.host\..*")
DROPPED = {"ducc.rm.scheduler", "ducc.rm.class.definitions", "ducc.rm.persistence.impl", "ducc.rm.user.registry"}
# the log's printed settings (the config table) and the property each is
LOG_SETTINGS = {"node stability": "ducc.rm.node.stability", "init stability": "ducc.rm.init.stability",
                "metrics update rate": "ducc.agent.node.metrics.publish.rate",
                "fragmentation threshold": "ducc.rm.fragmentation.threshold",
                "do defragmentation": "ducc.rm.defragmentation", "eviction policy": "ducc.rm.eviction.policy",
                "use prediction": "ducc.rm.prediction", "prediction fudge factor": "ducc.rm.prediction.fudge",
                "initialization cap": "ducc.rm.initialization.cap", "expand by doubling": "ducc.rm.expand.by.doubling"}


@dataclass(frozen=True)
class Scenario:
    """A harness scenario, the job ids it gives (DuccId k -> the log's job), and what was assumed."""

    scenario: dict[str, Any]
    job_of: dict[int, int]  # the harness's DuccId -> the workload's job id
    shift_ms: int  # harness time = workload seconds * 1000 + shift_ms
    assumed: tuple[str, ...]


def read_properties(path: Path) -> dict[str, str]:
    """key = value lines of a ducc.properties (comments and continuation-free lines only)."""
    out: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*[=:]\s*(.*?)\s*$", line)
        if m and not line.lstrip().startswith("#"):
            out[m.group(1)] = m.group(2)
    return out


@dataclass(frozen=True)
class Config:
    """What the harness's RM reads besides the workload: properties, ducc.classes, node files."""

    properties: dict[str, str]
    classes: str
    files: dict[str, str]
    assumed: tuple[str, ...] = ()  # what the source could not settle


def config_from_dir(folder: Path) -> Config:
    """(properties, ducc.classes text, node files) of a DUCC resources directory."""
    props = {k: v for k, v in read_properties(folder / "ducc.properties").items()
             if KEPT.fullmatch(k) and k not in DROPPED and "/" not in v and "${" not in v} \
        if (folder / "ducc.properties").is_file() else {}
    classes = (folder / "ducc.classes").read_text(errors="replace")
    files = {}
    for name in sorted(set(re.findall(r"nodefile\s*=\s*([^\s;}]+)", classes))) + ["ducc.users"]:
        if (folder / name).is_file():
            files[name] = (folder / name).read_text(errors="replace")
    return Config(props, classes, files)


def with_sets(config: Config, sets: tuple[tuple[str, str], ...]) -> Config:
    """The configuration with simulate's `--set KEY=VALUE` changes (keys already checked by rmref's
    apply_sets): a property as a property, `class.NAME.ATTR` appended to the class's definition (the
    RM takes the last value of an attribute), `user.NAME.max-allotment` as a ducc.users entry."""
    props, classes, files = dict(config.properties), config.classes, dict(config.files)
    for key, value in sets:
        if key.startswith("class."):
            name, _, attr = key[len("class."):].rpartition(".")
            pattern = re.compile(rf"^(\s*Class\s+{re.escape(name)}\b[^{{]*\{{[^}}]*?)\s*}}", re.M | re.S)
            classes, found = pattern.subn(lambda m: _set_attr(m.group(1), attr, value) + " }", classes, count=1)
            if not found:
                raise InputError(f"--set {key}: class {name} has no definition in the Java RM's ducc.classes")
        elif key.startswith("user."):
            user = key[len("user."):].rpartition(".")[0]
            files["ducc.users"] = files.get("ducc.users", "") + f"User {user} {{ max-allotment = {value} }}\n"
        else:
            props[key] = value
    return Config(props, classes, files, config.assumed)


def _set_attr(body: str, attr: str, value: str) -> str:
    """A class body with `attr = value`: replaced where the body states it (the RM refuses a duplicate), else added."""
    own = re.compile(rf"(^|[{{;\s])({re.escape(attr)}\s*=\s*)[^;}}\n]*")
    if own.search(body):
        return own.sub(lambda m: f"{m.group(1)}{m.group(2)}{value}", body, count=1)
    return f"{body}; {attr} = {value}"


def _full_names(tables: Mapping[str, pl.DataFrame]) -> dict[str, str]:
    """short host name -> the host's full name, for every host the log names with a domain."""
    hosts = tables["nodes"]["host"].drop_nulls().unique().sort().to_list()
    return {h.split(".", 1)[0]: h for h in hosts if "." in h}


def config_from_log(tables: Mapping[str, pl.DataFrame]) -> Config:
    """(properties, ducc.classes text, node files) written from what the log prints of its configuration.

    The log prints a node file's hosts by their short names; the files list the full names the
    nodes report under (a node file of short names alone leaves the reporting host in --default--)."""
    full = _full_names(tables)
    settings = dict(tables["config"].select("key", "value").iter_rows())
    props = {prop: str(settings[key]).split()[0] for key, prop in LOG_SETTINGS.items() if settings.get(key)}
    lines, files = [], {}
    pools = tables["nodepools"]
    for r in pools.iter_rows(named=True):
        body = [f"parent = {r['parent']}"] if r["parent"] else []
        if r.get("node_rule"):  # a `.regex` node file (3.0.0 on): the RM reads the rule from it, not hosts
            files[f"{r['name']}.regex"] = f"{r['node_rule']}\n"
            body.append(f"nodefile = {r['name']}.regex")
        elif r["nodes"] or (r["node_file"] and str(r["node_file"]) != "None"):  # an empty node file is a node file
            files[f"{r['name']}.nodes"] = "".join(f"{full.get(n, n)}\n" for n in r["nodes"] or ())
            body.append(f"nodefile = {r['name']}.nodes")
        if r["search_order"] is not None:
            body.append(f"search-order = {r['search_order']}")
        lines.append(f"Nodepool {r['name']} {{ {' ; '.join(body)} }}")
        if r["quantum"] and not r["parent"]:
            if props.setdefault("ducc.rm.share.quantum", str(r["quantum"])) != str(r["quantum"]):
                lines[-1] = lines[-1].replace(" }", f" ; share-quantum = {r['quantum']} }}")
    defaults = {str(settings.get("default fairshare class") or ""), str(settings.get("default reserve") or "")}
    # the RM needs a default FIXED_SHARE class and the log does not name it: the first the log lists
    fixed = tables["classes"].filter((pl.col("policy") == "FIXED_SHARE") & (pl.col("name") != "JobDriver"))
    assumed = []
    if not fixed.is_empty():
        first = str(fixed.sort(log_order())["name"][0])
        defaults.add(first)
        assumed.append(f"default FIXED_SHARE class {first} (the first the log prints: "
                       "the log does not name it)")
    if full:
        assumed.append("node files list the hosts' full names (the log prints them short)")
    config = bootstrap(tables).config  # quantum, user registry, global allotment: as every command reads them
    props.setdefault("ducc.rm.share.quantum", str(config.quantum_gb))  # 2.0.x print no pool quantum
    if config.user_allotments:
        files["ducc.users"] = "".join(f"User {u} {{ max-allotment = {gb} }}\n" for u, gb in config.user_allotments)
    if config.global_allotment < UNLIMITED:
        props["ducc.rm.global_allotment"] = str(config.global_allotment)
    for r in tables["classes"].unique("name", keep="last", maintain_order=True).iter_rows(named=True):
        body = [f"policy = {r['policy']}", f"nodepool = {r['nodepool']}", f"priority = {r['priority']}"]
        if r["policy"] == "FAIR_SHARE":
            body += [f"weight = {r['weight']}", f"initialization-cap = {r['init_cap']}",
                     f"expand-by-doubling = {str(r['expand_by_doubling']).lower()}",
                     f"use-prediction = {str(r['prediction']).lower()}", f"prediction-fudge = {r['prediction_fudge']}"]
        if r["policy"] == "RESERVE" and r["enforce"] is False:
            body.append("enforce = false")
        if r["cap"] and str(r["cap"]) != "2147483647":
            body.append(f"cap = {r['cap']}")
        if r["max_allotment"] is not None:
            body.append(f"max-allotment = {r['max_allotment']}")
        for key, column in (("debug", "debug"), ("users", "authorized_users")):
            if r[column]:
                body.append(f"{key} = {r[column]}")
        if r["name"] in defaults:
            body.append("default = true")
        lines.append(f"Class {r['name']} {{ {'; '.join(body)} }}")
    return Config(props, "\n".join(lines) + "\n", files, tuple(assumed))


def _submit_ms(w: WorkSpec, shift_ms: int, pub_ms: int, dated: Mapping[int, float]) -> int:
    """When the harness submits the work: its submission date where the log prints it (`dated`), else
    when the log first names it, and at the latest one Orchestrator publication before the RM
    scheduled it (a new piece of work is published first WaitingForDriver or Received, then to the scheduler)."""
    latest = min(w.submit, w.submit + w.admit_delay - pub_ms / 1000)
    return max(0, round(min(dated.get(w.job_id, latest), latest) * 1000) + shift_ms)


def logged_submissions(tables: Mapping[str, pl.DataFrame]) -> dict[int, float]:
    """job -> its submission date as the RM's prediction prints it (`getPrjCap ... ST`), in seconds from
    the first cycle. ST is epoch milliseconds and the log's stamps are local time: the offset between
    them is the median over jobs of ST less the first line naming the job, rounded to a quarter hour."""
    cyc = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle")
    caps = tables["job_caps"].filter(pl.col("prj_st").is_not_null() & (pl.col("prj_st") > 0))
    if cyc.is_empty() or caps.is_empty():
        return {}
    st = dict(caps.group_by("job_id").agg(pl.col("prj_st").min()).iter_rows())
    named = dict(tables["jobs"].select("job_id", "ts").drop_nulls().group_by("job_id").agg(pl.col("ts").min())
                 .iter_rows())
    gaps = sorted(st[j] - round(named[j].replace(tzinfo=UTC).timestamp() * 1000) for j in st if j in named)
    if not gaps:
        return {}
    quarter = 900_000
    offset = round(gaps[len(gaps) // 2] / quarter) * quarter
    t0 = round(cyc["ts_start"][0].replace(tzinfo=UTC).timestamp() * 1000)
    return {j: (ms - offset - t0) / 1000 for j, ms in st.items()}


def _in_id_order(times: list[int], tied: list[bool] | None = None) -> list[int]:
    """Submission times (in the log's job-id order) made increasing: DuccIds are given in submission
    order, so work with a lower id was submitted earlier, strictly unless the log shows it tied with
    the next (`tied[i]`: the same millisecond, replay.model.submission). Each estimate is an upper bound
    (when the log first names the work) or exact (a printed date): a later-numbered piece of work
    pulls an earlier one back to or before it; what reaches 0 is spread forward a millisecond each."""
    out = list(times)
    step = [0 if tied and tied[i] else 1 for i in range(len(out) - 1)]
    for i in range(len(out) - 2, -1, -1):
        out[i] = min(out[i], out[i + 1] - step[i])
    for i in range(len(out)):
        out[i] = max(out[i], 0 if i == 0 else out[i - 1] + step[i - 1])
    return out


def _ties(work: list[WorkSpec], tables: Mapping[str, pl.DataFrame] | None) -> list[bool]:
    """For work in id order, whether each piece ties with the next (the same submission millisecond,
    as the log shows it: replay.model.submission): a tie spans every id between its first and last."""
    group = submission_order(tables) if tables is not None else {}
    ids = [w.job_id for w in work]
    last: dict[int, int] = {}  # tie group -> its highest place in id order
    for k, job in enumerate(ids):
        if job in group:
            last[group[job]] = k
    tied = [False] * max(0, len(ids) - 1)
    for k, job in enumerate(ids):
        root = group.get(job, job)
        for i in range(k, last.get(root, k)):
            tied[i] = True
    return tied


def _work(w: WorkSpec, shift_ms: int) -> dict[str, Any]:
    """One workload row as a scenario `work` entry."""
    out: dict[str, Any] = {"type": TYPES[w.work_type], "user": w.user, "class": w.class_name, "memory_gb": w.memory_gb,
                 "threads": w.threads,
                 "init_ms": round(w.init * 1000)}
    if w.is_job:
        # rmref's loop's item model (one model, replay.apps.simulate.orchestrator): the hand-outs take the
        # times fitted to the log's completions, the reported mean counts the log's own means
        model = item_model(w, w.item_ms)
        out["items"], out["items_done"] = w.items, w.items_done
        out["item_ms"] = max(1, round(model.item_ms))
        # exact, as simulate's loop sums them: a fitted hand-out replays its completion only on the same sums
        out["item_mean_ms"], out["item_start_ms"], out["item_init_ms"] = model.item_ms, w.start_delay * 1000.0, \
            w.init * 1000.0
        if model.handouts:
            out["handout_ms"] = list(model.handouts)
        if model.reported:
            out["report_ms"] = [[n, ms] for n, ms in model.reported]
        if w.max_processes:
            out["processes_max"] = str(w.max_processes)
    if w.duration is not None:
        out["duration_ms"] = round(w.duration * 1000)
    if w.cancel is not None:
        out["cancel_ms"] = round(w.cancel * 1000) + shift_ms
    return out


def _hash_note(hashes: Hashes) -> str:
    """What the scenario assumed of the RM's hash order of jobs (replay.javarm.hashes)."""
    if not hashes.hash_of:
        return "job DuccIds: UUIDs from the seed (the log prints no walk of a map of jobs)"
    cut = "; ".join(f"class {k}: its listings up to cycle {c:,} (later ones contradict them)"
                    for k, c in sorted(hashes.kept_to.items()))
    return ("job DuccIds: hashes under which each class's map and the needy map, at the size each had, walk "
            "their jobs in the order the log prints them (jobs in no such walk: UUIDs from the seed)"
            + (f"; {cut}; {hashes.left} job(s) left to the seed" if cut else ""))


def _share_note(hashes: Hashes) -> str:
    """What the scenario assumed of the RM's hash order of shares (replay.javarm.hash_orders)."""
    cut = "; ".join(f"{k}'s map of shares: its listings up to cycle {c:,} (later ones contradict them)"
                    for k, c in sorted(hashes.kept_to.items()))
    if not hashes.hash_of:
        return ("share DuccIds: UUIDs from the seed (" + (f"the log's Existing lists order tied shares in ways no "
                f"hashes keep: {cut}" if cut else "no Existing list shows shares that tie") + ")")
    return (f"share DuccIds: {len(hashes.hash_of)} share(s) the log's Existing lists show tied (uninitialized, "
            "equal times) or its connectShare lines show in a machine's walk given hashes under which each job's "
            "map of shares and each machine's (one that outgrows 16 buckets left out), at the size it had, walks "
            "them in the order printed, by the log's share ids (the harness's where it numbered shares as the "
            "log did); "
            "the others from the seed" + (f"; {cut}; {hashes.left} share(s) left to the seed" if cut else ""))


def logged_outages(tables: Mapping[str, pl.DataFrame], rate_ms: int) -> dict[str, list[tuple[float, str]]]:
    """host -> (seconds from the first cycle, what) of the heartbeat events the log shows: `silent` where
    an outage began (half a metrics period before the watchdog's `Missed heartbeat count[ 2 ]`; the
    first miss is not logged) and `back` where the node reported again: `Node recovers`, or, where a run
    of misses stops with no death and the log goes on past the next check (2.0.x prints no recovery),
    at the last miss logged (the node's next report came before the next check)."""
    cyc = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle")
    nodes = tables["nodes"]
    if cyc.is_empty() or nodes.is_empty():
        return {}
    t0 = cyc["ts_start"][0]
    end = (max([*nodes["ts"].drop_nulls().to_list(), *cyc["ts_start"].drop_nulls().to_list()])
           - t0).total_seconds()  # how far the log goes
    rows = nodes.filter(pl.col("event").is_in(["missed", "recover", "death"]) & pl.col("host").is_not_null())
    out: dict[str, list[tuple[float, str]]] = {}
    last: dict[str, float] = {}  # host -> its open run's last miss
    for ts, host, event, count in rows.sort(log_order("ts")).select("ts", "host", "event", "count").iter_rows():
        t = (ts - t0).total_seconds()
        if event == "missed" and count == 2:
            if host in last:  # a run that stopped before this one began
                out[host].append((last[host], "back"))
            out.setdefault(host, []).append((t - rate_ms / 2000, "silent"))
            last[host] = t
        elif event == "missed" and host in last:
            last[host] = t
        elif event == "recover":
            out.setdefault(host, []).append((t, "back"))
            last.pop(host, None)
        elif event == "death":
            last.pop(host, None)
    for host, t in last.items():
        if t + rate_ms / 1000 <= end:
            out[host].append((t, "back"))
    return out


def _nodes(workload: Workload, shift_ms: int, stability: int, rate_ms: int,
           silent: Mapping[str, list[tuple[float, str]]]) -> list[dict[str, Any]]:
    """The node events as scenario nodes: arrivals, outages (with or without a death), vary-offs."""
    nodes: dict[str, dict[str, Any]] = {}
    arrived: set[str] = set()  # a node's later arrivals are returns (after a vary-off, a death): not when it came
    events: list[tuple[float, str, str, NodeEvent | None]] = [(e.time, e.host, e.event, e) for e in workload.nodes]
    events += [(t, host, what, None) for host, marks in silent.items() for t, what in marks]
    for time, host, event, e in sorted(events, key=lambda x: (x[0], x[1], x[2])):
        t = round(time * 1000) + shift_ms
        node = nodes.setdefault(host, {"name": host, "ip": "10.0.0.1", "memory_gb": 0})
        outages = node.setdefault("outages", [])
        is_open = bool(outages) and outages[-1][1] is None
        if event == "silent" and not is_open:
            outages.append([max(0, t), None])
        elif event in ("back", "reactivate", "recover_node") and is_open:
            outages[-1][1] = t
        elif event == "death" and not is_open:  # no missed heartbeat logged: node.stability periods before
            outages.append([max(0, t - stability * rate_ms + 1), None])
        if e is None:
            continue
        if e.ip:
            node["ip"] = e.ip
        if e.memory_mb:
            node["memory_gb"] = max(node["memory_gb"], round(e.memory_mb / 1024))
        if e.event == "arrive" and host not in arrived:
            arrived.add(host)
            if t > 0:  # (one there when the harness starts has no arrival time)
                node["arrive_ms"] = t
        elif e.event == "vary_off":
            node.setdefault("varyoff", []).append([t, None])
        elif e.event == "vary_on" and node.get("varyoff") and node["varyoff"][-1][1] is None:
            node["varyoff"][-1][1] = t
    return [{k: v for k, v in n.items() if v or k == "memory_gb"} for n in nodes.values() if n["memory_gb"] > 0]


def scenario_of(workload: Workload, cycles: int, config: Config,
                seed: int = 1, tables: Mapping[str, pl.DataFrame] | None = None) -> Scenario:
    """The harness scenario replaying `workload` for `cycles` published schedules."""
    props, classes, files = config.properties, config.classes, config.files
    dated = logged_submissions(tables) if tables is not None else {}
    times = [w.submit for w in workload.work] + [n.time for n in workload.nodes] + list(dated.values())
    shift_ms = max(0, -round(min(times, default=0) * 1000))
    pub_ms = int(props.get("ducc.orchestrator.state.publish.rate", "10000"))
    work = sorted(workload.work, key=lambda w: w.job_id)
    tied = _ties(work, tables)
    submit = _in_id_order([_submit_ms(w, shift_ms, pub_ms, dated) for w in work], tied)
    stability = int(props.get("ducc.rm.node.stability", "6"))
    rate = int(props.get("ducc.agent.node.metrics.publish.rate", "30000"))
    assumed = [f"times shifted by {shift_ms / 1000:g} s: the log's earliest event is the harness's time 0",
               "a node's outage: from half a metrics period before the log's first `Missed heartbeat count[ 2 ]` "
               "(else node.stability periods before its death) to its return (`Node recovers`, or, where its "
               "misses stop with no death, the last miss logged: 2.0.x prints no recovery)",
               f"DuccId UUIDs from java.util.Random({seed}) (--java-seed): the RM breaks ties among equal "
               "candidates in their hash order, which an INFO log does not show",
               "a job's shares' investments in the order its published Existing list shows (the RM's "
               "investment order) where it holds exactly those shares, as simulate's loop reads them",
               "work items as simulate's loop runs them: each hand-out takes the time fitted to complete the "
               "log's items at its publications on the log's own processes, later ones the job's mean; the mean "
               "reported is the log's own (at INFO the log does not show each item)"]
    assumed += config.assumed
    if any(tied):
        ids = sorted({w.job_id for i, t in enumerate(tied) if t for w in work[i:i + 2]})
        assumed.append(f"work the log shows tied on submission ({', '.join(map(str, ids))}: JobByTimeSorter's "
                       "order, the needy list) submitted in the same millisecond")
    if workload.shares:
        assumed.append(f"{len(workload.shares)} process(es) running when the log begins: the harness starts "
                       "their work afresh (the RM places them itself)")
    entries = [_work(w, shift_ms) | {"submit_ms": t} for w, t in zip(work, submit, strict=True)]
    nodes = _nodes(workload, shift_ms, stability, rate, logged_outages(tables, rate) if tables else {})
    scenario = {"name": "rmreplay-simulate", "seed": seed, "max_cycles": cycles, "debug_log": False,
                "properties": props, "classes": classes, "files": files,
                "timing": {"process_start_ms": round(1000 * (work[0].start_delay if work else 5)),
                           "process_stop_ms": round(1000 * (work[0].stop_delay if work else 10)),
                           "init_ms": 30000},
                "nodes": nodes,
                "work": entries}
    scenario["item_origin_ms"] = shift_ms  # the item clock is simulate's (ms from the log's first cycle)
    if tables is not None:
        gap = median_gap(tables)  # seconds between publications; the tolerance is half of it
        scenario["investment_order_tolerance_ms"] = round(500 * gap) if gap else 5000
        orders = investment_orders(tables, shift_ms)
        added = addition_orders(tables, shift_ms)
        hashes = hash_buckets(tables)
        assumed.append(_hash_note(hashes))
        shares = share_hashes(tables)
        scenario["share_buckets"] = {str(k): v for k, v in sorted(shares.hash_of.items())}
        assumed.append(_share_note(shares))
        if not any(e.ip for e in workload.nodes):  # a log that shows its nodes' IPs gave them (`_nodes`)
            ips = node_ips(tables)
            for node in nodes:
                node["ip"] = ips.ip_of.get(node["name"], node["ip"]) if ips else node["ip"]
            assumed.append(ip_note(ips))
        for w, entry in zip(work, entries, strict=True):
            if orders.get(w.job_id):
                entry["investment_order"] = orders[w.job_id]
            if added.get(w.job_id):
                entry["addition_order"] = added[w.job_id]
            if w.job_id in hashes.hash_of:
                entry["hash_bucket"] = hashes.hash_of[w.job_id]
    return Scenario(scenario, {k + 1: w.job_id for k, w in enumerate(work)}, shift_ms, tuple(assumed))
