"""Configuration given with --config that leaves a pool's hosts or a user's allotment open, against
the real RM (truth.jsonl of the oracle runs in fixtures/cuts, README there).

users_unread: ducc.properties names ducc.users (ann: max-allotment 12 GB), the folder lacks it.
The RM deferred ann's second fixed-share job (8 GB, her first holds 8 GB): her allotment is not
the global 64 GB. Without the registry, which users have allotments of their own is not known,
and her allotment lines give hers.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from replay import parse
from replay.apps.audit import audit
from replay.model.bootstrap import read_bootstrap, registry_unread
from replay.model.resources import read_resources
from tests.helpers import FIXTURES

USERS = FIXTURES / "cuts" / "users_unread"


def _cut(folder: Path, level: str = "rm.log"):
    tables = dict(parse([folder / f"{level}.gz"]).tables)
    tables.update(read_resources(folder / "resources"))
    with gzip.open(folder / "truth.jsonl.gz", "rt") as fh:
        records = {r["epoch"]: r for r in map(json.loads, fh)}
    return tables, records


def test_a_user_registry_the_config_lacks_leaves_the_users_allotments_open():
    tables, records = _cut(USERS)
    boot = read_bootstrap(tables)
    assert boot.users_open
    # the scenario's ducc.users, which the folder lacks: ann 12 GB (the global one is 64)
    assert boot.config.user_allotments == (("ann", 12),)
    assert boot.config.global_allotment == 64
    result = audit(tables)
    assert not result.divergences, result.divergences[:2]
    assert not result.skipped_kinds.get("counts"), result.skipped_kinds.get("counts")
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    counted = {(c, j): n for c, j, _o, n in result.ref["counts"]}
    given = {(c, j["id"]): j["nshares_given"] for c in result.cycles for j in records[epochs[c]]["jobs"]}
    assert counted and all(given[k] == n for k, n in counted.items())
    assert all(n == 0 for (_c, j), n in counted.items() if j == 4)  # deferred for ann's allotment


def _folder(tmp_path: Path, users: str | None, registry: str = "ducc.users") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "ducc.classes").write_text((USERS / "resources" / "ducc.classes").read_text())
    (tmp_path / "np2.nodes").write_text((USERS / "resources" / "np2.nodes").read_text())
    (tmp_path / "ducc.properties").write_text(f"ducc.rm.user.registry = {registry}\n")
    if users is not None:
        (tmp_path / registry).write_text(users)
    return tmp_path


def test_a_registry_read_even_empty_says_the_users_have_none_of_their_own(tmp_path):
    assert not registry_unread(read_resources(_folder(tmp_path, "")))
    assert registry_unread(read_resources(_folder(tmp_path / "b", None)))
    assert registry_unread(read_resources(_folder(tmp_path / "c", None, "other.users")))


def test_a_folder_without_ducc_properties_is_open_already_and_gives_no_registry_row(tmp_path):
    folder = _folder(tmp_path, None)
    (folder / "ducc.properties").unlink()
    assert not registry_unread(read_resources(folder))
