// Format sniffing, dispatch to the importers, the raw JSONL file loop, input expansion and
// parallel import of several files.
#include "truffld/merge/import.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

#include "truffld/byte_source.h"
#include "truffld/line_reader.h"
#include "truffld/parallel_for.h"
#include "truffld/merge/import_kineto.h"
#include "truffld/merge/import_nsys.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/raw_parser.h"

namespace truffld::merge {

const char* InputFormatName(InputFormat f) noexcept {
  switch (f) {
    case InputFormat::kRawJsonl: return "truffld";
    case InputFormat::kKineto: return "kineto";
    case InputFormat::kNsys: return "nsys";
  }
  return "?";
}

InputFormat SniffFormatFromPrefix(std::string_view p) {
  static constexpr char kSqlite[] = "SQLite format 3";  // + '\0', 16 bytes in all
  if (p.size() >= 16 && std::memcmp(p.data(), kSqlite, 16) == 0) return InputFormat::kNsys;
  size_t i = p.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos || p[i] != '{') return InputFormat::kRawJsonl;
  size_t nl = p.find('\n', i);
  std::string_view first = p.substr(i, nl == std::string_view::npos ? p.size() - i : nl - i);
  while (!first.empty() && (first.back() == '\r' || first.back() == ' ')) first.remove_suffix(1);
  // A raw dump's first line is one complete record carrying "type" and no "traceEvents".
  if (first.find("\"traceEvents\"") != std::string_view::npos) return InputFormat::kKineto;
  bool complete = first.size() > 1 && first.back() == '}';
  if (complete && first.find("\"type\"") != std::string_view::npos) return InputFormat::kRawJsonl;
  if (p.find("\"traceEvents\"") != std::string_view::npos ||
      p.find("\"schemaVersion\"") != std::string_view::npos || !complete)
    return InputFormat::kKineto;
  return InputFormat::kRawJsonl;
}

namespace {

constexpr size_t kSniffBytes = size_t{64} << 10;

// Up to the first 64 KiB of `path`, decompressed. Fails only when nothing could be read.
Result<std::string> ReadPrefix(const std::string& path) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  auto head = (*src)->Peek(kSniffBytes);
  if (!head.ok()) return head.status();
  return std::string(*head);
}

}  // namespace

Result<InputFormat> SniffFormat(const std::string& path) {
  auto prefix = ReadPrefix(path);
  if (!prefix.ok()) return prefix.status();
  return SniffFormatFromPrefix(*prefix);
}

Status ThreadCapacityStatus(const TraceFile& f) {
  if (!f.threads.overflowed()) return Status::Ok();
  return Unsupported(f.meta.path + ": more than " + std::to_string(f.threads.capacity() - 1) +
                     " distinct (process_id, thread_id) pairs (" + std::to_string(f.threads.overflowed()) +
                     " records name further ones); truffld keeps 24-bit thread indices per file");
}

namespace {

Result<TraceFile> CheckThreadCount(Result<TraceFile> r) {
  if (!r.ok()) return r;
  if (Status s = ThreadCapacityStatus(*r); !s.ok()) return s;
  return r;
}

}  // namespace

// The file is opened once and its start peeked at, so "-", pipes and FIFOs lose no bytes to
// the sniffing; the importer reads on from the same source.
Result<TraceFile> ImportFile(const std::string& path, const ImportOptions& options) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  auto head = (*src)->Peek(kSniffBytes);
  if (!head.ok()) return head.status();
  switch (SniffFormatFromPrefix(*head)) {
    case InputFormat::kNsys:
      // SQLite reads the database in place, by its path.
      if (!(*src)->rereadable())
        return Unsupported(path + ": an Nsight Systems export is read in place: give it as a regular file, "
                           "not a pipe or a stream");
      src->reset();
      return CheckThreadCount(ImportNsys(path, options));
    case InputFormat::kKineto: return CheckThreadCount(ImportKineto(std::move(*src), options));
    case InputFormat::kRawJsonl: break;
  }
  return CheckThreadCount(ImportRawJsonl(std::move(*src), options));
}

// Inside directories only trace-like names are taken (files named explicitly always are).
static bool LooksLikeTrace(const std::string& name) {
  for (const char* ext : {".jsonl", ".json", ".gz", ".zst", ".sqlite", ".sqlite3", ".db"}) {
    size_t n = std::strlen(ext);
    if (name.size() >= n && name.compare(name.size() - n, n, ext) == 0) return true;
  }
  return false;
}

// A file found inside a directory is taken when its content looks like a trace: an nsys SQLite
// database, a JSON object whose first record has a "type" (raw dump), or a Chrome/Kineto trace.
// Empty and unreadable files are taken too, so that importing them reports the problem.
static bool TraceContent(const std::string& path, std::string* why) {
  auto read = ReadPrefix(path);
  if (!read.ok()) return true;
  const std::string& prefix = *read;
  size_t i = prefix.find_first_not_of(" \t\r\n");
  if (i == std::string::npos) return true;  // empty: reported by the importer
  if (SniffFormatFromPrefix(prefix) == InputFormat::kNsys) return true;
  if (prefix[i] == '[') return true;        // Chrome trace, array form
  if (prefix.find("\"traceEvents\"") != std::string::npos || prefix.find("\"schemaVersion\"") != std::string::npos)
    return true;
  const size_t nl = prefix.find('\n', i);
  const std::string_view first = std::string_view(prefix).substr(i, nl == std::string::npos ? nl : nl - i);
  if (first.find("\"type\"") != std::string_view::npos) return true;
  *why = "not a trace (first record has no \"type\", no traceEvents, not SQLite)";
  return false;
}

Result<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& inputs,
                                              std::vector<std::pair<std::string, std::string>>* skipped) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (in == "-") { out.push_back(in); continue; }
    auto st = fs::status(in, ec);
    // Missing or odd paths are kept: importing them fails with a message naming them, and the
    // caller reports them while merging the rest.
    if (ec || !fs::exists(st) || !fs::is_directory(st)) { out.push_back(in); continue; }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(in, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file(ec) || !LooksLikeTrace(it->path().filename().string())) continue;
      std::string why;
      if (TraceContent(it->path().string(), &why)) found.push_back(it->path().string());
      else if (skipped) skipped->emplace_back(it->path().string(), why);
    }
    if (ec) return IoError(in + ": cannot list directory: " + ec.message());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::vector<Result<TraceFile>> ImportAll(const std::vector<std::string>& paths, bool strict,
                                          int threads) {
  std::vector<std::optional<Result<TraceFile>>> slots(paths.size());
  ImportOptions opt;
  opt.strict = strict;
  ParallelFor(paths.size(), threads, [&](size_t i) { slots[i].emplace(ImportFile(paths[i], opt)); });
  std::vector<Result<TraceFile>> out;
  out.reserve(paths.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

}  // namespace truffld::merge
