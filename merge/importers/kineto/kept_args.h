// Private to the Kineto importer: the profiler's args objects, kept for trace.json.
//
// KeptArgs stores each event's args object made compact (no whitespace outside strings, one
// line) and makes sure every kept object is valid JSON. The document walk reads only the
// members it uses, so the rest of an object is unchecked when it is stored (simdjson checks
// UTF-8 and unescaped control bytes for the whole document, not tokens such as `tru`), and
// trace.json copies it verbatim. Parsing each small object on its own cost more than the rest
// of the import (per-parse overhead on 216 k objects of about 50 bytes), so objects are checked
// in batches: one DOM parse of "[obj,obj,...]" per ~256 KiB, and only a batch that fails is parsed
// object by object to find the invalid ones, which are dropped (id kNoStr) and returned for
// reporting. Text is kept as the profiler wrote it (numbers and escapes unchanged).
// Thread-safety: one per import; not shared.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/string_pool.h"

namespace simdjson::dom {
class parser;  // kept out of this header: simdjson's layout depends on its build's definitions
}

namespace truffld::merge::kineto {

class KeptArgs {
 public:
  // An args object that was not valid JSON: its event's 1-based number in traceEvents and
  // where its text starts in the document.
  struct Rejected {
    uint64_t event_number;
    const char* where;  // raw.data() of its Add
  };

  // Ids go to `ids` (one per Add, in order), text into `pool`; both outlive this object.
  KeptArgs(StringPool* pool, std::vector<StrId>* ids);
  ~KeptArgs();

  // Appends the id of one event's args: `raw` is the object's text as found in the document
  // ("" for none: kNoStr), which must outlive the next Check (rejections point into it).
  // Returns true when enough is pending that Check should run.
  bool Add(std::string_view raw, uint64_t event_number);

  // Checks everything added since the last call; the invalid objects' ids become kNoStr and
  // they are returned in document order.
  std::vector<Rejected> Check();

 private:
  struct Pending {
    size_t id_index;  // into ids_
    uint64_t event_number;
    const char* where;  // raw.data()
  };
  bool Valid(std::string_view compact);  // one object on its own (the slow path)

  StringPool& pool_;
  std::vector<StrId>& ids_;
  std::vector<Pending> pending_;
  std::string batch_ = "[";  // the pending objects as one JSON array, still open
  std::string scratch_;      // minify output / one padded object
  std::unique_ptr<simdjson::dom::parser> parser_;
};

}  // namespace truffld::merge::kineto
