"""Keyed pseudonyms that keep what decides the RM's HashMap orders.

The RM walks java.util.HashMaps keyed by its nodes (DuccNode.hashCode, from the host name and IP)
and by user names, and rmref models those walks (rmref/javahash.py): which of two equally free
machines gets a process depends on the keys' hashes. A pseudonym with another hash could send a
process elsewhere in rmref's replay, and the anonymized log would audit differently.

So a pseudonym is searched, not just drawn: candidates `<prefix><6 characters of [0-9a-z]>` are
tried in an order the key decides (a keyed hash of the original picks the starting point) until
one puts its key in the same HashMap bucket as the original's in every table of up to 2**bits
buckets. A HashMap iterates bucket by bucket, and within a bucket in insertion order, so equal
buckets (and the same insertion order, which the log decides) give the same iteration order for
every map of that size or smaller, through every resize and clone. Per constraint that takes
`bits` low bits of spread(hash) (HashMap.hash: h ^ h >>> 16); a host takes it twice, for its node
map key (node_hash) and its Machine key (node_hash - 31, rmref.defrag_state.identity_hash).

What this gives away: `bits` bits of a user name's hash (and 2 x `bits` of a host's name and IP
together). That confirms a guessed name at best one time in 2**bits: not enough to recover one.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from rmref.javahash import node_hash, spread, string_hash, table_size_for

ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyz"
WIDTH = 6  # characters after the prefix: 36**6 (2.2e9) candidates
_SPACE = len(ALPHABET) ** WIDTH
_BATCH = 1 << 12
# candidates are visited start, start + STEP, start + 2 STEP, ... (mod 36**6): every one once (STEP is
# prime to 36), and consecutive ones differ in every character, so their hashes' high bits vary too
# (36**6 consecutive numbers share their first characters, and with them most of a hash's high bits)
_STEP = 1_405_695_061
_M = 0xFFFFFFFF


def bucket_bits(keys: int) -> int:
    """Bits of spread(hash) that fix the bucket in every HashMap the RM can build from `keys`
    entries: a table grows past 3/4 full, a clone or putAll allocates tableSizeFor(n/0.75 + 1),
    a crowded small table grows to 64; at least 8 (256 buckets), so the pseudonyms of a site do
    not change while it grows up to 191 nodes (or users)."""
    return max(8, max(64, table_size_for(int(keys / 0.75 + 1.0))).bit_length() - 1)


@dataclass(frozen=True)
class NodeKey:
    """The original host as the RM hashes it: its name and IP (node_hash); the pseudonym's name is
    the candidate + `suffix` ("." + the domain's pseudonym, or ""), its IP `ip` (already chosen)."""

    name: str
    ip: str
    suffix: str
    pseudo_ip: str


@dataclass(frozen=True)
class StringKey:
    """The original as a String key (a user name): the pseudonym itself is hashed."""

    name: str


Constraint = NodeKey | StringKey


def _pow31(n: int) -> int:
    return pow(31, n, 1 << 32)


def candidate_hashes(prefix: str, numbers: np.ndarray) -> np.ndarray:
    """String.hashCode of `prefix` + each number written in WIDTH base-36 digits (vectorised)."""
    h = np.full(numbers.shape, (string_hash(prefix) * _pow31(WIDTH)) & _M, dtype=np.uint64)
    alphabet = np.frombuffer(ALPHABET, dtype=np.uint8).astype(np.uint64)
    rest = numbers.astype(np.uint64)
    for i in range(WIDTH):  # least significant digit last in the string
        digit = rest % np.uint64(36)
        rest //= np.uint64(36)
        h = (h + alphabet[digit.astype(np.intp)] * np.uint64(_pow31(i))) & np.uint64(_M)
    return h


def candidate_text(prefix: str, number: int) -> str:
    """`prefix` + `number` written in WIDTH base-36 digits (what candidate_hashes hashes)."""
    digits = []
    for _ in range(WIDTH):
        number, d = divmod(number, 36)
        digits.append(chr(ALPHABET[d]))
    return prefix + "".join(reversed(digits))


def _spread_low(h: np.ndarray, bits: int) -> np.ndarray:
    low: np.ndarray = (h ^ (h >> np.uint64(16))) & np.uint64((1 << bits) - 1)
    return low


def _accepts(c: Constraint, bits: int) -> Callable[[np.ndarray], np.ndarray]:
    """A vectorised test of candidate hashes (String.hashCode of the label) against one constraint."""
    mask = (1 << bits) - 1
    if isinstance(c, StringKey):
        want = spread(string_hash(c.name)) & mask
        return lambda h: _spread_low(h, bits) == np.uint64(want)
    original = node_hash(c.name, c.ip)
    want_node, want_identity = spread(original) & mask, spread((original - 31) & _M) & mask
    scale, tail = np.uint64(_pow31(len(c.suffix))), np.uint64(string_hash(c.suffix))
    ip_part = np.uint64((31 + 31 * (31 + string_hash(c.pseudo_ip))) & _M)

    def test(h: np.ndarray) -> np.ndarray:
        full = (h * scale + tail) & np.uint64(_M)  # hashCode of label + suffix
        node = (full + ip_part) & np.uint64(_M)
        identity = (node - np.uint64(31)) & np.uint64(_M)
        ok: np.ndarray = ((_spread_low(node, bits) == np.uint64(want_node))
                          & (_spread_low(identity, bits) == np.uint64(want_identity)))
        return ok

    return test


def keyed_start(key: bytes, kind: str, original: str) -> int:
    """Where the search for `original`'s pseudonym starts (a keyed hash: the key decides it)."""
    digest = hmac.new(key, f"{kind}\0{original}".encode("utf-8", "surrogateescape"), hashlib.sha256).digest()
    start: int = int.from_bytes(digest[:8], "big") % _SPACE
    return start


def search(key: bytes, kind: str, original: str, prefix: str, constraints: Iterable[Constraint],
           bits: dict[type, int], taken: Callable[[str], bool], limit: int = 1 << 23) -> str:
    """The first candidate, from the keyed start, that meets every constraint and is not taken;
    LookupError when none of the first `limit` does (constraints that contradict each other: one
    name hashed two ways, as a bare and a qualified host name)."""
    tests = [_accepts(c, bits[type(c)]) for c in constraints]
    start = keyed_start(key, kind, original)
    for offset in range(0, min(limit, _SPACE), _BATCH):
        steps = np.arange(offset, min(offset + _BATCH, _SPACE), dtype=np.uint64)
        numbers = (steps * np.uint64(_STEP) + np.uint64(start)) % np.uint64(_SPACE)
        ok = np.ones(numbers.shape, dtype=bool)
        if tests:
            h = candidate_hashes(prefix, numbers)
            for test in tests:
                ok &= test(h)
        for n in numbers[ok].tolist():
            text = candidate_text(prefix, int(n))
            if not taken(text):
                return text
    raise LookupError(f"no pseudonym of the form {prefix}{'x' * WIDTH} among {limit:,} fits {original!r}")
