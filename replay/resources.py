"""Read a DUCC resources directory (`$DUCC_HOME/resources`) into the bootstrap tables.

When rotation has removed the bootstrap section of rm.log, the RM's configuration can still be
read from the files it was started with: `ducc.properties`, the class file it names
(`ducc.rm.class.definitions`, normally `ducc.classes`), the node files the nodepools name, and
the optional user registry (`ducc.rm.user.registry`, normally `ducc.users`).

    from replay.resources import read_resources
    tables = read_resources(Path("resources"))   # 'config', 'classes', 'nodepools'

The frames have the columns and dtypes of the log parser's tables (`replay.tables.SCHEMAS`) and
the values mean what the RM logged at bootstrap: class fields get the same inheritance and
defaults, nodepools the same quantum and node lists, config the same keys and value spelling.
`file`/`line` name the resources file and the 1-based line that defined the row (null line: a
built-in default). A configuration the RM would refuse to start with raises `InputError`.

Config keys that depend on the host the RM ran on rather than on these files (DUCC_HOME, JVM,
OS, versions, JMX URL, the DNS domain) are not produced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from replay.sources import InputError
from replay.tables import SCHEMAS
from rmref.javahash import hashmap_order

PROPERTIES = "ducc.properties"
DEFAULT_CLASS_FILE = "ducc.classes"
DEFAULT_USER_FILE = "ducc.users"
JAVA_INT_MAX = 2**31 - 1
# printNodepool writes "Node File: None" for a pool without a node file; the log parser keeps
# that text, so the resources side must say the same for rows to compare equal.
NO_NODE_FILE = "None"
NULL_TEXT = "<null>"  # how DuccLogger writes a null argument


# ----------------------------------------------------------------------------- ducc.properties


@dataclass(frozen=True)
class Properties:
    """A Java .properties file: key -> raw value and key -> 1-based line (the last definition wins)."""

    file: str
    values: dict[str, str]
    lines: dict[str, int]

    def raw(self, key: str) -> str | None:
        """The value as Java's Properties holds it, with ${name} placeholders resolved."""
        value = self.values.get(key)
        return None if value is None else _resolve_placeholders(value, self.values)

    def text(self, key: str, default: str | None = None) -> str | None:
        """SystemPropertyResolver.getStringProperty: the value with any '#' comment cut off."""
        value = self.raw(key)
        return default if value is None else trim_comments(value)

    def integer(self, key: str, default: int | None = None) -> int | None:
        """SystemPropertyResolver.getIntProperty (default when unset; InputError when not a number)."""
        value = self.text(key)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise InputError(f"{self.file} line {self.lines[key]}: {key} = {value!r} is not a number; "
                             "fix the value (the RM would not start with it)") from None

    def boolean(self, key: str, default: bool) -> bool:
        """SystemPropertyResolver.getBooleanProperty: only t/true (any case) is true."""
        value = self.text(key)
        return default if value is None else java_bool(value)

    def line(self, key: str) -> int | None:
        """Line of the key's (last) definition, None when the key is unset."""
        return self.lines.get(key)


def trim_comments(value: str) -> str:
    """Cut a value at its first '#' and trim it, as DUCC's property readers do."""
    return value.split("#", 1)[0].strip()


def java_bool(value: str) -> bool:
    """DUCC's boolean reading: 't' or 'true' in any case, everything else false."""
    return trim_comments(value).lower() in ("t", "true")


_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


def _resolve_placeholders(value: str, values: dict[str, str], depth: int = 0) -> str:
    """Replace ${name} by the named property (left as written when unknown, e.g. ${DUCC_HOME})."""
    if "${" not in value or depth > 10:
        return value
    def sub(m: re.Match) -> str:
        name = m.group(1)
        return _resolve_placeholders(values[name], values, depth + 1) if name in values else m.group(0)
    return _PLACEHOLDER.sub(sub, value)


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    """Java Properties escapes: \\t \\n \\r \\f \\uXXXX, and a backslash before any other character."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
            out.append(chr(int(text[i + 2:i + 6], 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line): comments and blank lines dropped, continuations joined."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip(" \t\f")
        if pending is None:
            if not stripped or stripped[0] in "#!":
                continue
            start, body = number, stripped
        else:
            start, body = pending[0], pending[1] + stripped
        trailing = len(body) - len(body.rstrip("\\"))
        if trailing % 2:  # an odd number of trailing backslashes continues the line
            pending = (start, body[:-1])
        else:
            pending = None
            out.append((start, body))
    if pending is not None:
        out.append(pending)
    return out


def _split_key(line: str) -> tuple[str, str]:
    """Key and value of one logical line: the key ends at an unescaped '=', ':' or whitespace."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):  # one separator, possibly surrounded by whitespace
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str, file: str = PROPERTIES) -> Properties:
    """Parse Java .properties text (later definitions of a key replace earlier ones, as in Java)."""
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in _logical_lines(text):
        key, value = _split_key(line)
        values[key] = value
        lines[key] = number
    return Properties(file, values, lines)


# ----------------------------------------------------------------------------- class-file syntax

_DELIMS = re.compile(r"([{}=;,\s])")
_PUNCT = ("{", "}", "=", ";")


@dataclass(frozen=True)
class Token:
    """One token of a class/user file and the 1-based line it is on."""

    text: str
    line: int


def tokenize(text: str) -> list[Token]:
    """Tokens as NodeConfiguration reads them: '#' lines and blank lines skipped, every line end a
    ';', and '{' '}' '=' ';' single tokens; spaces, tabs and commas only separate."""
    out: list[Token] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        for part in _DELIMS.split(line + ";"):
            if part and not part.isspace() and part != ",":
                out.append(Token(part, number))
    return out


@dataclass(frozen=True)
class Stanza:
    """One `Kind name [parent] { key = value; ... }` definition."""

    kind: str
    name: str
    parent: str | None
    props: dict[str, str]
    file: str
    line: int


class _Reader:
    """A cursor over tokens, raising InputError that names file and line."""

    def __init__(self, tokens: list[Token], file: str):
        self.tokens, self.file, self.pos = tokens, file, 0

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def next(self) -> Token | None:
        tok = self.peek()
        self.pos += tok is not None
        return tok

    def fail(self, tok: Token | None, what: str) -> InputError:
        line = tok.line if tok is not None else (self.tokens[-1].line if self.tokens else 1)
        return InputError(f"{self.file} line {line}: {what}; fix the file (the RM would not start with it)")


def _value(reader: _Reader, key: Token) -> str:
    """The value after a key: an optional '=', then words up to ';' (line end), '{' or '}'."""
    words: list[str] = []
    tok = reader.peek()
    if tok is not None and tok.text == "=":
        reader.next()
    while (tok := reader.peek()) is not None:
        if tok.text == ";":
            reader.next()
            break
        if tok.text in ("{", "}"):  # a brace ends the value; '=' inside a value is kept, as the RM does
            if not words:
                raise reader.fail(tok, f"missing value for {key.text!r}" if tok.text == "}" else "missing '}'")
            break
        words.append(tok.text)
        reader.next()
    if not words:
        raise reader.fail(key, f"missing value for {key.text!r}")
    return " ".join(words)  # multi-word values are kept space-joined, as the RM keeps them


def _body(reader: _Reader) -> dict[str, str]:
    """Properties up to the closing '}' (end of file also closes, as the RM tolerates it)."""
    props: dict[str, str] = {}
    while (tok := reader.next()) is not None:
        if tok.text == ";":
            continue
        if tok.text == "}":
            return props
        if tok.text in ("{", "="):
            raise reader.fail(tok, "missing '}'" if tok.text == "{" else "expected a property name before '='")
        value = _value(reader, tok)
        if tok.text in props:
            raise reader.fail(tok, f"duplicate property {tok.text!r}")
        props[tok.text] = value
    return props


STANZA_KINDS = ("Nodepool", "Class", "User")


def parse_stanzas(text: str, file: str) -> list[Stanza]:
    """Parse a class or user file into its stanzas, in file order."""
    reader = _Reader(tokenize(text), file)
    out: list[Stanza] = []
    while (tok := reader.next()) is not None:
        if tok.text == ";":
            continue
        if tok.text not in STANZA_KINDS:
            raise reader.fail(tok, f"expected Nodepool, Class or User, found {tok.text!r}")
        name = reader.next()
        if name is None or name.text in _PUNCT:
            raise reader.fail(name or tok, f"missing {tok.text} name")
        after = reader.next()
        parent = None
        if after is not None and after.text not in _PUNCT:
            parent, after = after.text, reader.next()
        if after is None or after.text != "{":
            raise reader.fail(after or name, f"missing '{{' after {tok.text} {name.text}")
        out.append(Stanza(tok.text, name.text, parent, _body(reader), file, tok.line))
    return out


# ----------------------------------------------------------------------------- classes


@dataclass(frozen=True)
class ClassRow:
    """A concrete class as the RM builds it (one `classes` row)."""

    name: str
    policy: str
    priority: int
    weight: int
    nodepool: str
    init_cap: int
    expand_by_doubling: bool
    prediction: bool
    prediction_fudge: int
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
    return {
        "weight": "100", "priority": "10", "cap": str(JAVA_INT_MAX),
        "expand-by-doubling": _jbool(props.boolean("ducc.rm.expand.by.doubling", True)),
        "initialization-cap": str(props.integer("ducc.rm.initialization.cap", 2)),
        "use-prediction": _jbool(props.boolean("ducc.rm.prediction", True)),
        "prediction-fudge": str(props.integer("ducc.rm.prediction.fudge", 60000)),
    }


_POLICY_DEFAULTS = {"FIXED_SHARE": {"priority": "5"}, "RESERVE": {"priority": "1", "enforce": "true"}}


def _jbool(value: bool) -> str:
    return "true" if value else "false"


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
                raise _at(st, f"class {name}: parent class {parent!r} is not defined")
            if parent in seen:
                raise _at(st, f"class {name}: inheritance cycle {' -> '.join(seen + (parent,))}")
            for k, v in effective(parent, seen + (parent,)).items():
                if k not in merged and k not in NOT_INHERITED:
                    merged[k] = v
        done[name] = merged
        return merged

    return {name: effective(name, (name,)) for name in stanzas}


def _at(st: Stanza, what: str) -> InputError:
    return InputError(f"{st.file} line {st.line}: {what}; fix the file (the RM would not start with it)")


def _int_field(st: Stanza, fields: dict[str, str], key: str) -> int:
    try:
        return int(trim_comments(fields[key]))
    except ValueError:
        raise _at(st, f"class {st.name}: {key} = {fields[key]!r} is not a number") from None


def resolve_classes(stanzas: list[Stanza], props: Properties) -> list[ClassRow]:
    """The concrete classes (file order) with inheritance and defaults applied as the RM does."""
    by_name: dict[str, Stanza] = {}
    for st in stanzas:
        if st.name in by_name:
            raise _at(st, f"duplicate class {st.name!r}")
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
            raise _at(st, f"class {st.name} has no policy")
        if policy not in POLICIES:
            raise _at(st, f"class {st.name}: unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
        policies.add(policy)
        if "abstract" in st.props and "default" in st.props:
            raise _at(st, f"class {st.name}: an abstract class cannot be the default")
        # the RM takes the mere presence of 'default' (or 'abstract'), whatever its value
        if "default" in st.props:
            if policy in defaults:
                raise _at(st, f"class {st.name}: only one {policy} default allowed, "
                              f"already class {defaults[policy].name}")
            defaults[policy] = st
        base = _fair_defaults(props) if policy == "FAIR_SHARE" else _POLICY_DEFAULTS[policy]
        f = {**base, **f}
        if "nodepool" not in f:
            raise _at(st, f"class {st.name} has no nodepool")
        priority = _int_field(st, f, "priority")
        if priorities.setdefault(priority, policy) != policy:
            raise _at(st, f"class {st.name}: priority {priority} is already used by a "
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
    """One class row: FAIR_SHARE classes carry their own cap/prediction fields, the others the
    RM's global settings (ResourceClass reads ducc.rm.* for them)."""
    fair = policy == "FAIR_SHARE"
    if fair:
        init_cap = _int_field(st, f, "initialization-cap")
        doubling, predict = java_bool(f["expand-by-doubling"]), java_bool(f["use-prediction"])
        fudge = _int_field(st, f, "prediction-fudge")
    else:
        init_cap = props.integer("ducc.rm.initialization.cap", 2)
        doubling = props.boolean("ducc.rm.expand.by.doubling", True)
        predict = props.boolean("ducc.rm.prediction", True)
        fudge = props.integer("ducc.rm.prediction.fudge", 60000)
    return ClassRow(
        name=st.name, policy=policy, priority=priority,
        weight=_int_field(st, f, "weight") if fair else 0,
        nodepool=trim_comments(f["nodepool"]), init_cap=init_cap, expand_by_doubling=doubling,
        prediction=predict, prediction_fudge=fudge,
        enforce=java_bool(f["enforce"]) if policy == "RESERVE" else True,
        max_allotment=f.get("max-allotment"), cap=f.get("cap"), debug=f.get("debug"),
        authorized_users=f.get("users"), default="default" in st.props, file=st.file, line=st.line,
    )


# ----------------------------------------------------------------------------- nodepools


@dataclass(frozen=True)
class PoolRow:
    """A nodepool as the RM builds it (one `nodepools` row)."""

    name: str
    parent: str | None
    search_order: int
    quantum: int
    node_file: str
    node_rule: str | None
    classes: list[str] | None
    subpools: list[str] | None
    nodes: list[str] | None
    file: str
    line: int


def _resolve_file(root: Path, name: str) -> Path | None:
    """A file the configuration names: relative to the resources directory; an absolute path from
    the production host falls back to the same file name inside the directory."""
    path = Path(name)
    for cand in ((path, root / path.name) if path.is_absolute() else (root / path,)):
        if cand.is_file():
            return cand
    return None


@dataclass
class _NodeReader:
    """Reads node files as the RM does (imports, '#' comments, short/long names, duplicates)."""

    root: Path
    domain: str | None
    owner: dict[str, str] = field(default_factory=dict)  # node name -> file it came from

    def read(self, name: str, pool: str, nodes: list[str], pool_files: set[str], seen: tuple[str, ...] = ()) -> None:
        path = _resolve_file(self.root, name)
        if path is None:
            raise InputError(f"{self.root}: node file {name!r} (nodepool {pool}) is missing; copy it "
                             "from the production $DUCC_HOME/resources")
        for number, raw in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            node = raw.split("#", 1)[0].strip()
            if not node or node.startswith("domain"):  # 'domain' lines are obsolete; the RM skips them
                continue
            if node.startswith("import"):
                parts = node.split()
                if len(parts) < 2:
                    raise InputError(f"{path.name} line {number}: 'import' without a file name; fix the file")
                if parts[1] not in pool_files and parts[1] not in seen:
                    self.read(parts[1], pool, nodes, pool_files, seen + (name,))
                continue
            names = [node]
            if "." in node:
                names.append(node.split(".", 1)[0])  # the RM also knows the host by its short name
            elif self.domain is not None:
                names.append(f"{node}.{self.domain}")
            for n in names:
                if n in self.owner:
                    raise InputError(f"{path.name} line {number}: node {n} is listed twice "
                                     f"(first in {self.owner[n]}); fix the node files")
                self.owner[n] = path.name
            nodes.extend(names)


def _read_regex(root: Path, name: str, pool: str) -> str:
    """A '.regex' node file: its lines, trimmed and concatenated, are one host-name pattern."""
    path = _resolve_file(root, name)
    if path is None:
        raise InputError(f"{root}: node rule file {name!r} (nodepool {pool}) is missing; copy it "
                         "from the production $DUCC_HOME/resources")
    regex = "".join(line.strip() for line in path.read_text(errors="replace").splitlines())
    if not regex:
        raise InputError(f"{path}: empty node rule (nodepool {pool}); fix the file")
    return regex


def _index_pools(stanzas: list[Stanza]) -> dict[str, Stanza]:
    """Nodepool stanzas by name, rejecting what the RM rejects in a single stanza."""
    pools: dict[str, Stanza] = {}
    for st in stanzas:
        if st.name in pools:
            raise _at(st, f"duplicate nodepool {st.name!r}")
        if st.parent is not None:
            raise _at(st, f"nodepool {st.name}: write 'parent = {st.parent}' inside the braces "
                          "(nodepools do not inherit)")
        if "domain" in st.props and st is not stanzas[0]:
            raise _at(st, f"nodepool {st.name}: 'domain' is allowed only in the first nodepool")
        pools[st.name] = st
    return pools


def _pool_parents(pools: dict[str, Stanza]) -> dict[str, str | None]:
    """Each pool's parent pool (None at the top), checked to exist and to form no cycle."""
    parent = {n: (trim_comments(st.props["parent"]) if "parent" in st.props else None) for n, st in pools.items()}
    for n, p in parent.items():
        if p is not None and p not in pools:
            raise _at(pools[n], f"nodepool {n}: parent pool {p!r} is not defined")
        chain, cur = [n], p
        while cur is not None:
            if cur in chain:
                raise _at(pools[n], f"nodepool cycle {' <- '.join(chain + [cur])}")
            chain.append(cur)
            cur = parent[cur]
    return parent


def _pool_files(pools: dict[str, Stanza]) -> dict[str, str]:
    """node file -> pool: at most one pool may lack a file, and no file may serve two pools."""
    without_file = [n for n, st in pools.items() if "nodefile" not in st.props]
    if len(without_file) > 1:
        raise _at(pools[without_file[1]], f"nodepools {' '.join(without_file)} have no node file "
                                          "(only one may lack one)")
    files: dict[str, str] = {}
    for n, st in pools.items():
        nf = st.props.get("nodefile")
        if nf is not None and files.setdefault(nf, n) != n:
            raise _at(st, f"nodepool {n}: node file {nf} is already used by nodepool {files[nf]}")
    return files


def _pool_quanta(pools: dict[str, Stanza], parent: dict[str, str | None], props: Properties) -> dict[str, int]:
    """Share quantum (GB) of every pool: a top-level pool's own share-quantum or ducc.rm.share.quantum,
    inherited by all its subpools (which may not set one)."""
    global_quantum = props.integer("ducc.rm.share.quantum", 15)
    own: dict[str, int] = {}
    for n, st in pools.items():
        q = st.props.get("share-quantum")
        if q is None:
            continue
        if parent[n] is not None:
            raise _at(st, f"nodepool {n}: share-quantum is allowed only in top-level nodepools")
        try:
            own[n] = int(trim_comments(q))
        except ValueError:
            raise _at(st, f"nodepool {n}: share-quantum {q!r} is not a number") from None

    def top(n: str) -> str:
        return n if parent[n] is None else top(parent[n])
    return {n: own.get(top(n), global_quantum) for n in pools}


def _search_order(st: Stanza) -> int:
    search = st.props.get("search-order", "100")
    try:
        return int(trim_comments(search))
    except ValueError:
        raise _at(st, f"nodepool {st.name}: search-order {search!r} is not a number") from None


def resolve_nodepools(stanzas: list[Stanza], classes: list[ClassRow], props: Properties,
                      root: Path) -> list[PoolRow]:
    """The nodepool tree in the RM's print order (top-level pools in file order, depth first)."""
    pools = _index_pools(stanzas)
    parent = _pool_parents(pools)
    files = _pool_files(pools)
    quantum = _pool_quanta(pools, parent, props)
    for c in classes:
        if c.nodepool not in pools:
            raise InputError(f"{c.file} line {c.line}: class {c.name} names nodepool {c.nodepool!r}, "
                             "which is not defined; fix the file (the RM would not start with it)")
    # 'domain' in the first pool qualifies bare node names; otherwise the RM uses its host's DNS domain,
    # which only adds long names (never printed) to the node maps.
    domain = trim_comments(stanzas[0].props["domain"]) if "domain" in stanzas[0].props else None
    reader = _NodeReader(root, domain)
    nodes: dict[str, list[str]] = {}
    rules: dict[str, str] = {}
    for nf, n in files.items():
        if nf.endswith(".regex"):
            rules[n] = _read_regex(root, nf, n)
        else:
            reader.read(nf, n, nodes.setdefault(n, []), set(files))

    hash_order = hashmap_order(list(pools))  # the RM links children by iterating a HashMap
    children = {n: [c for c in hash_order if parent[c] == n] for n in pools}
    rows: list[PoolRow] = []

    def visit(n: str) -> None:
        st = pools[n]
        printed = [k for k in hashmap_order(nodes.get(n, [])) if "." not in k]  # the RM prints short names
        members = [c.name for c in classes if c.nodepool == n]
        rows.append(PoolRow(
            name=n, parent=parent[n], search_order=_search_order(st), quantum=quantum[n],
            node_file=st.props.get("nodefile", NO_NODE_FILE), node_rule=rules.get(n),
            classes=members or None, subpools=children[n] or None,
            nodes=None if n in rules else (printed or None), file=st.file, line=st.line,
        ))
        for c in children[n]:
            visit(c)

    for n in pools:
        if parent[n] is None:
            visit(n)
    return rows


# ----------------------------------------------------------------------------- users and config


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
                    raise _at(st, f"user {st.name}: {k} = {v}: cannot tell which class it limits")
                if parts[1] not in known:
                    raise _at(st, f"user {st.name}: {k} = {v}: class {parts[1]!r} is not defined")
                try:
                    int(v.strip())
                except ValueError:
                    raise _at(st, f"user {st.name}: {k} = {v}: not a number") from None
            if k.startswith("max-allotment"):
                out.append((f"user.{st.name}.{k}", v, st.file, st.line))
    return out


def _gb(value: int) -> str:
    """The RM logs '<n>', ' GB' as two arguments joined by a space."""
    return f"{value}  GB"


def _trunc_div(a: int, b: int) -> int:
    """Java long division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def config_rows(props: Properties, classes: list[ClassRow], first_pool: Stanza | None,
                class_file: str) -> list[tuple[str, str, str | None, int | None]]:
    """(key, value, file, line) for the scheduler parameters the RM logs at bootstrap (Scheduler.init),
    in the logged order, minus the host-dependent ones."""
    P = props.file
    rows: list[tuple[str, str, str | None, int | None]] = []

    def add(key: str, value: object, *prop_keys: str) -> None:
        lines = [props.line(k) for k in prop_keys if props.line(k) is not None]
        text = NULL_TEXT if value is None else (_jbool(value) if isinstance(value, bool) else str(value))
        rows.append((key, text.strip(), P, lines[0] if lines else None))

    def default_of(policy: str) -> ClassRow | None:
        return next((c for c in classes if c.policy == policy and c.default), None)

    add("reserved DRAM", _gb(props.integer("ducc.rm.reserved.dram", 0)), "ducc.rm.reserved.dram")
    override = props.integer("ducc.rm.override.dram", 0)
    add("DRAM override", _gb(override if override > 0 else _trunc_div(override, 1024 * 1024)), "ducc.rm.override.dram")
    add("scheduler", props.text("ducc.rm.scheduler", "org.apache.uima.ducc.rm.ClassBasedScheduler"), "ducc.rm.scheduler")
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
    add("fragmentation threshold", props.integer("ducc.rm.fragmentation.threshold", 2), "ducc.rm.fragmentation.threshold")
    add("do defragmentation", props.boolean("ducc.rm.defragmentation", True), "ducc.rm.defragmentation")
    url = _broker_url(props)
    if url is not None:
        add("ActiveMQ URL", url, "ducc.broker.protocol", "ducc.broker.port")
    add("JVM Path", props.raw("ducc.jvm"), "ducc.jvm")
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


def _jd_row(props: Properties, classes: list[ClassRow]) -> tuple[str, str, str | None, int | None] | None:
    """The 'jd.host.class=... jd.host.user=...' line the RM logs when the JD host class exists."""
    cls = (props.raw("ducc.jd.host.class") or "JobDriver").strip()
    user = (props.raw("ducc.jd.host.user") or "System").strip()
    if cls not in {c.name for c in classes}:
        return None
    return ("jd.host", f"jd.host.class={cls} jd.host.user={user}", props.file, props.line("ducc.jd.host.class"))


# ----------------------------------------------------------------------------- entry point


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc}); check the path and permissions") from exc


def read_resources(path: Path) -> dict[str, pl.DataFrame]:
    """The `config`, `classes` and `nodepools` tables from a DUCC resources directory."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"{root}: no such directory; give --config the DUCC resources directory "
                         "($DUCC_HOME/resources) the RM was started with")
    prop_path = root / PROPERTIES
    if not prop_path.is_file():
        raise InputError(f"{root}: {PROPERTIES} is missing; copy it from the production $DUCC_HOME/resources")
    props = parse_properties(_read_text(prop_path), PROPERTIES)
    class_name = props.text("ducc.rm.class.definitions") or DEFAULT_CLASS_FILE
    class_path = _resolve_file(root, class_name)
    if class_path is None:
        raise InputError(f"{root}: class file {class_name} (ducc.rm.class.definitions) is missing; "
                         "copy it from the production $DUCC_HOME/resources")
    stanzas = parse_stanzas(_read_text(class_path), class_path.name)
    by_kind = {k: [s for s in stanzas if s.kind == k] for k in STANZA_KINDS}
    if not by_kind["Nodepool"]:
        raise InputError(f"{class_path.name}: no Nodepool is defined; the RM needs at least one")
    classes = resolve_classes(by_kind["Class"], props)
    pools = resolve_nodepools(by_kind["Nodepool"], classes, props, root)

    users = list(by_kind["User"])
    user_name = props.text("ducc.rm.user.registry", DEFAULT_USER_FILE) or DEFAULT_USER_FILE
    user_path = _resolve_file(root, user_name)
    if user_path is not None:  # the registry is optional for the RM too
        more = parse_stanzas(_read_text(user_path), user_path.name)
        bad = next((s for s in more if s.kind != "User"), None)
        if bad is not None:
            raise _at(bad, f"only User stanzas belong in the user registry, found {bad.kind}")
        users += more
    config = config_rows(props, classes, by_kind["Nodepool"][0], class_path.name)
    config += user_rows(users, classes)
    jd = _jd_row(props, classes)
    if jd is not None:
        config.append(jd)

    return {
        "config": _frame("config", [dict(zip(("key", "value", "file", "line"), r)) for r in config]),
        "classes": _frame("classes", [_class_dict(c) for c in sorted(classes, key=lambda c: c.name)]),
        "nodepools": _frame("nodepools", [vars(p) for p in pools]),
    }


def _class_dict(c: ClassRow) -> dict:
    d = vars(c).copy()
    d.pop("default")
    return d


def _frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """Rows as a frame with exactly the parser's schema for `table`."""
    schema = SCHEMAS[table]
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema)
