"""replay.model.resources on small hand-written DUCC resources directories.

Expected values follow the RM's documented rules (NodeConfiguration / ResourceClass): inheritance
copies unset fields from the parent chain but not 'abstract' or 'default'; FAIR_SHARE classes take
unset cap/doubling/prediction fields from ducc.rm.*; other classes always use ducc.rm.*.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from replay import InputError
from replay.model.resources import (
    parse_properties,
    parse_stanzas,
    read_resources,
    tokenize,
)
from replay.model.resources.frames import LISTED_NODES
from replay.parsing.tables import SCHEMAS
from rmref.javahash import hashmap_order as java_hashmap_order

PROPS = """\
# comment
ducc.rm.share.quantum = 1
ducc.rm.initialization.cap = 1
ducc.rm.expand.by.doubling = true
ducc.rm.prediction = true
ducc.rm.prediction.fudge = 10000
ducc.rm.init.stability = 2
ducc.head = headnode
ducc.broker.protocol = tcp
ducc.broker.port = 61617
ducc.broker.url.decoration = a=1
# later definitions win, as in java.util.Properties
ducc.rm.share.quantum = 4
ducc.rm.fragmentation.threshold: 5
ducc.rm.initialization.cap = 2   # trailing comments are cut by DUCC's readers
"""

CLASSES = """\
# a comment line
Nodepool --default-- { }

Class base {
    policy = FAIR_SHARE
    nodepool = --default--
    priority = 10
    abstract = true
    debug = fixed
}
Class mid base { weight = 50; expand-by-doubling = false }
Class leaf mid { weight = 7; default = true }
Class plain { policy = FAIR_SHARE; nodepool = --default--; priority = 10; initialization-cap = 9 }
Class fx { policy = FIXED_SHARE
           nodepool = --default-- ; default = true }
Class rs { policy = RESERVE; nodepool = --default--; default = true; enforce = false; users = ann, bob }
"""


def _dir(tmp_path: Path, classes: str = CLASSES, props: str = PROPS, **files: str) -> Path:
    (tmp_path / "ducc.properties").write_text(props)
    (tmp_path / "ducc.classes").write_text(classes)
    for name, text in files.items():
        (tmp_path / name.replace("_", ".")).write_text(text)
    return tmp_path


def _classes(tmp_path: Path, **kw) -> dict[str, dict]:
    return {r["name"]: r for r in read_resources(_dir(tmp_path, **kw))["classes"].to_dicts()}


def test_schemas_match_the_parser_tables(tmp_path):
    tables = read_resources(_dir(tmp_path))
    assert set(tables) == {"config", "classes", "nodepools", LISTED_NODES}
    for name, df in tables.items():
        if name != LISTED_NODES:  # (no log table: a log's bootstrap shows it as `map` events)
            assert df.schema == pl.Schema(SCHEMAS[name]), name


def test_inheritance_overrides_and_abstract(tmp_path):
    cl = _classes(tmp_path)
    assert set(cl) == {"mid", "leaf", "plain", "fx", "rs"}  # 'base' is abstract
    assert (cl["mid"]["weight"], cl["leaf"]["weight"]) == (50, 7)
    # leaf inherits from mid (doubling off) and, through it, from base (debug, nodepool, priority)
    assert cl["leaf"]["expand_by_doubling"] is False and cl["mid"]["expand_by_doubling"] is False
    assert cl["leaf"]["debug"] == "fixed" and cl["leaf"]["priority"] == 10
    assert cl["leaf"]["nodepool"] == "--default--"


def test_abstract_and_default_are_not_inherited(tmp_path):
    tables = read_resources(_dir(tmp_path))
    # mid is concrete although its parent is abstract; leaf (not mid) is the FAIR_SHARE default
    assert "mid" in tables["classes"]["name"].to_list()
    config = dict(zip(tables["config"]["key"], tables["config"]["value"]))
    assert config["default fairshare class"] == "leaf"
    assert config["default reserve"] == "rs"


def test_unset_fields_take_the_ducc_properties_defaults(tmp_path):
    cl = _classes(tmp_path)
    # ducc.rm.initialization.cap is 2 (the last definition, comment cut); fudge 10000
    assert cl["leaf"]["init_cap"] == 2 and cl["leaf"]["prediction_fudge"] == 10000
    assert cl["plain"]["init_cap"] == 9  # set in the class
    assert cl["plain"]["weight"] == 100 and cl["plain"]["expand_by_doubling"] is True
    assert cl["plain"]["cap"] == "2147483647"  # FAIR_SHARE default cap
    # FIXED_SHARE/RESERVE: weight 0, no cap, the global cap/doubling/prediction settings
    assert (cl["fx"]["weight"], cl["fx"]["cap"], cl["fx"]["priority"]) == (0, None, 5)
    assert (cl["fx"]["init_cap"], cl["fx"]["prediction_fudge"]) == (2, 10000)
    assert cl["rs"]["priority"] == 1 and cl["rs"]["enforce"] is False and cl["fx"]["enforce"] is True
    assert cl["rs"]["authorized_users"] == "ann bob"  # commas separate like spaces


def test_defaults_without_properties_are_the_rm_builtins(tmp_path):
    cl = _classes(tmp_path, props="ducc.rm.init.stability = 2\n")
    assert cl["leaf"]["init_cap"] == 2 and cl["leaf"]["prediction_fudge"] == 60000
    tables = read_resources(tmp_path)
    config = dict(zip(tables["config"]["key"], tables["config"]["value"]))
    assert config["fragmentation threshold"] == "2" and config["prediction fudge factor"] == "10000"
    assert config["eviction policy"] == "SHRINK_BY_MACHINE" and config["default memory"] == "15"
    assert tables["nodepools"]["quantum"].to_list() == [15]


def test_config_keys_and_lines(tmp_path):
    tables = read_resources(_dir(tmp_path))
    cfg = {r["key"]: r for r in tables["config"].to_dicts()}
    assert cfg["fragmentation threshold"]["value"] == "5"
    assert cfg["initialization cap"]["value"] == "2"
    assert cfg["initialization cap"]["line"] == 15  # the last definition
    assert cfg["ActiveMQ URL"]["value"] == "tcp://headnode:61617?a=1"
    assert cfg["reserved DRAM"]["value"] == "0  GB" and cfg["reserved DRAM"]["line"] is None
    assert cfg["default fairshare class"]["file"] == "ducc.classes"
    assert cfg["default fairshare class"]["line"] == 12
    classes = {r["name"]: r for r in tables["classes"].to_dicts()}
    assert (classes["leaf"]["file"], classes["leaf"]["line"]) == ("ducc.classes", 12)
    assert classes["fx"]["line"] == 14


def test_users_registry_rows(tmp_path):
    props = PROPS + "ducc.rm.user.registry = my.users\n"
    tables = read_resources(_dir(tmp_path, props=props, my_users="User zed { max-allotment = 7 }\n"
                                                                  "User amy { max-allotment = 3 }\n"))
    rows = tables["config"].filter(pl.col("key").str.starts_with("user.")).to_dicts()
    assert [(r["key"], r["value"], r["file"]) for r in rows] == [
        ("user.amy.max-allotment", "3", "my.users"), ("user.zed.max-allotment", "7", "my.users")]


def test_nodepools_tree_quantum_and_nodes(tmp_path):
    classes = """\
Nodepool top { domain = example.com }
Nodepool big { nodefile = big.nodes; parent = top; search-order = 50 }
Nodepool gpu { nodefile = gpu.nodes; parent = big }
Nodepool other { nodefile = other.regex ; share-quantum = 8 }
Class c { policy = FAIR_SHARE; nodepool = gpu; priority = 10; default = true }
"""
    tmp = _dir(tmp_path, classes=classes, big_nodes="b1.example.com  # first\n\nimport extra.nodes\nb2\n",
               extra_nodes="x1.example.com\n", gpu_nodes="domain old\ng1\n", other_regex="  o[0-9]+\n  \\.x  \n")
    pools = {r["name"]: r for r in read_resources(tmp)["nodepools"].to_dicts()}
    assert list(pools) == ["top", "big", "gpu", "other"]  # depth first from the top-level pools
    assert (pools["big"]["parent"], pools["gpu"]["parent"], pools["other"]["parent"]) == ("top", "big", None)
    assert [pools[n]["quantum"] for n in pools] == [4, 4, 4, 8]  # subpools take the top pool's quantum
    assert (pools["top"]["search_order"], pools["big"]["search_order"]) == (100, 50)
    assert pools["top"]["node_file"] == "None" and pools["top"]["nodes"] is None
    assert sorted(pools["big"]["nodes"]) == ["b1", "b2", "x1"]  # short names, imports followed
    assert pools["gpu"]["nodes"] == ["g1"] and pools["gpu"]["classes"] == ["c"]
    assert pools["top"]["subpools"] == ["big"] and pools["gpu"]["subpools"] is None
    assert pools["other"]["node_rule"] == "o[0-9]+\\.x" and pools["other"]["nodes"] is None
    assert pools["top"]["classes"] is None
    config = read_resources(tmp)["config"]
    assert config.filter(pl.col("key") == "default domain")["value"].to_list() == ["example.com"]


def test_every_name_a_node_file_lists_is_listed_with_its_pool_ip_addresses_too(tmp_path):
    # NodeConfiguration maps each name as written, and its part before the first dot (or, with a
    # domain, the name qualified): an IP address is listed whole (the printed list shows only "10")
    classes = CLASSES + "Nodepool np { nodefile = np.nodes; parent = --default-- }\n"
    tmp = _dir(tmp_path, classes=classes, np_nodes="10.0.0.3\nn05.sim.ducc\n")
    tables = read_resources(tmp)
    assert sorted(tables[LISTED_NODES].iter_rows()) == [
        ("10", "np"), ("10.0.0.3", "np"), ("n05", "np"), ("n05.sim.ducc", "np")]
    assert sorted(tables["nodepools"].filter(pl.col("name") == "np")["nodes"][0]) == ["10", "n05"]


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK to compare with java.util.HashMap")
def test_hashmap_order_matches_java(tmp_path):
    src = tmp_path / "HashOrder.java"
    src.write_text("""
import java.util.*; import java.io.*;
public class HashOrder { public static void main(String[] a) throws Exception {
  BufferedReader in = new BufferedReader(new InputStreamReader(System.in)); String line;
  while ((line = in.readLine()) != null) { HashMap<String,String> m = new HashMap<>();
    for (String k : line.trim().split(" ")) if (!k.isEmpty()) m.put(k, k);
    System.out.println(String.join(" ", m.keySet())); } } }
""")
    cases = [[f"node{i}" for i in range(n)] + [f"h{i}.sim.ducc" for i in range(0, n, 3)]
             for n in (1, 5, 12, 13, 40, 97)]
    cases += [["--default--", "big", "gpu", "nvme", "fast", "slow", "x-1", "x-2"]]
    out = subprocess.run(["java", str(src)], input="\n".join(" ".join(c) for c in cases) + "\n",
                         capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    assert [o.split() for o in out] == [java_hashmap_order(c) for c in cases]


def test_properties_syntax():
    p = parse_properties("a=1\n  b : two words  \nc \\\n   continued\n! bang comment\nd\te\n# x = 9\nf=\\u0041\\=\n")
    assert p.raw("a") == "1" and p.raw("b") == "two words  " and p.text("b") == "two words"
    assert p.raw("c") == "continued" and p.raw("d") == "e" and p.raw("x") is None
    assert p.raw("f") == "A=" and p.line("c") == 3
    assert parse_properties("x = ${y}/z\ny = Y\n").raw("x") == "Y/z"


def test_tokenizer_keeps_lines_and_ends_lines_with_semicolons():
    toks = [(t.text, t.line) for t in tokenize("# c\nClass a b {\n  k = v w, x\n}\n")]
    assert toks == [("Class", 2), ("a", 2), ("b", 2), ("{", 2), (";", 2), ("k", 3), ("=", 3), ("v", 3),
                    ("w", 3), ("x", 3), (";", 3), ("}", 4), (";", 4)]
    st = parse_stanzas("Class a b {\n k = v w, x\n z = p = q }\n", "f")[0]
    assert (st.name, st.parent, st.props) == ("a", "b", {"k": "v w x", "z": "p = q"})


@pytest.mark.parametrize("text, line, words", [
    ("Nodepool p { }\nClass a {\n  policy = FAIR_SHARE\n  weight 5 {\n}\n", 4, "missing '}'"),
    ("Nodepool p { }\n\nClass a\n", 3, "missing '{'"),
    ("Nodepool p { }\nClass a { weight = }\n", 2, "missing value"),
    ("Nodepool p { }\nClass a {\n weight = 1\n weight = 2 }\n", 4, "duplicate property"),
    ("Nodepool p { }\nKlass a { }\n", 2, "expected Nodepool, Class or User"),
    ("Nodepool p { }\nClass { }\n", 2, "missing Class name"),
])
def test_class_file_syntax_error_names_file_and_line(tmp_path, text, line, words):
    with pytest.raises(InputError) as err:
        read_resources(_dir(tmp_path, classes=text))
    msg = str(err.value)
    assert f"ducc.classes line {line}:" in msg and words in msg and "\n" not in msg


@pytest.mark.parametrize("classes, words", [
    (CLASSES + "Class leaf2 mid { default = true }\n", "only one FAIR_SHARE default"),
    (CLASSES.replace("default = true }\nClass rs", "}\nClass rs"), "no FIXED_SHARE class has 'default = true'"),
    (CLASSES + "Class orphan nobody { }\n", "parent class 'nobody' is not defined"),
    (CLASSES + "Class lost base { nodepool = nowhere }\n", "nodepool 'nowhere'"),
    (CLASSES + "Class odd { policy = FIXED_SHARE; nodepool = --default--; priority = 10 }\n", "priority 10"),
    (CLASSES + "Class bad { policy = SOMETIMES; nodepool = --default-- }\n", "unknown policy"),
    (CLASSES + "Class nop { nodepool = --default-- }\n", "has no policy"),
    (CLASSES + "Class base2 base { abstract = true; default = true }\n", "abstract class cannot be the default"),
    (CLASSES + "Nodepool sub { parent = --default--; share-quantum = 2; nodefile = s.nodes }\n",
     "share-quantum is allowed only in top-level"),
    (CLASSES + "Nodepool p2 { }\n", "have no node file"),
])
def test_configurations_the_rm_rejects_raise_input_error(tmp_path, classes, words):
    (tmp_path / "s.nodes").write_text("s1\n")
    with pytest.raises(InputError, match=words):
        read_resources(_dir(tmp_path, classes=classes))


def test_missing_inputs_say_what_to_do(tmp_path):
    with pytest.raises(InputError, match="no such directory"):
        read_resources(tmp_path / "absent")
    with pytest.raises(InputError, match=r"class file ducc.classes .* is missing"):
        read_resources(tmp_path)  # (ducc.properties is optional: see test_the_class_file_alone_is_enough)
    (tmp_path / "ducc.properties").write_text(PROPS)
    with pytest.raises(InputError, match=r"class file ducc.classes .* is missing"):
        read_resources(tmp_path)
    (tmp_path / "ducc.classes").write_text("Nodepool p { nodefile = p.nodes }\n")
    with pytest.raises(InputError, match="node file 'p.nodes' .* is missing"):
        read_resources(tmp_path)


def test_class_file_named_by_the_properties(tmp_path):
    (tmp_path / "ducc.properties").write_text(PROPS + "ducc.rm.class.definitions = /prod/ducc/resources/site.classes\n")
    (tmp_path / "site.classes").write_text(CLASSES)
    tables = read_resources(tmp_path)  # an absolute production path falls back to the same name here
    assert tables["classes"]["file"].unique().to_list() == ["site.classes"]


def test_the_class_file_alone_is_enough(tmp_path):
    """Without ducc.properties, DUCC's documented defaults stand in (default.ducc.properties), and
    what decides scheduling is left open (null) for the replay to infer from the log."""
    (tmp_path / "ducc.classes").write_text(CLASSES)
    tables = read_resources(tmp_path)
    cl = {r["name"]: r for r in tables["classes"].to_dicts()}
    assert cl["plain"]["init_cap"] == 9  # set in the class: known
    assert cl["leaf"]["init_cap"] is None and cl["leaf"]["prediction"] is None  # from ducc.properties: open
    assert cl["mid"]["expand_by_doubling"] is False  # set by mid itself
    assert tables["nodepools"]["quantum"].to_list() == [None]
    config = {r["key"]: r for r in tables["config"].to_dicts()}
    assert config["fragmentation threshold"]["value"] == "8"  # default.ducc.properties, not the RM's 2
    assert config["eviction policy"]["value"] == "SHRINK_BY_INVESTMENT"
    assert {r["file"] for r in config.values()} >= {"default.ducc.properties"}
    assert all(r["line"] is None for r in config.values() if r["file"] == "default.ducc.properties")
