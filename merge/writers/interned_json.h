// InternedJson: writes the interned strings of a MergeResult's files as JSON string literals,
// deciding once per (file, string id) whether a string needs escaping.
//
// The writers print a name (and a family, a domain) for every node, millions of times, while a
// file holds far fewer distinct strings; scanning each for bytes to escape every time it is
// printed was a visible share of writing. A string that needs no escaping is copied between
// quotes; one that does goes through JsonOut::String, so the output is identical.
// Thread-safety: one per writer call (it caches per instance); reads the MergeResult only.
#pragma once

#include <cstdint>
#include <vector>

#include "truffld/merge/json_out.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {

class InternedJson {
 public:
  InternedJson(const MergeResult& r, JsonOut* out) : r_(r), out_(*out), state_(r.files.size()) {}

  // Writes string `id` of file `file` (kNoStr: "").
  void Write(uint32_t file, StrId id) {
    const std::string_view s = r_.files[file].strings.Get(id);
    std::vector<uint8_t>& st = state_[file];
    if (id >= st.size()) st.resize(r_.files[file].strings.size(), 0);  // the pools are final here
    uint8_t& known = st[id];
    if (known == 0) known = JsonNeedsNoEscape(s) ? kPlain : kEscape;
    if (known == kPlain) out_.PlainString(s);
    else out_.String(s);
  }

 private:
  static constexpr uint8_t kPlain = 1, kEscape = 2;  // 0: not looked at yet
  const MergeResult& r_;
  JsonOut& out_;
  std::vector<std::vector<uint8_t>> state_;  // per file, per string id
};

}  // namespace truffld::merge
