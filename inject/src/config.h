// Injector configuration from environment variables, rank detection and dump-file naming.
//
// Pure logic: the environment is read through a lookup function, so tests pass a map. Every
// variable is documented in inject/README.md with its default; a malformed value keeps the
// default and produces a warning naming the variable, which the injector logs once (prefix
// "truffld:") and records in META.config.
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "device_windows.h"

namespace truffld::inject {

// Names of the NVTX push ranges that are steps (the merge's built-in step rules that are
// prefixes): the default of TRUFFLD_STEP_PREFIXES.
inline constexpr const char* kDefaultStepPrefixes =
    "step_execute_model,execute_model,ProfilerStep#,run_batch,step[";

using EnvLookup = std::function<const char*(const char*)>;

enum class Compression { kNone, kZstd };

// Smallest TRUFFLD_MAX_BUFFER_MB; smaller values are raised to it (with a warning).
inline constexpr int64_t kMinMaxBufferMb = 4;

struct Config {
  bool disabled = false;                  // TRUFFLD_DISABLE=1
  std::string output_dir = "/tmp/truffld";  // TRUFFLD_OUTPUT_DIR
  int64_t flush_ms = 500;                 // TRUFFLD_FLUSH_MS (1..60000)
  int64_t max_buffer_mb = 256;            // TRUFFLD_MAX_BUFFER_MB: rings + CUPTI buffers
  int64_t thread_buffer_kb = 16384;       // TRUFFLD_THREAD_BUFFER_KB: a large thread ring
  int64_t activity_buffer_kb = 4096;      // TRUFFLD_ACTIVITY_BUFFER_KB: one CUPTI buffer
  Compression compress = Compression::kNone;  // TRUFFLD_COMPRESS=none|zstd
  std::string process_filter;             // TRUFFLD_PROCESS_FILTER (POSIX ERE on cmdline)
  bool clock_realtime = false;            // TRUFFLD_CLOCK=monotonic_raw|realtime
  int64_t clock_sync_s = 60;              // TRUFFLD_CLOCK_SYNC_S: period of CLOCK records
  bool cupti = true;                      // TRUFFLD_CUPTI=1|0
  bool trace_runtime = true;              // TRUFFLD_CUPTI_API contains "runtime"
  bool trace_driver = true;               // TRUFFLD_CUPTI_API contains "driver"
  // TRUFFLD_CUPTI_API_SET: kTiered (default) records the essential set's detail tier only
  // inside sampled device windows (api_filter.h); kEssential records the whole essential set
  // all the time; kAll every callback.
  enum class ApiSet { kTiered, kEssential, kAll };
  ApiSet api_set = ApiSet::kTiered;
  std::string cupti_library;              // TRUFFLD_CUPTI_LIBRARY (empty = search)
  unsigned file_mode = 0640;              // TRUFFLD_FILE_MODE (octal)
  bool verbose = false;                   // TRUFFLD_VERBOSE=1
  bool use_counter = true;                // TRUFFLD_TSC=1|0: hardware counter timestamps
  bool direct_io = true;                  // TRUFFLD_DIRECT_IO=1|0: plain dumps bypass the page cache
  WindowPlan device_windows;              // TRUFFLD_DEVICE_WINDOWS (default all), with
                                          // TRUFFLD_WINDOW_SLOW and TRUFFLD_WINDOW_STEPS
  std::string window_control;             // TRUFFLD_WINDOW_CONTROL (default <output_dir>/truffld.detail)
  std::string step_prefixes = kDefaultStepPrefixes;  // TRUFFLD_STEP_PREFIXES

  // (name, value) pairs for META.config.
  std::vector<std::pair<std::string, std::string>> Describe() const;
};

// Parses the TRUFFLD_* variables. Problems are appended to `warnings` (one line each).
Config ParseConfig(const EnvLookup& env, std::vector<std::string>* warnings);

struct RankInfo {
  std::optional<int64_t> rank, local_rank, world_size;
};
// Rank from RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID, MV2_COMM_WORLD_RANK;
// local rank from LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID;
// world size from WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS. First valid wins.
RankInfo DetectRank(const EnvLookup& env);

// "truffld-<host>-r<rank>-p<pid>.jsonl[.zst]"; rank "-" when unknown; `attempt` > 0 appends
// ".<attempt>" before the extension (used when the name already exists).
std::string DumpFileName(std::string_view host, std::optional<int64_t> rank, int64_t pid,
                         Compression c, int attempt);

// Keeps [A-Za-z0-9._-] of a host name so it is safe inside a file name.
std::string SanitizeHost(std::string_view host);

// Splits /proc/self/cmdline content (NUL-separated) into arguments.
std::vector<std::string> SplitCmdline(std::string_view raw);

// True when the process should be traced: empty filter, or the POSIX extended regex matches the
// space-joined command line. A filter that does not compile matches nothing (and sets *error).
bool ProcessMatches(std::string_view filter, std::string_view cmdline, std::string* error);

}  // namespace truffld::inject
