"""The nodepool tree the RM builds from Nodepool stanzas and the node files they name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from replay.model.resources.classes import ClassRow
from replay.model.resources.classfile import Stanza, stanza_error
from replay.model.resources.defaults import left_open
from replay.model.resources.files import resolve_file
from replay.model.resources.properties import Properties, trim_comments
from replay.parsing.sources import InputError
from rmref.javahash import hashmap_order


# printNodepool writes "Node File: None" for a pool without a node file; the log parser keeps
# that text, so the resources side must say the same for rows to compare equal.
NO_NODE_FILE = "None"


@dataclass(frozen=True)
class PoolRow:
    """A nodepool as the RM builds it (one `nodepools` row)."""

    name: str
    parent: str | None
    search_order: int
    quantum: int | None
    node_file: str
    node_rule: str | None
    classes: list[str] | None
    subpools: list[str] | None
    nodes: list[str] | None
    file: str
    line: int
    # every name its node files list (full, short, IP), as the RM maps them: `nodes` is the printed
    # part only (names without a dot), which an IP address is not
    listed: tuple[str, ...] = ()


@dataclass
class _NodeReader:
    """Reads node files as the RM does (imports, '#' comments, short/long names, duplicates)."""

    root: Path
    domain: str | None
    owner: dict[str, str] = field(default_factory=dict)  # node name -> file it came from

    def read(self, name: str, pool: str, nodes: list[str], pool_files: set[str], seen: tuple[str, ...] = ()) -> None:
        path = resolve_file(self.root, name)
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
    path = resolve_file(root, name)
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
            raise stanza_error(st, f"duplicate nodepool {st.name!r}")
        if st.parent is not None:
            raise stanza_error(st, f"nodepool {st.name}: write 'parent = {st.parent}' inside the braces "
                          "(nodepools do not inherit)")
        if "domain" in st.props and st is not stanzas[0]:
            raise stanza_error(st, f"nodepool {st.name}: 'domain' is allowed only in the first nodepool")
        pools[st.name] = st
    return pools


def _pool_parents(pools: dict[str, Stanza]) -> dict[str, str | None]:
    """Each pool's parent pool (None at the top), checked to exist and to form no cycle."""
    parent = {n: (trim_comments(st.props["parent"]) if "parent" in st.props else None) for n, st in pools.items()}
    for n, p in parent.items():
        if p is not None and p not in pools:
            raise stanza_error(pools[n], f"nodepool {n}: parent pool {p!r} is not defined")
        chain, cur = [n], p
        while cur is not None:
            if cur in chain:
                raise stanza_error(pools[n], f"nodepool cycle {' <- '.join(chain + [cur])}")
            chain.append(cur)
            cur = parent[cur]
    return parent


def _pool_files(pools: dict[str, Stanza]) -> dict[str, str]:
    """node file -> pool: at most one pool may lack a file, and no file may serve two pools."""
    without_file = [n for n, st in pools.items() if "nodefile" not in st.props]
    if len(without_file) > 1:
        raise stanza_error(pools[without_file[1]], f"nodepools {' '.join(without_file)} have no node file "
                                          "(only one may lack one)")
    files: dict[str, str] = {}
    for n, st in pools.items():
        nf = st.props.get("nodefile")
        if nf is not None and files.setdefault(nf, n) != n:
            raise stanza_error(st, f"nodepool {n}: node file {nf} is already used by nodepool {files[nf]}")
    return files


def _pool_quanta(pools: dict[str, Stanza], parent: dict[str, str | None],
                 props: Properties) -> dict[str, int | None]:
    """Share quantum (GB) of every pool: a top-level pool's own share-quantum or ducc.rm.share.quantum,
    inherited by all its subpools (which may not set one); None when neither is known (no
    ducc.properties: the replay infers it from the log)."""
    global_quantum = None if left_open(props, "ducc.rm.share.quantum") else props.integer("ducc.rm.share.quantum", 15)
    own: dict[str, int] = {}
    for n, st in pools.items():
        q = st.props.get("share-quantum")
        if q is None:
            continue
        if parent[n] is not None:
            raise stanza_error(st, f"nodepool {n}: share-quantum is allowed only in top-level nodepools")
        try:
            own[n] = int(trim_comments(q))
        except ValueError:
            raise stanza_error(st, f"nodepool {n}: share-quantum {q!r} is not a number") from None

    def top(n: str) -> str:
        up = parent[n]
        return n if up is None else top(up)
    return {n: own.get(top(n), global_quantum) for n in pools}


def _search_order(st: Stanza) -> int:
    search = st.props.get("search-order", "100")
    try:
        return int(trim_comments(search))
    except ValueError:
        raise stanza_error(st, f"nodepool {st.name}: search-order {search!r} is not a number") from None


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
            listed=tuple(nodes.get(n, ())),
        ))
        for c in children[n]:
            visit(c)

    for n in pools:
        if parent[n] is None:
            visit(n)
    return rows
