#!/usr/bin/python3
"""diagnosis.trace.json and trace.json load in a real trace viewer: speedscope in headless Chromium.

speedscope (fetched by tools/bootstrap.sh through tools/fetch-speedscope.sh) reads Chrome trace
JSON and makes one profile per (pid, tid) track. A synth run is merged and diagnosed offline;
each trace is handed to speedscope the way its own CLI does (a script calling
speedscope.loadFileFromBase64) inside a copy of its index.html with a small driver script that
presses "n" (next profile) until the profile named in the URL is shown, and then marks the page
(body data-viewer). The test checks from the DOM that speedscope parsed the file: the profile
count equals the number of tracks with slices in the file, and the 'truffld diagnosis' process's
track of abnormal units is reachable. A screenshot of that track is kept (--screenshot PATH
copies it, e.g. to docs/trace.png).
Skips (exit 77) when chromium is not installed (TRUFFLD_CHROMIUM names another binary); fails
when speedscope is missing (a test dependency: tools/fetch-speedscope.sh).
Usage: trace_viewer_test.py --diag BIN --synth BIN --merge BIN --work DIR [--screenshot PATH]"""
import argparse
import base64
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import truffld_unittest  # noqa: E402
from report_browser_test import chromium, chromium_binary  # noqa: E402

ARGS = None
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

# Presses speedscope's "n" key (a keypress on window) until the profile title contains the
# URL's want= text, then sets body[data-viewer] to "ready: <title>" (or "not found: ...").
DRIVER = """<script>
(function () {
  const want = decodeURIComponent((location.hash.match(/want=([^&]*)/) || [])[1] || "");
  let tries = 0;
  function title() {
    const el = [...document.querySelectorAll("span")].find(
      s => s.children.length == 1 && /^\\(\\d+\\/\\d+\\)$/.test(s.lastElementChild.textContent.trim()));
    return el ? el.textContent : "";
  }
  function mark(v) { document.body.setAttribute("data-viewer", v); }
  function go() {
    const t = title();
    if (!t) { if (tries++ < 400) setTimeout(go, 50); else mark("no profile shown"); return; }
    if (t.indexOf(want) >= 0) { mark("ready: " + t); return; }
    if (tries++ > 2000) { mark("not found: " + want); return; }
    window.dispatchEvent(new KeyboardEvent("keypress", {key: "n", code: "KeyN"}));
    setTimeout(go, 20);
  }
  setTimeout(go, 200);
})();
</script>
"""


def speedscope_dir():
    d = os.environ.get("TRUFFLD_SPEEDSCOPE") or subprocess.run(
        [os.path.join(ROOT, "tools", "fetch-speedscope.sh"), "--print-dir"],
        stdout=subprocess.PIPE, check=True, text=True).stdout.strip()
    return d if os.path.isfile(os.path.join(d, "index.html")) else None


def tracks_with_slices(path):
    """(pid, tid) of every track that has a complete slice, and the track names by (pid, tid)."""
    with open(path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    tracks = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "X"}
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return tracks, names


class TraceInViewer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.browser = chromium_binary()
        cls.viewer = speedscope_dir()
        if not cls.browser or not cls.viewer:
            return
        work = ARGS.work
        shutil.rmtree(work, ignore_errors=True)
        synth, merged, cls.diag = (os.path.join(work, x) for x in ("synth", "merged", "diag"))
        subprocess.run([ARGS.synth, "--preset", "small", "--seed", "7", "-q", "--out", synth], check=True)
        subprocess.run([ARGS.merge] + sorted(glob.glob(os.path.join(synth, "truffld-*.jsonl"))) +
                       ["-o", merged, "-q"], check=True)
        subprocess.run([ARGS.diag, merged, "-o", cls.diag, "--llm", "off", "-q"], check=True)
        cls.merged_trace = os.path.join(merged, "trace.json")
        cls.annotated = os.path.join(cls.diag, "diagnosis.trace.json")
        # A private copy of the viewer with the driver script.
        cls.page_dir = os.path.join(work, "speedscope")
        shutil.copytree(cls.viewer, cls.page_dir)
        index = os.path.join(cls.page_dir, "index.html")
        with open(index, encoding="utf-8") as f:
            page = f.read()
        with open(index, "w", encoding="utf-8") as f:
            f.write(page.replace("</body>", DRIVER + "</body>"))
        cls.profile = os.path.join(work, "chromium-profile")

    def setUp(self):
        if not self.browser:
            self.skipTest("chromium not installed (CI installs it: tools/bootstrap.sh)")
        if not self.viewer:
            self.fail("speedscope missing: run tools/fetch-speedscope.sh (tools/bootstrap.sh does)")

    def open_in_viewer(self, trace, want, *extra):
        """Loads `trace` in speedscope, showing the first profile whose title contains `want`;
        returns (data-viewer mark, chromium's stdout)."""
        with open(trace, "rb") as f:
            b64 = base64.b64encode(f.read()).decode()
        loader = os.path.join(ARGS.work, os.path.basename(trace) + ".js")
        with open(loader, "w") as f:
            f.write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps(os.path.basename(trace)), json.dumps(b64)))
        url = "file://%s/index.html#localProfilePath=%s&want=%s" % (
            urllib.parse.quote(self.page_dir), urllib.parse.quote(loader), urllib.parse.quote(want))
        out, _ = chromium(self.browser, self.profile, "--allow-file-access-from-files",
                          "--virtual-time-budget=60000", *(extra or ("--dump-dom",)), url, timeout=300)
        if extra:
            return None, out
        m = re.search(r'data-viewer="([^"]*)"', out)
        self.assertIsNotNone(m, "the driver never marked the page: speedscope did not show a profile")
        return m.group(1), out

    def check_loaded(self, trace, want):
        mark, _ = self.open_in_viewer(trace, want)
        tracks, _ = tracks_with_slices(trace)
        m = re.match(r"ready: (.*) \((\d+)/(\d+)\)$", mark)
        self.assertIsNotNone(m, "speedscope: " + mark)
        self.assertEqual(len(tracks), int(m.group(3)), "speedscope made a different number of profiles")
        return m.group(1)

    def test_merge_trace_loads(self):
        self.check_loaded(self.merged_trace, "rank 1")

    def test_diagnosis_track_loads(self):
        tracks, names = tracks_with_slices(self.annotated)
        unit_tracks = [n for (pid, tid), n in names.items() if pid == 999999 and (pid, tid) in tracks]
        self.assertTrue(any(n.endswith("vertical") for n in unit_tracks), unit_tracks)
        title = self.check_loaded(self.annotated, "rank 0 vertical (tid")
        self.assertTrue(title.startswith("truffld diagnosis (pid 999999), rank 0 vertical"), title)

    def test_screenshot_of_the_diagnosis_track(self):
        # The same page, checked first: the screenshot shows the diagnosis track, not an error.
        self.check_loaded(self.annotated, "rank 0 vertical (tid")
        shot = os.path.join(ARGS.work, "trace.png")
        self.open_in_viewer(self.annotated, "rank 0 vertical (tid", "--window-size=1400,420",
                            "--hide-scrollbars", "--screenshot=" + shot)
        with open(shot, "rb") as f:
            png = f.read()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(len(png), 10000, "screenshot too small to show the track")
        if ARGS.screenshot:
            shutil.copyfile(shot, ARGS.screenshot)
        print("screenshot: %s (%d bytes)" % (shot, len(png)))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ("diag", "synth", "merge", "work"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--screenshot", help="also copy the screenshot here (e.g. docs/trace.png)")
    ARGS, rest = ap.parse_known_args()
    sys.argv = [sys.argv[0]] + rest
    truffld_unittest.main()


if __name__ == "__main__":
    main()
