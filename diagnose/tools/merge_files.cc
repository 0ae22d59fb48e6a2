// truffld-merge's side files for truffld-diagnose (merge_files.h).
#include "merge_files.h"

#include <filesystem>

#include "truffld/byte_source.h"

namespace truffld::diagnose {

std::string MergeFilePath(const std::string& input, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path in(input);
  return ((fs::is_directory(in, ec) ? in : in.parent_path()) / name).string();
}

std::optional<RunStats> ReadMergeRunStats(const std::string& input, std::vector<std::string>* notes) {
  const std::string path = MergeFilePath(input, "run_stats.json");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  auto bytes = ReadWholeFile(path);
  if (!bytes.ok()) {
    notes->push_back(path + ": cannot read (" + bytes.status().message() + "); no run statistics in the report");
    return std::nullopt;
  }
  auto stats = ParseRunStatsJson(bytes->view(), path);
  if (!stats.ok()) {
    notes->push_back(stats.status().message() + "; no run statistics in the report");
    return std::nullopt;
  }
  return std::move(stats).value();
}

}  // namespace truffld::diagnose
