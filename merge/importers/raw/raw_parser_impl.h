// RawLineParser's private state, shared by raw_parser.cc and raw_event_builder.h (included by
// those two only). Thread-safety: one parser per file, on one thread.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/nvtx_pairing.h"
#include "importers/raw/raw_record_reader.h"
#include "truffld/merge/raw_parser.h"

namespace truffld::merge {

// The last string interned for a field whose value mostly repeats from record to record (the
// NVTX domain, an API call's name): one compare instead of hashing and probing the pool.
struct LastString {
  std::string text;
  StrId id = kNoStr;
  StrId Intern(std::string_view v, StringPool& sp) {
    if (id != kNoStr && v.size() == text.size() && std::memcmp(v.data(), text.data(), v.size()) == 0) return id;
    id = sp.Intern(v);
    text.assign(v);
    return id;
  }
};

struct RawLineParser::Impl {
  std::unique_ptr<raw::RawRecordReader> reader;
  // The shared extras record of the last domain seen on a record with no other rare field
  // (most NVTX records): found here without building and hashing a whole EventExtra.
  StrId domain_only = kNoStr;
  uint32_t domain_only_extra = kNoExtra;
  LastString last_domain, last_api_name;
  // Source line of each entry of meta.device_window_edges (for Finish's messages).
  std::vector<uint64_t> window_lines;
  // Folding state per thread index (set_fold_push_pop).
  struct FoldThread {
    TimeNs last = INT64_MIN;  // time of the thread's latest push or pop
    PushPopPairing pairing;   // of event indices: the thread's open pushes
    bool ordered = true;      // every push/pop so far came in pairing order
    bool folded = false;      // some pop was folded
  };
  std::vector<FoldThread> fold;
};

}  // namespace truffld::merge
