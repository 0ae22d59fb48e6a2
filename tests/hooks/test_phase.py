"""Unit tests: the step tags after the request ids (``[phase:prefill|decode|mixed]``,
``[tokens:N]``, ``[ctx:N]``) -- naming and parsing, and the rules over duck-typed batches shaped
like vLLM V1 (0.8/0.9 and 0.10+), vLLM V0 and SGLang, including objects that break (the rules
must never raise). Pure logic, no torch, no engine; the stand-in engine runs are in
test_engines.py."""

import types
import unittest

import hookstest

hookstest.import_hooks_here()
from truffld_hooks import engines, naming, requests  # noqa: E402

NS = types.SimpleNamespace


class Exploding(object):
    """Every attribute read raises, like a half-initialised engine object."""

    def __getattr__(self, name):
        raise RuntimeError("engine bug: " + name)


class NamingTest(unittest.TestCase):
    def test_tag_follows_the_ids_and_round_trips(self):
        for phase in ("prefill", "decode", "mixed"):
            name = naming.step_name(["a_b", "c]"], phase=phase)
            self.assertEqual("step_execute_model[request_ids:a\\_b_c\\]][phase:%s]" % phase, name)
            self.assertEqual(("step_execute_model", ["a_b", "c]"], "requests"),
                             naming.parse_step_name(name))
            self.assertEqual(phase, naming.parse_step_phase(name))

    def test_no_tag_when_unknown_empty_or_dummy(self):
        self.assertEqual("step_execute_model[request_ids:a]", naming.step_name(["a"], phase=None))
        self.assertEqual("step_execute_model[request_ids:a]", naming.step_name(["a"], phase="x"))
        self.assertEqual("step_execute_model[empty]", naming.step_name([], phase="decode"))
        self.assertEqual("step_execute_model[dummy]",
                         naming.step_name(["a"], dummy=True, phase="decode"))
        self.assertIsNone(naming.parse_step_phase("step_execute_model[request_ids:a]"))

    def test_ids_that_look_like_a_tag_are_not_one(self):
        for rid in ("x[phase:decode", "x][phase:decode", "y[phase:decode]"):
            name = naming.step_name([rid])
            self.assertIsNone(naming.parse_step_phase(name), name)
            self.assertEqual([rid], naming.parse_step_name(name)[1])
        name = naming.step_name(["x\\"], phase="mixed")  # id ends with an escaped backslash
        self.assertEqual("mixed", naming.parse_step_phase(name))
        self.assertEqual(["x\\"], naming.parse_step_name(name)[1])

    def test_sample_tokens_step_carries_the_tag(self):
        name = naming.step_name(["r"], base=naming.STEP_SAMPLE, phase="prefill")
        self.assertEqual("step_execute_model:sample_tokens[request_ids:r][phase:prefill]", name)


def v1(tokens, new=(), spec=None, cached=None):
    return NS(scheduled_new_reqs=[NS(req_id=r) for r in new], num_scheduled_tokens=tokens,
              scheduled_cached_reqs=cached if cached is not None else NS(req_ids=[]),
              total_num_scheduled_tokens=sum(tokens.values()),
              scheduled_spec_decode_tokens=spec if spec is not None else {})


class VllmV1PhaseTest(unittest.TestCase):
    def test_decode_prefill_mixed(self):
        self.assertEqual("decode", requests.vllm_v1_phase(v1({"a": 1, "b": 1})))
        self.assertEqual("prefill", requests.vllm_v1_phase(v1({"a": 7, "b": 1}, new=["a", "b"])))
        self.assertEqual("prefill", requests.vllm_v1_phase(v1({"a": 512})))  # chunked prefill
        self.assertEqual("mixed", requests.vllm_v1_phase(v1({"a": 1, "b": 300}, new=["b"])))
        self.assertEqual("mixed", requests.vllm_v1_phase(v1({"a": 1, "b": 64})))

    def test_a_new_one_token_request_is_a_prefill(self):
        self.assertEqual("prefill", requests.vllm_v1_phase(v1({"a": 1}, new=["a"])))
        self.assertEqual("mixed", requests.vllm_v1_phase(v1({"a": 1, "b": 1}, new=["b"])))

    def test_speculative_tokens_do_not_make_a_prefill(self):
        so = v1({"a": 4, "b": 1}, spec={"a": [5, 6, 7]})
        self.assertEqual("decode", requests.vllm_v1_phase(so))
        self.assertEqual("mixed", requests.vllm_v1_phase(v1({"a": 4, "b": 1}, spec={"a": [5]})))

    def test_versions_without_spec_field_and_with_list_of_cached(self):
        so = NS(scheduled_new_reqs=[], num_scheduled_tokens={"a": 1},
                scheduled_cached_reqs=[NS(req_id="a")], total_num_scheduled_tokens=1)
        self.assertEqual("decode", requests.vllm_v1_phase(so))

    def test_unknown_never_raises(self):
        for so in (None, NS(), v1({}), NS(num_scheduled_tokens={"a": "x"}), Exploding(),
                   NS(num_scheduled_tokens={"a": 1}, scheduled_new_reqs=5)):
            self.assertIsNone(requests.vllm_v1_phase(so), so)


class VllmV0PhaseTest(unittest.TestCase):
    def test_attention_metadata_counts_win(self):
        meta = lambda p, d: NS(num_prefills=p, num_prefill_tokens=p * 10, num_decode_tokens=d)
        self.assertEqual("prefill", requests.vllm_v0_phase(NS(attn_metadata=meta(2, 0), is_prompt=True)))
        self.assertEqual("decode", requests.vllm_v0_phase(NS(attn_metadata=meta(0, 5), is_prompt=False)))
        # chunked prefill: is_prompt comes from the first group only; the counts see both
        self.assertEqual("mixed", requests.vllm_v0_phase(NS(attn_metadata=meta(1, 3), is_prompt=True)))

    def test_is_prompt_fallback_and_unknown(self):
        self.assertEqual("prefill", requests.vllm_v0_phase(NS(attn_metadata=None, is_prompt=True)))
        self.assertEqual("decode", requests.vllm_v0_phase(NS(is_prompt=False)))
        for mi in (NS(is_prompt=None), NS(), None, Exploding()):
            self.assertIsNone(requests.vllm_v0_phase(mi))


class SglangPhaseTest(unittest.TestCase):
    @staticmethod
    def mode(name, extend=(), raising=False):
        def test(kind):
            def f():
                if raising:
                    raise RuntimeError("bad mode")
                return kind == name or kind in extend
            return f
        return NS(forward_mode=NS(is_mixed=test("mixed"), is_decode=test("decode"),
                                  is_extend=test("extend"), is_target_verify=test("verify")))

    def test_modes(self):
        self.assertEqual("prefill", requests.sglang_phase(self.mode("extend")))
        self.assertEqual("decode", requests.sglang_phase(self.mode("decode")))
        self.assertEqual("mixed", requests.sglang_phase(self.mode("mixed", extend=("extend",))))
        self.assertEqual("decode", requests.sglang_phase(self.mode("verify", extend=("extend",))))

    def test_unknown_never_raises(self):
        old = NS(forward_mode=NS(is_decode=lambda: False))  # a version with fewer predicates
        for batch in (self.mode("idle"), self.mode("decode", raising=True), NS(), None, old,
                      NS(forward_mode=None), Exploding()):
            self.assertIsNone(requests.sglang_phase(batch))


class TokenTagsTest(unittest.TestCase):
    def test_naming_order_round_trip_and_unknowns(self):
        name = naming.step_name(["a_b", "c"], phase="decode", tokens=2, ctx=4096)
        self.assertEqual("step_execute_model[request_ids:a\\_b_c][phase:decode][tokens:2][ctx:4096]", name)
        self.assertEqual(("step_execute_model", ["a_b", "c"], "requests"), naming.parse_step_name(name))
        self.assertEqual("decode", naming.parse_step_phase(name))
        self.assertEqual(2, naming.parse_step_count(name, "tokens"))
        self.assertEqual(4096, naming.parse_step_count(name, "ctx"))
        self.assertEqual("step_execute_model[request_ids:a][tokens:0]",
                         naming.step_name(["a"], phase="?", tokens=0, ctx=-1))
        for bad in (None, -3, 2.5, "7", True):
            self.assertEqual("step_execute_model[request_ids:a]", naming.step_name(["a"], tokens=bad, ctx=bad))
        self.assertEqual("step_execute_model[empty]", naming.step_name([], tokens=5, ctx=5))
        self.assertEqual("step_execute_model[dummy]", naming.step_name(["a"], dummy=True, tokens=5))

    def test_tags_out_of_order_or_inside_ids_are_not_tags(self):
        misordered = "step_execute_model[request_ids:a][tokens:3][phase:decode]"
        self.assertIsNone(naming.parse_step_count(misordered, "tokens"))
        for rid in ("x][tokens:5", "y[tokens:5]"):
            name = naming.step_name([rid], tokens=1)
            self.assertEqual(1, naming.parse_step_count(name, "tokens"), name)
            self.assertEqual([rid], naming.parse_step_name(name)[1])
        self.assertIsNone(naming.parse_step_count(naming.step_name(["x][tokens:5"]), "tokens"))

    def test_a_thousand_requests_keep_every_id_and_tag(self):
        ids = ["chatcmpl-%032x" % i for i in range(1000)]
        name = naming.step_name(ids, phase="decode", tokens=1000, ctx=1234567)
        self.assertEqual(ids, naming.parse_step_name(name)[1])
        self.assertEqual(1000, naming.parse_step_count(name, "tokens"))

    def test_vllm_v1_tokens_and_context(self):
        cached = NS(req_ids=["b", "c"], num_computed_tokens=[100, 250])
        so = v1({"a": 30, "b": 1, "c": 1}, new=["a"], cached=cached)
        so.scheduled_new_reqs[0].num_computed_tokens = 16  # prefix-cache hit
        self.assertEqual(32, requests.vllm_v1_tokens(so))
        self.assertEqual(16 + 30 + 100 + 1 + 250 + 1, requests.vllm_v1_context(so))
        self.assertEqual("step_execute_model[request_ids:a_b_c][phase:mixed][tokens:32][ctx:398]",
                         engines._name_for("vllm_v1", so, True)[0])
        old = NS(scheduled_new_reqs=[], num_scheduled_tokens={"a": 1, "b": 1},
                 scheduled_cached_reqs=[NS(req_id="a", num_computed_tokens=9), NS(req_id="b", num_computed_tokens=4)])
        self.assertEqual(2, requests.vllm_v1_tokens(old))  # no total: the sum
        self.assertEqual(15, requests.vllm_v1_context(old))

    def test_vllm_v1_unknowns_never_raise(self):
        no_ctx = v1({"a": 1}, cached=NS(req_ids=["a"]))  # cached without num_computed_tokens
        self.assertIsNone(requests.vllm_v1_context(no_ctx))
        self.assertEqual(1, requests.vllm_v1_tokens(no_ctx))
        for so in (None, NS(), Exploding(), NS(num_scheduled_tokens={"a": "x"}),
                   NS(total_num_scheduled_tokens=-1)):
            self.assertIsNone(requests.vllm_v1_tokens(so), so)
            self.assertIsNone(requests.vllm_v1_context(so), so)
        self.assertIsNone(requests.vllm_v1_context(NS(num_scheduled_tokens={"a": 1}, scheduled_new_reqs=5)))

    def test_vllm_v0_tokens_and_context(self):
        mi = NS(attn_metadata=NS(num_prefills=1, num_prefill_tokens=40, num_decode_tokens=3,
                                 seq_lens=[40, 700, 12, 90]))
        self.assertEqual(43, requests.vllm_v0_tokens(mi))
        self.assertEqual(842, requests.vllm_v0_context(mi))
        for bad in (NS(), None, Exploding(), NS(attn_metadata=NS(num_prefill_tokens=1, seq_lens=[1, "x"]))):
            self.assertIsNone(requests.vllm_v0_tokens(bad))
            self.assertIsNone(requests.vllm_v0_context(bad))

    def test_sglang_tokens_and_context(self):
        extend = SglangPhaseTest.mode("extend")
        extend.extend_num_tokens, extend.seq_lens_sum, extend.reqs = 2048, 2300, [NS(rid="p")]
        self.assertEqual(2048, requests.sglang_tokens(extend))
        self.assertEqual(2300, requests.sglang_context(extend))
        decode = SglangPhaseTest.mode("decode")
        decode.reqs, decode.extend_num_tokens = [NS(rid="a"), NS(rid="b")], 999  # stale extend count
        self.assertEqual(2, requests.sglang_tokens(decode))
        self.assertIsNone(requests.sglang_context(decode))
        for bad in (SglangPhaseTest.mode("decode", raising=True), NS(), None, Exploding(),
                    SglangPhaseTest.mode("idle")):
            self.assertIsNone(requests.sglang_tokens(bad))


class NameForTest(unittest.TestCase):
    def test_every_engine_kind_tags_its_steps(self):
        self.assertEqual("step_execute_model[request_ids:a][phase:decode][tokens:1]",
                         engines._name_for("vllm_v1", v1({"a-0123abcd": 1}), True)[0])
        mi = NS(request_ids_to_seq_ids={"0": [0]}, is_prompt=True)
        self.assertEqual("step_execute_model[request_ids:0][phase:prefill]",
                         engines._name_for("vllm_v0", mi, False)[0])
        batch = SglangPhaseTest.mode("mixed")
        batch.reqs = [NS(rid="r")]
        self.assertEqual(("step_execute_model[request_ids:r][phase:mixed]", ["r"],
                          {"phase": "mixed", "tokens": None, "ctx": None}),
                         engines._name_for("sglang", batch, False))


if __name__ == "__main__":
    hookstest.main()
