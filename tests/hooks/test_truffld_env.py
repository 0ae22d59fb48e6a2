"""Integration test of tools/truffld-env: the printed line, evaluated by a shell, enables the
hooks in a child Python (sitecustomize found, shim path set, output dir absolute), from the
build-tree copy and from the source copy; --help teaches; bad arguments fail clearly.
Argument 1: the CMake build directory."""

import os
import subprocess
import sys
import tempfile
import unittest

import hookstest

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("TRUFFLD_BUILD_DIR", "")


def sh(script, cwd=None):
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cwd,
                          timeout=60)


class TruffldEnvTest(unittest.TestCase):
    def _check_line(self, tool, cwd):
        probe = ("import os, sys, json; import truffld_hooks; print(json.dumps({"
                 "'installed': truffld_hooks.installed(), 'out': os.environ['TRUFFLD_OUTPUT_DIR'],"
                 "'lib': os.environ.get('TRUFFLD_PYNVTX_LIB', ''),"
                 "'binding': truffld_hooks.stats()['nvtx_binding']}))")
        proc = sh('unset PYTHONPATH TRUFFLD_OUTPUT_DIR; eval "$(%s --output-dir rel/trace)" && '
                  '%s -c "%s"' % (tool, hookstest.PYTHON, probe), cwd=cwd)
        self.assertEqual(0, proc.returncode, proc.stderr)
        import json
        out = json.loads(proc.stdout.splitlines()[-1])
        self.assertTrue(out["installed"])
        self.assertEqual(os.path.join(os.path.realpath(cwd), "rel", "trace"),
                         os.path.realpath(out["out"]))
        return out

    def test_build_tree_copy(self):
        tool = os.path.join(BUILD, "bin", "truffld-env")
        if not os.path.exists(tool):
            self.skipTest("no build-tree truffld-env (argument: build dir)")
        with tempfile.TemporaryDirectory() as tmp:
            out = self._check_line(tool, tmp)
        if os.environ.get("TRUFFLD_PYNVTX_LIB"):
            self.assertEqual(os.environ["TRUFFLD_PYNVTX_LIB"], out["lib"])
            self.assertEqual("shim", out["binding"])

    def test_source_copy_with_build_dir(self):
        tool = os.path.join(hookstest.SOURCE_DIR, "tools", "truffld-env")
        if not BUILD:
            self.skipTest("no build dir given")
        with tempfile.TemporaryDirectory() as tmp:
            self._check_line("%s --build-dir %s" % (tool, BUILD), tmp)

    def test_evaluating_twice_keeps_pythonpath(self):
        if not BUILD:
            self.skipTest("no build dir given")
        tool = "%s --build-dir %s" % (os.path.join(hookstest.SOURCE_DIR, "tools", "truffld-env"), BUILD)
        proc = sh('export PYTHONPATH=/a:/b; eval "$(%s 2>/dev/null)"; eval "$(%s 2>/dev/null)"; '
                  'echo "$PYTHONPATH"' % (tool, tool))
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual(hookstest.HOOKS_SRC + ":/a:/b", proc.stdout.strip())

    def test_help_and_errors(self):
        tool = os.path.join(hookstest.SOURCE_DIR, "tools", "truffld-env")
        proc = sh(tool + " --help")
        self.assertEqual(0, proc.returncode)
        for text in ("eval \"$(truffld-env", "VLLM_RAY_EXTRA_ENV_VARS_TO_COPY", "--output-dir",
                     "--capture MODE", "two-tier (default)", "default cost:0.5:2", "steps:N[:M]",
                     'touch "$TRUFFLD_OUTPUT_DIR/truffld.detail"', "TRUFFLD_HOOKS_WINDOWS"):
            self.assertIn(text, proc.stdout)
        proc = sh(tool + " --bogus")
        self.assertEqual(2, proc.returncode)
        self.assertIn("unknown argument '--bogus'", proc.stderr)
        for bad in ("--capture everything", "--windows all", "--windows steps:0", "--capture",
                    "--windows cost:0", "--windows cost:101", "--windows cost:x", "--windows cost:1:40000"):
            proc = sh(tool + " " + bad)
            self.assertEqual(2, proc.returncode, bad)
            self.assertIn("truffld-env: --", proc.stderr)

    def test_capture_modes(self):
        """two-tier by default (a periodic plan, hooks follow the windows), all on demand."""
        with tempfile.TemporaryDirectory() as prefix:
            tool = self._install_prefix(prefix)
            lines = {}
            for args in ("", "--capture two-tier --windows time:100:5000", "--capture=all",
                         "--windows=requested"):
                proc = sh("%s --output-dir /tmp/t %s" % (tool, args))
                self.assertEqual(0, proc.returncode, proc.stderr)
                lines[args] = proc.stdout.strip()
        self.assertTrue(lines[""].endswith(
            " TRUFFLD_DEVICE_WINDOWS=cost:0.5:2 TRUFFLD_HOOKS_WINDOWS=1"), lines[""])
        self.assertIn(" TRUFFLD_DEVICE_WINDOWS=time:100:5000 TRUFFLD_HOOKS_WINDOWS=1",
                      lines["--capture two-tier --windows time:100:5000"])
        self.assertIn(" TRUFFLD_DEVICE_WINDOWS=all TRUFFLD_HOOKS_WINDOWS=0", lines["--capture=all"])
        self.assertIn(" TRUFFLD_DEVICE_WINDOWS=requested ", lines["--windows=requested"])

    def _install_prefix(self, prefix):
        """A minimal install layout under ``prefix`` (an empty injector); returns its tool."""
        hooks = os.path.join(prefix, "share", "truffld", "hooks")
        os.makedirs(os.path.join(prefix, "bin"))
        os.makedirs(os.path.join(prefix, "lib"))
        os.makedirs(hooks)
        os.symlink(os.path.join(hookstest.HOOKS_SRC, "truffld_hooks"),
                   os.path.join(hooks, "truffld_hooks"))
        os.symlink(os.path.join(hookstest.HOOKS_SRC, "sitecustomize.py"),
                   os.path.join(hooks, "sitecustomize.py"))
        open(os.path.join(prefix, "lib", "libcupti_injector.so"), "w").close()
        tool = os.path.join(prefix, "bin", "truffld-env")
        with open(os.path.join(hookstest.SOURCE_DIR, "tools", "truffld-env")) as src, \
                open(tool, "w") as dst:
            dst.write(src.read())
        os.chmod(tool, 0o755)
        return tool

    def test_install_prefix_layout(self):
        with tempfile.TemporaryDirectory() as prefix:
            hooks = os.path.join(prefix, "share", "truffld", "hooks")
            tool = self._install_prefix(prefix)
            proc = sh(tool + " --output-dir /tmp/t")
            self.assertEqual(0, proc.returncode, proc.stderr)
            line = proc.stdout.strip()
            self.assertIn("CUDA_INJECTION64_PATH=%s/lib/libcupti_injector.so" % prefix, line)
            self.assertIn("NVTX_INJECTION64_PATH=%s/lib/libcupti_injector.so" % prefix, line)
            self.assertIn("PYTHONPATH=%s" % hooks, line)
            self.assertIn("TRUFFLD_OUTPUT_DIR=/tmp/t", line)
            proc = sh(tool + " --check")
            self.assertEqual(1, proc.returncode)
            self.assertIn("FAIL  NVTX shim", proc.stdout)  # not installed
            self.assertIn("FAIL  injector", proc.stdout)  # an empty file, not a library
            self.assertNotIn("export", proc.stdout)


if __name__ == "__main__":
    hookstest.main()
