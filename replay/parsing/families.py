"""Message families: which record goes to which grammar rule and which table.

A record is routed by its logger class, its METHOD and a regex on the start of its body (first
match wins, so the most specific prefix comes first). The family name is the grammar's start
rule. Anything with a (class, METHOD) listed here whose body matches no prefix is *unparsed*
(the format drifted: say so); a (class, METHOD) not listed at all is kept as a generic message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Families whose records are kept as generic messages (header fields + text), on purpose:
# they carry no scheduler input or decision beyond their presence.
GENERIC = "message"
# the families whose records span several lines (every other record is one line; more is damage)
MULTILINE = {"schedule_state", "occupancy_table", "sched_sections", "pool_tables", "np_nodes", GENERIC}


@dataclass(frozen=True)
class Route:
    """One body shape of one (class, METHOD): the regex its body starts with and its family."""

    prefix: str
    family: str


@dataclass(frozen=True)
class Target:
    """Where a family's rows land: a table, plus constant columns (an event or kind name)."""

    table: str
    consts: dict[str, str] = field(default_factory=dict)


def _r(*pairs: tuple[str, str]) -> list[Route]:
    return [Route(p, f) for p, f in pairs]


# ResourceClass's header, dashes and one row per class, logged at INFO under an isTrace() guard
_TRACE_CLASS_TABLE = (
    (r"^Class Name +Policy ", GENERIC), (r"^-{12} -{11} ", GENERIC),
    (r"^\S+ +(FAIR_SHARE|FIXED_SHARE|RESERVE) ", GENERIC),
)

ROUTES: dict[tuple[str, str], list[Route]] = {
    # -- family 1: bootstrap
    ("Config", "printNodepool"): _r(
        (r"^Nodepool ", "np_name"), (r"^Scheduling quantum:", "np_quantum"),
        (r"^Search Order:", "np_search_order"), (r"^Node File:", "np_node_file"),
        (r"^Node Rule:", "np_node_rule"), (r"^Classes:", "np_classes"),
        (r"^No classes defined", "np_no_classes"), (r"^Subpools:", "np_subpools"),
        (r"^No subpools", "np_no_subpools"), (r"", "np_nodes"),
    ),
    ("Config", "printClass"): _r((r"^Class ", "class_begin"), (r"^$", GENERIC)),
    ("Config", "printUser"): _r((r"^User ", "user_begin"), (r"^$", GENERIC)),
    ("Config", "printProperty"): _r((r"", "property")),
    ("Scheduler", "initClasses"): _r(
        (r"^Classes:$", "class_table_title"), (r"^Class Name", "class_table_header"),
        (r"^-{4}", "class_table_rule"), (r"^Rebuilding ", "class_rebuild"),
        (r"^Created top-level nodepool", "class_pool_created"), (r"^Assign rc ", "class_assign"),
        (r"^\S+ +(FAIR_SHARE|FIXED_SHARE|RESERVE) ", "class_row"),
        (r"^Scheduler exits: unable to read configuration", GENERIC),
    ),
    ("ResourceClass", "ResourceClass"): _r((r"^jd\.host\.class=", "jd_host_class")),
    ("Scheduler", "init"): _r((r"", "init_param")),
    # -- family 2: nodes
    ("Scheduler", "findNodepoolByRule"): _r(
        (r"^match by ", "node_rule_match"), (r"^no match by ", "node_rule_miss"),
        (r"^\d+ \S+ \S+ \S+$", "node_heartbeat"),
    ),
    ("Scheduler", "updateNodepoolsByNode"): _r((r"^Map ", "node_map")),
    ("NodePool", "nodeArrives"): _r(
        (r"^Nodepool: \S+ Host added:", "node_added"),
        (r"^Nodepool: \S+ Host reactivated", "node_reactivated"),
        (r"^RECOVER NODE ", "node_recover"),
        (r"^Cannot write machine to DB:", GENERIC),
    ),
    ("NodeStability", "missedNode"): _r((r"^\*\*\* Missed heartbeat", "node_missed")),
    ("Machine", "heartbeatMissed"): _r(
        (r"^\S+ Missed heartbeat count", "node_missed_recorded"),
        (r"^\S+ Time to record", "node_missed_time"),
        (r"^\S+ Cannot update heartbeat count in database:", GENERIC),
    ),
    ("Machine", "heartbeatArrives"): _r(
        (r"^\S+ Reset heartbeat", "node_heartbeat_reset"),
        (r"^\S+ Time to reset heartbeat", "node_heartbeat_reset_time"),
        (r"^\S+ Cannot update heartbeat count in database:", GENERIC),
    ),
    ("NodeStability", "nodeRecovers"): _r((r"^\*\*\* Node recovers", "node_recovers")),
    ("NodeStability", "nodeDeath"): _r((r"^\*\*\* ! Notification", "node_death_notice")),
    ("Scheduler", "handleDeadNodes"): _r(
        (r"^\*\*\*Purging machine", "node_death"), (r"^Waiting for \(re\)initialization", GENERIC),
    ),
    ("NodePool", "disable"): _r(
        (r"^Nodepool: \S+ Host disabled:", "node_disabled"),
        (r"^Nodepool: \S+ Host (dead|offline): \S+ purge:", "node_purge"),
        (r"^Nodepool: \S+ Host (dead|offline): \S+ Not purging", "node_not_purged"),
        (r"^Nodepool: \S+ Host (dead|offline): \S+ Mark ", "node_completed"),
    ),
    # 2.0.x: NodePool.disable logs under the method name nodeLeaves, with other purge shapes
    ("NodePool", "nodeLeaves"): _r(
        (r"^Nodepool: \S+ Host disabled:", "node_disabled"),
        (r"^Nodepool: \S+ Purge \S+ on dead/offline:", "node_purge"),
        (r"^Nodepool: \S+ Host dead/offline: \S+ Not purging", "node_not_purged"),
        (r"^Nodepool: \S+ Host dead/offline: \S+ Mark ", "node_completed"),
        (r"^Nodepool: \S+ Node leaves:", GENERIC),
    ),
    ("Machine", "updateShareOrder"): _r(
        (r"^\S+ Size has changed", "node_resize"), (r"^\S+ ERROR - \S+ free plus", GENERIC),
    ),
    ("NodePool", "isQuiesce"): _r(
        (r"^\S+ node status =", "node_status"), (r"^\S+ node (status|metrics) missing", GENERIC),
    ),
    ("ResourceManagerEventListener", "onNodeMetricsEvent"): _r((r"^\S+ \S+$", "node_metrics")),
    # an administrator's vary-off/on: the host leaves (or rejoins) the schedulable machines
    ("Scheduler", "varyoff"): _r(
        (r"^VaryOff: \S+ - OK\.$", "node_vary_off"),
        (r"^VaryOff: Nodepool \S+ - Unresponsive machine, marked offline:", "node_vary_offline"),
        (r"^Vary", "node_vary"),
    ),
    ("Scheduler", "varyon"): _r(
        (r"^VaryOn: Nodepool \S+ - Machine marked online:", "node_vary_on"), (r"^Vary", "node_vary"),
    ),
    ("Scheduler", "nodeArrives"): _r(
        (r"^Total arrivals:", "total_arrivals"), (r"^Waiting for", "node_waiting"),
    ),
    ("Machine", "whitelist"): _r((r"^\S+ \d+ \S+ procs", "node_blacklist")),
    ("NodePool", "rearrangeVirtual"): _r(
        (r"^ERROR: bad virtual machine list\. ", "node_bad_virtual"),
        (r"^\S+ found a (RESERVE )?share of size", "node_virtual_fill"),
    ),
    ("Machine", "blacklist"): _r((r"^\S+ \d+ \S+ procs", "node_blacklist")),
    # -- family 3: occupancy and tables
    ("NodePool", "queryMachines"): _r(
        (r"^=+ Query Machines", "occupancy_begin"), (r"^=+ End Query", "occupancy_end"),
        (r"^$", "occupancy_table"),
    ),
    ("NodePool", "reset"): _r(
        (r"^Scheduling Tables:", "pool_tables"), (r"^Nodepool: \S+ Maxorder", GENERIC),
    ),
    # -- family 4: Orchestrator state, jobs, processes
    ("JobManagerConverter", "eventArrives"): _r(
        (r"^Incoming, state =", "ev_incoming"),
        (r"^Received non-schedulable", "ev_non_schedulable"), (r"^Gone", "ev_gone"),
        (r"^Removing unschedulable:", "ev_remove_unschedulable"),
        (r"^\[(?:[PSR]|SPR)\] State:", "ev_state"), (r"^Orchestrator event is discarded", "ev_discarded"),
        (r"^There are no active jobs", "ev_no_active"), (r"^Fast recovery", "ev_fast_recovery"),
        (r"^No state from Orchestrator", "ev_no_state"),
    ),
    ("JobManagerConverter", "jobArrives"): _r(
        (r"^total_work ", "job_arrives"), (r"^machine list:", "job_machine_list"),
        (r"^Memory units other than GB", GENERIC),
    ),
    ("JobManagerConverter", "jobUpdate"): _r(
        (r"^tot: ", "job_update"), (r"^Max shares adjusted", "job_max_shares"),
        (r"^Set Initialized", "job_initialized"),
    ),
    ("JobManagerConverter", "receiveExecutable"): _r(
        (r"^Scheduling as new", "job_schedule_new"),
        (r"^Scheduling for recovery", "job_schedule_recovery"),
        (r"^Assigning share", "job_assign_recovery"), (r"^Skipping process ", GENERIC),
    ),
    ("JobManagerConverter", "receiveReservation"): _r(
        (r"^Scheduling as new", "job_schedule_new"),
        (r"^Scheduling for recovery", "job_schedule_recovery"),
        (r"^Assigning share for recovery", GENERIC),
    ),
    ("JobManagerConverter", "recoverFromOrchestrator"): _r(
        (r"^Receive: ", "job_recover"), (r"^Recovered\[", "job_recovered_nodes"),
        # after an RM restart: each recovered process and node, and work it skips
        (r"^Ignoring completed work:", GENERIC), (r"^ *Process\[", GENERIC),
        (r"^ *Recover node\[", GENERIC), (r"^ *Node ?\[", GENERIC), (r"^Received work of type", GENERIC),
    ),
    ("Scheduler", "signalCompletion"): _r(
        (r"^Job vacate signal share:", "proc_vacate"),
        (r"^Job completion signal", "job_completion_signal"),
    ),
    ("Scheduler", "processCompletion"): _r(
        (r"^Job completes", "job_completes"), (r"^Job vacates share", "proc_vacated"),
        (r"^Cannot delete job from database:", GENERIC), (r"^Job is not in run list!", GENERIC),
    ),
    ("RmJob", "refuse"): _r((r"", "job_refused")),
    ("JobManagerConverter", "reconcileProcess"): _r(
        (r"^New process ", "proc_new"), (r"^Process +\S+ \S+ State:", "proc_state"),
        (r"^Process +\S+ Completion:", "proc_completion"),
        (r"^Process +\S+ +completed due to state", "proc_completed"),
        (r"^Process +\S+ ignoring update", "proc_ignored"),
        (r"^Update for share from process", "proc_unknown_share"),
        (r"^\S+ share not found\?", GENERIC),
    ),
    ("Scheduler", "schedule"): _r(
        (r"^submit +ID ", "submit_header"), (r"^submit ", "submit_row"),
        (r"^Jobs arrive:", "jobs_arrive"), (r"^Scheduling \d+ +new jobs", "schedule_summary"),
        (r"^Run scheduler ", "schedule_run"), (r"^-+ Scheduler returns", GENERIC),
        (r"^-+$", GENERIC), (r"^$", "sched_sections"),
        (r"^Bypassing previously refused job", GENERIC), (r"^Waiting for \(re\)initialization", GENERIC),
        (r"^Cannot (persist new job|update demand) in database:", GENERIC),
    ),
    ("Scheduler", "processRecovery"): _r(
        (r"^Recovered job:", "recovered_job"), (r"^Recovered shares:", "recovered_shares"),
        (r"^Set fixed bit for ", GENERIC), (r"^Share is in incompatible nodepool", GENERIC),
        (r"^Increased order of RESERVE job to", GENERIC), (r"^&+ new user ", GENERIC),
        (r"^Cannot persist recovered job in database:", GENERIC),
        (r"^Recovery - Removing share from wrong nodepool", GENERIC),
    ),
    ("NodepoolScheduler", "howMuchFairShare"): _r(
        (r"^Scheduling job in class ", "how_much_fair_share"),
        (r"^Schedule class ", GENERIC), (r"^No jobs to schedule", GENERIC),
        # TRACE only: the classes table, logged at INFO under an isTrace() guard
        (r"^Scheduling FAIR SHARE for these classes:", GENERIC), *_TRACE_CLASS_TABLE,
    ),
    # -- family 5: job caps
    ("RmJob", "getPrjCap"): _r(
        (r"^\S+ Cannot predict cap", "prj_cannot_predict"),
        (r"^\S+ Initialization time is 0", "prj_init_zero"), (r"^\S+ O \d+ T ", "prj_cap"),
    ),
    ("RmJob", "initJobCap"): _r((r"^\S+ O \d+ Base cap:", "init_job_cap")),
    # -- family 6: how much
    ("NodepoolScheduler", "apportion_qshares"): _r(
        (r"^\S+ RmCounter Start", "rmc_start"), (r"^\S+ RmCounter End", "rmc_end"),
        (r"^\S+ maxorder =", "rmc_maxorder"), (r"^\S+ entity_names =", "rmc_names"),
        (r"^\S+ weights +=", "rmc_weights"), (r"^\S+ wantedby\.\S+ =", "rmc_wanted"),
        (r"^\S+ vmachines =", "rmc_vmachines"), (r"^\S+ Final apportionment:", "rmc_final"),
        (r"^\S+ +\S+ gbo ", "rmc_given"), (r"^\S+ vshares ", "rmc_vshares"),
        (r"^\S+ nshares ", "rmc_nshares"), (r"^\S+ Final before bonus:", "rmc_before_bonus"),
        (r"^\S+ +\S+( +\d+)+$", "rmc_before_bonus_row"),
    ),
    ("NodepoolScheduler", "countClassShares"): _r((r"^Counting for nodepool", GENERIC)),
    ("NodepoolScheduler", "howMuchFixed"): _r(
        (r"^Scheduling job to class:", "fixed_to_class"),
        (r"^Scheduling FIXED SHARE for these classes:", GENERIC), *_TRACE_CLASS_TABLE,
    ),
    ("NodepoolScheduler", "countFixedForJob"): _r(
        (r"^Counting shares for ", "fixed_counting"),
        (r"^available shares of order", "fixed_available"),
        (r"^\+\+\+\+\+ nodepool", "fixed_granted"), (r"^Deferring,", "fixed_deferring"),
        (r"^Nodepool is out of shares", "fixed_out_of_shares"),
    ),
    ("NodepoolScheduler", "countSingleFixedProcess"): _r(
        (r"^Counting shares for ", "fixed_counting"), (r"^\[stable\]", "fixed_stable"),
        (r"^\+\+\+\+\+ nodepool", "fixed_granted"), (r"^Deferring,", "fixed_deferring"),
    ),
    ("NodepoolScheduler", "countReservationForJob"): _r(
        (r"^Counting full machines", "res_counting"), (r"^Request is granted", "res_granted"),
        (r"^Nodepool is out of shares", "fixed_out_of_shares"), (r"^Deferred because", "res_deferred"),
    ),
    ("NodepoolScheduler", "countSingleReservation"): _r(
        (r"^Counting shares for ", "fixed_counting"), (r"^\[stable\]", "fixed_stable"),
        (r"^Request is granted", "res_granted"), (r"^Deferred because", "res_deferred"),
    ),
    ("RmJob", "defer"): _r((r"", "defer")),
    ("NodepoolScheduler", "getAllotmentForJob"): _r(
        (r"^Job cap ", "allot_job_cap"), (r"^Current NP allocation", "allot_current"),
        (r"^Additional Nshares", "allot_additional"),
        (r"^Deferred because allotment of \d+ GB is exceeded", "allot_deferred"),
        (r"^Allotment of ", "allot_caps"), (r"^Capping job on allotment", "allot_capping"),
        (r"^Allowed ", "allot_allowed"),
    ),
    ("NodepoolScheduler", "validAllotment"): _r(
        (r"^Deferred because allotment of \S+ is exceeded by user", "allot_deferred_user"),
    ),
    # -- family 7: what of
    ("NodepoolScheduler", "whatOfFairShare"): _r(
        (r"^Scheduling job in class ", "what_of_fair_share"),
        (r"^Schedule class ", GENERIC), (r"^No jobs to schedule", GENERIC),
    ),
    ("NodePool", "connectShare"): _r((r"^share ", "connect_share")),
    ("NodePool", "findShares"): _r(
        (r"^Connecting new share", "connect_new_share"),
        (r"^\S+ Doing expansions in this order:", "expansion_order"),
        (r"^counted -?\d+ current", "find_shares_counted"),
    ),
    ("NodepoolScheduler", "traverseNodepoolsForExpansion"): _r(
        (r"^\S+ Doing expansions in this order:", "expansion_order"),
    ),
    ("NodePool", "doExpansion"): _r((r"^NP: ", "do_expansion")),
    ("NodepoolScheduler", "whatOfFixedShare"): _r((r"^Assign(?:\([HV]\))?:", "fixed_assign")),
    ("NodepoolScheduler", "expandNeedyJobs"): _r(
        (r"^Assign: ", "needy_assign"), (r"^NP\[ ", "needy_expand"),
    ),
    ("NodePool", "findMachines"): _r(
        (r"^counted ", "find_machines"), (r"^Setup preemptions", "find_machines_preempt"),
    ),
    ("NodePool", "countFreeableMachines"): _r(
        (r"^Enter nodepool", "freeable_enter"), (r"^Machines to search", "freeable_order"),
        (r"^Examining ", "freeable_examining"), (r"^Giving ", "freeable_giving"),
        (r"^Bypass because machine", "freeable_bypass"), (r"^Setting up ", "freeable_evict"),
        (r"^Increased order of RESERVE job to", GENERIC),
    ),
    # -- family 8: evictions
    ("NodepoolScheduler", "doEvictions"): _r(
        (r"^(?:\S+ +)?Counted Current Needed Order", "evict_header"),
        (r"^(?:\S+ +)?-?\d+ +-?\d+ +-?\d+ +\d+$", "evict_row"),
        (r"^(Recurse to|Return from)", "evict_recurse"),
    ),
    ("RmJob", "shrinkBy"): _r((r"^Removing share", "shrink_by")),
    ("NodePool", "setupPreemptions"): _r(
        (r"^Clearing ", "clear_for_reservation"), (r"^Found non-preemptable", "non_preemptable"),
    ),
    ("RmJob", "shrinkByOne"): _r((r"^Job schedules", "schedule_removal"), (r"^\*+ Job cannot", GENERIC)),
    ("RmJob", "removeShare"): _r((r"^Job removes", "share_removed"), (r"^\*+ Job cannot", GENERIC)),
    # -- family 9: defragmentation
    ("NodepoolScheduler", "detectFragmentation"): _r(
        (r"^Nodepool +User +PureFS", "frag_header"), (r"^NP \S+ After check:", "frag_free"),
        (r"^NP: ", "frag_needy"), (r"^vMachines:", "frag_vmachines"),
        (r"^Nodepools:", GENERIC), (r"^Nodepool \S+ has a maximum size", "frag_max_size"),
        (r"^\S+ +\S+ +-?\d+ +-?\d+ +-?\d+ +-?\d+ +-?\d+", "frag_row"),
    ),
    ("NodepoolScheduler", "insureFullEviction"): _r(
        (r"^No needy jobs", "frag_none"), (r"^NEEDY JOBS DETECTED", "frag_detected"),
    ),
    ("NodepoolScheduler", "takeFromTheRich"): _r(
        (r"^Candidate machine:", "rich_candidate"), (r"^Not a candidate", "rich_not_candidate"),
        (r"^Found \d+ machines", "rich_found"), (r"^Eligible machines:", "rich_eligible"),
        (r"^Bypass +\S+ : too small", "rich_bypass"),
        (r"^Bypass +\S+ : (RESERVE policy|for reservation)", GENERIC),  # reservations' bypasses: no input
        (r"^Clearing share", GENERIC), (r"^Clearing shares:", GENERIC),
        (r"^Given_per_round", GENERIC), (r"^LOOPEND", GENERIC),
    ),
    ("NodepoolScheduler", "doFinalEvictions"): _r(
        (r"^Satisfied needs of job", "rich_satisfied"), (r"^Could not clear", "rich_retry"),
        (r"^Could not get enough", "rich_failed"),
        (r"^Job \d+ is a candidate with processes", "rich_candidate_job"),
        (r"^Job \d+ is (not a|a backup) candidate because below frag threshold", "rich_below_threshold"),
        (r"^Needy job looking for", "rich_looking"), (r"^Will attempt", "rich_attempt"),
        (r"^Job \d+ is (not a|a backup) candidate", GENERIC), (r"^Skipping class", GENERIC),
        (r"^Job \d+ ", GENERIC), (r"^Needy job has better priority", GENERIC),
        (r"^Jobs in class \S+ are not candidates", GENERIC),
    ),
    ("NodepoolScheduler", "clearShare"): _r(
        (r"^(Donate|Reassign expanded share|Canceling expansion share) ", "clear_share"),
    ),
    # -- family 10: published schedule and cycle framing
    ("JobManagerConverter", "createState"): _r(
        (r"^Schedule sent to Orchestrator", "schedule_sent"), (r"^$", "schedule_state"),
        (r"^Refusal: ", "job_refused"),  # WARN, beside the refusal in the published structure
    ),
    ("ResourceManagerComponent", "runScheduler"): _r(
        (r"^-+ \d+ -+ Entering scheduling loop", "loop_enter"),
        (r"^-+ \d+ -+ Scheduling loop returns", "loop_return"),
        (r"^Scheduling wait interrupted", GENERIC),
    ),
}

# Any routed method may log a caught exception (`logger.error(methodName, id, e)`): its class name,
# message and stack trace are kept as a message, not taken for a drifted format (ahead of a
# catch-all route, whose grammar would reject it).
JAVA_EXCEPTION = Route(r"^([a-z_][\w$]*\.)+[A-Z][\w$]*(Exception|Error)", GENERIC)
for _routes in ROUTES.values():
    _routes.insert(len(_routes) - (_routes[-1].prefix == ""), JAVA_EXCEPTION)

# Family -> the tables its rows land in (a family may feed two tables).
TARGETS: dict[str, list[Target]] = {}


def _t(table: str, families: str, **consts: str) -> None:
    for fam in families.split():
        TARGETS.setdefault(fam, []).append(Target(table, dict(consts)))


for _fam in ("np_name np_quantum np_search_order np_node_file np_node_rule np_classes np_no_classes "
             "np_subpools np_no_subpools np_nodes class_pool_created").split():
    _t("_nodepool_lines", _fam, item=_fam)
for _fam in ("class_begin user_begin property class_row class_assign init_param jd_host_class "
             "class_rebuild").split():
    _t("_config_lines", _fam, item=_fam)
# the `nodes` table's event names (the README's table lists them); the others are the family name without `node_`
NODE_EVENTS = {"node_added": "arrive", "node_reactivated": "reactivate", "node_recovers": "recover",
               "node_recover": "recover_node", "node_disabled": "disable",
               "node_vary_offline": "vary_off"}
for _fam in ("node_heartbeat node_rule_match node_rule_miss node_map node_added node_reactivated node_recover "
             "node_missed node_missed_recorded node_missed_time node_heartbeat_reset "
             "node_heartbeat_reset_time node_recovers node_death_notice node_death node_disabled "
             "node_purge node_not_purged node_completed node_resize node_status node_metrics node_vary "
             "node_vary_off node_vary_offline node_vary_on node_bad_virtual node_virtual_fill "
             "node_waiting").split():
    _t("nodes", _fam, event=NODE_EVENTS.get(_fam, _fam.removeprefix("node_")))
_t("processes", "node_blacklist", event="blacklist")
_t("evictions", "node_purge", reason="node_purge")
_t("_occupancy_lines", "occupancy_begin occupancy_table occupancy_end")
_t("pool_tables", "pool_tables")
for _fam in ("ev_incoming ev_non_schedulable ev_gone ev_remove_unschedulable ev_state ev_discarded "
             "ev_no_active ev_fast_recovery ev_no_state job_arrives job_machine_list job_update "
             "job_max_shares job_initialized job_schedule_new job_schedule_recovery job_assign_recovery "
             "job_completion_signal job_completes job_refused job_recover job_recovered_nodes").split():
    _t("job_events", _fam, event=_fam.removeprefix("ev_").removeprefix("job_"))
for _fam in ("proc_vacate proc_vacated proc_new proc_state proc_completion proc_completed proc_ignored "
             "proc_unknown_share").split():
    _t("processes", _fam, event=_fam.removeprefix("proc_"))
_t("jobs", "submit_row", source="submit")
_t("jobs", "how_much_fair_share", source="howMuchFairShare")
_t("jobs", "recovered_job", source="recovered")
_t("jobs", "sched_sections", source="schedule")
_t("_cycle_lines", "schedule_sent loop_enter loop_return total_arrivals schedule_summary schedule_run "
   "jobs_arrive submit_header recovered_shares")
_t("_cap_lines", "prj_cannot_predict prj_init_zero prj_cap init_job_cap")
_t("_rmcounter_lines", "rmc_start rmc_end rmc_maxorder rmc_names rmc_weights rmc_wanted rmc_vmachines "
   "rmc_final rmc_given rmc_vshares rmc_nshares rmc_before_bonus rmc_before_bonus_row")
_t("counts", "what_of_fair_share", policy="FAIR_SHARE", kind="given")
for _fam, _kind in (("fixed_to_class", "class"), ("fixed_counting", "counting"),
                    ("fixed_available", "available"), ("fixed_granted", "granted"),
                    ("fixed_stable", "stable"), ("fixed_deferring", "deferring"),
                    ("fixed_out_of_shares", "out_of_shares"), ("res_counting", "counting"),
                    ("res_granted", "granted"), ("res_deferred", "deferred"), ("defer", "deferred")):
    _t("counts", _fam, kind=_kind)
for _fam in ("allot_job_cap allot_current allot_additional allot_deferred allot_deferred_user "
             "allot_caps allot_capping allot_allowed").split():
    _t("allotments", _fam, kind=_fam.removeprefix("allot_"))
_t("_placement_lines", "connect_share connect_new_share")
for _fam in ("expansion_order do_expansion find_shares_counted fixed_assign find_machines "
             "find_machines_preempt freeable_enter freeable_order freeable_examining freeable_giving "
             "freeable_bypass").split():
    _t("expansions", _fam, kind=_fam)
_t("evictions", "shrink_by", reason="shrink")
_t("evictions", "clear_for_reservation", reason="clear_for_reservation")
_t("evictions", "freeable_evict", reason="setup_for_reservation")
_t("evictions", "schedule_removal", reason="schedule_removal")
_t("evictions", "share_removed", reason="share_removed")
_t("evictions", "non_preemptable", reason="non_preemptable")
_t("_eviction_count_lines", "evict_header evict_row evict_recurse")
for _fam in ("frag_header frag_row frag_free frag_needy frag_vmachines frag_max_size frag_none "
             "frag_detected rich_candidate rich_not_candidate rich_found rich_eligible rich_bypass "
             "rich_satisfied rich_retry rich_failed rich_candidate_job rich_below_threshold rich_looking rich_attempt "
             "clear_share needy_assign needy_expand").split():
    _t("_defrag_lines", _fam, kind=_fam)
_t("_schedule_lines", "schedule_state")


def all_families() -> list[str]:
    """Every family with a grammar rule (the lark start symbols), in a stable order."""
    seen: dict[str, None] = {}
    for routes in ROUTES.values():
        for route in routes:
            if route.family != GENERIC:
                seen[route.family] = None
    return list(seen)


# Every family as a small integer (the compiled router's output): GENERIC first, then route order.
FAMILY_NAMES: list[str] = list(dict.fromkeys([GENERIC] + [r.family for rs in ROUTES.values() for r in rs]))
FAMILY_CODE: dict[str, int] = {name: i for i, name in enumerate(FAMILY_NAMES)}
