// Format sniffing, dispatch to the importers, the raw JSONL file loop, input expansion and
// parallel import of several files.
#include "truffld/merge/import.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "truffld/byte_source.h"
#include "truffld/line_reader.h"
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

#ifdef TRUFFLD_MERGE_NO_NSYS
// The Nsight Systems importer is not in this tree yet (merge/CMakeLists.txt detects it).
Result<TraceFile> ImportNsys(const std::string& path, const ImportOptions&) {
  return Unsupported(path + ": Nsight Systems SQLite import is not built into this truffld-merge");
}
#endif
#ifdef TRUFFLD_MERGE_NO_KINETO
Result<TraceFile> ImportKineto(const std::string& path, const ImportOptions&) {
  return Unsupported(path + ": Kineto import is not built into this truffld-merge");
}
#endif

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
    file.stats.Report(path + ":" + std::to_string(w.line), "read_warning", w.message);
  }
  if (r.truncated_last_line()) file.stats.Add("truncated_last_line");
  if (r.long_lines_skipped()) file.stats.Add("long_lines_skipped", r.long_lines_skipped());
  if (!r.status().ok()) {
    file.stats.Report(r.Where(), "read_error", r.status().message() + " (data before it kept)");
  }
  if (r.line_number() == 0) file.stats.Report(path + ":0", "empty_file", "file holds no records");
  else if (!file.meta.has_meta && file.meta.format != "truffld-marker")
    file.stats.Report(path + ":1", "missing_meta",
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
  if (plain.ok() && conflict) plain->stats.Add("fold_retried");
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
static bool TraceContent(const std::string& prefix, std::string* why) {
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

const char* SkipKindName(SkipKind k) noexcept {
  switch (k) {
    case SkipKind::kNotTrace: return "not_a_trace";
    case SkipKind::kTruffldOutput: return "truffld_output";
    case SkipKind::kDuplicate: return "duplicate";
  }
  return "?";
}

std::string TruffldOutputKind(std::string_view prefix) {
  static constexpr std::pair<const char*, const char*> kMarkers[] = {
      {"\"truffld.trees/", "trees.jsonl"},
      {"\"truffld.summary/", "summary.json"},
      {"\"truffld.diagnosis/", "diagnosis.jsonl"},
      {"\"generator\":\"truffld-merge\"", "trace.json"}};
  const std::string_view head = prefix.substr(0, 512);  // the markers open their files
  for (const auto& [marker, file] : kMarkers) {
    if (head.find(marker) != std::string_view::npos) return std::string(file) + " written by truffld";
  }
  return "";
}

namespace {

// What the input listing needs to know about one candidate file.
struct Candidate {
  std::string path;
  std::string own_output;  // TruffldOutputKind of its content
  std::string meta;        // a raw dump's first line when it is a META record
  std::string content_key;  // meta + a hash of the first 64 KiB (decompressed): the dump's identity
  bool have_id = false;    // (dev, ino) known: a regular file
  std::pair<uint64_t, uint64_t> id;
};

// Reads what Candidate needs. Only regular files are opened (a named pipe would lose the data
// read here); `why` is set when a file found in a directory is not a trace.
Candidate Probe(const std::string& path, bool in_directory, std::string* why) {
  Candidate c;
  c.path = path;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return c;
  c.have_id = true;
  c.id = {uint64_t(st.st_dev), uint64_t(st.st_ino)};
  auto read = ReadPrefix(path);
  if (!read.ok()) return c;
  const std::string& prefix = *read;
  c.own_output = TruffldOutputKind(prefix);
  if (!c.own_output.empty() || (in_directory && !TraceContent(prefix, why))) return c;
  const size_t i = prefix.find_first_not_of(" \t\r\n");
  const size_t nl = prefix.find('\n', i == std::string::npos ? 0 : i);
  if (i != std::string::npos && nl != std::string::npos) {
    std::string_view first = std::string_view(prefix).substr(i, nl - i);
    if (first.find("\"type\":\"META\"") != std::string_view::npos ||
        first.find("\"type\": \"META\"") != std::string_view::npos) {
      c.meta = std::string(first);
      c.content_key = c.meta + "\n" + std::to_string(prefix.size()) + ":" +
                      std::to_string(std::hash<std::string>()(prefix));
    }
  }
  return c;
}

// "host h, process 12, rank 0" from a META line (as much of it as is there).
std::string DescribeMeta(const std::string& meta) {
  const nlohmann::json j = nlohmann::json::parse(meta, nullptr, false);
  if (!j.is_object()) return "identical META record";
  std::string s = "identical META record:";
  for (const char* key : {"host", "process_id", "rank"}) {
    if (!j.contains(key)) continue;
    s += std::string(s.back() == ':' ? " " : ", ") + key + " " +
         (j[key].is_string() ? j[key].get<std::string>() : j[key].dump());
  }
  return s;
}

}  // namespace

Result<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& inputs,
                                              std::vector<SkippedInput>* skipped) {
  namespace fs = std::filesystem;
  auto skip = [&](std::string path, std::string why, SkipKind kind) {
    if (skipped) skipped->push_back({std::move(path), std::move(why), kind});
  };
  std::vector<Candidate> listed;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (in == "-") { listed.push_back(Candidate{in, "", "", "", false, {}}); continue; }
    auto st = fs::status(in, ec);
    std::string why;
    // Missing or odd paths are kept: importing them fails with a message naming them, and the
    // caller reports them while merging the rest.
    if (ec || !fs::exists(st) || !fs::is_directory(st)) { listed.push_back(Probe(in, false, &why)); continue; }
    std::vector<Candidate> found;
    for (auto it = fs::recursive_directory_iterator(in, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file(ec) || !LooksLikeTrace(it->path().filename().string())) continue;
      why.clear();
      Candidate c = Probe(it->path().string(), true, &why);
      if (why.empty()) found.push_back(std::move(c));
      else skip(it->path().string(), why, SkipKind::kNotTrace);
    }
    if (ec) return IoError(in + ": cannot list directory: " + ec.message());
    std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
    for (Candidate& c : found) listed.push_back(std::move(c));
  }
  // truffld's own outputs and repeats are left out; the first occurrence of a dump is kept.
  std::vector<std::string> out;
  std::map<std::pair<uint64_t, uint64_t>, std::string> seen_files;
  std::map<std::string, std::string> seen_meta;
  for (const Candidate& c : listed) {
    if (!c.own_output.empty()) {
      skip(c.path, c.own_output + ", not an input (merge the raw dumps instead)", SkipKind::kTruffldOutput);
      continue;
    }
    if (c.have_id) {
      auto [it, fresh] = seen_files.emplace(c.id, c.path);
      if (!fresh) { skip(c.path, "the same file as " + it->second, SkipKind::kDuplicate); continue; }
    }
    if (!c.content_key.empty()) {
      auto [it, fresh] = seen_meta.emplace(c.content_key, c.path);
      if (!fresh) {
        skip(c.path, "the same dump as " + it->second + " (" + DescribeMeta(c.meta) + ", same first 64 KiB)",
             SkipKind::kDuplicate);
        continue;
      }
    }
    out.push_back(c.path);
  }
  return out;
}

std::vector<Result<TraceFile>> ImportAll(const std::vector<std::string>& paths, bool strict,
                                          int threads) {
  std::vector<std::optional<Result<TraceFile>>> slots(paths.size());
  std::atomic<size_t> next{0};
  ImportOptions opt;
  opt.strict = strict;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < paths.size();) slots[i].emplace(ImportFile(paths[i], opt));
  };
  size_t n = std::clamp<size_t>(threads < 1 ? 1 : size_t(threads), 1, std::max<size_t>(1, paths.size()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  std::vector<Result<TraceFile>> out;
  out.reserve(paths.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

}  // namespace truffld::merge
