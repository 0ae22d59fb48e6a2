// libFuzzer target: the raw JSONL line parser, then range reconstruction and Merge() over
// whatever events it produced, then the trees writer. Any crash, sanitizer report or leak is a
// bug; the input is arbitrary bytes split into lines. The parser reads each line twice, with its
// fast scanner on and off: the two TraceFiles must be identical (abort otherwise). A third read
// folds pops into their pushes (RawLineParser::set_fold_push_pop): unless it reports a fold
// conflict, its merge must write the same trees, trace and summary as the plain read's (abort
// otherwise).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "../merge/unit/trace_file_text.h"

#include "truffld/merge/pipeline.h"
#include "truffld/merge/raw_parser.h"
#include "truffld/merge/writers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace truffld::merge;
  bool conflict = false;
  auto parse = [&](bool fast, bool fold = false) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    TraceFile file;
    file.meta.path = "fuzz.jsonl";
    RawLineParser parser(&file, "fuzz.jsonl");
    parser.set_fast_path(fast);
    parser.set_fold_push_pop(fold);
    uint64_t line_no = 0;
    while (!in.empty()) {
      size_t nl = in.find('\n');
      std::string_view line = in.substr(0, nl);
      parser.ParseLine(line, ++line_no);
      if (nl == std::string_view::npos) break;
      in.remove_prefix(nl + 1);
    }
    if (fold) conflict = parser.fold_conflict();
    return file;
  };
  TraceFile file = parse(true);
  {
    const std::string fast = testing::TraceFileText(file);
    const std::string slow = testing::TraceFileText(parse(false));
    if (fast != slow) {
      std::fprintf(stderr, "fast scanner and DOM parser disagree\n--- fast\n%s--- dom\n%s", fast.c_str(), slow.c_str());
      std::abort();
    }
  }
  if (file.events.size() > 5000) return 0;  // keep each run fast; parsing was the target
  auto merge_text = [](TraceFile f) {
    std::vector<TraceFile> files;
    files.push_back(std::move(f));
    MergeOptions opt;
    opt.threads = 1;
    auto merged = Merge(std::move(files), opt);
    if (!merged.ok()) return std::string("error: ") + merged.status().ToString();
    JsonOut out;
    WriteTreesJsonl(*merged, &out);
    WriteTreesJsonl(*merged, &out, TreeLayout::kGrouped);
    WriteChromeTrace(*merged, &out);
    WriteSummaryJson(*merged, RunInfo{}, &out);  // counters (events read, pops) and messages
    return out.text();
  };
  TraceFile folded = parse(true, true);
  const std::string plain_text = merge_text(std::move(file));
  if (!conflict) {
    const std::string folded_text = merge_text(std::move(folded));
    if (folded_text != plain_text) {
      std::fprintf(stderr, "folded and plain reads merge differently\n--- plain\n%s\n--- folded\n%s\n",
                   plain_text.c_str(), folded_text.c_str());
      std::abort();
    }
  }
  return 0;
}
