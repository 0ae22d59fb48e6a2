// Tree building pass: nodes for implicit steps, ranges (step roots first), API calls and
// device work, in that order (trace.json's flow ids are node indices), then sibling lists.
#include "core/build_trees.h"

#include <algorithm>
#include <array>
#include <functional>
#include <unordered_map>

#include "core/classify_ranges.h"
#include "core/sorted_runs.h"

namespace truffld::merge {
namespace {

constexpr size_t kAhead = 16;  // ranges and their events lie scattered: load ahead

class TreeBuilder {
 public:
  TreeBuilder(const TraceFile& f, const BuildInputs& in, RangeClasses* classes, StringPool* strings)
      : f_(f), ev_(f.events), in_(in), ranges_(*in.ranges), nest_(*in.nesting), classes_(*classes),
        strings_(*strings), node_of_(nest_.parent.size(), kNoNode) {}

  FileTrees Run() {
    // At most one node per event, plus a second root per step: reserved once (a regrowth
    // would copy the nodes).
    out_.nodes.reserve(ev_.size() + 2 * nest_.steps.size() + 16);
    parent_.reserve(out_.nodes.capacity());
    EmitImplicitSteps();
    in_comm_.assign(node_of_.size(), 0);
    // Step roots first: a range adopted from another thread can sort before its step.
    for (int pass = 0; pass < 2; ++pass) EmitRanges(pass == 0);
    ReleaseRangeTables();
    EmitApiCalls();
    EmitDeviceWork();
    LinkSiblings();
    out_.counters.steps = out_.steps.size();
    return std::move(out_);
  }

 private:
  uint32_t NewNode(uint32_t event, Layer layer, StrId family, TimeNs start, TimeNs end, uint32_t parent) {
    Node n;
    n.start = in_.clock->Map(start);
    n.end = in_.clock->Map(end);
    n.event = event;
    n.family = family;
    n.file = in_.file_index;
    n.layer = layer;
    out_.nodes.push_back(n);
    parent_.push_back(parent);
    const uint32_t index = uint32_t(out_.nodes.size() - 1);
    if (event != kNoEvent && HasJoinedPayload(event)) {
      out_.nodes[index].has_payload = true;
      out_.payloads.push_back({index, joined_payload_});
    }
    return index;
  }

  bool HasJoinedPayload(uint32_t event) {
    const auto& p = *in_.payloads;
    if (p.empty()) return false;
    auto it = std::lower_bound(p.begin(), p.end(), event, [](const JoinedPayload& j, uint32_t e) { return j.event < e; });
    if (it == p.end() || it->event != event) return false;
    joined_payload_ = it->payload;
    return true;
  }

  // The range tables are done with, apart from the few capturing ranges outside every step
  // (CaptureAnchor): those are kept, the rest freed before most nodes are made.
  void ReleaseRangeTables() {
    for (const auto& [graph_node, r] : *in_.capture)
      if (node_of_[r] == kNoNode) outside_[r] = {ranges_[r], nest_.layer[r]};
    std::vector<uint8_t>().swap(in_comm_);
    std::vector<HostRange>().swap(ranges_);
    for (auto* v : {&nest_.order, &nest_.parent, &nest_.step}) std::vector<uint32_t>().swap(*v);
    std::vector<Layer>().swap(nest_.layer);
    std::vector<RangeClasses::Source>().swap(in_.layers->source);
    std::vector<Layer>().swap(in_.layers->layer);
  }

  void EmitImplicitSteps() {
    const auto& implicit = in_.layers->implicit;
    if (implicit.empty()) return;
    out_.implicit_name = strings_.Intern("<implicit step>");
    const StrId family = strings_.Intern("step");
    for (size_t k = 0; k < implicit.size(); ++k) {
      const ImplicitStep& s = implicit[k];
      const uint32_t v = NewNode(kNoEvent, Layer::kStep, family, s.start, s.end, kNoNode);
      node_of_[nest_.real_ranges + k] = v;
      const uint32_t h = NewNode(kNoEvent, Layer::kStep, family, s.start, s.end, kNoNode);
      out_.steps.push_back({v, h, in_.clock->Map(s.start), s.process, {"*"}, true, 0});
      ++out_.counters.implicit_steps;
    }
  }

  // Pass `steps`: the step roots; otherwise every other range in a step.
  void EmitRanges(bool steps) {
    const std::vector<uint32_t>& order = nest_.order;
    for (size_t k = 0; k < order.size(); ++k) {
      if (k + kAhead < order.size()) PrefetchLine(&ranges_[order[k + kAhead]]);
      if (k + kAhead / 2 < order.size()) PrefetchLine(&ev_[ranges_[order[k + kAhead / 2]].event]);
      const uint32_t r = order[k];
      if (nest_.step[r] == kNoRange || (nest_.step[r] == r) != steps) continue;
      if (steps) EmitStep(r);
      else EmitRange(r);
    }
  }

  void EmitStep(uint32_t r) {
    const HostRange& h = ranges_[r];
    const RangeClass& cls = classes_.ClassFor(ClassKeyOf(f_, ev_[h.event]), nest_.layer[r], in_.layers->source[r]);
    const uint32_t v = NewNode(h.event, Layer::kStep, cls.family, h.start, h.end, kNoNode);
    node_of_[r] = v;
    const uint32_t root = NewNode(h.event, Layer::kStep, cls.family, h.start, h.end, kNoNode);
    std::vector<std::string> ids = cls.requests;
    if (ids.empty()) ids = {"*"};
    out_.steps.push_back({v, root, in_.clock->Map(h.start), f_.threads[h.thread].process_id, std::move(ids), false,
                          f_.LineOf(h.event)});
  }

  void EmitRange(uint32_t r) {
    const HostRange& h = ranges_[r];
    const Layer layer = nest_.layer[r];
    const RangeClass& cls = classes_.ClassFor(ClassKeyOf(f_, ev_[h.event]), layer, in_.layers->source[r]);
    const uint32_t p = nest_.parent[r];
    const bool outermost_comm = layer == Layer::kComm && !in_comm_[p];
    // The step is looked up (a binary search) only by the few ranges that need it.
    const StepRoot* step = outermost_comm || !cls.requests.empty() ? &StepOfRoot(node_of_[nest_.step[r]]) : nullptr;
    // An outermost comm range opens the horizontal view; everything inside it follows it.
    const uint32_t parent_node = outermost_comm ? step->horizontal : node_of_[p];
    const uint32_t n = NewNode(h.event, layer, cls.family, h.start, h.end, parent_node);
    node_of_[r] = n;
    in_comm_[r] = outermost_comm ? 1 : in_comm_[p];
    if (!cls.requests.empty()) NarrowRequests(n, cls.requests, step->requests);
    if (outermost_comm) SetAnchor(n, node_of_[p]);
  }

  // Node n names request ids `ids`: it belongs to those of its step's requests only, when that
  // is a strict subset (a step naming none, "*", takes any subset).
  void NarrowRequests(uint32_t n, const std::vector<std::string>& ids, const std::vector<std::string>& step_ids) {
    const bool any = step_ids[0] == "*";
    std::vector<std::string> sub;
    for (const auto& id : ids)
      if (any || std::find(step_ids.begin(), step_ids.end(), id) != step_ids.end()) sub.push_back(id);
    if (sub.empty() || (!any && sub.size() >= step_ids.size())) return;
    out_.nodes[n].has_requests = true;
    out_.requests.push_back({n, RequestSet(sub)});
  }

  uint32_t RequestSet(const std::vector<std::string>& ids) {
    for (size_t i = 0; i < out_.request_sets.size(); ++i)
      if (out_.request_sets[i] == ids) return uint32_t(i);
    out_.request_sets.push_back(ids);
    return uint32_t(out_.request_sets.size() - 1);
  }

  void SetAnchor(uint32_t n, uint32_t a) {  // n is the newest node: the side table stays ascending
    out_.nodes[n].has_anchor = true;
    out_.anchors.push_back({n, a});
  }

  // The step whose vertical root is node v (steps are appended as their roots are made).
  const StepRoot& StepOfRoot(uint32_t v) const {
    return *std::lower_bound(out_.steps.begin(), out_.steps.end(), v,
                             [](const StepRoot& s, uint32_t x) { return s.vertical < x; });
  }

  StrId FamilyOf(Layer layer, const Event& e);
  StrId FamilyUncached(Layer layer, StrId name, StrId copy_kind);
  void EmitApiCalls();
  void EmitDeviceWork();
  uint32_t CaptureAnchor(const Event& device_op);
  void LinkSiblings();

  const TraceFile& f_;
  const std::vector<Event>& ev_;
  const BuildInputs& in_;
  std::vector<HostRange>& ranges_;
  Nesting& nest_;
  struct OutsideRange {
    HostRange range;
    Layer layer;
  };
  std::unordered_map<uint32_t, OutsideRange> outside_;  // capturing ranges in no step, by range
  RangeClasses& classes_;
  StringPool& strings_;
  FileTrees out_;
  std::vector<uint32_t> node_of_;   // per range: its node, kNoNode: none (outside every step)
  std::vector<uint32_t> parent_;    // per node: its parent node, kNoNode: a root
  std::vector<uint8_t> in_comm_;    // per range: inside a comm range (horizontal view)
  std::vector<uint32_t> call_node_;  // per API call ordinal: its node
  StrId joined_payload_ = kNoStr;   // HasJoinedPayload's answer
  std::unordered_map<uint64_t, StrId> family_cache_;
  static constexpr size_t kFrontSlots = 1024;
  struct FamilySlot { uint64_t key = 0; StrId id = kNoStr; };
  std::array<FamilySlot, kFrontSlots> family_front_{};
};

// Families of calls and device work by (layer, name, copy kind): a direct-mapped front on a map.
StrId TreeBuilder::FamilyOf(Layer layer, const Event& e) {
  uint64_t key = (uint64_t(layer) << 32) | e.name;
  const StrId copy_kind = layer == Layer::kMemcpy ? f_.Extra(e).copy_kind : kNoStr;
  if (copy_kind != kNoStr) key |= uint64_t(copy_kind) << 40;
  // The key holds a copy kind id of up to 24 bits; a larger one (over 16 M distinct strings in
  // a file) is not cached rather than confused with another.
  if (copy_kind >= (StrId{1} << 24)) return FamilyUncached(layer, e.name, copy_kind);
  FamilySlot& slot = family_front_[(key * 0x9E3779B97F4A7C15ull >> 40) % kFrontSlots];
  if (slot.id != kNoStr && slot.key == key) return slot.id;
  auto it = family_cache_.find(key);
  const StrId id = it != family_cache_.end() ? it->second : FamilyUncached(layer, e.name, copy_kind);
  if (it == family_cache_.end()) family_cache_.emplace(key, id);
  slot = {key, id};
  return id;
}

StrId TreeBuilder::FamilyUncached(Layer layer, StrId name_id, StrId copy_kind) {
  const std::string_view name = strings_.Get(name_id);
  std::string fam = NormaliseFamily(layer, name);
  if (layer == Layer::kMemcpy && name == "Memcpy" && copy_kind != kNoStr)
    fam += " " + std::string(strings_.Get(copy_kind));
  return strings_.Intern(fam);
}

// Calls in file order, under their owning range's node.
void TreeBuilder::EmitApiCalls() {
  const ApiCalls& api = *in_.api;
  call_node_.assign(api.calls.size(), kNoNode);
  for (uint32_t a = 0, k = 0; a < ev_.size(); ++a) {
    if (!api.calls.Has(a)) continue;
    const uint32_t ordinal = k++;  // calls in event order: k is a's ordinal
    const uint32_t owner = api.owner[ordinal];
    if (owner == kNoRange) continue;
    const Event& e = ev_[a];
    const Layer layer = e.kind == EventKind::kRuntime ? Layer::kRuntime : Layer::kDriver;
    call_node_[ordinal] = NewNode(a, layer, FamilyOf(layer, e), e.start, std::max(e.start, e.end), node_of_[owner]);
  }
}

// Device work in file order, under its launching call's node.
void TreeBuilder::EmitDeviceWork() {
  const auto& links = in_.links->links;
  for (size_t k = 0; k < links.size(); ++k) {
    if (k + kAhead < links.size()) PrefetchLine(&ev_[links[k + kAhead].second]);
    const auto [call, d] = links[k];
    const Event& e = ev_[d];
    const Layer layer = e.kind == EventKind::kKernel   ? Layer::kKernel
                        : e.kind == EventKind::kMemcpy ? Layer::kMemcpy
                        : e.kind == EventKind::kMemset ? Layer::kMemset
                                                       : Layer::kSync;
    const uint32_t parent = call_node_[in_.api->calls.Rank(call)];
    const uint32_t n = NewNode(d, layer, FamilyOf(layer, e), e.start, std::max(e.start, e.end), parent);
    if (f_.Extra(e).graph_node_id == kNone || in_.capture->empty()) continue;
    const uint32_t anchor = CaptureAnchor(e);
    if (anchor == kNoNode) continue;
    SetAnchor(n, anchor);
    ++out_.counters.graph_ops_attributed;
  }
}

// The node of the range that captured CUDA-graph op `e`, or kNoNode. A capturing range outside
// every step (engines capture graphs during warm-up) gets a node of its own, in no tree.
uint32_t TreeBuilder::CaptureAnchor(const Event& e) {
  auto it = in_.capture->find(f_.Extra(e).graph_node_id);
  if (it == in_.capture->end()) return kNoNode;
  const uint32_t r = it->second;
  if (node_of_[r] == kNoNode) {
    const auto& [h, layer] = outside_.at(r);
    const StrId family = strings_.Intern(NormaliseFamily(layer, strings_.Get(ev_[h.event].name)));
    node_of_[r] = NewNode(h.event, layer, family, h.start, h.end, kNoNode);
    ++out_.counters.capture_ranges_outside_steps;
  }
  return node_of_[r];
}

// Sibling lists in (start, node) order. Walking the nodes backwards and pushing each onto its
// parent's list leaves every list in creation order; a list whose order is not (start, node) is
// noted as it is built, and only those few are sorted (as runs: a range's child ranges, then
// its calls, then device work, each created in order).
void TreeBuilder::LinkSiblings() {
  auto& nodes = out_.nodes;
  std::vector<uint32_t> unsorted;
  for (uint32_t c = uint32_t(nodes.size()); c-- > 0;) {
    const uint32_t p = parent_[c];
    if (p == kNoNode) continue;
    const uint32_t next = nodes[p].first_child;
    if (next != kNoNode && nodes[next].start < nodes[c].start) unsorted.push_back(p);
    nodes[c].next_sibling = next;
    nodes[p].first_child = c;
  }
  std::vector<uint32_t>().swap(parent_);
  std::sort(unsorted.begin(), unsorted.end());
  unsorted.erase(std::unique(unsorted.begin(), unsorted.end()), unsorted.end());
  std::vector<std::pair<TimeNs, uint32_t>> kids;
  for (const uint32_t p : unsorted) {
    kids.clear();
    for (uint32_t x = nodes[p].first_child; x != kNoNode; x = nodes[x].next_sibling) kids.emplace_back(nodes[x].start, x);
    SortRuns(kids.begin(), kids.end(), std::less<>());
    for (size_t k = 0; k + 1 < kids.size(); ++k) nodes[kids[k].second].next_sibling = kids[k + 1].second;
    nodes[kids.back().second].next_sibling = kNoNode;
    nodes[p].first_child = kids.front().second;
  }
}

}  // namespace

FileTrees BuildTrees(const TraceFile& file, const BuildInputs& in, RangeClasses* classes, StringPool* strings) {
  return TreeBuilder(file, in, classes, strings).Run();
}

}  // namespace truffld::merge
