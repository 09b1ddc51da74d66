"""Messages the fixtures never show (RM restart recovery, database warnings, TRACE-guarded tables,
refusals at publication) are routed, not reported as format drift. Each line below is written
from the logger call in uima-ducc-rm that produces it (class, method, literal text, arguments)."""

from __future__ import annotations

import polars as pl
import pytest

from replay import parse
from tests.helpers import log_path

_INFO = "01 Jan 2015 00:00:10,000  INFO"
_WARN = "01 Jan 2015 00:00:10,000  WARN"
_DEBUG = "01 Jan 2015 00:00:10,000 DEBUG"
_ERROR = "01 Jan 2015 00:00:10,000 ERROR"

# (header level and logger, job id, METHOD, body)
RARE = [
    (_WARN, "RM.JobManagerConverter", "7", "createState",
     "Refusal:  Job refused because memory of 200GB exceeds largest machine"),
    (_WARN, "RM.JobManagerConverter", "7", "jobArrives",
     "Memory units other than GB are not currently supported.  Job returned."),
    (_INFO, "RM.JobManagerConverter", "7", "recoverFromOrchestrator", "Ignoring completed work: JOB : Completed"),
    (_INFO, "RM.JobManagerConverter", "7", "recoverFromOrchestrator",
     "   Process[ 12 ] state [ Running ] is complete[ false ] Node [N/A] mem[N/A]"),
    (_INFO, "RM.JobManagerConverter", "7", "recoverFromOrchestrator", "      Recover node[ nodeA.sim.ducc"),
    (_INFO, "RM.JobManagerConverter", "7", "recoverFromOrchestrator", "    Node [N/A] mem[N/A"),
    (_INFO, "RM.JobManagerConverter", "7", "recoverFromOrchestrator", "   Node[ nodeA.sim.ducc ] mem[ 31 ]"),
    (_INFO, "RM.JobManagerConverter", "7", "recoverFromOrchestrator", "Received work of type ? Undefined"),
    (_INFO, "RM.NodePool", "7", "countFreeableMachines", "Increased order of RESERVE job to 4"),
    (_WARN, "RM.NodePool", "N/A", "nodeArrives",
     "Cannot write machine to DB: nodeA.sim.ducc java.lang.RuntimeException: down"),
    (_INFO, "RM.NodepoolScheduler", "N/A", "howMuchFairShare", "Scheduling FAIR SHARE for these classes:"),
    (_INFO, "RM.NodepoolScheduler", "N/A", "howMuchFairShare",
     "     Class Name      Policy Prio   Wgt AbsCap InitCap Dbling  Prdct  PFudge   Shr Enforce Nodepool"),
    (_INFO, "RM.NodepoolScheduler", "N/A", "howMuchFairShare",
     "    ------------ ----------- ---- ----- ------ ------- ------ ------ ------- ----- ------- --------"),
    (_INFO, "RM.NodepoolScheduler", "N/A", "howMuchFairShare",
     "          normal  FAIR_SHARE   10   100    100       2   true   true   10000     4    true --default--"),
    (_INFO, "RM.NodepoolScheduler", "N/A", "howMuchFixed", "Scheduling FIXED SHARE for these classes:"),
    (_INFO, "RM.ResourceManagerComponent", "N/A", "runScheduler",
     "Scheduling wait interrupted, executing out-of-band epoch."),
    (_INFO, "RM.Scheduler", "N/A", "handleDeadNodes", "Waiting for (re)initialization."),
    (_INFO, "RM.Scheduler", "N/A", "schedule", "Waiting for (re)initialization."),
    (_WARN, "RM.Scheduler", "7", "processCompletion",
     "Cannot delete job from database: java.lang.RuntimeException: down"),
    (_INFO, "RM.Scheduler", "7", "processCompletion", "Job is not in run list!"),
    (_INFO, "RM.Scheduler", "7", "processRecovery", "Set fixed bit for FIXED job"),
    (_WARN, "RM.Scheduler", "7", "processRecovery",
     "Share is in incompatible nodepool but cannot be evicted: nodeA.sim.ducc.1^0"),
    (_INFO, "RM.Scheduler", "7", "processRecovery", "Set fixed bit for RESERVE job"),
    (_INFO, "RM.Scheduler", "7", "processRecovery", "Increased order of RESERVE job to 4"),
    (_INFO, "RM.Scheduler", "7", "processRecovery", "&&&&&&&&&&&&&&&& new user bob -------------------"),
    (_WARN, "RM.Scheduler", "7", "processRecovery",
     "Cannot persist recovered job in database: java.lang.RuntimeException: down"),
    (_INFO, "RM.Scheduler", "7", "processRecovery",
     "Recovery - Removing share from wrong nodepool after reconfiguration: nodeA.sim.ducc.1^0"),
    (_INFO, "RM.Scheduler", "7", "schedule", "Bypassing previously refused job."),
    (_WARN, "RM.Scheduler", "7", "schedule", "Cannot persist new job in database: java.lang.RuntimeException: down"),
    (_WARN, "RM.Scheduler", "N/A", "schedule", "Cannot update demand in database: java.lang.RuntimeException: down"),
    (_DEBUG, "RM.JobManagerConverter", "7", "receiveExecutable",
     "Skipping process 12 on nodeA.sim.ducc beacause state is Stopped"),  # sic: the RM's spelling
    (_DEBUG, "RM.JobManagerConverter", "7", "receiveReservation", "Assigning share for recovery nodeA.sim.ducc.1^0"),
    (_DEBUG, "RM.NodepoolScheduler", "7", "doFinalEvictions",
     "Jobs in class normal are not candidates because better priority: [ 10 vs 5 ]"),
    (_WARN, "RM.Machine", "N/A", "updateShareOrder",
     "nodeA.sim.ducc ERROR - 3 free plus 2 in use doesn't match old share order of 4"),
    (_WARN, "RM.Machine", "N/A", "heartbeatArrives",
     "nodeA.sim.ducc Cannot update heartbeat count in database: java.lang.RuntimeException: down"),
    (_WARN, "RM.Machine", "N/A", "heartbeatMissed",
     "nodeA.sim.ducc Cannot update heartbeat count in database: java.lang.RuntimeException: down"),
    (_WARN, "RM.NodePool", "N/A", "isQuiesce", "nodeA node status missing"),
    (_WARN, "RM.NodePool", "N/A", "isQuiesce", "nodeA node metrics missing"),
    (_WARN, "RM.JobManagerConverter", "7", "reconcileProcess", "12 share not found?"),
]


@pytest.fixture(scope="module")
def log_with_rare(tmp_path_factory):
    """The sample log with every rare message appended; (path, first appended line)."""
    sample = log_path("a_tiny").read_text()
    path = tmp_path_factory.mktemp("rare") / "rm.log"
    rare = "".join(f"{lvl} {cls} - {jid} T[19] {method}  {body}\n" for lvl, cls, jid, method, body in RARE)
    path.write_text(sample + rare)
    return path, sample.count("\n") + 1


@pytest.mark.parametrize("engine", ["fast", "polars", "lark"])
def test_rare_messages_are_routed_not_unparsed(log_with_rare, engine):
    path, first = log_with_rare
    tables = parse([str(path)], engine=engine).tables
    assert tables["unparsed"].height == 0, tables["unparsed"]["text"].to_list()
    kept = tables["messages"].filter(pl.col("line") >= first).height
    refusals = tables["job_events"].filter((pl.col("line") >= first) & (pl.col("event") == "refused"))
    assert kept + refusals.height == len(RARE)
    assert refusals["job_id"].to_list() == [7]
    assert "exceeds largest machine" in refusals["detail"][0]


def _sample_with(tmp_path, text: str) -> list[str]:
    """The sample log with `text` appended, as parse()'s argument."""
    path = tmp_path / "rm.log"
    path.write_text(log_path("a_tiny").read_text() + text)
    return [str(path)]


def test_a_drifted_body_of_a_routed_method_is_still_reported(tmp_path):
    # the GENERIC routes above are anchored: a new shape of the same method must stay visible
    log = _sample_with(tmp_path, f"{_INFO} RM.Scheduler - 7 T[19] processRecovery  Something new: 42\n")
    unparsed = parse(log).tables["unparsed"]
    assert unparsed.height == 1 and "Something new" in unparsed["text"][0]


def test_an_exception_in_a_routed_method_is_kept_with_its_stack_trace(tmp_path):
    # logger.error(methodName, id, e) prints the exception, then log4j its stack trace lines
    trace = ("\tat org.apache.uima.ducc.rm.scheduler.Scheduler.initClasses(Scheduler.java:600)\n"
             "\tat org.apache.uima.ducc.rm.scheduler.Scheduler.init(Scheduler.java:300)\n")
    head = f"{_ERROR} RM.Scheduler - N/A T[1] initClasses  "
    log = _sample_with(tmp_path, f"{head}java.lang.IllegalStateException: no ducc.classes\n{trace}"
                                 f"{head}Scheduler exits: unable to read configuration.\n")
    for engine in ("fast", "lark"):
        tables = parse(log, engine=engine).tables
        assert tables["unparsed"].height == 0
        errors = tables["messages"].filter(pl.col("level") == "ERROR")["text"].to_list()
        assert errors == ["java.lang.IllegalStateException: no ducc.classes\n" + trace.rstrip("\n"),
                          "Scheduler exits: unable to read configuration."]


def test_an_exception_goes_ahead_of_a_catch_all_route(tmp_path):
    # Scheduler.init routes every body to its parameter lines; an exception there is not one
    log = _sample_with(tmp_path, f"{_ERROR} RM.Scheduler - N/A T[1] init  "
                                 "java.lang.NumberFormatException: For input string: \"x\"\n")
    tables = parse(log).tables
    assert tables["unparsed"].height == 0
    assert tables["messages"].filter(pl.col("level") == "ERROR")["text"].to_list() == [
        'java.lang.NumberFormatException: For input string: "x"']
