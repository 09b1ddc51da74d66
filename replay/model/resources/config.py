"""The `config` rows the RM logs at bootstrap: scheduler parameters, user limits, the JD host line."""

from __future__ import annotations

from replay.model.resources.classes import ClassRow
from replay.model.resources.classfile import Stanza, stanza_error
from replay.model.resources.properties import Properties, java_bool_text, trim_comments


NULL_TEXT = "<null>"  # how DuccLogger writes a null argument
# the row a resources folder gives when the user registry its properties name is not in it: the
# RM reads the registry where it exists, so which users have allotments of their own is not known
REGISTRY_UNREAD = "user registry not given"


def user_rows(stanzas: list[Stanza], classes: list[ClassRow]) -> list[tuple[str, str, str, int]]:
    """(key, value, file, line) for each user's max-allotment settings, users sorted by name, as
    the RM prints them; other per-user keys must be 'something.<class>' with a number."""
    known = {c.name for c in classes}
    out = []
    for st in sorted(stanzas, key=lambda s: s.name):
        for k, v in sorted(st.props.items()):
            if k != "max-allotment":
                parts = k.split(".")
                if len(parts) < 2 or not parts[0]:
                    raise stanza_error(st, f"user {st.name}: {k} = {v}: cannot tell which class it limits")
                if parts[1] not in known:
                    raise stanza_error(st, f"user {st.name}: {k} = {v}: class {parts[1]!r} is not defined")
                try:
                    int(v.strip())
                except ValueError:
                    raise stanza_error(st, f"user {st.name}: {k} = {v}: not a number") from None
            if k.startswith("max-allotment"):
                out.append((f"user.{st.name}.{k}", v, st.file, st.line))
    return out


def registry_unread_row(props: Properties, name: str) -> tuple[str, str, str, int | None]:
    """(key, value, file, line): the user registry `name` the properties name, not in the folder."""
    return (REGISTRY_UNREAD, name, props.file, props.line("ducc.rm.user.registry"))


def _gb(value: int) -> str:
    """The RM logs '<n>', ' GB' as two arguments joined by a space."""
    return f"{value}  GB"


def _trunc_div(a: int, b: int) -> int:
    """Java long division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


# keys resources give that the RM's bootstrap never prints (a replay needs them all the same)
RESOURCE_ONLY_KEYS = ("global allotment", REGISTRY_UNREAD)


def config_rows(props: Properties, classes: list[ClassRow], first_pool: Stanza | None,
                class_file: str) -> list[tuple[str, str, str | None, int | None]]:
    """(key, value, file, line) for the scheduler parameters the RM logs at bootstrap (Scheduler.init),
    in the logged order, minus the host-dependent ones."""
    P = props.file
    rows: list[tuple[str, str, str | None, int | None]] = []

    def add(key: str, value: object, *prop_keys: str) -> None:
        lines = [props.line(k) for k in prop_keys if props.line(k) is not None]
        text = NULL_TEXT if value is None else (java_bool_text(value) if isinstance(value, bool) else str(value))
        rows.append((key, text.strip(), P, lines[0] if lines else None))

    def default_of(policy: str) -> ClassRow | None:
        return next((c for c in classes if c.policy == policy and c.default), None)

    add("reserved DRAM", _gb(props.integer("ducc.rm.reserved.dram", 0)), "ducc.rm.reserved.dram")
    override = props.integer("ducc.rm.override.dram", 0)
    add("DRAM override", _gb(override if override > 0 else _trunc_div(override, 1024 * 1024)), "ducc.rm.override.dram")
    add("scheduler", props.text("ducc.rm.scheduler", "org.apache.uima.ducc.rm.ClassBasedScheduler"),
        "ducc.rm.scheduler")
    add("default threads", props.integer("ducc.rm.default.threads", 1), "ducc.rm.default.threads")
    add("default tasks", props.integer("ducc.rm.default.tasks", 10), "ducc.rm.default.tasks")
    add("default memory", props.integer("ducc.rm.default.memory", 15), "ducc.rm.default.memory")
    for key, policy in (("default fairshare class", "FAIR_SHARE"), ("default reserve", "RESERVE")):
        c = default_of(policy)
        rows.append((key, c.name if c else NULL_TEXT, class_file if c else None, c.line if c else None))
    add("reserve overage", _gb(props.integer("ducc.rm.reserve_overage", 0)), "ducc.rm.reserve_overage")
    # 'class definition file' is DUCC_HOME/resources/<file>: DUCC_HOME is the production host's.
    if first_pool is not None and "domain" in first_pool.props:  # otherwise the RM host's DNS domain
        rows.append(("default domain", trim_comments(first_pool.props["domain"]), class_file, first_pool.line))
    add("eviction policy", props.text("ducc.rm.eviction.policy", "SHRINK_BY_MACHINE"), "ducc.rm.eviction.policy")
    add("database enabled", _db_enabled(props), "ducc.database.host.list", "ducc.database.host")
    add("database implementation", props.raw("ducc.rm.persistence.impl"), "ducc.rm.persistence.impl")
    add("use prediction", props.boolean("ducc.rm.prediction", True), "ducc.rm.prediction")
    add("prediction fudge factor", props.integer("ducc.rm.prediction.fudge", 10000), "ducc.rm.prediction.fudge")
    add("node stability", props.integer("ducc.rm.node.stability", 3), "ducc.rm.node.stability")
    if props.raw("ducc.rm.init.stability") is not None:  # no default: the RM fails to start without it
        add("init stability", props.integer("ducc.rm.init.stability"), "ducc.rm.init.stability")
    add("fast recovery", props.boolean("ducc.rm.fast.recovery", True), "ducc.rm.fast.recovery")
    add("metrics update rate", props.integer("ducc.agent.node.metrics.publish.rate", 60000),
        "ducc.agent.node.metrics.publish.rate")
    if props.raw("ducc.rm.initialization.cap") is not None:  # no default here either
        add("initialization cap", props.integer("ducc.rm.initialization.cap"), "ducc.rm.initialization.cap")
    add("expand by doubling", props.boolean("ducc.rm.expand.by.doubling", True), "ducc.rm.expand.by.doubling")
    add("fragmentation threshold", props.integer("ducc.rm.fragmentation.threshold", 2),
        "ducc.rm.fragmentation.threshold")
    add("do defragmentation", props.boolean("ducc.rm.defragmentation", True), "ducc.rm.defragmentation")
    url = _broker_url(props)
    if url is not None:
        add("ActiveMQ URL", url, "ducc.broker.protocol", "ducc.broker.port")
    add("JVM Path", props.raw("ducc.jvm"), "ducc.jvm")
    if props.raw("ducc.rm.global_allotment") is not None:  # the RM never logs it (see RESOURCE_ONLY_KEYS)
        add("global allotment", props.integer("ducc.rm.global_allotment"), "ducc.rm.global_allotment")
    return rows


def _db_enabled(props: Properties) -> bool:
    """DbHelper.isDbEnabled: on unless the host list (or the older single host) says --disabled--."""
    for key in ("ducc.database.host.list", "ducc.database.host"):
        value = props.raw(key)
        if value is not None:
            return value.strip().lower() != "--disabled--"
    return False


def _broker_url(props: Properties) -> str | None:
    """protocol://host:port[?decoration] as the daemons compose it. The host is the RM's own host
    name; the RM runs on the head node, so ducc.head stands in for it."""
    protocol, port, host = props.raw("ducc.broker.protocol"), props.raw("ducc.broker.port"), props.raw("ducc.head")
    if protocol is None or port is None or host is None:
        return None
    url = f"{protocol.split(':', 1)[0].strip()}://{host.strip()}:{port.strip()}"
    decoration = props.raw("ducc.broker.url.decoration")
    if decoration is not None:
        decoration = decoration.strip().removeprefix("?")
        if decoration:
            url += "?" + decoration
    return url


def jd_row(props: Properties, classes: list[ClassRow]) -> tuple[str, str, str | None, int | None] | None:
    """The 'jd.host.class=... jd.host.user=...' line the RM logs when the JD host class exists."""
    cls = (props.raw("ducc.jd.host.class") or "JobDriver").strip()
    user = (props.raw("ducc.jd.host.user") or "System").strip()
    if cls not in {c.name for c in classes}:
        return None
    return ("jd.host", f"jd.host.class={cls} jd.host.user={user}", props.file, props.line("ducc.jd.host.class"))
