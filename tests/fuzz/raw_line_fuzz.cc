// libFuzzer target: the raw JSONL line parser, then range reconstruction and Merge() over
// whatever events it produced, then the trees writer. Any crash, sanitizer report or leak is a
// bug; the input is arbitrary bytes split into lines. The parser reads each line twice, with its
// fast scanner on and off: the two TraceFiles must be identical (abort otherwise).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "../merge/unit/trace_file_text.h"

#include "truffld/merge/host_ranges.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/raw_parser.h"
#include "truffld/merge/writers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace truffld::merge;
  auto parse = [&](bool fast) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    TraceFile file;
    file.meta.path = "fuzz.jsonl";
    RawLineParser parser(&file, "fuzz.jsonl");
    parser.set_fast_path(fast);
    uint64_t line_no = 0;
    while (!in.empty()) {
      size_t nl = in.find('\n');
      std::string_view line = in.substr(0, nl);
      parser.ParseLine(line, ++line_no);
      if (nl == std::string_view::npos) break;
      in.remove_prefix(nl + 1);
    }
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
  std::vector<TraceFile> files;
  files.push_back(std::move(file));
  MergeOptions opt;
  opt.threads = 1;
  auto merged = Merge(std::move(files), opt);
  if (merged.ok()) {
    JsonOut out;
    WriteTreesJsonl(*merged, &out);
    WriteTreesJsonl(*merged, &out, TreeLayout::kGrouped);
    WriteChromeTrace(*merged, &out);
  }
  return 0;
}
