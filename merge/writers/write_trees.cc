// trees.jsonl writer: per-request views of each (step, view) tree.
//
// Layouts: kPerRequest writes one line per (rank, step, request, view). kGrouped (the CLI
// default) writes a tree once for all the requests that see exactly the same tree, with those
// requests in "request_group": in vLLM/SGLang only the step names requests, so a step batching
// 64 requests costs one line instead of 64 identical ones. Requests that see different trees
// (a descendant range names a stricter subset) still get lines of their own, so expanding
// request_group restores the per-request layout exactly.
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "writers/event_members.h"
#include "writers/interned_json.h"
#include "writers/step_phase.h"
#include "writers/tree_lines.h"
#include "truffld/merge/classify.h"
#include "truffld/merge/writers.h"
#include "truffld/step_tags.h"

namespace truffld::merge {
namespace {

class TreeWriter {
 public:
  TreeWriter(const MergeResult& r, JsonOut* out)
      : r_(r), out_(*out), strings_(r, out), extra_text_(r.files.size()) {
    for (uint32_t l = 0; l < std::size(layer_keys_); ++l)
      layer_keys_[l] = std::string(",\"layer\":\"") + LayerName(Layer(l)) + "\",\"family\":";
  }

  // `group`: the requests this line stands for (nullptr or one element: none written).
  void Tree(const merge::Tree& t, const std::string& request, const std::vector<std::string>* group) {
    const Node& root = r_.nodes[t.root];
    const FileMeta& m = r_.files[t.file].meta;
    out_.Raw("{\"schema\":\"truffld.trees/1\",\"rank\":");
    if (m.rank) out_.Int(*m.rank); else out_.Raw("null");
    out_.Raw(",\"host\":");
    out_.String(m.host);
    out_.Raw(",\"process_id\":");
    out_.Int(t.process_id);
    out_.Raw(",\"source\":");
    out_.String(m.path);
    out_.Raw(",\"step_index\":");
    out_.Int(t.step_index);
    out_.Raw(",\"step\":");
    std::string_view step_name = r_.Name(root);
    out_.String(step_name);
    out_.Raw(",\"requests\":");
    StringArray(r_.request_sets[t.requests]);
    out_.Raw(",\"request\":");
    out_.String(request);
    if (group && group->size() > 1) {
      out_.Raw(",\"request_group\":");
      StringArray(*group);
    }
    out_.Raw(",\"view\":\"");
    out_.Raw(ViewName(t.view));
    out_.Raw("\",\"phase\":\"");
    out_.Raw(StepPhase(r_, t));
    out_.Char('"');
    const StepWorkload work = StepWorkloadOf(r_, t);
    for (const auto& [v, key] : {std::pair{work.tokens, ",\"tokens\":"}, std::pair{work.ctx, ",\"ctx\":"},
                                 std::pair{work.batch, ",\"batch\":"}}) {
      if (v >= 0) {
        out_.Raw(key);
        out_.Int(v);
      }
    }
    out_.Raw(",\"implicit_step\":");
    out_.Raw(t.implicit_step ? "true" : "false");
    if (!t.device_detail) out_.Raw(",\"device_detail\":false");
    out_.Raw(",\"start\":");
    out_.Int(root.start);
    out_.Raw(",\"end\":");
    out_.Int(root.end);
    out_.Raw(",\"root\":");
    NodeJson(t.root, request);
    out_.Raw("}\n");
  }

 private:
  void StringArray(const std::vector<std::string>& items) {
    out_.Char('[');
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_.Char(',');
      out_.String(items[i]);
    }
    out_.Char(']');
  }

  // The tree under node `root` as seen by request q, without recursion: a step can be tens of
  // thousands of ranges deep (an application leaking one push per step), and each open node is
  // a frame on an explicit stack instead of the call stack.
  void NodeJson(uint32_t root, const std::string& q) {
    stack_.clear();
    OpenNode(root);
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      while (f.next != kNoNode && !r_.InRequestSet(r_.Requests(r_.nodes[f.next]), q)) f.next = r_.nodes[f.next].next_sibling;
      if (f.next == kNoNode) {  // every child written: close the node
        if (!f.first) out_.Char(']');
        out_.Char('}');
        stack_.pop_back();
        continue;
      }
      const uint32_t c = f.next;
      f.next = r_.nodes[c].next_sibling;
      out_.Raw(f.first ? ",\"children\":[" : ",");
      f.first = false;
      OpenNode(c);  // (may move the stack: f is not used after)
    }
  }

  // Writes node i's fields, up to its children, and pushes its frame.
  void OpenNode(uint32_t i) {
    r_.PrefetchEvent(i + 16);  // nodes lie in tree order: node i + 16 is written soon
    const Node& n = r_.nodes[i];
    const Event* e = r_.EventOf(n);
    out_.Raw("{\"name\":");
    strings_.Write(n.file, e ? e->name : r_.NameId(n));
    out_.Raw(layer_keys_[uint32_t(n.layer)]);
    strings_.Write(n.file, n.family);
    out_.Raw(",\"start\":");
    out_.Int(n.start);
    out_.Raw(",\"end\":");
    out_.Int(n.end);
    if (const int64_t thread = r_.ThreadOf(n); thread != kNone) { out_.Raw(",\"thread_id\":"); out_.Int(thread); }
    if (e) EventFields(n, *e);
    if (n.has_requests) {
      out_.Raw(",\"requests\":");
      StringArray(r_.request_sets[r_.Requests(n)]);
    }
    if (n.has_anchor) AnchorJson(n);
    stack_.push_back({n.first_child, true});
  }

  void AnchorJson(const Node& n) {
    const Node& a = r_.nodes[r_.Anchor(n)];
    out_.Raw(IsDeviceLayer(n.layer) ? ",\"captured_in\":{\"name\":" : ",\"anchor\":{\"name\":");
    strings_.Write(a.file, r_.NameId(a));
    out_.Raw(",\"layer\":\"");
    out_.Raw(LayerName(a.layer));
    out_.Raw("\",\"family\":");
    strings_.Write(a.file, a.family);
    out_.Char('}');
  }

  void EventFields(const Node& n, const Event& e) {
    const StringPool& sp = r_.files[n.file].strings;
    const EventExtra& x = r_.files[n.file].Extra(e);
    if (x.domain != kNoStr && !sp.Get(x.domain).empty()) { out_.Raw(",\"domain\":"); strings_.Write(n.file, x.domain); }
    if (CarriesCorrelation(n.layer)) {
      if (const int64_t corr = r_.files[n.file].Correlation(e); corr != kNone) {
        out_.Raw(",\"correlation_id\":");
        out_.Int(corr);
      }
    }
    if (e.extra != kNoExtra) out_.Raw(ExtraText(n, e));  // all defaults write nothing
    if (const StrId payload = n.has_payload ? r_.Payload(n) : x.payload; payload != kNoStr) {
      std::string_view p = sp.Get(payload);
      if (p.size() >= 2 && p.front() == '{' && p.back() == '}') { out_.Raw(",\"payload\":"); out_.Raw(p); }
    } else if (n.layer == Layer::kComm) {
      std::string p = CommPayloadFromName(sp.Get(e.name));
      if (!p.empty()) { out_.Raw(",\"payload\":"); out_.Raw(p); }
    }
  }

  // The fields an event's extra record gives it (cbid ... block), as text. Events share extra
  // records (a dump repeats a few kernel geometries millions of times), so the text is rendered
  // once per (file, extra record) and copied after: printing the eight integers of a kernel's
  // stream, device, grid and block was a seventh of this writer. The text also depends on the
  // node's layer and on whether it is a kernel: a record met with another layer is rendered
  // again (and kept for the latest).
  std::string_view ExtraText(const Node& n, const Event& e) {
    std::vector<Cached>& cache = extra_text_[n.file];
    if (cache.empty()) cache.resize(r_.files[n.file].extras.size());
    Cached& c = cache[e.extra];
    const bool kernel = e.kind == EventKind::kKernel;
    if (c.len == Cached::kNotYet || c.layer != n.layer || c.kernel != kernel) {
      scratch_.Clear();
      RenderExtra(n, r_.files[n.file].extras[e.extra], kernel, &scratch_);
      const std::string_view t = scratch_.view();
      if (t.size() >= Cached::kNotYet || text_.size() + t.size() > UINT32_MAX) return t;  // not kept
      c = Cached{uint32_t(text_.size()), uint16_t(t.size()), n.layer, kernel};
      text_ += t;
    }
    return std::string_view(text_).substr(c.offset, c.len);
  }

  void RenderExtra(const Node& n, const EventExtra& x, bool kernel, JsonOut* out) {
    auto opt = [&](const char* key, int64_t v) {
      if (v == kNone) return;
      out->Raw(key);
      out->Int(v);
    };
    const EventMembers m = MembersOf(x, n.layer, kernel);
    opt(",\"cbid\":", m.cbid);
    opt(",\"return_code\":", m.return_code);
    opt(",\"stream\":", m.stream);
    opt(",\"device\":", m.device);
    opt(",\"bytes\":", m.bytes);
    if (m.copy_kind != kNoStr) { out->Raw(",\"copy_kind\":"); out->String(r_.files[n.file].strings.Get(m.copy_kind)); }
    opt(",\"graph_id\":", m.graph_id);
    opt(",\"graph_node_id\":", m.graph_node_id);
    if (!m.geometry) return;
    out->Raw(",\"grid\":[");
    out->Int(m.grid[0]); out->Char(','); out->Int(m.grid[1]); out->Char(','); out->Int(m.grid[2]);
    out->Raw("],\"block\":[");
    out->Int(m.block[0]); out->Char(','); out->Int(m.block[1]); out->Char(','); out->Int(m.block[2]);
    out->Char(']');
  }

  struct Cached {
    static constexpr uint16_t kNotYet = UINT16_MAX;
    uint32_t offset = 0;  // in text_
    uint16_t len = kNotYet;
    Layer layer = Layer::kOther;
    bool kernel = false;
  };

  const MergeResult& r_;
  JsonOut& out_;
  InternedJson strings_;
  std::vector<std::vector<Cached>> extra_text_;  // per file, per extra record
  std::string text_;
  JsonOut scratch_;  // memory mode
  struct Frame {
    uint32_t next;  // the next child to look at
    bool first;     // no child written yet
  };
  std::vector<Frame> stack_;  // NodeJson's open nodes, innermost last
  std::string layer_keys_[kLayerCount];  // `,"layer":"L","family":` per layer
};

// Nodes of the tree under `root` that name a stricter request subset (their subtrees are
// skipped: what lies below an excluded node is excluded with it, and below an included one the
// deeper subsets are collected on their own when the walk reaches them).
void SubsetNodes(const MergeResult& r, uint32_t root, std::vector<uint32_t>* out) {
  std::vector<uint32_t> stack{root};
  while (!stack.empty()) {
    uint32_t i = stack.back();
    stack.pop_back();
    for (uint32_t c = r.nodes[i].first_child; c != kNoNode; c = r.nodes[c].next_sibling) {
      if (r.nodes[c].has_requests) out->push_back(c);
      stack.push_back(c);
    }
  }
}

}  // namespace

std::vector<std::vector<std::string>> RequestGroups(const MergeResult& r, const Tree& t) {
  const auto& ids = r.request_sets[t.requests];
  std::vector<uint32_t> subsets;
  if (ids.size() > 1) SubsetNodes(r, t.root, &subsets);
  if (subsets.empty()) return {ids};
  std::map<std::string, size_t> by_signature;
  std::vector<std::vector<std::string>> groups;
  for (const std::string& q : ids) {
    std::string sig(subsets.size(), '0');
    for (size_t k = 0; k < subsets.size(); ++k)
      if (r.InRequestSet(r.Requests(r.nodes[subsets[k]]), q)) sig[k] = '1';
    auto [it, fresh] = by_signature.emplace(std::move(sig), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(q);
  }
  return groups;
}

const char* TreeLayoutName(TreeLayout l) noexcept {
  return l == TreeLayout::kGrouped ? "grouped" : "per-request";
}

uint64_t WriteTreesJsonl(const MergeResult& result, JsonOut* out, TreeLayout layout) {
  TreeWriter w(result, out);
  uint64_t lines = 0;
  for (const Tree& t : result.trees) {
    if (layout == TreeLayout::kPerRequest) {
      for (const std::string& q : result.request_sets[t.requests]) {
        w.Tree(t, q, nullptr);
        ++lines;
      }
      continue;
    }
    for (const auto& group : RequestGroups(result, t)) {
      w.Tree(t, group.front(), &group);
      ++lines;
    }
  }
  return lines;
}

}  // namespace truffld::merge
