"""The methods each of the RM's classes logs: a fact of the log format, written from reading the
RM's sources of every release rmref knows (2.0.0 to trunk) for which METHOD names each class's
logger prints (the union over the releases).

Every RM class below logs through a logger of its own, with a method name the class spells out,
so a record of one of these classes whose METHOD is not on its list is not a line the RM wrote: a
line cut short and run into another (a lost span), or garbage. Classes whose logger prints the
method names of other code are not listed, and none of their METHODs is suspect:
ResourceManagerComponent (DUCC's common component code logs through its logger), Config (the
class-file reader the RM hands a logger of that name), DuccHead. A record of a class not listed
is taken as the message it reads as.
"""

from __future__ import annotations

LOGGED_METHODS: dict[str, frozenset[str]] = {
    "JobManagerConverter": frozenset({
        "blacklist", "blacklistJob", "blacklistReservation", "createState", "eventArrives", "jobArrives",
        "jobRemoved", "jobUpdate", "receiveExecutable", "receiveReservation", "reconcileProcess",
        "recoverFromOrchestrator", "sanityCheckForOrchestrator", "whitelist",
    }),
    "Machine": frozenset({
        "assignShare", "blacklist", "heartbeatArrives", "heartbeatMissed", "removeShare", "updateShareOrder",
        "whitelist",
    }),
    "NodePool": frozenset({
        "NodePool.<init>", "connectShare", "countAssignableShares", "countFreeableMachines", "disable",
        "doEvictions", "doExpansion", "findMachines", "findShares", "handle_not_quiesced", "handle_quiesced",
        "isCompatible", "isQuiesce", "nodeArrives", "nodeLeaves", "queryMachines", "rearrangeVirtual", "reset",
        "resetPreemptables", "setupPreemptions", "signalDb",
    }),
    "NodeStability": frozenset({"missedNode", "nodeArrives", "nodeDeath", "nodeRecovers"}),
    "NodepoolScheduler": frozenset({
        "apportion_qshares", "clearShare", "countClassShares", "countFixedForJob", "countJobShares",
        "countReservationForJob", "countSingleFixedProcess", "countSingleReservation", "countUserShares",
        "detectFragmentation", "doEvictions", "doFinalEvictions", "expandNeedyJobs", "getAllotmentForJob",
        "howMuchFairShare", "howMuchFixed", "howMuchreserve", "insureFullEviction", "schedule",
        "takeFromTheRich", "traverseNodepoolsForExpansion", "validAllotment", "whatOfFairShare",
        "whatOfFixedShare", "whatOfToReserve",
    }),
    "PersistenceAccess": frozenset({
        "addAssignment", "addJob", "clear", "close", "createMachine", "deleteJob", "is_master",
        "removedAssignment", "setEvicted", "setFixed", "setNodeProperties", "setNodeProperty", "setPurged",
        "updateDemand", "updateShare",
    }),
    "ResourceClass": frozenset({"ResourceClass", "canUseBonus"}),
    "ResourceManagerConfiguration": frozenset({"resourceManager"}),
    "ResourceManagerEventListener": frozenset({
        "onAgentLifecycleManagement", "onNodeMetricsEvent", "onOrchestratorStateUpdateEvent",
    }),
    "RmJob": frozenset({
        "defer", "getPrjCap", "initJobCap", "refuse", "removeAllShares", "removeShare", "shrinkBy",
        "shrinkByInvestment", "shrinkByOne", "shrinkByOrderByMachine",
    }),
    "Scheduler": frozenset({
        "addRule", "dispatch", "findNodepoolByRule", "getNodepoolByName", "handleDeadNodes", "handleIllNodes",
        "init", "initClasses", "mapNodeRule", "nodeArrives", "processCompletion", "processRecovery",
        "readNodepoolRegex", "reconfigure", "schedule", "signalCompletion", "updateNodepoolsByNode", "varyoff",
        "varyon",
    }),
    "Share": frozenset({"evicted", "purge", "setFixed", "setInitializationTme", "update"}),
}


def logs_method(cls: str, method: str) -> bool:
    """Whether a record of class `cls` and METHOD `method` can be the RM's (True for a class not listed)."""
    known = LOGGED_METHODS.get(cls)
    return known is None or method in known
