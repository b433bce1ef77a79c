"""``bias_audit.html`` (issue 30) as a person sees it in headless Chromium: written by ``fairltr
audit`` from a table with unknown values, a 1% category excluded with a reason, two attributes and
95% intervals, the rendered page holds the facts (audit date, data source and sha256, period, the
number of individuals, the method), one table per attribute and for the intersection with every
category's applicants, rate and impact ratio as the JSON gives them, the excluded category with its
reason, the unknown counts; it logs nothing to the console and does not scroll sideways at 1,280 px.

Skipped on a developer machine without Chromium; under CI a missing browser fails (as in
tests/fairltr/tracking/test_browser.py)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from audit_tables import table  # tests/audit_tables.py

WINDOW_PX = 1280
_MEASURE = """<script>
window.addEventListener('load', function () {
  var pre = document.createElement('pre'); pre.id = 'layout';
  pre.textContent = JSON.stringify({inner: window.innerWidth, scroll: document.documentElement.scrollWidth,
                                    tables: document.querySelectorAll('table').length});
  document.body.appendChild(pre);
});
</script>"""


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI"):
        pytest.fail("Chromium is not installed, and CI must run the browser test (.ci/run installs it with apt)")
    pytest.skip("Chromium is not installed (apt-get install chromium); CI runs this test")


def render(browser: str, page: Path, profile: Path) -> tuple[str, list[str]]:
    """(DOM, console messages) of ``page`` in headless Chromium at 1,280 px; the console is read from
    Chromium's own log (``--enable-logging=stderr``: one ``:CONSOLE:`` line per message)."""
    profile.mkdir(parents=True, exist_ok=True)
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--window-size={WINDOW_PX},2400",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", page.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


def _text(dom: str) -> str:
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def _rows(dom: str, title: str) -> dict[str, list[str]]:
    """The cells of the rendered table under heading ``title``, by category."""
    found = re.search(rf"<h2>{re.escape(html.escape(title))}</h2>\s*<table>(.*?)</table>", dom, re.S)
    assert found, (title, dom[:3000])
    rows = {}
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", found.group(1), re.S):
        cells = [_text(c) for c in re.findall(r"<td>(.*?)</td>", tr, re.S)]
        if cells:
            rows[cells[0]] = cells
    return rows


@pytest.mark.slow  # about 5 s: one audit, two Chromium renders
def test_bias_audit_html_in_a_browser(tmp_path):
    from fairltr.cli import cli

    browser = chromium_binary()
    df = table(11, n_queries=40)
    df["applied"] = pd.Timestamp("2026-02-01") + pd.to_timedelta(np.arange(len(df)) % 60, unit="D")
    data = tmp_path / "held_out.csv"
    df.to_csv(data, index=False)
    reason = "under 2% of applicants, too few to compare"
    res = CliRunner().invoke(cli, ["audit", "--data", str(data), "--score-column", "score", "--group", "sex",
                                   "--group", "race", "--unknown-value", "", "--unknown-value", "Decline to state",
                                   "--exclude-small-categories", reason, "--time-column", "applied", "--k", "5",
                                   "--ci", "0.95", "--n-boot", "100", "--out", str(tmp_path / "out")],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "out" / "bias_audit.json").read_text())
    page = tmp_path / "out" / "bias_audit.html"

    # the console check sees a page that logs (so a silent console means a clean page)
    noisy = tmp_path / "noisy.html"
    noisy.write_text("<html><body><script>console.error('probe'); nope();</script></body></html>")
    assert len(render(browser, noisy, tmp_path / "profile-probe")[1]) == 2

    measured = tmp_path / "out" / "measured.html"
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    dom, console = render(browser, measured, tmp_path / "profile")
    assert console == [], console
    layout = json.loads(html.unescape(re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S).group(1)))
    assert layout["inner"] == WINDOW_PX and layout["scroll"] <= WINDOW_PX, layout  # no sideways scrolling
    assert layout["tables"] == 3
    text = _text(dom)
    assert "Summary of bias audit results" in text
    assert f"Date of audit {summary['audit_date']}" in text
    assert f"Data source {data}" in text and f"Data sha256 {summary['data_source']['sha256']}" in text
    assert summary["period_start"].startswith("2026-02-01") and summary["period_end"].startswith("2026-04-01")
    assert f"Period {summary['period_start']} to {summary['period_end']}" in text
    assert f"Number of individuals assessed {len(df):,}" in text
    assert "share of each category ranked in the top 5 of its ranking" in text
    assert "Intervals: 95% percentile cluster bootstrap, 100 resamples of queries (seed 0)" in text
    for name, title in (("sex", "Sex"), ("race", "Race"), ("sex:race", "Intersectional categories (sex and race)")):
        block = summary["attributes"][name]
        shown = _rows(dom, title)
        assert list(shown) == [r["category"] for r in block["rows"]]  # every category, unknown last
        for r in block["rows"]:
            cells = shown[r["category"]]
            assert cells[1] == f"{r['n']:,}"
            assert cells[2] == ("" if r["rate"] is None else f"{100 * r['rate']:.1f}%")
            assert cells[3] == ("" if r["impact_ratio"] is None else f"{r['impact_ratio']:.3f}")
            if r["ci_low"] is not None:
                assert cells[4] == f"{r['ci_low']:.3f} to {r['ci_high']:.3f}"
        assert f"not included in the calculations): {block['unknown_count']:,}" in text
    pacific = _rows(dom, "Race")["Pacific"]
    assert pacific[2].endswith("%")  # excluded, its rate still reported, and the note says why
    assert pacific[-1] == f"excluded from the verdict and the reference rate: {reason}"
    assert "unknown category: counted, left out of rates and impact ratios" in _rows(dom, "Race")["unknown"][-1]
