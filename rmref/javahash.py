"""Java 8 HashMap iteration order, which decides the RM's host choice among equal candidates.

The RM keeps its nodes in java.util.HashMap<Node, Machine> tables and walks them in iteration
order, so which of two equally free machines gets a process is decided by the hash of the node's
key and by the map's history (its capacity and the order keys were put in). This module models
just enough of java.util.HashMap (OpenJDK 8) to reproduce that order:

- a key's bucket is spread(hash) & (capacity - 1), spread(h) = h ^ (h >>> 16);
- a put appends to the tail of its bucket; a remove unlinks without reordering;
- the table starts at 16 buckets and doubles once size exceeds 3/4 of the capacity (or when a
  bucket would reach 9 entries while the table is under 64 buckets); a doubling splits each
  bucket in two keeping the relative order;
- clone() re-puts the entries, in the source's iteration order, into a fresh table of
  tableSizeFor(size / 0.75 + 1) buckets (so a clone can be *smaller* than its source);
- putAll(m) into a map with no table yet (new, or a clone of an empty map) first sizes it to
  tableSizeFor(m.size() / 0.75 + 1) buckets when that exceeds the requested capacity (so it can
  be smaller than the default 16, or larger than 16 while holding only 12 keys); into a map with
  a table it is a run of puts.

Not modelled: a bucket that becomes a red-black tree (9+ keys in one bucket of a 64+ bucket
table) iterates root first and places new keys after their tree parent, so such a map's order
differs from this model. It takes many near-identical hashes in one bucket; none of the fixture
clusters (up to 53 nodes) comes close.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

_MASK = 0xFFFFFFFF
_DEFAULT_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


@lru_cache(maxsize=65536)  # host, user and class names recur every cycle
def string_hash(text: str) -> int:
    """java.lang.String.hashCode, as an unsigned 32-bit value (UTF-16 code units)."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
    return h


@lru_cache(maxsize=65536)
def node_hash(name: str, ip: str) -> int:
    """DuccNode.hashCode for a node: 31 + NodeIdentity.hashCode, NodeIdentity = 31*(31 + ip) + name."""
    identity = (31 * (31 + string_hash(ip)) + string_hash(name)) & _MASK
    return (31 + identity) & _MASK


def spread(h: int) -> int:
    """HashMap.hash: fold the high half into the low half (h ^ (h >>> 16))."""
    h &= _MASK
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """HashMap.tableSizeFor: the smallest power of two >= cap (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return n


class JavaHashMap:
    """The key order of a java.util.HashMap (values are not needed: the RM maps a node to its machine)."""

    def __init__(self, capacity: int = 0) -> None:
        """An empty map; the table is allocated on the first put (`capacity` 0 means the default 16)."""
        self._requested = capacity  # HashMap's threshold before the table exists (0: none asked for)
        self._initial = capacity or _DEFAULT_CAPACITY
        # a bucket's list is made on its first entry: most maps are small, and a list per empty
        # bucket of every new table was about 6% of an audit
        self._table: list[list[tuple[int, str]] | None] | None = None
        self._size = 0
        # each key's stored hash, so a lookup goes to its bucket instead of walking the table
        # (What Of moves every machine between maps many times a cycle); a key put again under
        # another hash (never done here) is found the long way, as the RM's map would hold both
        self._hash_of: dict[str, int] = {}
        self._ambiguous: set[str] = set()

    @property
    def capacity(self) -> int:
        """Number of buckets (0 while no table has been allocated)."""
        return len(self._table) if self._table is not None else 0

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: str) -> bool:
        return self._find(key) is not None

    def __iter__(self) -> Iterator[str]:
        for bucket in self._table or ():
            if bucket:
                for _, key in bucket:
                    yield key

    def _find(self, key: str) -> tuple[list[tuple[int, str]], int] | None:
        if self._table is None:
            return None
        if key in self._ambiguous:
            buckets: Iterable[list[tuple[int, str]] | None] = self._table
        elif key in self._hash_of:
            buckets = (self._table[self._index(self._hash_of[key], len(self._table))],)
        else:
            return None
        for bucket in buckets:
            if bucket:
                for i, (_, k) in enumerate(bucket):
                    if k == key:
                        return bucket, i
        return None

    def _index(self, h: int, capacity: int) -> int:
        return spread(h) & (capacity - 1)

    def _resize(self) -> None:
        old = self._table
        if old is None:
            self._table = [None] * self._initial
            return
        cap = len(old) * 2
        new: list[list[tuple[int, str]] | None] = [None] * cap
        for bucket in old:  # lo/hi split keeps each bucket's relative order
            for entry in bucket or ():
                h = entry[0]  # stored masked: spread(h) & (cap - 1), inlined
                i = (h ^ (h >> 16)) & (cap - 1)
                moved = new[i]
                if moved is None:
                    new[i] = [entry]
                else:
                    moved.append(entry)
        self._table = new

    def put(self, key: str, h: int) -> None:
        """Insert `key` whose Java hashCode is `h`; an existing key keeps its place."""
        table = self._table
        if table is None:
            self._resize()
            table = self._table
            assert table is not None
        h &= _MASK
        i = (h ^ (h >> 16)) & (len(table) - 1)  # spread(h) & (capacity - 1), inlined
        bucket = table[i]
        if bucket is None:
            bucket = table[i] = []
        for _, k in bucket:
            if k == key:
                return
        bucket.append((h, key))
        if self._hash_of.setdefault(key, h) != h:
            self._ambiguous.add(key)
        if len(bucket) > _TREEIFY_THRESHOLD and len(table) < _MIN_TREEIFY_CAPACITY:
            self._resize()  # treeifyBin on a small table resizes instead
        self._size += 1
        if self._size > int(self.capacity * 0.75):
            self._resize()

    def put_all(self, entries: Iterable[tuple[str, int]]) -> None:
        """putAll of a map whose (key, hash) pairs are `entries`, in its iteration order."""
        entries = list(entries)
        if self._table is None and entries:  # putMapEntries pre-sizes a map with no table
            presized = table_size_for(int(len(entries) / 0.75 + 1.0))
            if presized > self._requested:
                self._requested = self._initial = presized
        for key, h in entries:
            self.put(key, h)

    def remove(self, key: str) -> None:
        """Unlink `key` if present (the table never shrinks)."""
        found = self._find(key)
        if found is not None:
            bucket, i = found
            del bucket[i]
            self._size -= 1
            if key not in self._ambiguous:
                del self._hash_of[key]

    def entries(self) -> list[tuple[str, int]]:
        """(key, hash) pairs in iteration order."""
        return [(k, h) for bucket in self._table or () if bucket for h, k in bucket]

    def clone(self) -> JavaHashMap:
        """HashMap.clone: a fresh table sized for the current size, filled in this map's iteration order."""
        copy = JavaHashMap(table_size_for(int(self._size / 0.75 + 1.0)) if self._size else 0)
        for key, h in self.entries():
            copy.put(key, h)
        return copy


def hashmap_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a fresh HashMap<String, ...> after putting `keys` in this order."""
    table = JavaHashMap()
    for key in keys:
        table.put(key, string_hash(key))
    return list(table)


def node_map_order(nodes: Sequence[tuple[str, str]]) -> list[str]:
    """Iteration order of a fresh HashMap<Node, Machine> after putting (name, ip) nodes in this order."""
    table = JavaHashMap()
    for name, ip in nodes:
        table.put(name, node_hash(name, ip))
    return list(table)
