"""Unit tests with Debian's CPU torch 1.13: frontend ranges with call sites (functional, module
forwards, Tensor.to), backend ranges through the dispatch-mode fallback, torch.compile skip,
torch.distributed comm ranges (gloo, world size 1), and no CUDA initialisation. Each case runs in
a fresh interpreter with the hooks enabled by PYTHONPATH."""

import unittest

import hookstest

try:
    import importlib.util
    HAVE_TORCH = importlib.util.find_spec("torch") is not None
except Exception:  # pragma: no cover
    HAVE_TORCH = False


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this interpreter")
class TorchCpuTest(unittest.TestCase):
    def test_frontend_backend_and_call_sites(self):
        out = hookstest.run_child("""
import torch, torch.nn.functional as F
lin = torch.nn.Linear(4, 3)
x = torch.randn(2, 4)
with truffld_hooks.step_range(["r0", "r_1"]):
    y = lin(x)                                   # LINE_MODULE
    z = F.relu(y)                                # LINE_RELU
    w = z.to(torch.float64)                      # LINE_TO
maps = open("/proc/self/maps").read()
print(json.dumps({"ranges": ranges(), "balanced": balanced(), "libcuda": "libcuda.so" in maps,
                  "cuda": torch.cuda.is_initialized(), "stats": truffld_hooks.stats()}))
""")
        names = out["ranges"]
        self.assertTrue(out["balanced"])
        self.assertFalse(out["cuda"])       # never initialises CUDA ...
        self.assertFalse(out["libcuda"])    # ... nor even loads the driver (no cuInit possible)
        self.assertEqual("step_execute_model[request_ids:r0_r\\_1]", names[0])
        # call sites: the child's code is "<string>"; line numbers of the marked lines.
        code_lines = hookstest.PROLOGUE.count("\n") + 1
        module = [n for n in names if n.startswith("nn.Module:Linear.forward ")]
        self.assertEqual(["nn.Module:Linear.forward <string>:%d" % (code_lines + 5)], module)
        self.assertIn("torch.nn.functional.relu <string>:%d" % (code_lines + 6), names)
        self.assertIn("torch.Tensor.to <string>:%d" % (code_lines + 7), names)
        linear = [n for n in names if n.startswith("torch.nn.functional.linear ")]
        self.assertEqual(1, len(linear))
        self.assertTrue(linear[0].split(" ", 1)[1].endswith(":%d" % _linear_line()), linear)
        backend = [n.split(",")[0] for n in names if n.startswith("aten::")]
        self.assertIn("aten::addmm", backend)
        self.assertIn("aten::relu", backend)
        self.assertEqual("dispatch", out["stats"]["backend"]["MainThread"])

    def test_backend_without_steps(self):
        # A plain functional program, no step_range, no module: its first wrapped call turns the
        # backend ranges on (there will never be a step to do it).
        out = hookstest.run_child("""
import torch, torch.nn.functional as F
x = torch.randn(3, 3)
F.softmax(x, dim=-1)
F.relu(x)
print(json.dumps({"ranges": ranges(), "balanced": balanced(), "stats": truffld_hooks.stats()}))
""")
        names = [n.split(" ")[0].split(",")[0] for n in out["ranges"]]
        self.assertTrue(out["balanced"])
        self.assertEqual("dispatch", out["stats"]["backend"]["MainThread"])
        self.assertEqual(["torch.nn.functional.softmax", "aten::_softmax", "torch.nn.functional.relu", "aten::relu"],
                         names)

    def test_ranges_nest_frontend_over_backend(self):
        out = hookstest.run_child("""
import torch, torch.nn.functional as F
x = torch.randn(3, 3)
with truffld_hooks.step_range(["a"]):
    F.softmax(x, dim=-1)
print(json.dumps(_em.trace))
""")
        ops = [(op, (name or "").split(" ")[0].split(",")[0]) for op, name in out]
        self.assertEqual(("push", "step_execute_model[request_ids:a]"), ops[0])
        self.assertEqual(("push", "torch.nn.functional.softmax"), ops[1])
        self.assertEqual(("push", "aten::_softmax"), ops[2])
        self.assertEqual(("pop", ""), ops[3])

    def test_nothing_emitted_while_compiling(self):
        out = hookstest.run_child("""
import torch, torch.nn.functional as F
from truffld_hooks import patching
patching._probe = lambda: True
F.relu(torch.ones(2))
torch.nn.Linear(2, 2)(torch.ones(2))
print(json.dumps(ranges()))
""")
        self.assertEqual([], [n for n in out if not n.startswith("aten::")])

    def test_torch_distributed_comm_ranges(self):
        out = hookstest.run_child("""
import os, tempfile, torch, torch.distributed as dist
store = tempfile.mktemp()
dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
t = torch.ones(4, dtype=torch.float32)
dist.all_reduce(t)
outs = [torch.empty(4)]
dist.all_gather(outs, t)
dist.barrier()
dist.destroy_process_group()
print(json.dumps([n for n in ranges() if n.startswith("nccl:")]))
""")
        self.assertEqual(["nccl:all_reduce, bytes=16, world_size=1, impl=torch.distributed",
                          "nccl:all_gather, bytes=16, world_size=1, impl=torch.distributed",
                          "nccl:barrier, bytes=-1, world_size=1, impl=torch.distributed"], out)

    def test_bad_table_is_reported(self):
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "table.json")
            with open(path, "w") as handle:
                handle.write('[{"domain": "PyTorch", "module": "torch.nn.functional"}, 5,'
                             ' {"domain": "P", "module": "torch.nn.functional",'
                             ' "functions": ["relu"]}]')
            env = hookstest.hooks_env(TRUFFLD_HOOKS_TABLE=path)
            out = hookstest.run_child("""
import torch, torch.nn.functional as F
F.relu(torch.ones(1)); F.gelu(torch.ones(1))
print(json.dumps({"problems": truffld_hooks.stats()["table_problems"],
                  "ranges": [n.split(" ")[0] for n in ranges() if not n.startswith("aten")]}))
""", env=env)
        self.assertEqual(2, len(out["problems"]))
        self.assertIn("entry 0: missing functions", out["problems"][0])
        self.assertIn("entry 1: not an object", out["problems"][1])
        self.assertEqual(["torch.nn.functional.relu"], out["ranges"])


def _linear_line():
    """Line in torch/nn/modules/linear.py that calls F.linear (version dependent)."""
    import inspect
    import torch.nn.modules.linear as lin
    source, start = inspect.getsourcelines(lin.Linear.forward)
    for offset, line in enumerate(source):
        if "F.linear(" in line:
            return start + offset
    raise AssertionError("Linear.forward does not call F.linear")


if __name__ == "__main__":
    hookstest.main()
