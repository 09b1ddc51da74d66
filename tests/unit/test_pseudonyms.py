"""Pseudonyms that keep the RM's HashMap orders (replay/apps/anonymize/pseudonyms.py).

The ground truth is rmref's own model of java.util.HashMap (rmref/javahash.py, itself checked
against a real JVM): the same keys put in the same order must iterate in the same order when every
original is replaced by its pseudonym, for the node maps (node_hash), the Machine maps
(node_hash - 31) and the user maps (String.hashCode), at every size up to the one the bits cover.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.apps.anonymize.pseudonyms import (
    NodeKey,
    StringKey,
    bucket_bits,
    candidate_hashes,
    candidate_text,
    search,
)
from rmref.javahash import JavaHashMap, node_hash, string_hash, table_size_for

KEY = bytes(range(32))
NAMES = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-."), min_size=1, max_size=24)


@given(st.lists(st.integers(0, 36**6 - 1), min_size=1, max_size=50), st.sampled_from(["host-", "user-", ""]))
def test_candidate_hashes_are_java_string_hashes(numbers, prefix):
    hashes = candidate_hashes(prefix, np.array(numbers, dtype=np.uint64)).tolist()
    assert hashes == [string_hash(candidate_text(prefix, n)) for n in numbers]


def _order(keys_and_hashes, capacity: int = 0, clone: bool = False) -> list:
    table = JavaHashMap(capacity)
    for key, h in keys_and_hashes:
        table.put(key, h)
    return list(table.clone() if clone else table)


@settings(max_examples=40)
@given(st.lists(st.tuples(NAMES, st.integers(0, 255), st.integers(0, 255)),
                min_size=2, max_size=60, unique_by=lambda t: t[0]),
       st.booleans())
def test_node_maps_iterate_in_the_same_order(hosts, clone):
    """Machines put in arrival order into the RM's node maps (key node_hash) and Machine maps
    (node_hash - 31), any size the bits cover: the pseudonyms come out in the originals' order."""
    bits = {NodeKey: bucket_bits(len(hosts)), StringKey: 8}
    taken: set[str] = set()
    renamed = {}
    for name, a, b in hosts:
        ip, new_ip = f"10.0.{a}.{b}", f"10.255.{b}.{a}"
        new = search(KEY, "label", name, "host-", [NodeKey(name, ip, "", new_ip)], bits, taken.__contains__)
        taken.add(new)
        renamed[name] = (ip, new, new_ip)
    for offset in (0, 31):
        original = [(name, (node_hash(name, ip) - offset) & 0xFFFFFFFF) for name, (ip, _, _) in renamed.items()]
        pseudo = [(name, (node_hash(new, new_ip) - offset) & 0xFFFFFFFF) for name, (_, new, new_ip) in renamed.items()]
        for capacity in (0, table_size_for(int(len(hosts) / 0.75 + 1.0))):
            assert _order(original, capacity, clone) == _order(pseudo, capacity, clone)


@settings(max_examples=40)
@given(st.lists(NAMES, min_size=2, max_size=40, unique=True))
def test_user_maps_iterate_in_the_same_order(users):
    bits = {NodeKey: 8, StringKey: bucket_bits(len(users))}
    taken: set[str] = set()
    pseudo = {}
    for u in users:
        pseudo[u] = search(KEY, "label", u, "user-", [StringKey(u)], bits, taken.__contains__)
        taken.add(pseudo[u])
    assert _order([(u, string_hash(u)) for u in users]) == _order([(u, string_hash(pseudo[u])) for u in users])


def test_a_qualified_host_keeps_its_bucket_with_its_domain_pseudonym():
    """host-xxxxxx.dom-yyyyyy is hashed whole, as the RM hashes the node's name."""
    bits = {NodeKey: 8, StringKey: 8}
    node7 = NodeKey("node7.site.example", "10.1.2.3", ".dom-abcdef", "10.255.0.1")
    new = search(KEY, "label", "node7", "host-", [node7], bits, lambda _t: False)
    a, b = node_hash("node7.site.example", "10.1.2.3"), node_hash(new + ".dom-abcdef", "10.255.0.1")
    spread = [(h ^ (h >> 16)) & 255 for h in (a, b, a - 31, b - 31)]
    assert spread[0] == spread[1] and spread[2] == spread[3]


def test_the_key_decides_the_pseudonym():
    bits = {NodeKey: 8, StringKey: 8}
    one = [search(k, "label", "alice", "user-", [StringKey("alice")], bits, lambda _t: False) for k in (KEY, KEY)]
    other = search(bytes(32), "label", "alice", "user-", [StringKey("alice")], bits, lambda _t: False)
    assert one[0] == one[1] != other


def test_bucket_bits_cover_every_table_the_rm_builds():
    assert bucket_bits(1) == bucket_bits(191) == 8  # up to 256 buckets
    assert bucket_bits(192) == 9 and bucket_bits(400) == 10
