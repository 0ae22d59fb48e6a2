// TreeReader's walk over one tree: operator instances with their features, own costs, work
// signatures and blocked waits, and CUDA-graph replays grouped by capturing operator (see
// tree_reader.h and tree_reader_impl.h).
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>

#include "read/graph_replay.h"
#include "read/node_fields.h"
#include "read/outside_time.h"
#include "read/tree_reader_impl.h"

namespace truffld::diagnose {
namespace detail {

// The trees' phase, normalised to the values diagnosis.jsonl allows ("" when absent).
std::string NormalizePhase(std::string_view p) {
  std::string lower(p);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "prefill" || lower == "decode" || lower == "mixed") return lower;
  return p.empty() ? std::string() : std::string("unknown");
}

int64_t GetInt(simdjson::dom::object o, const char* key, int64_t dflt) {
  simdjson::dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS) return dflt;  // one key lookup (a scan of the object)
  return IntOf(e, dflt);
}

int64_t IntOf(simdjson::dom::element e, int64_t dflt) {
  int64_t v;
  if (e.get_int64().get(v) == simdjson::SUCCESS) return v;
  uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return INT64_MAX;  // only past INT64_MAX
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS) {
    if (std::isnan(d)) return dflt;
    if (d >= 0x1p63) return INT64_MAX;  // a cast out of range would be undefined
    return d < -0x1p63 ? INT64_MIN : static_cast<int64_t>(d);
  }
  return dflt;
}

int64_t GetTime(simdjson::dom::object o, const char* key, int64_t dflt) {
  return std::clamp(GetInt(o, key, dflt), -kMaxTimeNs, kMaxTimeNs);
}

int64_t TimeOf(const simdjson::dom::element* e, int64_t dflt) {
  return e ? std::clamp(IntOf(*e, dflt), -kMaxTimeNs, kMaxTimeNs) : dflt;
}

std::string_view GetStr(simdjson::dom::object o, const char* key) {
  std::string_view s;
  if (o[key].get_string().get(s) == simdjson::SUCCESS) return s;
  return {};
}

}  // namespace detail
namespace {

bool IsOperatorLayer(std::string_view l) {
  return l == "frontend_op" || l == "backend_op" || l == "comm" || l == "other";
}
bool IsCallLayer(std::string_view l) { return l == "runtime_call" || l == "driver_call"; }
bool IsDeviceLayer(std::string_view l) { return l == "kernel" || l == "memcpy" || l == "memset"; }

// Grid blocks of a kernel node (product of its "grid", null when absent), 0 without; `shape` gets both.
double GridBlocksOf(const simdjson::dom::element* grid, const simdjson::dom::element* block, uint64_t* shape) {
  double blocks = 0;
  for (const simdjson::dom::element* e : {grid, block}) {
    simdjson::dom::array a;
    if (!e || e->get_array().get(a) != simdjson::SUCCESS) continue;
    double prod = 1;
    for (auto v : a) {
      int64_t x = 0;
      if (v.get_int64().get(x) != simdjson::SUCCESS) x = 0;
      prod *= static_cast<double>(std::max<int64_t>(x, 0));
      *shape = detail::MixHash(*shape, static_cast<uint64_t>(x));
    }
    if (e == grid) blocks = prod;
  }
  return blocks;
}

// One collective's payload is clamped to 2^48 bytes (256 TiB, far past any real one), so its
// work-signature cast from double stays defined.
constexpr int64_t kMaxCommBytes = int64_t{1} << 48;

bool IsSyncCall(std::string_view api) { return api.find("Synchronize") != std::string_view::npos; }

using detail::Bump;
using detail::GetInt;
using detail::GetStr;
using detail::HashText;
using detail::MixHash;
using detail::DedupKey;
using detail::GraphNode;
using detail::PendingInstance;
using detail::StepBucket;
using detail::SubtreeStats;
using detail::UnionLength;

}  // namespace

// Turns the device children of one graph launch into operator instances: consecutive
// nodes captured under the same operator range (captured_in.name) form one instance.
// comm captures go to the (rank, step)'s horizontal view, the rest to the vertical one.
void TreeReader::Impl::EmitGraphInstances(simdjson::dom::array children, int64_t launch_start,
                                          uint32_t launch_family, int64_t thread) {
  std::vector<GraphNode> nodes;
  for (simdjson::dom::element c : children) {
    simdjson::dom::object co, cap;
    if (c.get_object().get(co) != simdjson::SUCCESS) continue;
    const detail::GraphChild f = detail::ScanGraphChild(co);
    std::string_view layer = f.layer;
    if (!IsDeviceLayer(layer)) continue;
    if (const int64_t id = f.has_graph_id ? detail::IntOf(f.graph_id, -1) : -1;
        id >= 0 && std::find(bucket->graph_ids.begin(), bucket->graph_ids.end(), id) == bucket->graph_ids.end())
      bucket->graph_ids.push_back(id);
    if (!f.has_captured_in || f.captured_in.get_object().get(cap) != simdjson::SUCCESS) continue;
    GraphNode n;
    n.start = detail::TimeOf(f.has_start ? &f.start : nullptr, 0);
    n.end = detail::TimeOf(f.has_end ? &f.end : nullptr, n.start);
    n.bytes = std::max<int64_t>(0, f.has_bytes ? detail::IntOf(f.bytes, 0) : 0);
    n.is_kernel = layer == "kernel";
    std::string_view kf = f.family;
    n.kernel_family = strings.Intern(kf.empty() ? f.name : kf);
    n.shape = MixHash(TextHash(n.kernel_family, strings), static_cast<uint64_t>(n.bytes));
    n.blocks = n.is_kernel ? GridBlocksOf(f.has_grid ? &f.grid : nullptr, f.has_block ? &f.block : nullptr, &n.shape) : 0;
    n.cap_name = GetStr(cap, "name");
    n.cap_layer = GetStr(cap, "layer");
    n.cap_family = GetStr(cap, "family");
    if (n.cap_family.empty()) n.cap_family = n.cap_name;
    if (n.cap_name.empty() || !IsOperatorLayer(n.cap_layer)) continue;
    nodes.push_back(n);
  }
  const int64_t launch_latency =
      nodes.empty() ? 0 : std::max<int64_t>(0, std::min_element(nodes.begin(), nodes.end(),
          [](const GraphNode& a, const GraphNode& b) { return a.start < b.start; })->start -
          launch_start);
  for (auto [first, count] : detail::GroupByCapture(&nodes)) {
    EmitGraphGroup(nodes.data() + first, count, launch_start, launch_latency, launch_family, thread);
  }
}

void TreeReader::Impl::EmitGraphGroup(const GraphNode* g, size_t n, int64_t launch_start, int64_t launch_latency,
                                      uint32_t launch_family, int64_t thread) {
  const bool comm = g[0].cap_layer == "comm";
  if (!comm && !graph_vertical_ops) return;
  StepKey k = key;
  k.horizontal = comm;
  StepBucket& target = buckets[k];
  detail::GraphInstance gi = detail::SummariseGraphGroup(g, n, launch_latency);
  const uint32_t family = strings.Intern(g[0].cap_family);
  if (!target.seen.insert(DedupKey{family, gi.start, gi.end, thread}).second) {
    ++stats->duplicate_instances;
    return;
  }
  PendingInstance p;
  p.family = family;
  p.layer = strings.Intern(g[0].cap_layer);
  p.parent = kNoString;  // the capturing operator's own parent is not recorded
  p.start = p.detail.device_start = gi.start;
  p.end = p.detail.device_end = gi.end;
  p.f = gi.f;
  p.thread = thread;
  p.detail.signature = MixHash(MixHash(TextHash(p.layer, strings), TextHash(family, strings)), gi.shape);
  double device = 0;
  for (size_t i = 0; i < n; ++i) device += static_cast<double>(std::max<int64_t>(0, g[i].end - g[i].start));
  p.detail.device_ns = static_cast<float>(device);
  p.detail.blocks = static_cast<float>(gi.blocks);
  p.detail.flags = kDetailReplay | kDetailHasDevice;
  p.detail.graph_launch = launch_start;  // the replay's launch of its nodes (replay.h)
  p.kernels = std::move(gi.kernels);
  Bump(p.apis, launch_family, 1);
  target.instances.push_back(std::move(p));
  ++stats->graph_instances;
  ++stats->instances;
}

// An API call: its time and count by kind, the call that device work below it was launched by.
void TreeReader::Impl::AddCall(std::string_view layer, uint32_t fam_id, int64_t start, int64_t end, SubtreeStats* agg) {
  const double call_time = static_cast<double>(std::max<int64_t>(0, end - start));
  if (layer == "driver_call") {
    agg->driver_time += call_time;
    agg->driver_count += 1;
  } else {
    agg->runtime_time += call_time;
    agg->runtime_count += 1;
  }
  Bump(agg->apis, fam_id, 1);
}

// A kernel, copy or memset: its time, work size, shape signature, and the step's workload facts.
void TreeReader::Impl::AddDevice(const detail::NodeFields& nf, std::string_view layer, uint32_t fam_id,
                                 int64_t start, int64_t end, int64_t call_start, SubtreeStats* agg) {
  agg->device.emplace_back(start, end);
  if (outside_time) detail::AddBusy(bucket, start, end);
  const int64_t bytes = std::max<int64_t>(0, nf.has_bytes ? detail::IntOf(nf.bytes, 0) : 0);
  uint64_t shape = MixHash(TextHash(fam_id, strings), static_cast<uint64_t>(bytes));  // the family's text hash
  shape = MixHash(shape, HashText(nf.copy_kind));
  const double blocks =
      layer == "kernel" ? GridBlocksOf(nf.has_grid ? &nf.grid : nullptr, nf.has_block ? &nf.block : nullptr, &shape) : 0;
  const double time = static_cast<double>(std::max<int64_t>(0, end - start));
  agg->own.device_time += time;
  agg->own.blocks += blocks;
  agg->own.dev_start = std::min(agg->own.dev_start, start);
  agg->own.dev_end = std::max(agg->own.dev_end, end);
  agg->own.sig = shape;
  agg->own.has_device = true;
  bucket->info.work_blocks += blocks;
  if (layer == "memcpy") {
    const std::string_view kind = nf.copy_kind;
    if (kind.find("HtoD") != std::string_view::npos || kind.find("HostToDevice") != std::string_view::npos ||
        (kind.empty() && nf.name.find("HtoD") != std::string_view::npos)) {
      bucket->info.h2d_bytes += static_cast<double>(bytes);
    }
  }
  if (layer == "kernel") {
    agg->kernel_count += 1;
    agg->kernel_time += time;
    Bump(agg->kernels, fam_id, 1);
  } else {
    agg->bytes += static_cast<double>(bytes);
  }
  if (call_start != INT64_MIN) {
    agg->latency_sum += static_cast<double>(std::max<int64_t>(0, start - call_start));
    agg->latency_n += 1;
  }
}

// Time an outermost call spent blocked on earlier device work: a synchronize call is all
// waiting; a call that returned only after its own device work finished (a blocking copy)
// waited from its start until that work began. Nested driver calls are not counted twice.
void TreeReader::Impl::AddCallWait(std::string_view family, int64_t start, int64_t end, bool outermost,
                                   SubtreeStats* agg) {
  if (outermost) {
    if (IsSyncCall(family) && !agg->own.has_device) {
      agg->own.wait += static_cast<double>(std::max<int64_t>(0, end - start));
    } else if (agg->own.has_device && end + 2000 >= agg->own.dev_end) {
      agg->own.wait += static_cast<double>(std::max<int64_t>(0, std::min(end, agg->own.dev_start) - start));
    }
  }
  agg->own.sig = MixHash(HashText(family), agg->own.sig);
}

// A node's own facts and its own work (an API call's time, a device op's), before its children.
TreeReader::Impl::WalkFrame TreeReader::Impl::Enter(simdjson::dom::object node, const detail::NodeFields& nf,
                                                    uint32_t parent_family, int64_t call_start) {
  WalkFrame f;
  f.node = node;
  f.call_start_in = call_start;
  f.layer = nf.layer;
  f.family = nf.family.empty() ? nf.name : nf.family;
  f.start = detail::TimeOf(nf.has_start ? &nf.start : nullptr, 0);
  f.end = detail::TimeOf(nf.has_end ? &nf.end : nullptr, f.start);
  f.thread = nf.has_thread_id ? detail::IntOf(nf.thread_id, -1) : -1;
  f.is_op = IsOperatorLayer(f.layer);
  f.fam_id = (f.is_op || IsCallLayer(f.layer) || IsDeviceLayer(f.layer)) ? strings.Intern(f.family) : kNoString;
  f.child_parent = f.is_op ? f.fam_id : parent_family;
  if (f.is_op && f.layer == "comm") {
    simdjson::dom::object anchor;
    if (node["anchor"].get_object().get(anchor) == simdjson::SUCCESS) {
      std::string_view af = GetStr(anchor, "family");
      if (!af.empty()) parent_family = strings.Intern(af);
    }
  }
  f.parent_family = parent_family;
  f.graph_launch = IsCallLayer(f.layer) && detail::IsGraphLaunchName(f.family);
  if (f.graph_launch) ++bucket->info.graph_launches;
  if (!nf.domain.empty() && bucket->domains.size() < detail::kMaxDomains) bucket->domains.emplace(nf.domain);
  if (IsCallLayer(f.layer)) {
    AddCall(f.layer, f.fam_id, f.start, f.end, &f.agg);
    f.agg.own.loads_code = IsCodeLoadCall(f.family);
  } else if (IsDeviceLayer(f.layer)) {
    AddDevice(nf, f.layer, f.fam_id, f.start, f.end, call_start, &f.agg);
  }
  f.has_children = nf.has_children && nf.children.get_array().get(f.children) == simdjson::SUCCESS;
  if (f.has_children) {
    f.next = f.children.begin();
    f.last = f.children.end();
  }
  return f;
}

// What a node adds once its children are walked: its graph replay's instances, the wait of an
// outermost call, a call directly under the step, its own operator instance.
SubtreeStats TreeReader::Impl::Leave(WalkFrame& f) {
  if (f.graph_launch && f.has_children)
    EmitGraphInstances(f.children, f.start, f.fam_id, f.thread);
  if (IsCallLayer(f.layer)) {
    AddCallWait(f.family, f.start, f.end, f.call_start_in == INT64_MIN, &f.agg);
    // A call with no operator range above it: judged as the step's own calls (outside_time.h).
    // A graph launch's nodes are judged as the operators that captured them, so only its host
    // side counts here.
    if (outside_time && f.call_start_in == INT64_MIN && f.parent_family == kNoString && !key.horizontal) {
      SubtreeStats host_only;
      if (f.graph_launch) {
        AddCall(f.layer, f.fam_id, f.start, f.end, &host_only);
        host_only.own.sig = HashText(f.family);
      }
      detail::AddDirectCall(bucket, f.start, f.end, f.thread, f.graph_launch ? host_only : f.agg);
    }
  }
  if (f.is_op) EmitInstance(f.node, f.thread, f.layer, f.fam_id, f.parent_family, f.start, f.end, f.child_ops, f.agg);
  return std::move(f.agg);
}

// Depth first with an explicit stack (a tree as deep as the parser admits never exhausts the
// thread's stack): Enter on the way down, Leave on the way up, each child's aggregate merged
// into its parent's.
SubtreeStats TreeReader::Impl::Walk(simdjson::dom::object root, uint32_t parent_family, int64_t call_start) {
  std::vector<WalkFrame> stack;
  stack.push_back(Enter(root, detail::ScanNode(root), parent_family, call_start));
  for (;;) {
    WalkFrame& f = stack.back();
    simdjson::dom::object co;
    bool descend = false;
    while (!descend && f.has_children && f.next != f.last) {
      simdjson::dom::element c = *f.next;
      ++f.next;
      descend = c.get_object().get(co) == simdjson::SUCCESS;
    }
    if (descend) {
      const detail::NodeFields nf = detail::ScanNode(co);
      f.child_op = IsOperatorLayer(nf.layer);
      if (f.is_op && f.child_op)
        f.child_ops.emplace_back(detail::TimeOf(nf.has_start ? &nf.start : nullptr, 0),
                                 detail::TimeOf(nf.has_end ? &nf.end : nullptr, 0));
      WalkFrame child = Enter(co, nf, f.child_parent, IsCallLayer(f.layer) ? f.start : INT64_MIN);
      stack.push_back(std::move(child));  // `f` is invalid from here
      continue;
    }
    SubtreeStats done = Leave(f);
    stack.pop_back();
    if (stack.empty()) return done;
    stack.back().agg.Merge(done, stack.back().child_op);
  }
}

// One operator instance from its node and its subtree's aggregate (unless a duplicate).
void TreeReader::Impl::EmitInstance(simdjson::dom::object node, int64_t thread, std::string_view layer,
                                    uint32_t fam_id, uint32_t parent_family, int64_t start, int64_t end,
                                    std::vector<std::pair<int64_t, int64_t>>& child_ops, const SubtreeStats& agg) {
  DedupKey key{fam_id, start, end, thread};
  if (!bucket->seen.insert(key).second) {
    ++stats->duplicate_instances;
    return;
  }
  if (end < start) ++stats->inverted_ranges;
  PendingInstance p;
  p.family = fam_id;
  p.layer = strings.Intern(layer);
  p.parent = parent_family;
  p.start = start;
  p.end = end;
  p.f.fill(0.0);
  double dur = static_cast<double>(std::max<int64_t>(0, end - start));
  p.f[kDurationNs] = dur;
  p.f[kSelfTimeNs] = std::max(0.0, dur - static_cast<double>(UnionLength(child_ops)));
  if (!agg.device.empty()) {
    double sum = 0;
    for (auto [s, e] : agg.device) sum += static_cast<double>(std::max<int64_t>(0, e - s));
    auto dev = agg.device;
    double uni = static_cast<double>(UnionLength(dev));
    p.f[kStreamOverlap] = sum > 0 ? std::clamp(1.0 - uni / sum, 0.0, 1.0) : 0.0;
  }
  ApplySubtree(agg, &p);
  if (layer == "comm") {
    simdjson::dom::object payload;
    int64_t bytes = GetInt(node, "bytes", 0), world = 0;
    if (node["payload"].get_object().get(payload) == simdjson::SUCCESS) {
      bytes = GetInt(payload, "bytes", bytes);
      world = GetInt(payload, "world_size", 0);
    }
    bytes = std::clamp<int64_t>(bytes, 0, kMaxCommBytes);
    p.f[kCommBytes] = static_cast<double>(bytes);
    p.f[kWorldSize] = static_cast<double>(std::max<int64_t>(0, world));
    bucket->info.comm_bytes = std::min(bucket->info.comm_bytes, INT64_MAX - bytes) + bytes;  // saturates
    bucket->info.world_size = std::max(bucket->info.world_size, world);
  }
  p.thread = thread;
  uint64_t sig = MixHash(TextHash(p.layer, strings), TextHash(fam_id, strings));
  sig = MixHash(sig, parent_family == kNoString ? 0 : TextHash(parent_family, strings));
  sig = MixHash(sig, agg.own.sig);
  sig = MixHash(sig, static_cast<uint64_t>(p.f[kCommBytes]));
  p.detail.signature = sig;
  p.detail.host_ns = static_cast<float>(std::max(0.0, p.f[kSelfTimeNs] - agg.own.wait));
  p.detail.wait_ns = static_cast<float>(agg.own.wait);
  bucket->instances.push_back(std::move(p));
  ++stats->instances;
}

}  // namespace truffld::diagnose
