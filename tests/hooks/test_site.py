"""Integration tests: activation through PYTHONPATH alone -- sitecustomize chaining to the
sitecustomize it shadows, no recursion on duplicated entries, inheritance of the hooks into
forked and spawned children (multiprocessing, as vLLM starts its workers)."""

import os
import subprocess
import tempfile
import unittest

import hookstest


def _write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write(text)
    return path


class ChainingTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.other = os.path.join(self.tmp.name, "other")
        os.makedirs(self.other)
        _write(self.other, "sitecustomize.py",
               "import os\nos.environ['SHADOWED_SITECUSTOMIZE_RAN'] = "
               "str(int(os.environ.get('SHADOWED_SITECUSTOMIZE_RAN', '0')) + 1)\n")

    def tearDown(self):
        self.tmp.cleanup()

    def _probe(self, env):
        code = ("import sys; lazy = [m for m in ('json', 're', 'ctypes', 'threading') "
                "if m in sys.modules]; import os, json; print(json.dumps({'ran': os.environ.get("
                "'SHADOWED_SITECUSTOMIZE_RAN'), 'hooks': 'truffld_hooks' in sys.modules and "
                "sys.modules['truffld_hooks'].installed(), 'torch': 'torch' in sys.modules, "
                "'lazy': lazy, "
                "'site': sys.modules['sitecustomize'].__file__}))")
        proc = subprocess.run([hookstest.PYTHON, "-c", code], env=env, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual("", proc.stderr)
        import json
        return json.loads(proc.stdout)

    def test_chains_once_to_the_shadowed_file(self):
        out = self._probe(hookstest.hooks_env(self.other))
        self.assertEqual("1", out["ran"])
        self.assertTrue(out["hooks"])
        self.assertFalse(out["torch"])
        self.assertEqual([], out["lazy"])  # the table is read at the first torch/engine import
        self.assertTrue(out["site"].startswith(hookstest.HOOKS_SRC))

    def test_duplicate_entries_do_not_recurse(self):
        env = hookstest.hooks_env(hookstest.HOOKS_SRC, self.other, hookstest.HOOKS_SRC)
        out = self._probe(env)
        self.assertEqual("1", out["ran"])

    def test_disabled_hooks_still_chain(self):
        out = self._probe(hookstest.hooks_env(self.other, TRUFFLD_HOOKS="0"))
        self.assertEqual("1", out["ran"])
        self.assertFalse(out["hooks"])

    def test_broken_shadowed_file_is_reported_not_fatal(self):
        _write(self.other, "sitecustomize.py", "raise ValueError('boom')\n")
        proc = subprocess.run([hookstest.PYTHON, "-c", "print('alive')"],
                              env=hookstest.hooks_env(self.other), capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(0, proc.returncode)
        self.assertEqual("alive", proc.stdout.strip())
        self.assertIn("chained sitecustomize", proc.stderr)
        self.assertIn("boom", proc.stderr)


class ChildrenTest(unittest.TestCase):
    CODE = """
import multiprocessing as mp

def child(q):
    import sys
    import truffld_hooks
    from truffld_hooks import nvtx
    nvtx.get().trace = []
    from vllm.v1.core.sched.output import SchedulerOutput, CachedRequestData
    from vllm.v1.worker.gpu_worker import Worker
    Worker().execute_model(SchedulerOutput([], CachedRequestData([]), {"req-7": 1}, 1))
    q.put({"installed": truffld_hooks.installed(),
           "ranges": [n for op, n in nvtx.get().trace if op == "push"]})

if __name__ == "__main__":
    out = {}
    for method in ("fork", "spawn", "forkserver"):
        ctx = mp.get_context(method)
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        out[method] = q.get(timeout=60)
        p.join(60)
        out[method]["exitcode"] = p.exitcode
    print(json.dumps(out))
"""

    def test_fork_spawn_forkserver_children_are_hooked(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = _write(tmp, "main.py", "import json\n" + self.CODE)
            env = hookstest.hooks_env(os.path.join(hookstest.STANDINS, "vllm_v1_new"))
            proc = subprocess.run([hookstest.PYTHON, script], env=env, capture_output=True,
                                  text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        import json
        out = json.loads(proc.stdout.splitlines()[-1])
        for method in ("fork", "spawn", "forkserver"):
            self.assertEqual({"installed": True, "exitcode": 0,
                              "ranges": ["step_execute_model[request_ids:req-7][phase:decode][tokens:1]"]}, out[method],
                             method)


if __name__ == "__main__":
    hookstest.main()
