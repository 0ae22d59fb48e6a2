// NodeSet: the nodes one step has emitted (RowBuilder's deduplication), as a flat open-addressing
// table of (key, id) slots that keeps its memory when it is cleared for the next step.
//
// Why: a 10 M-event export looks up every node of every tree (about 11 M lookups) and drops
// each step's table when the step leaves the open window; a node-based std::unordered_map paid
// one allocation per node and one free per node at eviction (malloc and free were about 8 % of
// the export's CPU samples). Here a step's table is one array, probed linearly, at most half
// full; Clear() keeps it for the next step.
// Thread-safety: one NodeSet per thread.
#pragma once

#include <cstdint>
#include <vector>

namespace truffld::rundb {

// What identifies a node within its step: layer kind, times, thread (host) or stream (device),
// correlation id and a hash of the name.
struct NodeKey {
  uint8_t kind;
  int64_t start, end, lane, corr;
  uint64_t name;
  bool operator==(const NodeKey& o) const {
    return kind == o.kind && start == o.start && end == o.end && lane == o.lane && corr == o.corr && name == o.name;
  }
  uint64_t Hash() const {
    uint64_t h = kind * 0x9E3779B97F4A7C15ull;
    for (uint64_t v : {static_cast<uint64_t>(start), static_cast<uint64_t>(end), static_cast<uint64_t>(lane),
                       static_cast<uint64_t>(corr), name}) {
      h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    }
    return h * 0xFF51AFD7ED558CCDull;  // spread the low bits the mask keeps
  }
};

class NodeSet {
 public:
  // The id stored under `key`, or `id` after storing it there; *fresh says which. id > 0.
  int64_t FindOrInsert(const NodeKey& key, int64_t id, bool* fresh) {
    if ((used_ + 1) * 2 > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = (key.Hash() >> 20) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.id == 0) {
        s = Slot{key, id};
        ++used_;
        *fresh = true;
        return id;
      }
      if (s.key == key) {
        *fresh = false;
        return s.id;
      }
    }
  }
  // Empties the set, keeping its memory.
  void Clear() {
    if (used_ == 0) return;
    for (Slot& s : slots_) s.id = 0;
    used_ = 0;
  }

 private:
  struct Slot {
    NodeKey key;
    int64_t id = 0;  // 0: empty
  };
  void Grow() {
    std::vector<Slot> old(slots_.empty() ? 64 : slots_.size() * 2);
    old.swap(slots_);
    used_ = 0;
    bool fresh = false;
    for (const Slot& s : old) {
      if (s.id != 0) FindOrInsert(s.key, s.id, &fresh);
    }
  }
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

}  // namespace truffld::rundb
