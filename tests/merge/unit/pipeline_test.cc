// Merge(): trees, views, requests, attribution counters, step numbering and clock alignment.
#include "truffld/merge/pipeline.h"

#include <gtest/gtest.h>

#include <functional>

#include "appendix_example.h"
#include "merge_test_util.h"

namespace truffld::merge {
namespace {

using testing::AppendixExampleDump;
using testing::FileFromLines;

MergeResult MergeOne(const std::string& dump, MergeOptions opt = {}) {
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(dump, "appendix.jsonl"));
  auto r = Merge(std::move(files), opt);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<std::string> ChildNames(const MergeResult& r, uint32_t node) {
  std::vector<std::string> out;
  r.ForEachChild(node, [&](uint32_t c) { out.emplace_back(r.Name(r.node(c))); });
  return out;
}

const Node* FindNode(const MergeResult& r, uint32_t root, std::string_view name) {
  if (r.Name(r.node(root)) == name) return &r.node(root);
  const Node* found = nullptr;
  r.ForEachChild(root, [&](uint32_t c) { if (!found) found = FindNode(r, c, name); });
  return found;
}

// The first device node under the tree's cudaGraphLaunch call, or nullptr when the tree has no
// such call or the call no device work.
const Node* GraphKernel(const MergeResult& r, uint32_t root) {
  const Node* launch = FindNode(r, root, "cudaGraphLaunch");
  return launch && launch->first_child != kNoNode ? &r.node(launch->first_child) : nullptr;
}

TEST(Merge, AppendixExampleVerticalTree) {
  MergeResult r = MergeOne(AppendixExampleDump());
  ASSERT_EQ(r.trees.size(), 2u);
  const Tree& v = r.trees[0];
  EXPECT_EQ(v.view, View::kVertical);
  EXPECT_EQ(v.step_index, 0u);
  ASSERT_TRUE(v.rank.has_value());
  EXPECT_EQ(r.request_sets[v.requests], (std::vector<std::string>{"0", "1", "2"}));
  const Node& root = r.node(v.root);
  EXPECT_EQ(root.layer, Layer::kStep);
  EXPECT_EQ(r.Family(root), "step");
  EXPECT_EQ(ChildNames(r, v.root),
            (std::vector<std::string>{"torch.nn.functional.embedding .../torch/nn/functional.py:2437",
                                      "torch.nn.functional.linear f.py:1", "sampler[request_ids:1]"}));
  const Node* emb = FindNode(r, v.root, "torch.nn.functional.embedding .../torch/nn/functional.py:2437");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->layer, Layer::kFrontend);
  EXPECT_EQ(r.Family(*emb), "torch.nn.functional.embedding");
  const Node* sel = FindNode(r, v.root, "aten::index_select, op_id = 3");
  ASSERT_NE(sel, nullptr);
  EXPECT_EQ(sel->layer, Layer::kBackend);
  EXPECT_EQ(r.Family(*sel), "aten::index_select");
  // index_select -> [cudaLaunchKernel -> kernel, cudaMemsetAsync -> memset]
  uint32_t sel_idx = uint32_t(sel - r.nodes.data());
  auto calls = ChildNames(r, sel_idx);
  ASSERT_EQ(calls, (std::vector<std::string>{"cudaLaunchKernel", "cudaMemsetAsync"}));
  uint32_t launch = sel->first_child;
  EXPECT_EQ(r.node(launch).layer, Layer::kRuntime);
  uint32_t k = r.node(launch).first_child;
  ASSERT_NE(k, kNoNode);
  EXPECT_EQ(r.node(k).layer, Layer::kKernel);
  EXPECT_EQ(r.Family(r.node(k)), "at::native::indexSelectLargeIndex");
  EXPECT_EQ(r.files[r.node(k).file].Extra(*r.EventOf(r.node(k))).stream, 7);
  uint32_t memset_call = r.node(launch).next_sibling;
  uint32_t ms = r.node(memset_call).first_child;
  ASSERT_NE(ms, kNoNode);
  EXPECT_EQ(r.node(ms).layer, Layer::kMemset);
  EXPECT_EQ(r.files[r.node(ms).file].Extra(*r.EventOf(r.node(ms))).bytes, 256);
  // The collective is not in the vertical view.
  EXPECT_EQ(FindNode(r, v.root, "ncclAllReduce"), nullptr);
}

TEST(Merge, AppendixExampleHorizontalTreeAnchorsComm) {
  MergeResult r = MergeOne(AppendixExampleDump());
  const Tree& h = r.trees[1];
  EXPECT_EQ(h.view, View::kHorizontal);
  EXPECT_EQ(h.step_index, 0u);
  ASSERT_EQ(ChildNames(r, h.root), (std::vector<std::string>{"ncclAllReduce"}));
  const Node& comm = r.node(r.node(h.root).first_child);
  EXPECT_EQ(comm.layer, Layer::kComm);
  ASSERT_NE(r.Anchor(comm), kNoNode);
  EXPECT_EQ(r.node(r.Anchor(comm)).layer, Layer::kStep);
  const Node& call = r.node(comm.first_child);
  EXPECT_EQ(r.Name(call), "cudaLaunchKernel");
  EXPECT_EQ(r.node(call.first_child).layer, Layer::kKernel);
}

TEST(Merge, AppendixExampleCountersAndRequests) {
  MergeResult r = MergeOne(AppendixExampleDump());
  const MergeCounters& c = r.summary.total;
  EXPECT_EQ(c.kernels_read, 5u);
  EXPECT_EQ(c.memsets_read, 1u);
  EXPECT_EQ(c.device_ops_read, 6u);
  EXPECT_EQ(c.device_ops_linked_unique, 4u);
  EXPECT_EQ(c.device_ops_unattributed, 2u);
  EXPECT_EQ(c.kernels_linked_unique + c.kernels_unattributed, c.kernels_read);
  EXPECT_EQ(c.unattributed_reasons.Get(Unattributed::kNoLaunchApi), 1u);
  EXPECT_EQ(c.unattributed_reasons.Get(Unattributed::kLaunchOutsideStep), 1u);
  EXPECT_EQ(c.api_calls_outside_step, 1u);
  EXPECT_EQ(c.injector_dropped, 3u);
  EXPECT_EQ(c.steps, 1u);
  EXPECT_EQ(c.trees, 6u);  // 3 requests x 2 views
  // The sampler range names request 1 only.
  const Node* sampler = FindNode(r, r.trees[0].root, "sampler[request_ids:1]");
  ASSERT_NE(sampler, nullptr);
  EXPECT_TRUE(r.InRequestSet(r.Requests(*sampler), "1"));
  EXPECT_FALSE(r.InRequestSet(r.Requests(*sampler), "0"));
}

// Request subsets and anchors live in side tables (few nodes have them): after two files'
// nodes are concatenated, each entry must still name its own file's nodes and request set,
// and nodes without an entry must read as having none.
TEST(Merge, SideTablesFollowTheirNodesAcrossFiles) {
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(AppendixExampleDump(), "a.jsonl"));
  files.push_back(FileFromLines(AppendixExampleDump(), "b.jsonl"));
  auto merged = Merge(std::move(files), {});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  const MergeResult& r = *merged;
  size_t anchored[2] = {0, 0}, subsets[2] = {0, 0};
  for (const Node& n : r.nodes) {
    ASSERT_LT(n.file, 2u);
    if (n.has_anchor) {
      const Node& a = r.node(r.Anchor(n));
      EXPECT_EQ(a.file, n.file);
      EXPECT_EQ(a.layer, Layer::kStep);
      EXPECT_EQ(n.layer, Layer::kComm);
      ++anchored[n.file];
    } else {
      EXPECT_EQ(r.Anchor(n), kNoNode);
    }
    if (n.has_requests) {
      EXPECT_EQ(r.Name(n), "sampler[request_ids:1]");
      EXPECT_EQ(r.request_sets[r.Requests(n)], (std::vector<std::string>{"1"}));
      ++subsets[n.file];
    } else {
      EXPECT_EQ(r.Requests(n), kAllRequests);
    }
  }
  EXPECT_EQ(anchored[0], 1u);
  EXPECT_EQ(anchored[1], 1u);
  EXPECT_EQ(subsets[0], 1u);
  EXPECT_EQ(subsets[1], 1u);
}

TEST(Merge, EveryHostNodeInsideItsParentAndDeviceAfterLaunch) {
  MergeResult r = MergeOne(AppendixExampleDump());
  std::function<void(uint32_t)> walk = [&](uint32_t i) {
    const Node& p = r.node(i);
    r.ForEachChild(i, [&](uint32_t c) {
      const Node& n = r.node(c);
      bool device = n.layer == Layer::kKernel || n.layer == Layer::kMemset || n.layer == Layer::kMemcpy;
      if (device) EXPECT_GE(r.Start(n), r.Start(p));
      else { EXPECT_LE(r.Start(p), r.Start(n)); EXPECT_LE(r.End(n), r.End(p)); }
      walk(c);
    });
  };
  for (const Tree& t : r.trees) walk(t.root);
}

std::string Meta(int rank, const char* clock, long long rt, long long mono, int pid) {
  return "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":" + std::to_string(pid) +
         ",\"rank\":" + (rank < 0 ? std::string("null") : std::to_string(rank)) + ",\"clock\":\"" + clock +
         "\",\"clock_sync\":{\"realtime_ns\":" + std::to_string(rt) + ",\"monotonic_ns\":" + std::to_string(mono) + "}}\n";
}
std::string Step(const char* name, long long s, long long e, int pid) {
  return "{\"type\":\"NVTX_PUSH\",\"name\":\"" + std::string(name) + "\",\"timestamp\":" + std::to_string(s) +
         ",\"process_id\":" + std::to_string(pid) + ",\"thread_id\":1}\n{\"type\":\"NVTX_POP\",\"timestamp\":" +
         std::to_string(e) + ",\"process_id\":" + std::to_string(pid) + ",\"thread_id\":1}\n";
}

TEST(Merge, StepIndexIsPerRankAcrossFilesOnTheAlignedAxis) {
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(Meta(0, "realtime", 0, 0, 10) + Step("step_execute_model[request_ids:a]", 1000, 2000, 10) +
                                Step("step_execute_model[request_ids:c]", 20000, 21000, 10), "a.jsonl"));
  // monotonic_raw file: offset 10000 puts its step at 10500, between the two above.
  files.push_back(FileFromLines(Meta(0, "monotonic_raw", 10000, 0, 11) + Step("step_execute_model[request_ids:b]", 500, 600, 11), "b.jsonl"));
  files.push_back(FileFromLines(Meta(-1, "realtime", 0, 0, 12) + Step("execute_model", 5, 6, 12), "c.jsonl"));
  auto r = Merge(std::move(files), {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary.files[1].clock_offset_ns, 10000);
  EXPECT_EQ(r->summary.files[1].clock_offset_method, "clock_sync_median");
  std::map<std::string, uint32_t> index;
  std::map<std::string, TimeNs> start;
  for (const Tree& t : r->trees) {
    if (t.view != View::kVertical) continue;
    std::string q = r->request_sets[t.requests][0];
    index[q] = t.step_index;
    start[q] = r->Start(r->node(t.root));
  }
  EXPECT_EQ(index["a"], 0u);
  EXPECT_EQ(index["b"], 1u);
  EXPECT_EQ(index["c"], 2u);
  EXPECT_EQ(index["*"], 0u);  // the rank-less process counts its own steps
  EXPECT_EQ(start["b"], 10500);
  ASSERT_EQ(r->summary.ranks.size(), 2u);
}

TEST(Merge, StepWindowKeepsItsStepsAndTheOneBefore) {
  EXPECT_TRUE(InStepWindow(7, MergeOptions{}));  // no window: every step
  MergeOptions o;
  o.window_index = 2;
  o.window_steps = 3;  // steps 6..8, and 5 before them
  std::vector<uint32_t> in;
  for (uint32_t i = 0; i < 12; ++i)
    if (InStepWindow(i, o)) in.push_back(i);
  EXPECT_EQ(in, (std::vector<uint32_t>{5, 6, 7, 8}));
  o.window_index = 0;  // the first window has no step before it
  in.clear();
  for (uint32_t i = 0; i < 12; ++i)
    if (InStepWindow(i, o)) in.push_back(i);
  EXPECT_EQ(in, (std::vector<uint32_t>{0, 1, 2}));

  std::string lines = Meta(0, "realtime", 0, 0, 11);
  for (int k = 0; k < 6; ++k) lines += Step(("step_execute_model[request_ids:r" + std::to_string(k) + "]").c_str(), 100 * k, 100 * k + 50, 11);
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(lines, "a.jsonl"));
  o.window_index = 1;
  o.window_steps = 2;  // steps 2, 3 and 1 before them
  auto r = Merge(std::move(files), o);
  ASSERT_TRUE(r.ok());
  std::vector<uint32_t> kept;
  for (const Tree& t : r->trees)
    if (t.view == View::kVertical) kept.push_back(t.step_index);
  EXPECT_EQ(kept, (std::vector<uint32_t>{1, 2, 3}));  // the whole run's indices
  ASSERT_EQ(r->summary.ranks.size(), 1u);
  EXPECT_EQ(r->summary.ranks[0].steps, 3u);
  EXPECT_EQ(r->summary.ranks[0].steps_in_dumps, 6u);
}

TEST(Merge, OneProcessWithoutARankIsRankZero) {
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(Meta(-1, "realtime", 0, 0, 12) + Step("execute_model", 5, 6, 12), "c.jsonl"));
  auto one = Merge(std::move(files), {});
  ASSERT_TRUE(one.ok());
  ASSERT_FALSE(one->trees.empty());
  EXPECT_EQ(one->trees[0].rank, std::optional<int64_t>(0));
  ASSERT_EQ(one->summary.ranks.size(), 1u);
  EXPECT_EQ(one->summary.ranks[0].rank, std::optional<int64_t>(0));
  // Two processes without ranks: which is which is unknown, so neither is numbered.
  files.clear();
  files.push_back(FileFromLines(Meta(-1, "realtime", 0, 0, 12) + Step("execute_model", 5, 6, 12), "c.jsonl"));
  files.push_back(FileFromLines(Meta(-1, "realtime", 0, 0, 13) + Step("execute_model", 5, 6, 13), "d.jsonl"));
  auto two = Merge(std::move(files), {});
  ASSERT_TRUE(two.ok());
  for (const Tree& t : two->trees) EXPECT_FALSE(t.rank.has_value());
}

TEST(Merge, ImplicitStepWhenFileHasNoStepRange) {
  std::string d = Meta(2, "realtime", 0, 0, 5) + Step("aten::mm", 10, 50, 5) +
                  "{\"type\":\"RUNTIME\",\"name\":\"cudaLaunchKernel\",\"start\":20,\"end\":30,\"correlation_id\":1,\"process_id\":5,\"thread_id\":1}\n"
                  "{\"type\":\"RUNTIME\",\"name\":\"cudaMalloc\",\"start\":60,\"end\":70,\"correlation_id\":2,\"process_id\":5,\"thread_id\":9}\n"
                  "{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_start\":40,\"gpu_end\":80,\"correlation_id\":1,\"device\":0,\"stream\":1}\n";
  MergeResult r = MergeOne(d);
  ASSERT_EQ(r.trees.size(), 2u);
  EXPECT_TRUE(r.trees[0].implicit_step);
  EXPECT_EQ(r.Name(r.node(r.trees[0].root)), "<implicit step>");
  EXPECT_EQ(r.request_sets[r.trees[0].requests], (std::vector<std::string>{"*"}));
  EXPECT_EQ(r.Start(r.node(r.trees[0].root)), 10);
  EXPECT_EQ(r.End(r.node(r.trees[0].root)), 70);
  EXPECT_EQ(ChildNames(r, r.trees[0].root), (std::vector<std::string>{"aten::mm", "cudaMalloc"}));
  EXPECT_EQ(r.summary.total.implicit_steps, 1u);
  EXPECT_EQ(r.summary.total.device_ops_linked_unique, 1u);
  MergeOptions no_implicit;
  no_implicit.implicit_steps = false;
  EXPECT_TRUE(MergeOne(d, no_implicit).trees.empty());
}

TEST(Merge, NestedStepIsDemotedAndOtherThreadsAreAdopted) {
  std::string d = Meta(0, "realtime", 0, 0, 1);
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"ProfilerStep#1\",\"timestamp\":10,\"process_id\":1,\"thread_id\":1}\n";
  d += Step("execute_model", 20, 30, 1);
  d += "{\"type\":\"NVTX_POP\",\"timestamp\":100,\"process_id\":1,\"thread_id\":1}\n";
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"autograd::engine\",\"timestamp\":40,\"process_id\":1,\"thread_id\":2}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":60,\"process_id\":1,\"thread_id\":2}\n";
  MergeResult r = MergeOne(d);
  ASSERT_EQ(r.summary.total.steps, 1u);
  EXPECT_EQ(ChildNames(r, r.trees[0].root), (std::vector<std::string>{"execute_model", "autograd::engine"}));
  EXPECT_EQ(r.node(r.node(r.trees[0].root).first_child).layer, Layer::kOther);
  EXPECT_EQ(r.summary.total.adopted_ranges, 1u);
}

// Children are created ranges first, then API calls, then device work; each sibling list must
// still come out in start order (ties by creation), whatever was created first.
TEST(Merge, SiblingsAreInStartOrderWhateverTheirKind) {
  std::string d = Meta(0, "realtime", 0, 0, 1) + Step("run_batch", 0, 1000, 1);
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"aten::linear\",\"timestamp\":100,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"RUNTIME\",\"name\":\"cudaMemsetAsync\",\"start\":110,\"end\":120,\"correlation_id\":1,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_PUSH\",\"name\":\"aten::mm\",\"timestamp\":130,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"RUNTIME\",\"name\":\"cudaLaunchKernel\",\"start\":140,\"end\":150,\"correlation_id\":2,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":160,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"RUNTIME\",\"name\":\"cudaStreamSynchronize\",\"start\":170,\"end\":180,\"correlation_id\":3,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_PUSH\",\"name\":\"aten::add_\",\"timestamp\":190,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":195,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":200,\"process_id\":1,\"thread_id\":1}\n"
       // The runtime call at 110 launches two kernels, listed late-starting first in the file.
       "{\"type\":\"MEMSET\",\"gpu_start\":300,\"gpu_end\":310,\"correlation_id\":1,\"device\":0,\"stream\":1}\n"
       "{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_start\":155,\"gpu_end\":165,\"correlation_id\":2,\"device\":0,\"stream\":1}\n"
       "{\"type\":\"MEMSET\",\"gpu_start\":125,\"gpu_end\":128,\"correlation_id\":1,\"device\":0,\"stream\":1}\n";
  MergeResult r = MergeOne(d);
  const Node* linear = FindNode(r, r.trees[0].root, "aten::linear");
  ASSERT_NE(linear, nullptr);
  const uint32_t li = static_cast<uint32_t>(linear - r.nodes.data());
  EXPECT_EQ(ChildNames(r, li), (std::vector<std::string>{"cudaMemsetAsync", "aten::mm", "cudaStreamSynchronize", "aten::add_"}));
  const Node* memset_call = FindNode(r, r.trees[0].root, "cudaMemsetAsync");
  ASSERT_NE(memset_call, nullptr);
  std::vector<TimeNs> starts;
  r.ForEachChild(static_cast<uint32_t>(memset_call - r.nodes.data()), [&](uint32_t c) { starts.push_back(r.Start(r.node(c))); });
  EXPECT_EQ(starts, (std::vector<TimeNs>{125, 300}));
}

TEST(Merge, DriverCallsInsideARuntimeCallShareItsCorrelation) {
  // As CUPTI records cuBLAS: cudaLaunchKernel [10,50] and two driver calls inside it, all id 7;
  // then a separate runtime call reusing id 7 (a real duplicate).
  std::string d = Meta(0, "realtime", 0, 0, 1) + Step("run_batch", 0, 1000, 1);
  d += "{\"type\":\"RUNTIME\",\"name\":\"cudaLaunchKernel\",\"start\":10,\"end\":50,\"correlation_id\":7,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"DRIVER\",\"name\":\"cuCtxGetCurrent\",\"start\":12,\"end\":14,\"correlation_id\":7,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"DRIVER\",\"name\":\"cuLaunchKernel\",\"start\":20,\"end\":40,\"correlation_id\":7,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_start\":45,\"gpu_end\":60,\"correlation_id\":7,\"device\":0,\"stream\":1}\n"
       "{\"type\":\"RUNTIME\",\"name\":\"later\",\"start\":100,\"end\":110,\"correlation_id\":7,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"KERNEL\",\"name\":\"k2\",\"gpu_start\":120,\"gpu_end\":130,\"correlation_id\":7,\"device\":0,\"stream\":1}\n";
  MergeResult r = MergeOne(d);
  EXPECT_EQ(r.summary.total.nested_api_calls, 2u);
  EXPECT_EQ(r.summary.total.duplicate_correlations, 1u);
  const Node* launch = FindNode(r, r.trees[0].root, "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  ASSERT_NE(launch->first_child, kNoNode);  // the outer (runtime) call gets the kernel
  EXPECT_EQ(r.Name(r.node(launch->first_child)), "k");
  const Node* later = FindNode(r, r.trees[0].root, "later");
  ASSERT_NE(later, nullptr);
  ASSERT_NE(later->first_child, kNoNode);
  EXPECT_EQ(r.Name(r.node(later->first_child)), "k2");
  const Node* driver = FindNode(r, r.trees[0].root, "cuLaunchKernel");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->first_child, kNoNode);
  EXPECT_EQ(r.summary.total.device_ops_unattributed, 0u);
}

TEST(Merge, DuplicateCorrelationAndDeviceBeforeLaunch) {
  std::string d = Meta(0, "realtime", 0, 0, 1) + Step("run_batch", 0, 1000, 1);
  d += "{\"type\":\"RUNTIME\",\"name\":\"a\",\"start\":10,\"end\":20,\"correlation_id\":7,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"RUNTIME\",\"name\":\"b\",\"start\":30,\"end\":40,\"correlation_id\":7,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_start\":35,\"gpu_end\":50,\"correlation_id\":7,\"device\":0,\"stream\":1}\n"
       "{\"type\":\"RUNTIME\",\"name\":\"c\",\"start\":60,\"end\":70,\"correlation_id\":8,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"KERNEL\",\"name\":\"early\",\"gpu_start\":55,\"gpu_end\":58,\"correlation_id\":8,\"device\":0,\"stream\":1}\n";
  MergeResult r = MergeOne(d);
  EXPECT_EQ(r.summary.total.duplicate_correlations, 1u);
  const Node* b = FindNode(r, r.trees[0].root, "b");
  ASSERT_NE(b, nullptr);
  ASSERT_NE(b->first_child, kNoNode);  // latest call starting before the kernel
  EXPECT_EQ(r.Name(r.node(b->first_child)), "k");
  EXPECT_EQ(r.summary.total.device_ops_unattributed, 1u);
  EXPECT_EQ(r.summary.total.unattributed_reasons.items.at(0).first, Unattributed::kStartsBeforeLaunch);
  MergeOptions strict;
  strict.strict = true;
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(d));
  EXPECT_FALSE(Merge(std::move(files), strict).ok());
}

// Classes and families are memoised by (name, domain, category) behind a small direct-mapped
// front: 3000 names (more than its slots, so entries collide and evict) in two domains that
// the rules classify differently must each keep their own layer and family.
TEST(Merge, ClassCacheKeysOnNameAndDomainAcrossCollisions) {
  auto rules = Rules::FromJson(R"({"rules":[{"layer":"comm","domain":"Coll"}]})", "inline");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  MergeOptions opt;
  opt.rules = *rules;
  std::string d = Meta(0, "realtime", 0, 0, 1) + Step("run_batch", 0, 1000000, 1);
  for (int round = 0; round < 2; ++round)  // the second round reads the names back from the cache
    for (int i = 0; i < 6000; ++i) {  // each name twice in a row: once per domain
      const long long t = 10 + (round * 6000 + i) * 80;
      const char* dom = (i + i / 2 + round) % 2 ? "Coll" : "Other";
      d += "{\"type\":\"NVTX_PUSH\",\"name\":\"op" + std::to_string(i / 2) + ", seq = 1\",\"domain\":\"" + dom +
           "\",\"timestamp\":" + std::to_string(t) + ",\"process_id\":1,\"thread_id\":1}\n";
      d += "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(t + 50) + ",\"process_id\":1,\"thread_id\":1}\n";
    }
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(d, "cache.jsonl"));
  auto merged = Merge(std::move(files), opt);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  const MergeResult& r = *merged;
  size_t checked = 0;
  for (const Node& n : r.nodes) {
    const Event* e = r.EventOf(n);
    if (!e || e->kind != EventKind::kNvtxPush || n.layer == Layer::kStep) continue;
    const bool coll = r.Str(n.file, r.files[n.file].Extra(*e).domain) == "Coll";
    EXPECT_EQ(n.layer, coll ? Layer::kComm : Layer::kOther) << r.Name(n);
    std::string name(r.Name(n));
    EXPECT_EQ(r.Family(n), name.substr(0, name.find(','))) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 12000u);
}

// The class cache holds 65536 names; past it a range is matched against the rules once and its
// family and request ids are derived when its node is made. 70000 distinct operator names (as
// profilers number every call), with a range naming request 1 of the step every 500th, must
// get the same layers, families and request subsets past the cache as before it.
TEST(Merge, RangesPastTheClassCacheKeepLayerFamilyAndRequests) {
  std::string d = Meta(0, "realtime", 0, 0, 1);
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:0_1_2]\",\"timestamp\":1,\"process_id\":1,\"thread_id\":1}\n";
  const int n = 70000;
  for (int i = 0; i < n; ++i) {
    const long long t = 10 + i * 10LL;
    const std::string name = i % 500 == 499 ? "sample" + std::to_string(i) + "[request_ids:1]"
                                            : "aten::op" + std::to_string(i % 7) + ", seq = " + std::to_string(i);
    d += "{\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":" + std::to_string(t) +
         ",\"process_id\":1,\"thread_id\":1}\n{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(t + 5) +
         ",\"process_id\":1,\"thread_id\":1}\n";
  }
  d += "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(20 + n * 10LL) + ",\"process_id\":1,\"thread_id\":1}\n";
  MergeResult r = MergeOne(d);
  size_t ops = 0, samplers = 0, late = 0;
  for (const Node& node : r.nodes) {
    const Event* e = r.EventOf(node);
    if (!e || node.layer == Layer::kStep) continue;
    const std::string name(r.Name(node));
    const bool past = e->start > 10 + 66000 * 10LL;  // certainly past the first 65536 names
    if (name.rfind("sample", 0) == 0) {
      ++samplers;
      EXPECT_EQ(node.layer, Layer::kOther) << name;
      EXPECT_EQ(r.Family(node), NormaliseFamily(Layer::kOther, name)) << name;
      EXPECT_TRUE(r.InRequestSet(r.Requests(node), "1")) << name;
      EXPECT_FALSE(r.InRequestSet(r.Requests(node), "0")) << name;
    } else {
      ++ops;
      EXPECT_EQ(node.layer, Layer::kBackend) << name;
      EXPECT_EQ(r.Family(node), name.substr(0, name.find(','))) << name;  // "aten::op3"
      EXPECT_EQ(r.Requests(node), kAllRequests) << name;
    }
    late += past;
  }
  EXPECT_EQ(samplers, size_t(n / 500));
  EXPECT_EQ(ops, size_t(n - n / 500));
  EXPECT_GT(late, 3000u);
}

// Nodes carry their own times on the merged axis (a range's end is its closing event's time);
// implicit steps have no event and are named by MergeResult::implicit_step_names, per file, so
// the second file's implicit steps find their name after the files are concatenated. The
// events themselves keep their file times.
TEST(Merge, NodeTimesAreMappedAndImplicitStepsNamedPerFile) {
  auto file = [](int rank, long long offset, long long base) {
    std::string d = Meta(rank, "monotonic_raw", 1000 + offset, 1000, 5);
    auto t = [&](long long v) { return std::to_string(base + v); };
    d += "{\"type\":\"NVTX_PUSH\",\"name\":\"aten::mm\",\"timestamp\":" + t(10) + ",\"process_id\":5,\"thread_id\":1}\n";
    d += "{\"type\":\"RUNTIME\",\"name\":\"cudaLaunchKernel\",\"start\":" + t(20) + ",\"end\":" + t(30) +
         ",\"correlation_id\":1,\"process_id\":5,\"thread_id\":1}\n";
    d += "{\"type\":\"NVTX_POP\",\"timestamp\":" + t(50) + ",\"process_id\":5,\"thread_id\":1}\n";
    d += "{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_start\":" + t(40) + ",\"gpu_end\":" + t(35) +  // ends before it starts
         ",\"correlation_id\":1,\"device\":0,\"stream\":1}\n";
    return FileFromLines(d, "r" + std::to_string(rank) + ".jsonl");
  };
  std::vector<TraceFile> files;
  files.push_back(file(0, 0, 0));
  files.push_back(file(1, 7000, 100));
  auto merged = Merge(std::move(files), MergeOptions{});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  const MergeResult& r = *merged;
  ASSERT_EQ(r.implicit_step_names.size(), 2u);
  int seen = 0;
  for (const Tree& t : r.trees) {
    if (t.view != View::kVertical) continue;
    const long long shift = t.rank == 1 ? 7000 + 100 : 0;  // rank 1: clock offset 7000, times +100
    const Node& root = r.node(t.root);
    EXPECT_EQ(root.event, kNoEvent);
    EXPECT_EQ(root.file, t.rank == 1 ? 1u : 0u);
    EXPECT_EQ(r.Name(root), "<implicit step>");
    EXPECT_EQ(r.Start(root), shift + 10);
    EXPECT_EQ(r.End(root), shift + 50);
    const Node* mm = FindNode(r, t.root, "aten::mm");
    ASSERT_NE(mm, nullptr);
    EXPECT_EQ(r.Start(*mm), shift + 10);
    EXPECT_EQ(r.End(*mm), shift + 50);  // the pop's time
    const Node* k = FindNode(r, t.root, "k");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(r.Start(*k), shift + 40);
    EXPECT_EQ(r.End(*k), shift + 40);  // clamped to zero length
    // The input events are not rewritten: the push keeps its own instant, on the file's clock.
    const Event* push = r.EventOf(*mm);
    ASSERT_NE(push, nullptr);
    EXPECT_EQ(push->start, (t.rank == 1 ? 100 : 0) + 10);
    ++seen;
  }
  EXPECT_EQ(seen, 2);
}

// Closing events (pops, ends) stay among the file's events; ranges span from their opening to
// their closing event, and the summary counts what was read.
TEST(Merge, RangesSpanTheirClosingEventsWhichStayInTheFile) {
  std::string d = Meta(0, "realtime", 0, 0, 1) + Step("run_batch", 0, 1000, 1);
  for (int i = 0; i < 100; ++i) {
    const std::string t = std::to_string(10 + i * 9);
    d += "{\"type\":\"NVTX_PUSH\",\"name\":\"op" + std::to_string(i) + "\",\"timestamp\":" + t + ",\"process_id\":1,\"thread_id\":1}\n";
    d += "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(10 + i * 9 + 5) + ",\"process_id\":1,\"thread_id\":1}\n";
  }
  d += "{\"type\":\"NVTX_START\",\"name\":\"crossing\",\"id\":7,\"timestamp\":20,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_END\",\"id\":7,\"timestamp\":30,\"process_id\":1,\"thread_id\":2}\n";
  MergeResult r = MergeOne(d);
  size_t closing = 0;
  for (const Event& e : r.files[0].events) closing += e.kind == EventKind::kNvtxPop || e.kind == EventKind::kNvtxEnd;
  EXPECT_EQ(closing, 102u);  // the step's pop, 100 ops' pops, the end (FileFromLines does not fold)
  for (int i = 0; i < 100; ++i) {
    const Node* op = FindNode(r, r.trees[0].root, "op" + std::to_string(i));
    ASSERT_NE(op, nullptr) << i;
    EXPECT_EQ(r.Start(*op), 10 + i * 9);
    EXPECT_EQ(r.End(*op), 10 + i * 9 + 5);
  }
  const Node* crossing = FindNode(r, r.trees[0].root, "crossing");
  ASSERT_NE(crossing, nullptr);
  EXPECT_EQ(r.End(*crossing), 30);
  EXPECT_EQ(r.summary.total.events_read.Get(EventKind::kNvtxPop), 101u);
}

}  // namespace
}  // namespace truffld::merge

namespace truffld::merge {
namespace {

TEST(Merge, GraphKernelsNameTheirCapturingOperator) {
  std::string d = Meta(0, "realtime", 0, 0, 1);
  // Capture (step 0): aten::mm launches a kernel that becomes graph node 7.
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:0]\",\"timestamp\":0,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_PUSH\",\"name\":\"aten::mm\",\"timestamp\":10,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"RUNTIME\",\"name\":\"cudaLaunchKernel\",\"start\":20,\"end\":30,\"correlation_id\":50,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"GRAPH_NODE\",\"graph_id\":1,\"graph_node_id\":7,\"correlation_id\":50,\"timestamp\":25,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"GRAPH_NODE\",\"graph_id\":2,\"graph_node_id\":70,\"original_graph_node_id\":7,\"correlation_id\":51,\"timestamp\":45,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":40,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":50,\"process_id\":1,\"thread_id\":1}\n";
  // Replay (step 1): one graph launch, its kernel carries the instantiated (cloned) node id.
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:1]\",\"timestamp\":100,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"RUNTIME\",\"name\":\"cudaGraphLaunch\",\"start\":110,\"end\":120,\"correlation_id\":60,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"KERNEL\",\"name\":\"gemm\",\"gpu_start\":130,\"gpu_end\":140,\"correlation_id\":60,\"device\":0,\"stream\":1,\"graph_id\":2,\"graph_node_id\":70}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":200,\"process_id\":1,\"thread_id\":1}\n";
  MergeResult r = MergeOne(d);
  ASSERT_EQ(r.trees.size(), 4u);
  const Tree& replay = r.trees[2];
  ASSERT_EQ(replay.step_index, 1u);
  const Node* kernel = GraphKernel(r, replay.root);
  ASSERT_NE(kernel, nullptr);
  const Node& k = *kernel;
  EXPECT_EQ(r.Name(k), "gemm");
  ASSERT_NE(r.Anchor(k), kNoNode);
  EXPECT_EQ(r.Name(r.node(r.Anchor(k))), "aten::mm");
  EXPECT_EQ(r.summary.total.graph_ops_attributed, 1u);
}

}  // namespace
}  // namespace truffld::merge

namespace truffld::merge {
namespace {

TEST(Merge, RangeAdoptedFromAThreadSortingBeforeTheStep) {
  // Thread 0 sorts before the step's thread 5; its range still joins the step.
  std::string d = Meta(0, "realtime", 0, 0, 1);
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"ProfilerStep#1\",\"timestamp\":10,\"process_id\":1,\"thread_id\":5}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":100,\"process_id\":1,\"thread_id\":5}\n"
       "{\"type\":\"NVTX_PUSH\",\"name\":\"aten::mm\",\"timestamp\":40,\"process_id\":1,\"thread_id\":0}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":60,\"process_id\":1,\"thread_id\":0}\n";
  MergeResult r = MergeOne(d);
  ASSERT_EQ(r.trees.size(), 2u);
  EXPECT_EQ(ChildNames(r, r.trees[0].root), (std::vector<std::string>{"aten::mm"}));
}

}  // namespace
}  // namespace truffld::merge

namespace truffld::merge {
namespace {

// A warm-up range capturing a CUDA graph node (ncclAllReduce; graph 1, node 7), and a step's
// launch of that graph with its kernel: the data of the two tests of captures outside steps.
const char kAllReduceCapture[] =
    "{\"type\":\"NVTX_PUSH\",\"name\":\"ncclAllReduce\",\"timestamp\":10,\"process_id\":1,\"thread_id\":1}\n"
    "{\"type\":\"RUNTIME\",\"name\":\"cuLaunchKernelEx\",\"start\":20,\"end\":30,\"correlation_id\":50,\"process_id\":1,\"thread_id\":1}\n"
    "{\"type\":\"GRAPH_NODE\",\"graph_id\":1,\"graph_node_id\":7,\"correlation_id\":50,\"timestamp\":25,\"process_id\":1,\"thread_id\":1}\n"
    "{\"type\":\"NVTX_POP\",\"timestamp\":40,\"process_id\":1,\"thread_id\":1}\n";
const char kAllReduceGraphLaunch[] =
    "{\"type\":\"RUNTIME\",\"name\":\"cudaGraphLaunch\",\"start\":110,\"end\":120,\"correlation_id\":60,\"process_id\":1,\"thread_id\":1}\n"
    "{\"type\":\"KERNEL\",\"name\":\"ncclDevKernel_AllReduce_Sum_bf16_RING_LL\",\"gpu_start\":130,\"gpu_end\":140,\"correlation_id\":60,\"device\":0,\"stream\":1,\"graph_id\":1,\"graph_node_id\":7}\n";

TEST(Merge, GraphCapturedOutsideAnyStepStillNamesItsOperator) {
  // Engines capture CUDA graphs during warm-up, before any step range exists.
  std::string d = Meta(0, "realtime", 0, 0, 1);
  d += kAllReduceCapture;
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:1]\",\"timestamp\":100,\"process_id\":1,\"thread_id\":1}\n";
  d += kAllReduceGraphLaunch;
  d += "{\"type\":\"NVTX_POP\",\"timestamp\":200,\"process_id\":1,\"thread_id\":1}\n";
  MergeResult r = MergeOne(d);
  ASSERT_EQ(r.trees.size(), 2u);  // one step, two views: the warm-up range is in no tree
  const Node* kernel = GraphKernel(r, r.trees[0].root);
  ASSERT_NE(kernel, nullptr);
  const Node& k = *kernel;
  ASSERT_NE(r.Anchor(k), kNoNode);
  EXPECT_EQ(r.Name(r.node(r.Anchor(k))), "ncclAllReduce");
  EXPECT_EQ(r.node(r.Anchor(k)).layer, Layer::kComm);
  EXPECT_EQ(r.summary.total.graph_ops_attributed, 1u);
  EXPECT_EQ(r.summary.total.capture_ranges_outside_steps, 1u);
}

}  // namespace
}  // namespace truffld::merge

namespace truffld::merge {
namespace {

TEST(Merge, GraphCapturedInANestedRangeOutsideStepsNamesTheInnerRange) {
  // The capturing operator is nested in a warm-up range, both outside every step: the builder
  // reuses the parent table for range nodes, so a range with no node must not read as its
  // parent's index there.
  std::string d = Meta(0, "realtime", 0, 0, 1);
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"warmup\",\"timestamp\":5,\"process_id\":1,\"thread_id\":1}\n";
  d += kAllReduceCapture;
  d += "{\"type\":\"NVTX_POP\",\"timestamp\":50,\"process_id\":1,\"thread_id\":1}\n";
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:1]\",\"timestamp\":100,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_PUSH\",\"name\":\"aten::mm\",\"timestamp\":105,\"process_id\":1,\"thread_id\":1}\n";
  d += kAllReduceGraphLaunch;
  d += "{\"type\":\"NVTX_POP\",\"timestamp\":150,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":200,\"process_id\":1,\"thread_id\":1}\n";
  MergeResult r = MergeOne(d);
  ASSERT_EQ(r.trees.size(), 2u);
  EXPECT_EQ(ChildNames(r, r.trees[0].root), (std::vector<std::string>{"aten::mm"}));
  const Node* kernel = GraphKernel(r, r.trees[0].root);
  ASSERT_NE(kernel, nullptr);
  const Node& k = *kernel;
  ASSERT_NE(r.Anchor(k), kNoNode);
  EXPECT_EQ(r.Name(r.node(r.Anchor(k))), "ncclAllReduce");
  EXPECT_EQ(r.summary.total.capture_ranges_outside_steps, 1u);
}

}  // namespace
}  // namespace truffld::merge

namespace truffld::merge {
namespace {

TEST(Merge, EachStepsCommRangesAndRequestSubsetsStayWithThatStep) {
  // Three steps, each with a collective and a range naming a subset of its own requests: the
  // builder finds a range's step record by the step's root node, which must be that step's.
  std::string d = Meta(0, "realtime", 0, 0, 1);
  for (int s = 0; s < 3; ++s) {
    const int t = 1000 * s;
    const std::string a = std::to_string(3 * s), b = std::to_string(3 * s + 1), c = std::to_string(3 * s + 2);
    auto push = [&](const std::string& name, int ts) {
      d += "{\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":" + std::to_string(ts) +
           ",\"process_id\":1,\"thread_id\":1}\n";
    };
    auto pop = [&](int ts) {
      d += "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(ts) + ",\"process_id\":1,\"thread_id\":1}\n";
    };
    push("step_execute_model[request_ids:" + a + "_" + b + "_" + c + "]", t + 10);
    push("ncclAllReduce", t + 20);
    pop(t + 30);
    push("sampler[request_ids:" + b + "]", t + 40);
    pop(t + 50);
    pop(t + 100);
  }
  MergeResult r = MergeOne(d);
  ASSERT_EQ(r.trees.size(), 6u);
  for (int s = 0; s < 3; ++s) {
    const Tree& v = r.trees[2 * s];
    const Tree& h = r.trees[2 * s + 1];
    ASSERT_EQ(v.view, View::kVertical);
    ASSERT_EQ(h.view, View::kHorizontal);
    EXPECT_EQ(ChildNames(r, h.root), (std::vector<std::string>{"ncclAllReduce"})) << "step " << s;
    EXPECT_EQ(r.Start(r.node(r.node(h.root).first_child)), 1000 * s + 20) << "step " << s;
    const Node* sampler = FindNode(r, v.root, "sampler[request_ids:" + std::to_string(3 * s + 1) + "]");
    ASSERT_NE(sampler, nullptr) << "step " << s;
    ASSERT_TRUE(sampler->has_requests) << "step " << s;
    EXPECT_EQ(r.request_sets[r.Requests(*sampler)], (std::vector<std::string>{std::to_string(3 * s + 1)}));
  }
}

}  // namespace
}  // namespace truffld::merge
