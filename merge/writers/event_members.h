// Which of an event's recorded fields a tree node carries, as plain values: the one rule that
// trees.jsonl's writer (write_trees.cc) and the run database's walker (write_sqlite.cc) both
// follow, so a node's members are the same in both outputs. API calls carry their callback id
// and a non-zero return code; device work (and API calls that name a stream) their stream and
// device; any event its bytes and copy kind; device work its graph ids and a kernel its launch
// geometry. Pure; thread-safety: reentrant.
#pragma once

#include <cstdint>

#include "truffld/merge/classify.h"
#include "truffld/merge/event.h"

namespace truffld::merge {

// kNone (or kNoStr, or !geometry) marks a member the node does not carry.
struct EventMembers {
  int64_t cbid = kNone, return_code = kNone, stream = kNone, device = kNone, bytes = kNone;
  int64_t graph_id = kNone, graph_node_id = kNone;
  StrId copy_kind = kNoStr;
  bool geometry = false;  // grid and block
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
};

// True when a node of `layer` carries its event's correlation id (when it has one).
inline bool CarriesCorrelation(Layer layer) {
  return IsApiLayer(layer) || IsDeviceLayer(layer) || layer == Layer::kSync;
}

// The members extra record `x` gives a node of `layer`; `kernel`: the event is a kernel.
inline EventMembers MembersOf(const EventExtra& x, Layer layer, bool kernel) {
  EventMembers m;
  const bool api = IsApiLayer(layer), device = IsDeviceLayer(layer);
  if (api) {
    if (x.cbid >= 0) m.cbid = x.cbid;
    if (x.return_code) m.return_code = x.return_code;
  }
  if (device || (api && x.stream >= 0)) {
    if (x.stream >= 0) m.stream = x.stream;
    if (x.device >= 0) m.device = x.device;
  }
  if (x.bytes >= 0) m.bytes = x.bytes;
  m.copy_kind = x.copy_kind;
  if (!device) return m;
  m.graph_id = x.graph_id;
  m.graph_node_id = x.graph_node_id;
  if (kernel && (x.grid[0] || x.block[0])) {
    m.geometry = true;
    for (int i = 0; i < 3; ++i) {
      m.grid[i] = x.grid[i];
      m.block[i] = x.block[i];
    }
  }
  return m;
}

}  // namespace truffld::merge
