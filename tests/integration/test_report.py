"""`rmreplay report`: the numbers behind the plots against truth.jsonl, the page's content, and
the page as headless Chromium renders it (a screenshot in which the plots are drawn)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from replay.cli import main
from replay.apps.report import PALETTE
from replay.model.nodes import capacity_and_use, node_cycles
from replay.apps.measures import logged_holdings
from replay.model.start import bootstrap
from tests.helpers import SCENARIOS, log_path, parsed, truth

PLOTS = ("plot-users", "plot-classes", "plot-utilisation", "plot-capacity", "plot-preemptions")
SECTIONS = ("span", "cluster", "shares", "utilisation", "preemptions", "nodes", "audit", "waiting")


@pytest.mark.parametrize("name", SCENARIOS)
def test_plotted_shares_and_capacity_are_truths(name):
    """What the share and utilisation plots draw, per cycle: each job's quantum shares once the
    cycle's removals are gone, and the online machines' quantum shares, exactly as the RM held them."""
    tables = parsed(name).tables
    boot = bootstrap(tables)
    quantum = boot.config.quantum_gb
    cycles = tables["cycles"]["cycle"].to_list()
    held = logged_holdings(tables, quantum, boot)
    cap = dict(capacity_and_use(node_cycles(tables)).select("cycle", "capacity").iter_rows())
    assert set(cap) == set(cycles)
    for rec in truth(name):
        c = rec["cycle"]
        want = {j["id"]: sum(s["order"] for s in j["shares"]
                             if not (s["evicted"] or s["purged"] or s["pending_remove"]))
                for j in rec["jobs"]}
        assert {j: q for j, q in held.get(c, {}).items() if q} == {j: q for j, q in want.items() if q}, c
        assert cap[c] == sum(n["order"] for n in rec["nodes"] if n["online"]), c


def _report(tmp_path, capsys, name: str, *extra: str) -> tuple[Path, str]:
    out = tmp_path / f"{name}.html"
    assert main(["report", str(log_path(name)), "-o", str(out), *extra]) == 0
    capsys.readouterr()
    return out, out.read_text()


def test_page_content_and_self_contained(tmp_path, capsys):
    out, page = _report(tmp_path, capsys, "f_node_failure")
    for section in SECTIONS:
        assert f'id="{section}"' in page, section
    for plot in PLOTS:
        svg = re.search(rf'<svg class="plot" id="{plot}".*?</svg>', page, re.S)
        assert svg and 'class="series"' in svg.group(0), plot
    # one series per user who held shares (f_node_failure: ivy, jon, kim, lee)
    users = re.search(r'<svg class="plot" id="plot-users".*?</svg>', page, re.S).group(0)
    assert sorted(re.findall(r'<polygon class="series" data-series="([^"]+)"', users)) == ["ivy", "jon", "kim", "lee"]
    deaths = [r for r in truth("f_node_failure")[:-1]]
    went_down = {n["name"] for r in deaths for n in r["nodes"] if not n["online"]}
    assert went_down and all(h in page for h in went_down)  # the dead node is named in the deaths table
    assert "1 node death(s)" in page
    assert "rmref reproduces 130 of 130 cycles" in page  # the audit section (f_node_failure agrees)
    # nothing to fetch: no scripts, stylesheets, images or links to elsewhere
    assert not re.search(r"<(script|link|img|iframe)\b", page)
    assert not re.search(r"(src|href)=\"", page)
    assert set(re.findall(r"https?://[^\s\"']+", page)) <= {"http://www.w3.org/2000/svg"}


def test_waiting_jobs_with_the_rm_reasons(tmp_path, capsys):
    _, page = _report(tmp_path, capsys, "g_reservations_services", "--no-audit")
    waiting = page[page.index('id="waiting"'):]
    assert "Deferred because" in waiting  # the schedule's own reason text
    assert "Not audited" in page


def _png_rgb(path: Path) -> np.ndarray:
    """An 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) as an (h, w, 3) array."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (n,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", data[pos + 8:pos + 21])
        elif kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    w, h, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0
    bpp = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w * bpp + 1)
    out = np.zeros((h, w * bpp), np.int32)
    prev = np.zeros(w * bpp, np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            row = line
        elif f == 1:  # Sub: a running sum per channel
            row = np.cumsum(line.reshape(w, bpp), axis=0).reshape(-1) & 255
        elif f == 2:
            row = (line + prev) & 255
        else:  # Average / Paeth depend on the pixel just decoded: byte by byte
            row, up = line.tolist(), prev.tolist()
            for i in range(len(row)):
                a = row[i - bpp] if i >= bpp else 0
                b, c = up[i], (up[i - bpp] if i >= bpp else 0)
                if f == 3:
                    row[i] = (row[i] + (a + b) // 2) & 255
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            row = np.array(row, np.int32)
        out[y], prev = row, row
    return out.reshape(h, w, bpp)[:, :, :3]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium)")
def test_the_report_renders_in_headless_chromium(tmp_path, capsys):
    out, _ = _report(tmp_path, capsys, "b_classes")
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,1500"]
    dom = subprocess.run([*flags, "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120).stdout
    for plot in PLOTS:  # Chromium parsed every plot as SVG, with its series
        assert re.search(rf'<svg class="plot" id="{plot}"[^>]*>.*?class="series"', dom, re.S), plot
    shot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={shot}", out.as_uri()], capture_output=True, timeout=120, check=True)
    pixels = _png_rgb(shot)
    assert pixels.shape[:2] == (1500, 1000)
    # the first user's band (palette colour 0 at 80% over white) and the plots' other colours are drawn
    r, g, b = (int(PALETTE[0][i:i + 2], 16) for i in (1, 3, 5))
    band = np.array([0.8 * r + 51, 0.8 * g + 51, 0.8 * b + 51])
    near = np.abs(pixels - band).max(axis=2) <= 6
    assert near.sum() > 5000, near.sum()
    rows = np.nonzero(near.any(axis=1))[0]
    assert rows.min() > 300  # below the time span and cluster tables, where the shares section is
    colourful = (pixels.max(axis=2) - pixels.min(axis=2)) > 60
    assert colourful.sum() > 30000  # several plots' worth of colour, not a page of text
