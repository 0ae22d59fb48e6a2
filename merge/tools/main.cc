// truffld-merge command line: thin adapter from flags and files to the merge library.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <filesystem>
#include <iostream>
#include <thread>

#include "truffld/merge/direct_writer.h"
#include "truffld/merge/import.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/writers.h"

using namespace truffld;
using namespace truffld::merge;

namespace {

constexpr const char* kDescription = R"(truffld-merge: rebuild per-request call-chain trees from GPU traces.

Reads truffld raw dumps (.jsonl, .jsonl.gz, .jsonl.zst; also the NVTX_MARKER dialect), PyTorch
profiler (Kineto) Chrome traces (.json, .json.gz) and Nsight Systems SQLite exports; the format
is detected from the content. Directories are searched recursively. Writes into OUTDIR:
  trees.jsonl   the call-chain tree of every (rank, step, request, view) [schemas/trees.schema.json];
                requests that see the identical tree share one line ("request_group"),
                --per-request-trees writes one line per request instead
  trace.json    Chrome/Perfetto trace: a process per rank, threads and GPU streams as tracks
  summary.json  what was read, linked, dropped and why               [schemas/summary.schema.json]
Bad records are counted and reported with file:line; the rest is merged (--strict: fail).

Examples:
  truffld-merge /tmp/truffld-dumps -o merged/
  truffld-merge rank0.jsonl.zst rank1.jsonl.zst -o out --rules my-rules.json
  truffld-merge trace.pt.trace.json.gz -o out --no-trace-json
  truffld-merge dumps/ -o out --request-regex 'reqs=([^;]*)'
)";

class Progress {
 public:
  Progress() : tty_(isatty(STDERR_FILENO) != 0) {}
  void Say(const std::string& s) {
    if (tty_) std::fprintf(stderr, "\r\033[K%s", s.c_str());
  }
  void Done() { if (tty_) std::fprintf(stderr, "\r\033[K"); }
 private:
  bool tty_;
};

// How the outputs reach the disk. kDirect: direct I/O from the writers' own buffers
// (truffld/merge/direct_writer.h), or the page cache where the file system refuses it; kCached:
// the page cache, as any program writes.
enum class WriteMode { kDirect, kCached };

Status WriteFile(const std::filesystem::path& path, WriteMode mode,
                 const std::function<void(JsonOut*)>& body) {
  if (mode == WriteMode::kDirect) {
    auto dw = DirectWriter::Open(path.string());
    if (!dw.ok()) return dw.status();
    if (*dw) {
      JsonOut out(dw->get(), path.string());
      body(&out);
      return out.Close();
    }
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return IoError(path.string() + ": cannot create: " + std::strerror(errno));
  JsonOut out(f, path.string());
  body(&out);
  Status st = out.Close();
  if (std::fclose(f) != 0 && st.ok()) st = IoError(path.string() + ": close failed: " + std::strerror(errno));
  return st;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "truffld-merge"};
  std::vector<std::string> inputs;
  std::string outdir, rules_path, request_regex;
  bool strict = false, no_trace = false, no_implicit = false, quiet = false, per_request = false;
  bool keep_cache = false, no_direct = false;
  int threads = 2;
  app.add_option("inputs", inputs, "Input files or directories (format detected from content)")->required();
  app.add_option("-o,--out", outdir, "Output directory (created if missing)")->required();
  app.add_option("--rules", rules_path,
                 "Classification rules JSON (schemas/rules.schema.json); tried before the built-in rules");
  app.add_option("--request-regex", request_regex,
                 "Regex whose first group holds a step's request ids separated by '_' "
                 "(default: request_ids:(...) as in step_execute_model[request_ids:0_1_2])");
  app.add_flag("--strict", strict, "Any bad record, unreadable file or unlinkable device op is fatal");
  app.add_option("--threads", threads, "Threads for parsing and building (one file per thread); with 2 or more, trees.jsonl and trace.json are also written at the same time")
      ->default_val(2)->check(CLI::Range(1, 256));
  app.add_flag("--no-trace-json", no_trace, "Skip trace.json (faster, less disk)");
  app.add_flag("--no-implicit-steps", no_implicit,
               "Do not invent one step per process for files without any step range");
  app.add_flag("--per-request-trees", per_request,
               "Write one trees.jsonl line per (rank, step, request, view) even when requests share "
               "an identical tree (default: one line per group of requests, listed in request_group; "
               "a step batching N requests then costs one line, not N)");
  app.add_flag("--keep-page-cache", keep_cache,
               "Write the outputs through the page cache, as most programs do (the same as "
               "--no-direct-io)");
  app.add_flag("--no-direct-io", no_direct,
               "Write the outputs through the page cache instead of with direct I/O (the default, "
               "which skips the cache, costs the least CPU and leaves what the host keeps cached "
               "alone; the page cache is used anyway where the file system refuses direct I/O, "
               "such as tmpfs)");
  app.add_flag("-q,--quiet", quiet, "No stdout summary");
  CLI11_PARSE(app, argc, argv);

  auto t0 = std::chrono::steady_clock::now();
  const WriteMode write_mode = keep_cache || no_direct ? WriteMode::kCached : WriteMode::kDirect;
  MergeOptions opt;
  opt.strict = strict;
  opt.threads = threads;
  opt.implicit_steps = !no_implicit;
  if (!rules_path.empty()) {
    auto rules = Rules::Load(rules_path);
    if (!rules.ok()) { std::cerr << "truffld-merge: " << rules.status().ToString() << "\n"; return 2; }
    opt.rules = std::move(*rules);
  }
  if (!request_regex.empty()) {
    Status st = opt.rules.SetRequestRegex(request_regex);
    if (!st.ok()) { std::cerr << "truffld-merge: " << st.ToString() << "\n"; return 2; }
  }
  std::vector<std::pair<std::string, std::string>> skipped;
  auto paths = ExpandInputs(inputs, &skipped);
  if (!paths.ok()) { std::cerr << "truffld-merge: " << paths.status().ToString() << "\n"; return 2; }
  std::error_code ec;
  std::filesystem::create_directories(outdir, ec);
  if (ec) { std::cerr << "truffld-merge: " << outdir << ": cannot create directory: " << ec.message() << "\n"; return 2; }

  Progress progress;
  progress.Say("reading " + std::to_string(paths->size()) + " file(s)...");
  RunInfo run;
  run.inputs = *paths;
  run.skipped_inputs = skipped;
  run.tree_layout = per_request ? TreeLayout::kPerRequest : TreeLayout::kGrouped;
  std::vector<TraceFile> files;
  auto imported = ImportAll(*paths, strict, threads);
  for (size_t i = 0; i < imported.size(); ++i) {
    if (imported[i].ok()) { files.push_back(std::move(imported[i].value())); continue; }
    std::string why = imported[i].status().ToString();
    if (strict) { progress.Done(); std::cerr << "truffld-merge: " << why << "\n"; return 1; }
    std::cerr << "truffld-merge: warning: skipping " << (*paths)[i] << ": " << why << "\n";
    run.failed_inputs.emplace_back((*paths)[i], why);
  }
  progress.Say("merging...");
  auto merged = Merge(std::move(files), opt);
  if (!merged.ok()) { progress.Done(); std::cerr << "truffld-merge: " << merged.status().ToString() << "\n"; return 1; }
  const MergeResult& r = *merged;
  namespace fs = std::filesystem;
  // trees.jsonl and trace.json only read the merge result: with two or more threads they are
  // written at the same time (each writer owns its file, its buffer and its counters).
  progress.Say(no_trace ? "writing trees.jsonl..." : "writing trees.jsonl and trace.json...");
  Status trace_st = Status::Ok();
  std::thread trace_writer;
  auto write_trace = [&] {
    trace_st = WriteFile(fs::path(outdir) / "trace.json", write_mode, [&](JsonOut* o) { run.trace = WriteChromeTrace(r, o); });
  };
  if (!no_trace && threads > 1) trace_writer = std::thread(write_trace);
  Status st = WriteFile(fs::path(outdir) / "trees.jsonl", write_mode, [&](JsonOut* o) { run.trees_written = WriteTreesJsonl(r, o, run.tree_layout); });
  if (!no_trace) {
    if (trace_writer.joinable()) trace_writer.join();
    else if (st.ok()) write_trace();
    if (st.ok()) st = trace_st;
    run.trace_written = true;
  }
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (st.ok()) st = WriteFile(fs::path(outdir) / "summary.json", write_mode, [&](JsonOut* o) { WriteSummaryJson(r, run, o); });
  progress.Done();
  if (!st.ok()) { std::cerr << "truffld-merge: " << st.ToString() << "\n"; return 1; }
  if (!quiet) std::cout << FormatTextSummary(r, run);
  for (const FileSummary& f : r.summary.files)
    for (const IngestIssue& i : f.issues)
      if (&i - f.issues.data() < 5) std::cerr << "truffld-merge: " << i.where << ": " << i.message << "\n";
  return 0;
}
