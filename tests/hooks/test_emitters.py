"""Unit tests (no torch needed) of the parts that only matter on GPU builds of torch, driven by
fake torch objects: the torch-binding emitter keeps NVTX balanced, and backend ranges through
emit_nvtx are enabled only once CUDA is initialised, once per thread, and never by the hooks."""

import sys
import threading
import types
import unittest

import hookstest

hookstest.import_hooks_here()
from truffld_hooks import backend, config, nvtx  # noqa: E402


class FakeNvtx(object):
    def __init__(self):
        self.calls = []

    def rangePushA(self, name):
        self.calls.append(("push", name))

    def rangePop(self):
        self.calls.append(("pop",))

    def markA(self, name):
        self.calls.append(("mark", name))


class TorchBindingEmitterTest(unittest.TestCase):
    def test_push_pop_and_repair(self):
        fake = FakeNvtx()
        em = nvtx.Emitter("torch", torch_nvtx=fake)
        em.push(b"a")
        em.push("b")
        em.push("c")
        self.assertEqual(3, em.depth())
        em.pop_to(1)
        em.pop()
        em.pop()  # nothing left: ignored, NVTX stays balanced
        self.assertEqual([("push", "a"), ("push", "b"), ("push", "c"), ("pop",), ("pop",),
                          ("pop",)], fake.calls)
        self.assertIsNone(em.domain("PyTorch"))  # torch's binding has no domains

    def test_depth_is_per_thread(self):
        em = nvtx.Emitter("torch", torch_nvtx=FakeNvtx())
        em.push("main")
        seen = []
        worker = threading.Thread(target=lambda: seen.append(em.depth()))
        worker.start()
        worker.join()
        self.assertEqual([0], seen)
        self.assertEqual(1, em.depth())


class FakeEmitNvtx(object):
    entered = []

    def __init__(self, enabled=True, record_shapes=False):
        self.args = (enabled, record_shapes)

    def __enter__(self):
        FakeEmitNvtx.entered.append(threading.current_thread().name)
        return self


def fake_torch(cuda_initialised):
    state = {"init": cuda_initialised}
    cuda = types.SimpleNamespace(is_initialized=lambda: state["init"],
                                 init=lambda: (_ for _ in ()).throw(AssertionError("init!")))
    torch = types.SimpleNamespace(
        _C=types.SimpleNamespace(_nvtx=FakeNvtx()), cuda=cuda, __version__="2.4.0",
        autograd=types.SimpleNamespace(profiler=types.SimpleNamespace(emit_nvtx=FakeEmitNvtx)))
    return torch, state


class BackendTest(unittest.TestCase):
    def setUp(self):
        self.saved = sys.modules.get("torch")
        FakeEmitNvtx.entered = []
        self.cfg = config.Config.from_environ({})

    def tearDown(self):
        if self.saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved

    def _in_thread(self, fn):
        out = []
        thread = threading.Thread(target=lambda: out.append(fn()), name="model-thread")
        thread.start()
        thread.join()
        return out[0]

    def test_waits_for_cuda_then_enters_once_per_thread(self):
        torch, state = fake_torch(cuda_initialised=False)
        sys.modules["torch"] = torch

        def steps():
            first = backend.ensure_thread(self.cfg)    # CUDA not initialised: wait
            state["init"] = True                       # the engine initialises CUDA
            second = backend.ensure_thread(self.cfg)
            third = backend.ensure_thread(self.cfg)
            return first, second, third

        self.assertEqual((None, "emit_nvtx", "emit_nvtx"), self._in_thread(steps))
        self.assertEqual(["model-thread"], FakeEmitNvtx.entered)

    def test_switched_off(self):
        torch, _ = fake_torch(cuda_initialised=True)
        sys.modules["torch"] = torch
        off = config.Config.from_environ({"TRUFFLD_HOOKS_BACKEND": "0"})
        self.assertIsNone(self._in_thread(lambda: backend.ensure_thread(off)))
        self.assertEqual([], FakeEmitNvtx.entered)

    def test_failure_is_recorded_not_raised(self):
        torch, _ = fake_torch(cuda_initialised=True)

        class Broken(FakeEmitNvtx):
            def __enter__(self):
                raise RuntimeError("profiler already enabled on this thread")

        torch.autograd.profiler.emit_nvtx = Broken
        sys.modules["torch"] = torch
        self.assertEqual("failed", self._in_thread(lambda: backend.ensure_thread(self.cfg)))
        self.assertIn("already enabled", backend.status["model-thread"])


if __name__ == "__main__":
    hookstest.main()
