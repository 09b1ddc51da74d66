"""Every rule of the TUI's stylesheet styles something: each #id is a widget id the code gives,
each type name a widget class the code defines or uses, each .class one the code sets."""

from __future__ import annotations

import re
from pathlib import Path

TUI = Path(__file__).resolve().parents[2] / "tui"


def _selectors() -> list[str]:
    """The simple selectors of every rule (comments and declaration blocks left out)."""
    text = re.sub(r"/\*.*?\*/", "", (TUI / "rmreplay.tcss").read_text(), flags=re.S)
    heads = re.sub(r"\{[^}]*\}", "\n", text)
    return [part for head in heads.split("\n") for group in head.split(",") for part in group.split() if part]


def test_every_rule_styles_something_the_code_makes():
    code = "\n".join(p.read_text() for p in TUI.rglob("*.py"))
    ids = set(re.findall(r"""\bid=["']([\w-]+)["']""", code)) | set(re.findall(r"TabPane\([^)]*id=(\w+)", code))
    classes = set(re.findall(r"""\bclasses=["']([\w -]+)["']""", code))
    unused = []
    for selector in _selectors():
        for simple in re.findall(r"[#.]?[\w-]+", selector):
            if simple.startswith("#"):
                found = simple[1:] in ids
            elif simple.startswith("."):
                found = any(simple[1:] in c.split() for c in classes)
            else:  # a widget type: a class the code defines, or a Textual widget it uses
                found = re.search(rf"\b{simple}\b", code) is not None
            if not found:
                unused.append(simple)
    assert not unused, f"rules for nothing the TUI makes: {unused}"
    assert len(_selectors()) > 20  # the stylesheet was read (a parse that finds nothing passes vacuously)
