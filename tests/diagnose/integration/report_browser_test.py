#!/usr/bin/python3
"""report.html in real headless Chromium (Debian's chromium; tools/bootstrap.sh installs it).

A synth run (4 ranks on 2 hosts, faults at 10% of rank-steps) is merged and diagnosed offline;
the report is opened with `chromium --headless --dump-dom` and the DOM after the page's script
ran is checked: the overview heat map, the rank/family tables, cards whose operators show
observed and expected us, an anchor for every abnormal unit of diagnosis.jsonl on every rank,
the report's own script ran (the card filter is shown, data-report-ready set) under its
Content-Security-Policy, no other script or image element, no console error; the headline
leads with root causes and the terms close the page; the step-time plot has every rank; at the
default impact floor no card lists an operator that would save less than 1% of its step
(but a unit's largest); a single-rank run gets its headline and plot with rank 0. A screenshot is
kept in the work directory (build tree) as the test's artifact.
Skips (exit 77) when chromium is not installed; TRUFFLD_CHROMIUM names another binary.
Usage: report_browser_test.py --diag BIN --synth BIN --merge BIN --work DIR"""
import argparse
import glob
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import truffld_unittest  # noqa: E402

ARGS = None
CARDS = 40  # fewer than the run's abnormal units: the index carries the other anchors


def chromium_binary():
    return os.environ.get("TRUFFLD_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(binary, profile, *args, timeout=120):
    """Runs headless Chromium; returns (stdout, stderr). Root needs --no-sandbox."""
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           "--disable-background-networking", "--enable-logging=stderr", "--v=0",
           "--user-data-dir=" + profile] + list(args)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError("chromium failed (%d): %s" % (p.returncode, p.stderr.decode(errors="replace")[-2000:]))
    return p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Dom(html.parser.HTMLParser):
    """Elements of the dumped DOM: ids, tags with attributes, and the text of table cells."""

    def __init__(self):
        super().__init__()
        self.ids, self.elements, self.cards = set(), [], []
        self._card, self._cell = None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "section" and "card" in a.get("class", "").split():
            self._card = {"id": a.get("id"), "rows": []}
            self.cards.append(self._card)
        if tag == "tr" and self._card is not None:
            self._card["rows"].append([])
        if tag in ("td", "th") and self._card is not None and self._card["rows"]:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._card["rows"][-1].append(self._cell.strip())
            self._cell = None
        if tag == "section":
            self._card = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


class ReportInBrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.browser = chromium_binary()
        if not cls.browser:
            return
        work = ARGS.work
        shutil.rmtree(work, ignore_errors=True)
        cls.synth, cls.merged, cls.diag = (os.path.join(work, x) for x in ("synth", "merged", "diag"))
        subprocess.run([ARGS.synth, "--ranks", "4", "--hosts", "2", "--layers", "2", "--steps", "160",
                        "--abnormal-fraction", "0.1", "--seed", "3", "-q", "--out", cls.synth], check=True)
        subprocess.run([ARGS.merge] + sorted(glob.glob(os.path.join(cls.synth, "truffld-*.jsonl"))) +
                       ["-o", cls.merged, "-q"], check=True)
        subprocess.run([ARGS.diag, cls.merged, "-o", cls.diag, "--labels", os.path.join(cls.synth, "labels.jsonl"),
                        "--llm", "off", "-q", "--report-cards", str(CARDS),
                        # no impact floor: the test needs more abnormal units than cards
                        "--min-impact-share", "0"], check=True)
        cls.report = os.path.join(cls.diag, "report.html")
        cls.profile = os.path.join(work, "chromium-profile")
        cls.dom_text, cls.log = chromium(cls.browser, cls.profile, "--dump-dom", "file://" + cls.report)
        cls.dom = Dom()
        cls.dom.feed(cls.dom_text)
        with open(os.path.join(cls.diag, "diagnosis.jsonl")) as f:
            cls.diagnoses = [json.loads(line) for line in f]

    def setUp(self):
        if not self.browser:
            self.skipTest("chromium not installed (CI installs it: tools/bootstrap.sh)")

    def test_key_elements_present(self):
        for id_ in ("overview", "heatmap", "ranks", "families", "cards", "index", "terms", "run"):
            self.assertIn(id_, self.dom.ids)
        self.assertGreater(len(self.dom.cards), 0, "no card: the run should have abnormal units")

    def test_script_ran_under_its_policy(self):
        root = [a for t, a in self.dom.elements if t == "html"][0]
        self.assertIn("data-report-ready", root, "the report's script did not run")
        filt = [a for t, a in self.dom.elements if a.get("id") == "card-filter"][0]
        self.assertNotIn("hidden", filt, "the card filter stayed hidden: script blocked?")
        self.assertEqual(1, sum(1 for t, _ in self.dom.elements if t == "script"))
        self.assertEqual(0, sum(1 for t, _ in self.dom.elements if t in ("img", "iframe", "object", "embed")))
        for bad in ("Content Security Policy", "Uncaught", "Refused to"):
            self.assertNotIn(bad, self.log, "console: " + self.log[-2000:])

    def test_every_abnormal_unit_has_an_anchor_on_every_rank(self):
        ranks = set()
        for d in self.diagnoses:
            if d["label"] != "abnormal":
                continue
            anchor = "r%s-s%d-%s" % (d["rank"] if d.get("rank") is not None else "x", d["step_index"], d["view"][0])
            self.assertIn(anchor, self.dom.ids)
            ranks.add(d.get("rank"))
        self.assertGreater(len(ranks), 1, "abnormal units on one rank only: the check would prove little")
        carded = {c["id"].split("-")[0] for c in self.dom.cards}
        self.assertEqual({"r%s" % r for r in ranks}, carded, "some rank has no card")
        self.assertEqual(CARDS, len(self.dom.cards))
        self.assertGreater(sum(1 for d in self.diagnoses if d["label"] == "abnormal"), CARDS,
                           "every abnormal unit has a card: the index's anchors go untested")

    def test_cards_show_observed_and_expected_us(self):
        for card in self.dom.cards:
            header = card["rows"][0]
            self.assertEqual(header[:5], ["faulty operator", "cost", "observed us", "expected us", "excess us"])
            ops = card["rows"][1:]
            self.assertGreater(len(ops), 0, card["id"])
            for row in ops:
                for cell in row[2:5]:
                    self.assertRegex(cell, r"^\+?[0-9][0-9,]*(\.[0-9]+)?$", "%s: %r" % (card["id"], row))

    def test_heat_map_cell_opens_the_step_strip_and_filter_narrows_cards(self):
        # A copy of the report with a probe script (its policy removed so the probe may run) clicks
        # the first abnormal cell and filters the cards by one rank.
        with open(self.report, encoding="utf-8") as f:
            page = f.read()
        page = re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", page, count=1)
        rank = self.dom.cards[0]["id"].split("-")[0][1:]
        probe = ("<script>var a = document.querySelector('#heatmap a[data-s]');"
                 "a.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));"
                 "var f = document.getElementById('card-filter'); f.value = 'rank %s \u00b7';"
                 "f.dispatchEvent(new Event('input'));</script></body>" % rank)
        probe_path = os.path.join(ARGS.work, "zoom_probe.html")
        with open(probe_path, "w", encoding="utf-8") as f:
            f.write(page.replace("</body>", probe, 1))
        dom_text, _ = chromium(self.browser, self.profile, "--dump-dom", "file://" + probe_path)
        dom = Dom()
        dom.feed(dom_text)
        zoom = [a for t, a in dom.elements if a.get("id") == "zoom"][0]
        self.assertNotIn("hidden", zoom, "clicking a cell did not open the step strip")
        strip = dom_text[dom_text.index('id="zoom"'):dom_text.index('id="unit-labels"')]
        self.assertGreater(strip.count("<rect"), 20, "the step strip drew almost nothing")
        self.assertIn("#D55E00", strip, "no abnormal step in the strip of an abnormal cell")
        shown = [c for t, c in dom.elements if t == "section" and "card" in c.get("class", "")]
        hidden = [c for c in shown if "hidden" in c]
        self.assertTrue(0 < len(hidden) < len(shown), "the filter hid %d of %d cards" % (len(hidden), len(shown)))
        for c in shown:
            self.assertEqual("hidden" in c, not c["id"].startswith("r%s-" % rank), c["id"])

    def test_headline_root_causes_and_step_time_plot(self):
        headline = [a for t, a in self.dom.elements if a.get("id") == "headline"]
        self.assertEqual(1, len(headline), "no headline section")
        order = [a.get("id") for t, a in self.dom.elements if a.get("id") in ("headline", "run", "cards", "terms")]
        self.assertEqual(["headline", "run", "cards", "terms"], order, "the headline leads, the terms close")
        self.assertIn("The largest cause:", self.dom_text)
        causes = self.dom_text[self.dom_text.index('id="root-causes"'):]
        causes = causes[:causes.index("</table>")]
        self.assertGreaterEqual(causes.count("<tr>"), 3, "fewer than two root causes for a run of many faults")
        plot = self.dom_text[self.dom_text.index('id="steptime-plot"'):]
        plot = plot[:plot.index("</svg>")]
        for rank in range(4):
            self.assertIn(">rank %d<" % rank, plot)
        self.assertGreater(plot.count("<polyline"), 4, "step durations and gaps per rank")
        self.assertIn('<a href="#r', plot, "no abnormal step linked from the plot")

    def test_no_blame_below_the_impact_floor_is_listed(self):
        # The default floor (1% of the step): a card lists an operator only if it would save at
        # least that much of its step, or it is the unit's largest.
        work = os.path.join(ARGS.work, "floor")
        diag = os.path.join(work, "diag")
        subprocess.run([ARGS.diag, self.merged, "-o", diag, "--llm", "off", "-q"], check=True)
        dom_text, _ = chromium(self.browser, self.profile, "--dump-dom", "file://" + os.path.join(diag, "report.html"))
        dom = Dom()
        dom.feed(dom_text)
        with open(os.path.join(diag, "diagnosis.jsonl")) as f:
            units = {"r%s-s%d-%s" % (u["rank"], u["step_index"], u["view"][0]): u for u in map(json.loads, f)}
        self.assertGreater(len(dom.cards), 0)
        left_out = 0
        for card in dom.cards:
            unit = units[card["id"]]
            listed = [row[0] for row in card["rows"][1:] if len(row) >= 5 and row[0] != "faulty operator"]
            for i, op in enumerate(unit["faulty"]):
                material = i == 0 or op["impact_ns"] >= 0.01 * unit["duration_ns"]
                self.assertEqual(material, op["family"] in listed, "%s: %s" % (card["id"], op["family"]))
                left_out += not material
        print("operators below the floor left out of %d cards: %d" % (len(dom.cards), left_out))

    def test_single_rank_run(self):
        work = os.path.join(ARGS.work, "single")
        synth, merged, diag = (os.path.join(work, x) for x in ("synth", "merged", "diag"))
        subprocess.run([ARGS.synth, "--ranks", "1", "--layers", "2", "--steps", "60", "--abnormal-fraction", "0.1",
                        "--seed", "5", "-q", "--out", synth], check=True)
        subprocess.run([ARGS.merge] + sorted(glob.glob(os.path.join(synth, "truffld-*.jsonl"))) + ["-o", merged, "-q"],
                       check=True)
        subprocess.run([ARGS.diag, merged, "-o", diag, "--llm", "off", "-q"], check=True)
        dom_text, log = chromium(self.browser, self.profile, "--dump-dom", "file://" + os.path.join(diag, "report.html"))
        self.assertIn('id="headline"', dom_text)
        self.assertIn('id="steptime-plot"', dom_text)
        plot = dom_text[dom_text.index('id="steptime-plot"'):]
        self.assertIn(">rank 0<", plot[:plot.index("</svg>")])
        self.assertNotIn(">rank ?<", dom_text)
        for bad in ("Content Security Policy", "Uncaught", "Refused to"):
            self.assertNotIn(bad, log)

    def test_screenshot(self):
        shot = os.path.join(ARGS.work, "report.png")
        chromium(self.browser, self.profile, "--screenshot=" + shot, "--window-size=1280,2400",
                 "--hide-scrollbars", "file://" + self.report)
        with open(shot, "rb") as f:
            png = f.read()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(len(png), 20000, "screenshot too small to show the report")
        print("screenshot: %s (%d bytes)" % (shot, len(png)))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ("diag", "synth", "merge", "work"):
        ap.add_argument("--" + a, required=True)
    ARGS, rest = ap.parse_known_args()
    sys.argv = [sys.argv[0]] + rest
    truffld_unittest.main()


if __name__ == "__main__":
    main()
