// libFuzzer target: the raw JSONL line parser, then range reconstruction and Merge() over
// whatever events it produced, then the trees writer. Any crash, sanitizer report or leak is a
// bug; the input is arbitrary bytes split into lines.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "truffld/merge/host_ranges.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/raw_parser.h"
#include "truffld/merge/writers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace truffld::merge;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  TraceFile file;
  file.meta.path = "fuzz.jsonl";
  {
    RawLineParser parser(&file, "fuzz.jsonl");
    uint64_t line_no = 0;
    while (!in.empty()) {
      size_t nl = in.find('\n');
      std::string_view line = in.substr(0, nl);
      parser.ParseLine(line, ++line_no);
      if (nl == std::string_view::npos) break;
      in.remove_prefix(nl + 1);
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
