#!/usr/bin/python3
"""tools/demo.sh and tools/truffld-env run on throw-away copies of a checkout (ctest entry
cli_scripts): the scripts themselves are copied into a temporary folder beside stand-ins for
what they call (cmake, the three tools, bootstrap, compare.py), so a broken safety check can
only ever hurt that folder.

  * demo.sh never deletes a directory it did not create: a non-empty folder without the
    .truffld-demo marker is refused (exit 2, message, untouched), `tools/demo.sh .` inside the
    checkout is refused; a new, empty or earlier demo folder is used, and a rerun replaces only
    the demo's own dump/, merged/, diag/;
  * truffld-env from a checkout uses build/ (not the newest build*/ tree) unless --build-dir
    says otherwise, and fails naming the injector when it is missing; --version works;
    --check prints what it checked (libraries loadable, hooks importable in the given Python,
    output folder writable, no other injection library set) instead of the export line, and
    exits 1 naming each failed check.
"""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # truffld_unittest
import truffld_unittest  # noqa: E402

SRC = os.environ.get("TRUFFLD_SOURCE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Stand-in tools: each writes what the demo expects next and logs its arguments.
STANDIN = """#!/bin/bash
echo "$(basename "$0") $*" >>"$FAKE_LOG"
case "$(basename "$0")" in
  truffld-synth) mkdir -p "$4"; touch "$4/truffld-h-r0-p1.jsonl" "$4/labels.jsonl" ;;
  truffld-merge) mkdir -p "${@: -1}"; touch "${@: -1}/trees.jsonl" ;;
  truffld-diagnose) mkdir -p "$3"; touch "$3/diagnosis.jsonl" ;;
esac
"""


def write_exe(path, body):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class FakeCheckout(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="truffld_scripts_")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.repo = os.path.join(self.tmp, "checkout")
        for rel in ("tools/demo.sh", "tools/lib/demo_out.sh", "tools/truffld-env", "CMakeLists.txt"):
            os.makedirs(os.path.dirname(os.path.join(self.repo, rel)), exist_ok=True)
            shutil.copy2(os.path.join(SRC, rel), os.path.join(self.repo, rel))
        write_exe(os.path.join(self.repo, "tools", "bootstrap.sh"), "#!/bin/sh\nexit 0\n")
        write_exe(os.path.join(self.repo, "tools", "eval", "compare.py"), "import sys\nprint('compared', sys.argv[1:])\n")
        with open(os.path.join(self.repo, "README.md"), "w") as f:
            f.write("precious\n")
        self.extra_env = {}
        self.log = os.path.join(self.tmp, "calls.log")
        self.bin = os.path.join(self.tmp, "bin")
        write_exe(os.path.join(self.bin, "cmake"), STANDIN)
        build = os.path.join(self.repo, "build")
        os.makedirs(build)
        open(os.path.join(build, "CMakeCache.txt"), "w").close()
        for rel in ("tools/synth/truffld-synth", "merge/truffld-merge", "diagnose/truffld-diagnose"):
            write_exe(os.path.join(build, rel), STANDIN)

    def run_script(self, args, cwd=None):
        env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], FAKE_LOG=self.log)
        env.pop("TRUFFLD_BUILD_DIR", None)
        env.pop("TRUFFLD_LLM_URL", None)
        for k in list(env):
            if k.endswith("_INJECTION64_PATH") or k == "PYTHONPATH":
                env.pop(k)
        env.update(self.extra_env)
        return subprocess.run(args, cwd=cwd or self.repo, env=env, capture_output=True, text=True, timeout=120)

    def calls(self):
        if not os.path.exists(self.log):
            return ""
        with open(self.log) as f:
            return f.read()


class DemoScript(FakeCheckout):
    def demo(self, *args, cwd=None):
        return self.run_script([os.path.join(self.repo, "tools", "demo.sh")] + list(args), cwd=cwd)

    def test_dot_in_the_checkout_is_refused_and_nothing_is_touched(self):
        before = sorted(os.listdir(self.repo))
        p = self.demo(".")
        self.assertEqual(2, p.returncode, p.stdout + p.stderr)
        self.assertIn("refusing to use " + self.repo, p.stderr)
        self.assertEqual(before, sorted(os.listdir(self.repo)))
        self.assertEqual("", self.calls(), "the demo ran something before refusing")

    def test_a_foreign_non_empty_folder_is_refused(self):
        out = os.path.join(self.tmp, "mine")
        os.makedirs(os.path.join(out, "dump"))
        with open(os.path.join(out, "dump", "keep.txt"), "w") as f:
            f.write("mine\n")
        p = self.demo(out)
        self.assertEqual(2, p.returncode, p.stdout + p.stderr)
        self.assertIn("not made by a truffld demo", p.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "dump", "keep.txt")))
        file_out = os.path.join(self.tmp, "afile")
        open(file_out, "w").close()
        self.assertEqual(2, self.demo(file_out).returncode)
        link = os.path.join(self.tmp, "link")
        os.symlink(out, link)
        self.assertEqual(2, self.demo(link).returncode)
        self.assertTrue(os.path.exists(os.path.join(out, "dump", "keep.txt")))

    def test_relative_out_is_taken_from_the_current_directory(self):
        cwd = os.path.join(self.tmp, "elsewhere")
        os.makedirs(cwd)
        p = self.demo("rel", cwd=cwd)
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(cwd, "rel", ".truffld-demo")))
        self.assertFalse(os.path.exists(os.path.join(self.repo, "rel")))

    def test_new_empty_and_earlier_demo_folders_are_used(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        p = self.demo(empty)
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)
        self.assertIn("truffld-synth --preset demo --out %s/dump" % empty, self.calls())
        self.assertTrue(os.path.isfile(os.path.join(empty, ".truffld-demo")))
        # A rerun: the demo's own folders are replaced, anything else the user put there stays.
        with open(os.path.join(empty, "dump", "stale.jsonl"), "w") as f:
            f.write("old\n")
        with open(os.path.join(empty, "notes.txt"), "w") as f:
            f.write("mine\n")
        p = self.demo(empty)
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)
        self.assertFalse(os.path.exists(os.path.join(empty, "dump", "stale.jsonl")))
        self.assertTrue(os.path.exists(os.path.join(empty, "notes.txt")))
        p = self.demo(os.path.join(self.tmp, "new", "deeper"))
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)

    def test_bad_arguments_exit_2_and_help_exits_0(self):
        self.assertEqual(2, self.demo("--bogus").returncode)
        self.assertEqual(2, self.demo("a", "b").returncode)
        p = self.demo("--help")
        self.assertEqual(0, p.returncode)
        self.assertIn("Exit status", p.stdout)


class TruffldEnv(FakeCheckout):
    def env_tool(self, *args):
        return self.run_script([os.path.join(self.repo, "tools", "truffld-env")] + list(args))

    def setUp(self):
        super().setUp()
        hooks = os.path.join(self.repo, "inject", "python")
        os.makedirs(hooks)
        open(os.path.join(hooks, "sitecustomize.py"), "w").close()
        os.makedirs(os.path.join(hooks, "truffld_hooks"))
        open(os.path.join(hooks, "truffld_hooks", "__init__.py"), "w").close()
        self.injector = os.path.join(self.repo, "build", "inject", "libcupti_injector.so")
        os.makedirs(os.path.dirname(self.injector))
        open(self.injector, "w").close()
        # A newer sanitizer tree with a sidecar but no injector: never picked by default.
        asan_bin = os.path.join(self.repo, "build-asan", "bin")
        os.makedirs(asan_bin)
        with open(os.path.join(asan_bin, "truffld-env.paths"), "w") as f:
            f.write("TRUFFLD_ENV_HOOKS_DIR=%s\nTRUFFLD_ENV_INJECTOR=\n" % hooks)

    def test_checkout_uses_build_not_the_newest_tree(self):
        p = self.env_tool("--output-dir", "/tmp/t")
        self.assertEqual(0, p.returncode, p.stderr)
        self.assertIn("CUDA_INJECTION64_PATH=" + self.injector, p.stdout)
        self.assertIn("NVTX_INJECTION64_PATH=" + self.injector, p.stdout)

    def test_missing_injector_fails_naming_it(self):
        os.remove(self.injector)
        p = self.env_tool()
        self.assertEqual(1, p.returncode, p.stdout)
        self.assertIn("missing libcupti_injector.so", p.stderr)
        self.assertEqual("", p.stdout)
        p = self.env_tool("--build-dir", os.path.join(self.repo, "build-asan"))
        self.assertEqual(1, p.returncode, p.stdout)
        self.assertIn("missing libcupti_injector.so", p.stderr)
        p = self.env_tool("--build-dir", os.path.join(self.repo, "nope"))
        self.assertEqual(1, p.returncode, p.stdout)

    def test_build_dir_is_honoured(self):
        other = os.path.join(self.tmp, "other-build")
        lib = os.path.join(other, "inject", "libcupti_injector.so")
        os.makedirs(os.path.dirname(lib))
        open(lib, "w").close()
        p = self.env_tool("--build-dir", other)
        self.assertEqual(0, p.returncode, p.stderr)
        self.assertIn("CUDA_INJECTION64_PATH=" + lib, p.stdout)

    def real_library(self, path):
        """Copies this process's libc (a loadable ELF library) to `path`."""
        with open("/proc/self/maps") as f:
            libc = next((ln.split()[-1] for ln in f if "/libc.so" in ln or "/libc-" in ln), None)
        if not libc:
            self.skipTest("no libc.so in /proc/self/maps")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(libc, path)

    def test_check_checks_and_prints_no_export_line(self):
        self.real_library(self.injector)
        self.real_library(os.path.join(self.repo, "build", "inject", "pynvtx", "libtruffld_pynvtx.so"))
        out = os.path.join(self.tmp, "trace")
        p = self.env_tool("--check", "--output-dir", out)
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)
        self.assertNotIn("export", p.stdout)
        for what in ("injector", "NVTX shim", "hooks", "output dir"):
            self.assertRegex(p.stdout, r"\n  ok +%s +/" % what)
        self.assertRegex(p.stdout, r"\n  ok +CUDA_INJECTION64_PATH none \(not set\)")
        self.assertIn(self.injector + " (ELF, dependencies found)", p.stdout)
        self.assertFalse(os.path.exists(out), "--check made the output folder")
        os.makedirs(out)
        p = self.env_tool("--check", "--output-dir", out)
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)
        self.assertIn(out + " (writable)", p.stdout)
        self.assertEqual([], os.listdir(out), "--check left its test file behind")

    def test_check_fails_naming_each_failed_check(self):
        blocker = os.path.join(self.tmp, "a-file")
        open(blocker, "w").close()
        p = self.env_tool("--check", "--output-dir", os.path.join(blocker, "trace"))
        self.assertEqual(1, p.returncode, p.stdout + p.stderr)
        self.assertNotIn("export", p.stdout)
        self.assertIn("FAIL  injector    %s (not an ELF library)" % self.injector, p.stdout)
        self.assertIn("FAIL  NVTX shim", p.stdout)
        self.assertRegex(p.stdout, r"\n  ok +hooks ")
        self.assertIn("%s is not a folder" % blocker, p.stdout)
        self.assertIn("truffld-env: 3 check(s) failed", p.stderr)

    def test_check_fails_on_hooks_that_do_not_import_and_another_injector(self):
        self.real_library(self.injector)
        self.real_library(os.path.join(self.repo, "build", "inject", "pynvtx", "libtruffld_pynvtx.so"))
        with open(os.path.join(self.repo, "inject", "python", "truffld_hooks", "__init__.py"), "w") as f:
            f.write("def broken(:\n")
        other = os.path.join(self.tmp, "nsys-injection.so")
        open(other, "w").close()
        self.extra_env = {"CUDA_INJECTION64_PATH": other, "NVTX_INJECTION64_PATH": self.injector}
        p = self.env_tool("--check", "--output-dir", os.path.join(self.tmp, "trace"))
        self.assertEqual(1, p.returncode, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"\n  FAIL +hooks .*cannot import them: SyntaxError")
        self.assertIn("FAIL  CUDA_INJECTION64_PATH %s (another injection library" % other, p.stdout)
        self.assertIn("ok    NVTX_INJECTION64_PATH %s (already the injector)" % self.injector, p.stdout)
        self.assertIn("truffld-env: 2 check(s) failed", p.stderr)
        p = self.env_tool("--check", "--no-cuda", "--python", "no-such-python3")
        self.assertRegex(p.stdout, r"\n  FAIL +hooks .*no-such-python3 not found")
        self.assertNotIn("CUDA_INJECTION64_PATH", p.stdout)
        self.assertIn("truffld-env: 1 check(s) failed", p.stderr)

    def test_version_and_usage(self):
        p = self.env_tool("--version")
        self.assertEqual(0, p.returncode, p.stderr)
        self.assertRegex(p.stdout, r"^truffld-env \d+\.\d+\.\d+")
        self.assertEqual(2, self.env_tool("--bogus").returncode)
        p = self.env_tool("--help")
        self.assertEqual(0, p.returncode)
        self.assertIn("Exit status", p.stdout)


if __name__ == "__main__":
    truffld_unittest.main()
