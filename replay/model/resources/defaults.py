"""DUCC's documented defaults: what a resources folder without ducc.properties stands for.

A DUCC installation's ducc.properties is default.ducc.properties (shipped with DUCC) with the
site's overrides on top, so a folder that lacks it is read as if it held the shipped defaults.
These are the values of default.ducc.properties (DUCC 3.0) for the keys the RM reads; a key the
shipped file leaves unset takes the default the RM code hard-codes (see config.py). Values the
scheduler depends on (quantum, caps, doubling, prediction) are not filled in from here: the
replay infers them from the log first (replay.model.settings) and takes these only when the
log does not tell.
"""

from __future__ import annotations

from replay.model.resources.properties import Properties

DEFAULTS_FILE = "default.ducc.properties"

DOCUMENTED_DEFAULTS: dict[str, str] = {
    "ducc.rm.share.quantum": "1",
    "ducc.rm.scheduler": "org.apache.uima.ducc.rm.scheduler.NodepoolScheduler",
    "ducc.rm.class.definitions": "ducc.classes",
    "ducc.rm.user.registry": "ducc.users",
    "ducc.rm.default.memory": "4",
    "ducc.rm.init.stability": "2",
    "ducc.rm.node.stability": "6",
    "ducc.rm.eviction.policy": "SHRINK_BY_INVESTMENT",
    "ducc.rm.initialization.cap": "1",
    "ducc.rm.expand.by.doubling": "true",
    "ducc.rm.prediction": "true",
    "ducc.rm.prediction.fudge": "120000",
    "ducc.rm.fragmentation.threshold": "8",
    "ducc.rm.reserve_overage": "0",
    "ducc.rm.persistence.impl": "org.apache.uima.ducc.common.persistence.rm.NullRmStatePersistence",
    "ducc.agent.node.metrics.publish.rate": "30000",
    "ducc.database.host.list": "--disabled--",
    "ducc.jd.host.class": "JobDriver",
    "ducc.jd.host.user": "System",
}

# ducc.properties keys whose value decides a scheduling decision: with no ducc.properties they
# are left open (null in the frames) for the replay to infer from the log.
INFERRED_KEYS = ("ducc.rm.share.quantum", "ducc.rm.initialization.cap", "ducc.rm.expand.by.doubling",
                 "ducc.rm.prediction", "ducc.rm.prediction.fudge")


def documented_properties() -> Properties:
    """The shipped defaults as a Properties stand-in for a missing ducc.properties (no lines)."""
    return Properties(DEFAULTS_FILE, dict(DOCUMENTED_DEFAULTS), {}, stand_in=True)


def left_open(props: Properties, key: str) -> bool:
    """Whether `key`'s value is unknown (no ducc.properties) and is to be inferred from the log."""
    return props.stand_in and key in INFERRED_KEYS
