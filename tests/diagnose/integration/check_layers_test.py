#!/usr/bin/python3
"""tools/check-layers.py: passes on the checkout, and names an upward include planted in a copy
of diagnose/ (a read/ header including peer/), with its file and line."""
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOOL = ROOT / 'tools' / 'check-layers.py'


def run(root):
    return subprocess.run([sys.executable, str(TOOL), str(root)], capture_output=True, text=True)


class CheckLayers(unittest.TestCase):
    def test_checkout_has_no_upward_include(self):
        r = run(ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(' 0 upward', r.stdout)

    def test_planted_upward_include_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(ROOT / 'diagnose', pathlib.Path(tmp) / 'diagnose')
            header = pathlib.Path(tmp) / 'diagnose' / 'read' / 'instances.h'
            lines = header.read_text().splitlines()
            at = next(i for i, l in enumerate(lines) if l.startswith('#include "truffld/'))
            lines.insert(at + 1, '#include "peer/types.h"')
            header.write_text('\n'.join(lines) + '\n')
            r = run(tmp)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(f'diagnose/read/instances.h:{at + 2}: read includes peer, a later stage', r.stdout)


if __name__ == '__main__':
    unittest.main()
