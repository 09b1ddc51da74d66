"""The concrete classes the RM builds from Class stanzas: inheritance, policy defaults and checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from replay.model.resources.classfile import Stanza, stanza_error
from replay.model.resources.defaults import left_open
from replay.model.resources.properties import Properties, java_bool, trim_comments
from replay.parsing.sources import InputError


JAVA_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class ClassRow:
    """A concrete class as the RM builds it (one `classes` row)."""

    name: str
    policy: str
    priority: int
    weight: int
    nodepool: str
    init_cap: int | None  # None: from a missing ducc.properties (the replay infers it)
    expand_by_doubling: bool | None
    prediction: bool | None
    prediction_fudge: int | None
    enforce: bool
    max_allotment: str | None
    cap: str | None
    debug: str | None
    authorized_users: str | None
    default: bool
    file: str
    line: int


POLICIES = ("FAIR_SHARE", "FIXED_SHARE", "RESERVE")
NOT_INHERITED = ("abstract", "default")  # a child does not become abstract or the default


def _fair_defaults(props: Properties) -> dict[str, str]:
    """What a FAIR_SHARE class gets for unset fields: fixed values plus the ducc.rm.* globals."""
    return {"weight": "100", "priority": "10", "cap": str(JAVA_INT_MAX)}


# class field -> the ducc.properties key a class that does not set it takes its value from
GLOBAL_FIELDS = {
    "initialization-cap": "ducc.rm.initialization.cap",
    "expand-by-doubling": "ducc.rm.expand.by.doubling",
    "use-prediction": "ducc.rm.prediction",
    "prediction-fudge": "ducc.rm.prediction.fudge",
}
_RM_BUILTINS = {"ducc.rm.initialization.cap": 2, "ducc.rm.expand.by.doubling": True,
                "ducc.rm.prediction": True, "ducc.rm.prediction.fudge": 60000}


def global_field(props: Properties, key: str) -> int | bool | None:
    """A ducc.rm.* default a class takes (the RM's built-in one when the file leaves it unset);
    None when there is no ducc.properties and the replay is to infer it from the log."""
    if left_open(props, key):
        return None
    default = _RM_BUILTINS[key]
    if isinstance(default, bool):
        return props.boolean(key, default)
    return props.integer(key, default)


_POLICY_DEFAULTS = {"FIXED_SHARE": {"priority": "5"}, "RESERVE": {"priority": "1", "enforce": "true"}}


def class_parent(st: Stanza) -> str | None:
    """The class a class inherits from: `Class name parent {` or, equally, `parent = name` inside."""
    return st.parent if st.parent is not None else st.props.get("parent")


def _inherit(stanzas: dict[str, Stanza]) -> dict[str, dict[str, str]]:
    """Each class's own fields plus, for fields it leaves unset, its ancestors' (nearest first)."""
    done: dict[str, dict[str, str]] = {}

    def effective(name: str, seen: tuple[str, ...]) -> dict[str, str]:
        if name in done:
            return done[name]
        st = stanzas[name]
        merged = dict(st.props)
        parent = class_parent(st)
        if parent is not None:
            if parent not in stanzas:
                raise stanza_error(st, f"class {name}: parent class {parent!r} is not defined")
            if parent in seen:
                raise stanza_error(st, f"class {name}: inheritance cycle {' -> '.join(seen + (parent,))}")
            for k, v in effective(parent, seen + (parent,)).items():
                if k not in merged and k not in NOT_INHERITED:
                    merged[k] = v
        done[name] = merged
        return merged

    return {name: effective(name, (name,)) for name in stanzas}


def _int_field(st: Stanza, fields: dict[str, str], key: str) -> int:
    try:
        return int(trim_comments(fields[key]))
    except ValueError:
        raise stanza_error(st, f"class {st.name}: {key} = {fields[key]!r} is not a number") from None


def resolve_classes(stanzas: list[Stanza], props: Properties) -> list[ClassRow]:
    """The concrete classes (file order) with inheritance and defaults applied as the RM does."""
    by_name: dict[str, Stanza] = {}
    for st in stanzas:
        if st.name in by_name:
            raise stanza_error(st, f"duplicate class {st.name!r}")
        by_name[st.name] = st
    fields = _inherit(by_name)
    defaults: dict[str, Stanza] = {}
    policies: set[str] = set()  # abstract classes count: an abstract FIXED_SHARE base needs a default too
    priorities: dict[int, str] = {}
    rows: list[ClassRow] = []
    for st in stanzas:  # abstract classes are checked too: the RM validates them before dropping them
        f = fields[st.name]
        policy = trim_comments(f.get("policy", ""))
        if not policy:
            raise stanza_error(st, f"class {st.name} has no policy")
        if policy not in POLICIES:
            raise stanza_error(st, f"class {st.name}: unknown policy {policy!r} "
                                   f"(expected one of {', '.join(POLICIES)})")
        policies.add(policy)
        if "abstract" in st.props and "default" in st.props:
            raise stanza_error(st, f"class {st.name}: an abstract class cannot be the default")
        # the RM takes the mere presence of 'default' (or 'abstract'), whatever its value
        if "default" in st.props:
            if policy in defaults:
                raise stanza_error(st, f"class {st.name}: only one {policy} default allowed, "
                              f"already class {defaults[policy].name}")
            defaults[policy] = st
        base = _fair_defaults(props) if policy == "FAIR_SHARE" else _POLICY_DEFAULTS[policy]
        f = {**base, **f}
        if "nodepool" not in f:
            raise stanza_error(st, f"class {st.name} has no nodepool")
        priority = _int_field(st, f, "priority")
        if priorities.setdefault(priority, policy) != policy:
            raise stanza_error(st, f"class {st.name}: priority {priority} is already used by a "
                          f"{priorities[priority]} class (one policy per priority)")
        if "abstract" in f:
            continue
        rows.append(_class_row(st, policy, priority, f, props))
    for policy in sorted(policies):
        if policy not in defaults:
            raise InputError(f"{stanzas[0].file}: no {policy} class has 'default = true'; "
                             "mark one (the RM would not start without it)")
    return rows


def _class_row(st: Stanza, policy: str, priority: int, f: dict[str, str], props: Properties) -> ClassRow:
    """One class row: FAIR_SHARE classes carry their own cap/prediction fields (or the RM's global
    settings where they set none), the others the global settings (ResourceClass reads ducc.rm.*)."""
    fair = policy == "FAIR_SHARE"

    def field_of(name: str, read: Callable[[Stanza, dict[str, str], str], int | bool]) -> Any:
        return read(st, f, name) if fair and name in f else global_field(props, GLOBAL_FIELDS[name])

    return ClassRow(
        name=st.name, policy=policy, priority=priority,
        weight=_int_field(st, f, "weight") if fair else 0,
        nodepool=trim_comments(f["nodepool"]),
        init_cap=field_of("initialization-cap", _int_field),
        expand_by_doubling=field_of("expand-by-doubling", _bool_field),
        prediction=field_of("use-prediction", _bool_field),
        prediction_fudge=field_of("prediction-fudge", _int_field),
        enforce=java_bool(f["enforce"]) if policy == "RESERVE" else True,
        max_allotment=f.get("max-allotment"), cap=f.get("cap"), debug=f.get("debug"),
        authorized_users=f.get("users"), default="default" in st.props, file=st.file, line=st.line,
    )


def _bool_field(st: Stanza, fields: dict[str, str], key: str) -> bool:
    return java_bool(fields[key])
