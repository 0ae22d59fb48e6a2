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

// Up to the first 64 KiB of `path`, decompressed. Fails only when nothing could be read.
static Result<std::string> ReadPrefix(const std::string& path) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  std::string prefix(64 << 10, '\0');
  size_t have = 0;
  while (have < prefix.size()) {
    auto n = (*src)->Read(prefix.data() + have, prefix.size() - have);
    if (!n.ok()) {
      if (have == 0) return n.status();
      break;
    }
    if (*n == 0) break;
    have += *n;
  }
  prefix.resize(have);
  return prefix;
}

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

Result<TraceFile> ImportFile(const std::string& path, const ImportOptions& options) {
  auto fmt = SniffFormat(path);
  if (!fmt.ok()) return fmt.status();
  switch (*fmt) {
    case InputFormat::kNsys: return CheckThreadCount(ImportNsys(path, options));
    case InputFormat::kKineto: return CheckThreadCount(ImportKineto(path, options));
    case InputFormat::kRawJsonl: break;
  }
  return CheckThreadCount(ImportRawJsonl(path, options));
}

namespace {

// One read of a raw dump; `fold`: RawLineParser::set_fold_push_pop. Sets *conflict (and returns
// a TraceFile to be discarded) when folding met a thread out of time order.
Result<TraceFile> ReadRawJsonl(const std::string& path, const ImportOptions& options, bool fold, bool* conflict) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  LineReader& r = **reader;
  TraceFile file;
  file.meta.path = path;
  {
    // Reserve from the file size so the event vector never doubles (a doubling briefly holds
    // old and new copies: 3x the events at peak). Unused capacity is never touched, so it costs
    // address space, not resident memory. Compressed input: assume ~8x.
    std::error_code ec;
    uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > 0) {
      uintmax_t raw = r.compression() == Compression::kNone ? size : size * 8;
      const size_t cap = static_cast<size_t>(std::min<uintmax_t>(raw / 64 + 16, uintmax_t{1} << 31));
      file.events.reserve(cap);
      file.lines.reserve(cap);
      file.extras.reserve(cap / 2);  // kernels (grid, block) and copies have extras
    }
  }
  RawLineParser parser(&file, path);
  parser.set_fold_push_pop(fold);
  std::string_view line;
  while (r.Next(&line)) {
    parser.ParseLine(line, static_cast<uint64_t>(r.line_number()));
    if (options.strict && parser.problems()) return ParseError(parser.first_problem());
    if (parser.fold_conflict()) {
      *conflict = true;
      return file;
    }
  }
  for (const LineWarning& w : r.warnings()) {
    file.stats.Report(path + ":" + std::to_string(w.line), Problem::kReadWarning, w.message);
  }
  if (r.truncated_last_line()) file.stats.Add(Problem::kTruncatedLastLine);
  if (r.long_lines_skipped()) file.stats.Add(Problem::kLongLinesSkipped, r.long_lines_skipped());
  if (!r.status().ok()) {
    file.stats.Report(r.Where(), Problem::kReadError, r.status().message() + " (data before it kept)");
  }
  if (r.line_number() == 0) file.stats.Report(path + ":0", Problem::kEmptyFile, "file holds no records");
  else if (!file.meta.has_meta && file.meta.format != "truffld-marker")
    file.stats.Report(path + ":1", Problem::kMissingMeta,
                      "no META record: rank unknown, clock taken as realtime, no clock alignment");
  if (file.meta.format.empty()) file.meta.format = "truffld";
  if (file.meta.process_id == kNone) {
    for (const Event& e : file.events)
      if (file.ProcessOf(e) != kNone) { file.meta.process_id = file.ProcessOf(e); break; }
  }
  if (options.strict && (!r.status().ok() || !r.warnings().empty() || file.stats.issues.size()))
    return ParseError(file.stats.issues.empty() ? r.status().ToString()
                                                : file.stats.issues[0].where + ": " + file.stats.issues[0].message);
  file.SortThreads();
  return file;
}

}  // namespace

Result<TraceFile> ImportRawJsonl(const std::string& path, const ImportOptions& options) {
  bool conflict = false;
  // Folding may need a second read: only a regular file can be read twice (not "-", a pipe or
  // a process substitution, which would go on from where the first read stopped).
  std::error_code ec;
  const bool rereadable = std::filesystem::is_regular_file(path, ec);
  if (options.fold_push_pop && rereadable) {
    Result<TraceFile> folded = ReadRawJsonl(path, options, true, &conflict);
    if (!conflict) return folded;
  }
  // A thread stepped back in time after pops had been folded (RawLineParser): read again
  // without folding, which is what the folded read stands for whenever it succeeds.
  Result<TraceFile> plain = ReadRawJsonl(path, options, false, &conflict);
  if (plain.ok() && conflict) plain->stats.Add(Problem::kFoldRetried);
  return plain;
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
