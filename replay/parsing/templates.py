"""Token templates: single-line families the compiled scanner (replay.parsing._scan) matches itself.

A template spells a body the way the grammar does, as blank-separated tokens (a blank is one or
more spaces, the grammar's %ignore):
  `word`               a literal token;
  `{name}`             any token, kept as the string field `name` (`{_}`: any token, not kept);
  `{name:int}`         an integer token (an optional '-', at most 18 digits: the grammar's INT);
  `{name:uint}`        digits only (the grammar's `\\d+` inside terminals such as DOTTED_INT);
  `{name:uuid}`        eight or more of [0-9a-fA-F-] (the grammar's UUID);
  `{name:nqm}`         digits, 'Q', digits (the grammar's NQM);
  `{name:num}`         a number as Java prints a double, or an integer (the grammar's NUM | INT);
  `{name:nominus}`     any token but one that starts with '-' and is no integer (where the grammar's
                       LALR states merge with one that takes a literal "-", the lexer reads it so);
  `pre{name}suf`       a token with a literal prefix and/or suffix around the field;
  `{a,b:typed}`        a typed job id `[JSMRA?]_*digits`: its letter to `a`, its digits to `b`;
  `{a,b:ref}`          a typed reference `[JSMRA?].digits`, split the same way;
  `{a,b:share}`        a share `host.digits`, split at the last dot (the grammar's SHAREREF);
  `{_:dashes}`         a run of two or more '-' (DASHES); `{_:equals}` one or more '=' (DASH_EQ);
  `{name:ints*}`       every remaining token, integers, as a list (`ints+`: at least one;
                       `words*`: any tokens, `words+`: at least one); `[{name:ints*}]`: the rest of the body opens with
                       `[` and closes with `]` (glued to the first and last items or not), the
                       items between them;
  `{name:rest}`        the rest of the body, at least one character (the grammar's REST);
  `{name:label}`       the text up to the first ':', blanks inside kept, trailing ones dropped, and
                       the ':' with it (the grammar's PROP_KEY ":");
  `<a b|c>{name}`      one of these phrases, words one space apart (a terminal with a blank inside;
                       brackets allowed: `<[P]|[SPR]>{tag}`);
  `[a b]{name}`        the same phrase, optional (absent: the field is null).
A family may have several templates (its grammar rule's alternatives), tried in order.

Field names are the grammar's (and replay.parsing.fast's regex groups'), so the rows are the rows the
regex and lark paths give: tests/unit/test_scan.py holds every template to the grammar on
generated bodies, and tests/integration/test_engines.py holds the engines to identical tables.
A body no template of its family matches is not an error: it goes on to the regex path, then to
lark, which decides. The matching itself is replay.parsing.scan.fill_rows (replay/parsing/csrc/fill.c).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# op codes and field kinds, as replay/parsing/csrc/scan.h numbers them
T_LIT, T_FIELD, T_TYPED, T_LIST, T_PHRASE, T_REF, T_SHARE, T_RUN, T_REST, T_LABEL = range(10)
K_ANY, K_INT, K_UINT, K_UUID, K_NQM, K_NUM, K_NOMINUS = range(7)

_RMJOB = ("{type_code,job_id:typed} {job_name} {user} {class} {shares:int} {order:int} {qshares:int} "
          "{threads:int} {memory_gb:int} {nquest:int} {remaining:int} {init_wait} {max_processes:int}")
_MACHINE = "{m_host} {m_blacklisted} {m_order:int} {m_active:int} {m_unused:int} {memory_mb:int}"
_LOOP = "{_:dashes} {epoch:int} {_:dashes}"
_DOWN = "<Host dead:|Host offline:|Host dead/offline:>{down}"

TEMPLATES: dict[str, str | tuple[str, ...]] = {
    # -- bootstrap: classes, users, nodepools (printClass, printUser, printNodepool, initClasses)
    "class_begin": "Class {class}",
    "user_begin": "User {user}",
    "class_assign": "Assign rc {class} to np {nodepool}",
    "class_row": ("{class} {policy} {priority:int} {weight:int} {abs_cap:int} {init_cap:int} {expand_by_doubling} "
                  "{prediction} {prediction_fudge:int} {shr:int} {enforce} {nodepool}"),
    "class_rebuild": "Rebuilding {text_word} for top level nodepool {nodepool}",
    "class_pool_created": "Created top-level nodepool {nodepool}",
    "np_name": "Nodepool {nodepool}",
    "np_quantum": "Scheduling quantum: {quantum:int}",
    "np_search_order": "Search Order: {search_order:int}",
    "np_node_file": "Node File: {text:rest}",
    "np_node_rule": "Node Rule: {text:rest}",
    "np_classes": "Classes: {classes_list:words*}",
    "np_no_classes": "No classes defined.",
    "np_subpools": "Subpools: {subpools_list:words+}",
    "np_no_subpools": "No subpools.",
    "property": ("{prop_key:label}", "{prop_key:label} {value:rest}"),
    "init_param": ("{prop_key:label}", "{prop_key:label} {value:rest}"),
    # -- RmCounter blocks (apportion_qshares)
    "rmc_start": "{descr} RmCounter Start",
    "rmc_end": "{descr} RmCounter End",
    "rmc_maxorder": "{descr} maxorder = {maxorder:int}",
    "rmc_names": "{descr} entity_names = {names_list:words*}",
    "rmc_weights": "{descr} weights = {values_list:ints*}",
    "rmc_wanted": "{descr} wantedby.{entity} = {values_list:ints*}",
    "rmc_vmachines": "{descr} vmachines = {values_list:ints*}",
    "rmc_final": "{descr} Final apportionment:",
    "rmc_given": "{descr} {entity} gbo {values_list:ints*}",
    "rmc_vshares": "{descr} vshares {values_list:ints*}",
    "rmc_nshares": "{descr} nshares {values_list:ints*}",
    # -- defragmentation
    "frag_header": "Nodepool User PureFS NSh Counted Needed O Class: {class}",
    "frag_row": ("{nodepool} {user} {pure_fs:int} {nsh:int} {counted:int} {needed:int} {order:int} "
                 "[POTENTIALLY NEEDY]{potentially_needy}"),
    "frag_free": "NP {nodepool} After check: <virtual|cumulative>{space_kind} free Space {values_list:ints*}",
    "frag_needy": ("NP: {nodepool} User: {user} Pure fs: {pure_fs:int} needed {needed:int} O[{order:int}] "
                   "ACTUALLY NEEDY"),
    "frag_vmachines": "vMachines: {values_list:ints*}",
    "frag_none": "No needy jobs, defragmentation bypassed.",
    "frag_detected": "NEEDY JOBS DETECTED",
    "rich_candidate": "Candidate machine: {host}",
    "rich_not_candidate": "Not a candidate, insufficient free space + candidate shares: {host}",
    "rich_found": "Found {count:int} machines to be searched in this order:",
    "rich_eligible": "Eligible machines: {hosts_list:words*}",
    "rich_bypass": "Bypass {host} : too small for request of order {order:int}",
    "rich_satisfied": "Satisfied needs of job by taking from <the rich.|all candidates.>{rich_from}",
    "rich_failed": "Could not get enough from the rich. Asked for {needed:int} still needing {count:int}",
    "rich_looking": "Needy job looking for {needed:int} more processes of O[ {order:int} ]",
    "rich_attempt": "Will attempt to have space made for {needed:int} processes",
    "clear_share": ("<Donate|Reassign expanded share|Canceling expansion share>{clear_kind} {host,share_id:share} "
                    "from {donor_job:int}"),
    "needy_assign": "Assign: {host,share_id:share}",
    "rich_candidate_job": "Job {donor_job:int} is a candidate with processes[ {shares:int} ] qshares[ {qshares:int} ]",
    # the threshold a fair-share donor falls short of: the one line that states ducc.rm.fragmentation.threshold
    "rich_below_threshold": tuple(f"Job {{donor_job:int}} is {kind} candidate because below frag threshold. "
                                  "nshares[ {shares:int} ] qshares[ {qshares:int} ] threshold[ {count:int} ]"
                                  for kind in ("not a", "a backup")),
    # -- evictions
    "evict_header": ("Counted Current Needed Order ({nodepool})", "{nodepool} Counted Current Needed Order"),
    "evict_row": "{counted:int} {current:int} {needed:int} {order:int}",
    "evict_recurse": "<Recurse to|Return from>{recurse} {text:rest}",
    "non_preemptable": "Found non-preemptable share {share_id:int} {text:rest}",
    "shrink_by": "Removing share {host,share_id:share}",
    "share_removed": "Job removes {host,share_id:share} reduces from {_:int} to {count:uint}.",
    "schedule_removal": "Job schedules {host,share_id:share} for removal.",
    "clear_for_reservation": "Clearing {host} from preemptable list for reservations.",
    "freeable_evict": ("Setting up {host} for eviction", "Setting up {host} to clear for reservation"),
    # -- occupancy (DEBUG)
    "occupancy_begin": "{_:equals} Query Machines Nodepool: {nodepool} {_:equals}",
    "occupancy_end": "{_:equals} End Query Machines Nodepool: {nodepool} {_:equals}",
    # -- nodes
    "node_heartbeat": "{rule_count:int} {host} {short_name:nominus} {ip}",
    "node_map": "Map {host} to {nodepool}",
    "node_status": "{short_name} node status = {status}",
    "node_metrics": "{short_name} {status}",
    "node_added": tuple(f"Nodepool: {{nodepool}} Host added: {{_}} : {{host}} Nodefile: {{text_word}} shares "
                        f"{{share_order:int}} total {{count:int}}: {_MACHINE} {jobs}"
                        for jobs in ("<none>", "{m_jobs_list:ints+}")),
    "node_missed": "*** Missed heartbeat *** {host} count[ {count:int} ]",
    "node_missed_recorded": "{host} Missed heartbeat count {count:int}",
    "node_missed_time": "{host} Time to record misssed heartbeat {count:int}",
    "node_death_notice": "*** ! Notification of node death: {host}",
    "node_death": "***Purging machine*** {host} due to missed heartbeats. THreshold: {count:int}",
    "node_disabled": "Nodepool: {nodepool} Host disabled: {host} Looking for shares to clear",
    "node_not_purged": "Nodepool: {nodepool} " + _DOWN + " {host} Not purging {text:rest}",
    "node_completed": "Nodepool: {nodepool} " + _DOWN + " {host} Mark service/pop completed.",
    "node_bad_virtual": ("ERROR: bad virtual machine list. {host} order {_:int} v_order {count:int} "
                         "r_order {share_order:int}"),
    "node_virtual_fill": tuple(f"{{host}} found a {r}share of size {{_:int}} on a machine with {o}{{count:int}} "
                               "free slots - set free=0" for r in ("", "RESERVE ") for o in ("", "only ")),
    "node_heartbeat_reset": "{host} Reset heartbeat to {count:int} from {_:int}",
    "node_heartbeat_reset_time": "{host} Time to reset heartbeat {count:int}",
    "node_recovers": "*** Node recovers *** {host}",
    "node_recover": "RECOVER NODE {host}",
    "node_vary_off": "VaryOff: {host} - OK.",
    "node_vary_on": "VaryOn: Nodepool {nodepool} - Machine marked online: {host}",
    "node_reactivated": tuple(f"Nodepool: {{nodepool}} Host reactivated {{host}} shares {{share_order:int}} {total}"
                              f"{_MACHINE} {jobs}" for total in ("", "total {count:int}: ")
                              for jobs in ("<none>", "{m_jobs_list:ints+}")),
    "node_blacklist": ("{host} {share_id:int} {uuid:uuid} procs {count:int} "
                       "shares left {free_shares:int} / {share_order:int}"),
    # -- job caps
    "prj_cannot_predict": "{user} Cannot predict cap: init_wait {init_wait} || time_per_item {time_per_item:num}",
    "prj_cap": ("{user} O {order:int} T {prj_t:int} NTh {prj_nth:int} TI {prj_ti:int} TR {prj_tr:num} R {prj_r:num} "
                "QR {prj_qr:int} P {prj_p:int} F {prj_f:int} ST {prj_st:int} return {prj_return:int}"),
    "prj_init_zero": "{user} Initialization time is 0, project cap and investment will be inaccurate.",
    "init_job_cap": ("{user} O {order:int} Base cap: {base_cap:int} Expected future cap: {expected_cap:int} "
                     "potential cap {potential_cap:int} actual cap {actual_cap:int}"),
    # -- allotments (getAllotmentForJob, validAllotment, defer)
    "allot_job_cap": "Job cap {nqm:nqm}",
    "allot_current": ("Current NP allocation for user {qshares:int} qshares {memory_gb:int} GB "
                      "user_allotment {allotment_qshares:int} user_allotment in GB {allotment_gb:int}"),
    "allot_additional": "Additional Nshares allowed for request: {nqm:nqm}",
    "allot_deferred": "Deferred because allotment of {allotment_gb:int} GB is exceeded.",
    "allot_deferred_user": "Deferred because allotment of {allotment_gb:uint}GB is exceeded by user {user}",
    "allot_caps": "Allotment of {allotment_gb:int} GB caps request. Return with {qshares:int} qshares allocated.",
    "allot_capping": ("Capping job on allotment: {allotment_gb:int} GB. Remaining allowed nshares [ {count:int} ] "
                      "wanted [ {_:int} ]"),
    "allot_allowed": "Allowed {nqm:nqm} wanted {wanted_nqm:nqm}",
    # -- how much and what of
    "what_of_fair_share": "Scheduling job in class {class} : {shares_given:int} shares given, order {order:int}",
    "how_much_fair_share": "Scheduling job in class {_} : " + _RMJOB,
    "fixed_to_class": "Scheduling job to class: {class}",
    "fixed_counting": ("Counting shares for {type_code,job_id:ref}",
                       "Counting shares for {type_code,job_id:ref} in class {class}"),
    "fixed_stable": "[stable] assigned {shares:int} processes, {qshares:int} QS",
    "fixed_granted": "+++++ nodepool {nodepool} class {class} order {order:int} shares {nqm:nqm}",
    "connect_share": (f"share {{host,share_id:share}} order {{order:int}} machine {_MACHINE} <none>",
                      f"share {{host,share_id:share}} order {{order:int}} machine {_MACHINE} {{m_jobs_list:ints+}}"),
    "connect_new_share": "Connecting new share {host,share_id:share}",
    "expansion_order": "{nodepool} Doing expansions in this order: {pools_list:words*}",
    "find_shares_counted": ("counted {counted:int} current {current:int} needed {needed:int} order {order:int} "
                            "given {count:int}"),
    "find_machines": "counted {counted:int} current {current:int} needed {needed:int} order {order:int}",
    "find_machines_preempt": "Setup preemptions. Have {count:int} free machines, needed {needed:int}",
    "fixed_assign": "<Assign(H):|Assign(V):|Assign:>{assign} {nqm:nqm}",
    "fixed_available": "available shares of order {order:int} in np: {count:int}",
    "res_counting": "Counting full machines for {type_code,job_id:ref}",
    "res_granted": "Request is granted a machine for reservation.",
    "freeable_bypass": "Bypass because machine {host} {because:rest}",
    "freeable_enter": "Enter nodepool {nodepool} preemptables.size() = {count:int}",
    "freeable_order": ("Machines to search in order: {hosts_list:words*}", "Machines to search: {hosts_list:words*}"),
    "freeable_examining": "Examining {host}",
    "freeable_giving": "Giving {host} because it is <free|freeable>{because}",
    "needy_expand": tuple(f"NP[ {{nodepool}} <Expand needy reservations.|Expand needy fixed.|Expand needy jobs.>"
                          f"{{needy_what}} {ids}" for ids in ("NONE", "[{job_id_list:ints*}]")),
    # -- jobs and processes
    "submit_header": "submit ID JobName User Class Shares Order QShares NTh Memory nQuest Ques Rem InitWait Max P/Nst",
    "submit_row": "submit " + _RMJOB,
    "jobs_arrive": "Jobs arrive:",
    "job_update": ("tot: {total:int} {state_from} -> {state_to} compl: {completed} err: {errors} "
                   "rem: {remaining:int} mean: {mean:num} skew: {skew:num}"),
    "job_arrives": "total_work {total:int} completed_work {completed} remaining_work {remaining:int}",
    "job_initialized": "Set Initialized.",
    "job_schedule_new": "Scheduling as new.",
    "job_completion_signal": ("Job completion signal.", "Job completion signal: {text:rest}"),
    "job_completes": "Job completes.",
    "ev_incoming": "Incoming, state = {state_to}",
    "ev_non_schedulable": "Received non-schedulable job, state = {state_to}",
    "ev_remove_unschedulable": "Removing unschedulable: {state_from} -> {state_to}",
    "ev_state": "<[P]|[S]|[R]|[SPR]>{tag} State: {state_from} -> {state_to}",
    "ev_no_state": "No state from Orchestrator",
    "ev_gone": "Gone",
    "job_refused": "{text:rest}",
    "ev_discarded": "Orchestrator event is discarded: {text:rest}",
    "ev_no_active": "There are no active jobs in map {text:rest}",
    "job_max_shares": ("Max shares adjusted from {_:int} to {max_processes:int} (incoming)",
                       "Max shares adjusted from {_:int} to {max_processes:int} (incoming) {text:rest}"),
    "job_recover": "Receive: {text:rest}",
    "job_recovered_nodes": "Recovered[ {count:int} ] nodes from OR state.",
    "proc_new": "New process {host,share_id:share} {rss:int} {state_to} {pid}",
    "proc_state": ("Process {pid} {host,share_id:share} State: {state_from} -> {state_to} {init_ms:int} {run_ms:int}",
                   "Process {pid} <none> State: {state_from} -> {state_to} {init_ms:int} {run_ms:int}"),
    "proc_completion": "Process {pid} Completion: {host,share_id:share}",
    "proc_completed": "Process {pid} completed due to state {state_to}",
    "proc_ignored": "Process {pid} ignoring update because of state {state_to}",
    "proc_vacate": "Job vacate signal share: {host,share_id:share}",
    "proc_vacated": "Job vacates share {host,share_id:share}",
    # -- cycle framing
    "loop_enter": _LOOP + " Entering scheduling loop {_:dashes}",
    "loop_return": _LOOP + " Scheduling loop returns {_:dashes}",
    "total_arrivals": "Total arrivals: {count:int}",
    "schedule_summary": "Scheduling {new_jobs:int} new jobs. Existing jobs: {existing_jobs:int}",
    "schedule_run": "Run scheduler {_:int} with top-level nodepool {nodepool}",
    "schedule_sent": "Schedule sent to Orchestrator",
}

# one template token: a phrase group (`<...>{name}`, `[...]{name}`) or anything up to a blank
_TOKEN = re.compile(r"<[^<>{}]+>\{\w+\}|\[[^\[\]{}]+\]\{\w+\}|\S+")
_FIELD = re.compile(r"^(?P<pre>[^{}]*)\{(?P<names>[\w,]+)(?::(?P<kind>[\w*+]+))?\}(?P<suf>[^{}]*)$")
# `<...>` may hold brackets (the grammar's STATE_TAG phrases are "[P]" and the like), `[...]` not
_PHRASE = re.compile(r"^(?:<(?P<alt>[^<>{}]+)>|\[(?P<opt>[^\[\]{}]+)\])\{(?P<name>\w+)\}$")
_KINDS = {None: K_ANY, "int": K_INT, "uint": K_UINT, "uuid": K_UUID, "nqm": K_NQM, "num": K_NUM, "nominus": K_NOMINUS}
_PAIRS = {"typed": T_TYPED, "ref": T_REF, "share": T_SHARE}
_RUNS = {"dashes": (b"-", 2), "equals": (b"=", 1)}
_LISTS = {"ints*": (K_INT, 0), "ints+": (K_INT, 1), "words*": (K_ANY, 0), "words+": (K_ANY, 1)}
# the grammar's INT ends before any of these (`(?![\w.\/^-])`): an integer field glued to one of
# them would be a different token there, so no template may ask for it
_NOT_AFTER_INT = re.compile(r"^[\w./^-]")

Op = tuple[int, bytes, bytes, bytes, int, int, int]  # code, literal, prefix, suffix, field slot, kind, minimum


@dataclass(frozen=True)
class Template:
    """A compiled template: the ops `_scan` runs, the field names by slot, the list field if any."""

    ops: tuple[Op, ...]
    fields: tuple[str, ...]  # by field slot; "_" slots are matched, not kept
    list_field: str | None
    list_ints: bool = False  # the list holds integers (read to int64 by the scanner)


def templates_of(family: str) -> tuple[str, ...]:
    """The family's templates, in the order they are tried (none: the family has no template)."""
    got = TEMPLATES.get(family, ())
    return (got,) if isinstance(got, str) else got


@lru_cache(maxsize=None)
def compile_template(text: str) -> Template:
    """Turn a template's text into the op tuple the scanner runs."""
    ops: list[Op] = []
    fields: list[str] = []
    list_field, list_ints = None, False
    for token in _TOKEN.findall(text):
        phrase = _PHRASE.match(token)
        field = _FIELD.match(token)
        if phrase:
            words = phrase["alt"] or phrase["opt"]
            ops.append((T_PHRASE, words.encode(), b"", b"", len(fields), K_ANY, int(phrase["alt"] is not None)))
            fields.append(phrase["name"])
        elif field is None:
            ops.append((T_LIT, token.encode(), b"", b"", 0, K_ANY, 0))
        else:
            names, kind = field["names"].split(","), field["kind"]
            pre, suf = field["pre"].encode(), field["suf"].encode()
            if kind in _LISTS:
                list_field, (elem, least) = names[0], _LISTS[kind]
                list_ints = elem == K_INT
                ops.append((T_LIST, b"", pre, suf, 0, elem, least))
            elif kind in _PAIRS:
                ops.append((_PAIRS[kind], b"", b"", b"", len(fields), K_ANY, 0))
                fields.extend(names)
            elif kind in _RUNS:
                ops.append((T_RUN, _RUNS[kind][0], b"", b"", 0, K_ANY, _RUNS[kind][1]))
            elif kind == "label":
                ops.append((T_LABEL, b"", b"", b"", len(fields), K_ANY, 1))
                fields.append(names[0])
            elif kind == "rest":
                ops.append((T_REST, b"", b"", b"", len(fields), K_ANY, 1))
                fields.append(names[0])
            elif kind in _KINDS:
                if kind == "int" and _NOT_AFTER_INT.match(field["suf"]):
                    raise ValueError(f"template {text!r}: an int field cannot be followed by {field['suf']!r}")
                ops.append((T_FIELD, b"", pre, suf, len(fields), _KINDS[kind], 0))
                fields.append(names[0])
            else:
                raise ValueError(f"template {text!r}: unknown field kind {kind!r}")
    return Template(tuple(ops), tuple(fields), list_field, list_ints)
