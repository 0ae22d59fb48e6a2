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

#include "schema_sql.h"  // kSqliteApplicationId: truffld's own run database
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
  if (p.substr(0, 3) == "\xEF\xBB\xBF") p.remove_prefix(3);  // a UTF-8 byte-order mark
  size_t i = p.find_first_not_of(" \t\r\n");
  if (i != std::string_view::npos && p[i] == '[') return InputFormat::kKineto;  // JSON Array Format
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

std::string NoEventsReason(const std::vector<TraceFile>& files) {
  std::string why;
  for (const TraceFile& f : files) {
    if (!f.events.empty()) return "";
    if (&f - files.data() == 4) {
      why += ", ... (" + std::to_string(files.size()) + " files)";
      continue;
    }
    if (&f - files.data() > 4) continue;
    why += (why.empty() ? "no events in " : ", ") + f.meta.path + " (" + f.meta.format;
    if (!f.stats.issues.empty())
      why += "; " + f.stats.issues.front().where + ": " + f.stats.issues.front().message;
    why += ")";
  }
  return why;
}

// The file is opened once and its start peeked at, so "-", pipes and FIFOs lose no bytes to
// the sniffing; the importer reads on from the same source.
Result<TraceFile> ImportFile(const std::string& path, const ImportOptions& options) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  auto head = (*src)->Peek(kSniffBytes);
  if (!head.ok()) return head.status();
  std::string meta;
  std::string identity = DumpIdentity(*head, &meta);
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
  Result<TraceFile> r = CheckThreadCount(ImportRawJsonl(std::move(*src), options));
  if (r.ok()) r->meta.identity = std::move(identity);
  return r;
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
    case SkipKind::kNotRegular: return "not_a_regular_file";
  }
  return "?";
}

std::string TruffldOutputKind(std::string_view prefix) {
  static constexpr std::pair<const char*, const char*> kMarkers[] = {
      {"\"truffld.trees/", "trees.jsonl"},
      {"\"truffld.summary/", "summary.json"},
      {"\"truffld.stats-summary/", "run_stats.json"},
      {"\"truffld.diagnosis/", "diagnosis.jsonl"},
      {"\"generator\":\"truffld-merge\"", "trace.json"}};
  if (prefix.size() >= 72 && prefix.substr(0, 16) == std::string_view("SQLite format 3\0", 16)) {
    uint32_t app = 0;
    for (int i = 68; i < 72; ++i) app = (app << 8) | static_cast<uint8_t>(prefix[i]);
    return app == rundb::kSqliteApplicationId ? "run database (--sqlite, truffld-export) written by truffld" : "";
  }
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
  c.content_key = DumpIdentity(prefix, &c.meta);
  return c;
}

// Why a directory entry with a trace-like name is not read: what it is instead.
std::string NotRegularReason(const std::filesystem::file_status& st) {
  namespace fs = std::filesystem;
  const char* what = st.type() == fs::file_type::fifo        ? "a FIFO (named pipe)"
                     : st.type() == fs::file_type::socket    ? "a socket"
                     : st.type() == fs::file_type::block     ? "a block device"
                     : st.type() == fs::file_type::character ? "a character device"
                     : st.type() == fs::file_type::not_found ? "a dangling symbolic link"
                                                             : "not a regular file";
  return std::string(what) + " inside an input directory: not read (name it explicitly to read it)";
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

std::string DumpIdentity(std::string_view prefix, std::string* meta) {
  meta->clear();
  const size_t i = prefix.find_first_not_of(" \t\r\n");
  const size_t nl = prefix.find('\n', i == std::string::npos ? 0 : i);
  if (i == std::string::npos || nl == std::string::npos) return "";
  std::string_view first = prefix.substr(i, nl - i);
  if (first.find("\"type\":\"META\"") == std::string_view::npos &&
      first.find("\"type\": \"META\"") == std::string_view::npos)
    return "";
  *meta = std::string(first);
  return *meta + "\n" + std::to_string(prefix.size()) + ":" + std::to_string(std::hash<std::string_view>()(prefix));
}

void DropRepeatedDumps(std::vector<std::string>* paths, std::vector<Result<TraceFile>>* imported,
                       std::vector<SkippedInput>* skipped) {
  std::map<std::string, std::string> seen;  // identity -> the input kept
  size_t kept = 0;
  for (size_t i = 0; i < imported->size(); ++i) {
    Result<TraceFile>& r = (*imported)[i];
    if (r.ok() && !r->meta.identity.empty()) {
      auto [it, fresh] = seen.emplace(r->meta.identity, (*paths)[i]);
      if (!fresh) {
        std::string meta;
        DumpIdentity(r->meta.identity, &meta);
        skipped->push_back({(*paths)[i], "the same dump as " + it->second + " (" + DescribeMeta(meta) +
                            ", same first 64 KiB)", SkipKind::kDuplicate});
        continue;
      }
    }
    if (kept != i) {
      (*paths)[kept] = std::move((*paths)[i]);
      (*imported)[kept] = std::move(r);
    }
    ++kept;
  }
  paths->resize(kept);
  imported->erase(imported->begin() + ptrdiff_t(kept), imported->end());
}

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
      if (!LooksLikeTrace(it->path().filename().string())) continue;
      std::error_code type_ec;
      const fs::file_status type = it->status(type_ec);  // through symlinks
      if (type.type() != fs::file_type::regular) {
        // A FIFO would block the run waiting for a writer; a socket or device is no dump:
        // listed, never passed over in silence. (Folders are descended into.)
        if (type.type() != fs::file_type::directory)
          skip(it->path().string(), NotRegularReason(type), SkipKind::kNotRegular);
        continue;
      }
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

std::vector<Result<TraceFile>> ImportAll(const std::vector<std::string>& paths, const ImportOptions& options,
                                          int threads) {
  std::vector<std::optional<Result<TraceFile>>> slots(paths.size());
  ParallelFor(paths.size(), threads, [&](size_t i) { slots[i].emplace(ImportFile(paths[i], options)); });
  std::vector<Result<TraceFile>> out;
  out.reserve(paths.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

}  // namespace truffld::merge
