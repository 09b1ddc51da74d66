"""The pseudonyms of one anonymization: original -> pseudonym by kind, searched once, then looked up.

Names (hosts, short host names, users, job names) are `<kind>-` plus six characters of [0-9a-z]
chosen by replay/apps/anonymize/pseudonyms.py (a keyed start, the RM's HashMap buckets kept); a
fully qualified host keeps its shape, `<host label>.<domain>` -> `host-xxxxxx.dom-yyyyyy`, so its
short name maps to the first label of its pseudonym, as the RM derives it. IPs become
`10.255.x.y`, paths `/path-xxxxxx`, bare file names `file-xxxxxx`, a node rule the pseudonyms
it matched (rules.py). The same key gives the same
pseudonym to the same name in any log of the site (unless two names compete for one, which the
2.2e9 candidates make rare).
"""

from __future__ import annotations

import hashlib
import hmac
import json

from replay.apps.anonymize.names import Inventory, clashes, split_host
from replay.apps.anonymize.pseudonyms import Constraint, NodeKey, StringKey, bucket_bits, search

KINDS = ("hosts", "short_names", "domains", "ips", "users", "jobs", "files", "rules")
PREFIX = {"hosts": "host-", "short_names": "host-", "users": "user-", "jobs": "job-", "domains": "dom-",
          "files": "file-", "paths": "/path-"}
MAPPING_FORMAT = "rmreplay-anonymize-mapping/1"


class Pseudonyms:
    """Original -> pseudonym for one key: `words` for rewriting, `kinds` for mapping.json."""

    def __init__(self, key: bytes, host_bits: int = 8, user_bits: int = 8, reserved: set[str] | None = None) -> None:
        """An empty mapping for `key`; no pseudonym will equal a `reserved` word (the log's originals)."""
        self.key = key
        self.bits = {NodeKey: host_bits, StringKey: user_bits}
        self.kinds: dict[str, dict[str, str]] = {k: {} for k in KINDS}
        self.words: dict[str, str] = {}  # every original token -> its pseudonym
        self.kept: dict[str, str] = {}  # site names left as they are -> why
        self.loose: dict[str, str] = {}  # names whose HashMap buckets could not all be kept -> why
        self._taken: set[str] = set()
        self._reserved = reserved or set()

    def _unavailable(self, text: str) -> bool:
        return text in self._taken or text in self._reserved

    def _claim(self, kind: str, original: str, pseudonym: str) -> str:
        self.kinds[kind][original] = pseudonym
        self.words[original] = pseudonym
        self._taken.add(pseudonym)
        return pseudonym

    def _plain(self, kind: str, original: str) -> str:
        known = self.kinds[kind].get(original)
        if known is not None:
            return known
        prefix = PREFIX["paths"] if kind == "files" and original.startswith("/") else PREFIX[kind]
        return self._claim(kind, original, search(self.key, kind, original, prefix, (), self.bits, self._unavailable))

    def ip(self, original: str) -> str:
        """`10.255.x.y` for an IPv4 address (keyed, one per address)."""
        known = self.kinds["ips"].get(original)
        if known is not None:
            return known
        digest = hmac.new(self.key, f"ips\0{original}".encode(), hashlib.sha256).digest()
        start = int.from_bytes(digest[:2], "big")
        for i in range(1 << 16):
            n = (start + i) & 0xFFFF
            candidate = f"10.255.{n >> 8}.{n & 0xFF}"
            if not self._unavailable(candidate):
                return self._claim("ips", original, candidate)
        raise RuntimeError("more than 65,536 IP addresses: no 10.255.x.y left")

    def file(self, original: str) -> str:
        """`/path-xxxxxx` for a path, `file-xxxxxx` for a bare file name."""
        return self._plain("files", original)

    def domain(self, original: str) -> str:
        """`dom-xxxxxx` for a DNS domain."""
        return self._plain("domains", original)

    def host(self, original: str) -> str:
        """A host found in free text (no HashMap holds it): its label and domain renamed."""
        known = self.kinds["hosts"].get(original)
        if known is not None:
            return known
        label, domain = split_host(original)
        if label not in self.words:
            self._claim("short_names", label, self._plain_label(label))
        new = self.words[label] + ("." + self.domain(domain) if domain else "")
        return self._claim("hosts", original, new)

    def _label(self, label: str, prefix: str, constraints: list[Constraint]) -> str:
        """A name's pseudonym under every constraint; if they contradict each other (a machine
        named both `n1` and `n1.site` in one log), under the first one only, noted in `loose`."""
        try:
            return search(self.key, "label", label, prefix, constraints, self.bits, self._unavailable)
        except LookupError:
            hashed_as = ", ".join(c.name for c in constraints)
            self.loose[label] = f"hashed as {hashed_as}: kept for {constraints[0].name} only"
            return search(self.key, "label", label, prefix, constraints[:1], self.bits, self._unavailable)

    def _plain_label(self, label: str) -> str:
        return search(self.key, "label", label, PREFIX["hosts"], (), self.bits, self._unavailable)

    def add(self, inv: Inventory) -> None:
        """Search the pseudonyms of everything the log's tables name (see the module doc)."""
        for known in sorted(inv.domains):
            self.domain(known)
        for ip in sorted(inv.ips):
            self.ip(ip)
        constraints: dict[str, list[Constraint]] = {}
        roles: dict[str, set[str]] = {}  # a label may be a host's, a user's and a job's name at once
        for h in inv.hosts:
            label, domain = split_host(h)
            roles.setdefault(label, set()).add("short_names")
            constraints.setdefault(label, [])
            if h in inv.machines:
                suffix = "." + self.kinds["domains"][domain] if domain else ""
                ip = inv.ip_of.get(h, "")
                constraints[label].append(NodeKey(h, ip, suffix, self.kinds["ips"].get(ip, "")))
        for kind, names in (("short_names", inv.short_names), ("users", inv.users), ("jobs", inv.jobs)):
            for name in names:
                roles.setdefault(name, set()).add(kind)
                constraints.setdefault(name, [])
        for u in inv.users:
            constraints[u].append(StringKey(u))
        for label in sorted(roles):
            if clashes(label, inv.protected):
                self.kept[label] = "also a word the log uses otherwise (a class, nodepool, keyword or number)"
                continue
            primary = next(k for k in ("short_names", "users", "jobs") if k in roles[label])
            new = self._label(label, PREFIX[primary], constraints[label])
            for kind in roles[label]:
                self._claim(kind, label, new)
        for h in inv.hosts:
            label, domain = split_host(h)
            if label in self.kept:
                self.kept[h] = f"its first label {label!r} is kept"
            elif domain is not None:
                self._claim("hosts", h, self.words[label] + "." + self.kinds["domains"][domain])
            else:
                self.kinds["hosts"][h] = self.words[label]
        for f in sorted(inv.files):
            self.file(f)

    def to_json(self) -> str:
        """mapping.json: what each original became (and what was kept), to map findings back."""
        doc = {"format": MAPPING_FORMAT,
               "note": "keep this file at your site: it turns the pseudonyms back into your names",
               "key_id": hashlib.sha256(self.key).hexdigest()[:16],
               "bucket_bits": {"hosts": self.bits[NodeKey], "users": self.bits[StringKey]},
               **{k: dict(sorted(v.items())) for k, v in self.kinds.items()},
               "kept": dict(sorted(self.kept.items())), "buckets_not_kept": dict(sorted(self.loose.items()))}
        return json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def pseudonyms_for(inv: Inventory, key: bytes) -> Pseudonyms:
    """The pseudonyms of a log's inventory (the HashMap bits from its numbers of hosts and users)."""
    reserved = {*inv.hosts, *inv.short_names, *inv.users, *inv.jobs, *inv.ips, *inv.files, *inv.protected}
    p = Pseudonyms(key, bucket_bits(len(inv.machines)), bucket_bits(len(inv.users)), reserved)
    p.add(inv)
    return p
