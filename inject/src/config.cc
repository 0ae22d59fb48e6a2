// Injector configuration: see config.h.
#include "config.h"

#include <regex.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace truffld::inject {

namespace {

bool ParseInt(const char* s, int base, int64_t* out) {
  if (!s || !*s) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, base);
  if (errno || *end != '\0') return false;
  *out = v;
  return true;
}

void IntVar(const EnvLookup& env, const char* name, int64_t lo, int64_t hi, int64_t* field,
            std::vector<std::string>* w) {
  const char* v = env(name);
  if (!v || !*v) return;
  int64_t x;
  if (!ParseInt(v, 10, &x) || x < lo || x > hi) {
    w->push_back(std::string(name) + "='" + v + "' is not an integer in [" + std::to_string(lo) +
                 ", " + std::to_string(hi) + "]; using " + std::to_string(*field));
    return;
  }
  *field = x;
}

// A size or period: an integer outside [lo, hi] is clamped to the nearer bound (and said so);
// text that is no integer keeps the default.
void ClampedIntVar(const EnvLookup& env, const char* name, int64_t lo, int64_t hi, int64_t* field,
                   std::vector<std::string>* w) {
  const char* v = env(name);
  if (!v || !*v) return;
  int64_t x;
  if (!ParseInt(v, 10, &x)) {
    w->push_back(std::string(name) + "='" + v + "' is not an integer; using " + std::to_string(*field));
    return;
  }
  if (x < lo || x > hi) {
    const int64_t c = x < lo ? lo : hi;
    w->push_back(std::string(name) + "=" + v + " is " + (x < lo ? "below the minimum " : "above the maximum ") +
                 std::to_string(c) + "; using " + std::to_string(c));
    x = c;
  }
  *field = x;
}

bool BoolVar(const EnvLookup& env, const char* name, bool dflt, std::vector<std::string>* w) {
  const char* v = env(name);
  if (!v || !*v) return dflt;
  const std::string s = v;
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  w->push_back(std::string(name) + "='" + s + "' is not a boolean (1/0/true/false/on/off); using " +
               (dflt ? "1" : "0"));
  return dflt;
}

std::optional<int64_t> FirstInt(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    int64_t v;
    if (ParseInt(env(n), 10, &v) && v >= 0) return v;
  }
  return std::nullopt;
}

std::string FormatFactor(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

// A decimal variable: `*field` takes its value when `ok` accepts it; otherwise a warning says it
// is not `what` and `*field` stays.
void FactorVar(const EnvLookup& env, const char* name, const char* what, bool (*ok)(double), double* field,
               std::vector<std::string>* w) {
  const char* v = env(name);
  if (!v || !*v) return;
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v, &end);
  if (errno || *end != '\0' || !ok(x))
    w->push_back(std::string(name) + "='" + v + "' is not " + what + "; using " + FormatFactor(*field));
  else
    *field = x;
}

// TRUFFLD_WINDOW_SLOW (0, or a factor in [1, 1000]), TRUFFLD_WINDOW_BUDGET (a share in (0, 1]),
// TRUFFLD_WINDOW_STEPS (1..1000000) and TRUFFLD_WINDOW_CONTROL (default: truffld.detail in the
// output directory).
void ParseRequestedWindows(const EnvLookup& env, Config* c, std::vector<std::string>* w) {
  FactorVar(env, "TRUFFLD_WINDOW_SLOW", "0 or a factor in [1, 1000]",
            [](double v) { return v == 0 || (v >= 1 && v <= 1000); }, &c->device_windows.slow_factor, w);
  FactorVar(env, "TRUFFLD_WINDOW_BUDGET", "a share in (0, 1]", [](double v) { return v > 0 && v <= 1; },
            &c->device_windows.trigger_budget, w);
  int64_t steps = static_cast<int64_t>(c->device_windows.request_steps);
  IntVar(env, "TRUFFLD_WINDOW_STEPS", 1, 1000000, &steps, w);
  c->device_windows.request_steps = static_cast<uint64_t>(steps);
  if (const char* p = env("TRUFFLD_WINDOW_CONTROL"); p && *p) c->window_control = p;
  else c->window_control = c->output_dir + "/truffld.detail";
}

}  // namespace

Config ParseConfig(const EnvLookup& env, std::vector<std::string>* w) {
  Config c;
  c.disabled = BoolVar(env, "TRUFFLD_DISABLE", false, w);
  if (const char* d = env("TRUFFLD_OUTPUT_DIR"); d && *d) c.output_dir = d;
  ClampedIntVar(env, "TRUFFLD_FLUSH_MS", 1, 60000, &c.flush_ms, w);
  ClampedIntVar(env, "TRUFFLD_MAX_BUFFER_MB", kMinMaxBufferMb, 1 << 20, &c.max_buffer_mb, w);
  ClampedIntVar(env, "TRUFFLD_THREAD_BUFFER_KB", 16, 1 << 20, &c.thread_buffer_kb, w);
  ClampedIntVar(env, "TRUFFLD_ACTIVITY_BUFFER_KB", 64, 1 << 20, &c.activity_buffer_kb, w);
  IntVar(env, "TRUFFLD_CLOCK_SYNC_S", 0, 86400, &c.clock_sync_s, w);
  if (const char* z = env("TRUFFLD_COMPRESS"); z && *z) {
    const std::string s = z;
#ifdef TRUFFLD_WITHOUT_ZSTD
    if (s == "zstd") w->push_back("TRUFFLD_COMPRESS=zstd: this build of the injector has no zstd "
                                  "(compiled with TRUFFLD_WITHOUT_ZSTD); writing plain JSONL");
#else
    if (s == "zstd") c.compress = Compression::kZstd;
#endif
    else if (s == "none" || s == "0") c.compress = Compression::kNone;
    else w->push_back("TRUFFLD_COMPRESS='" + s + "' is not 'none' or 'zstd'; using none");
  }
  if (const char* f = env("TRUFFLD_PROCESS_FILTER")) c.process_filter = f;
  if (const char* k = env("TRUFFLD_CLOCK"); k && *k) {
    const std::string s = k;
    if (s == "realtime") c.clock_realtime = true;
    else if (s != "monotonic_raw") w->push_back("TRUFFLD_CLOCK='" + s + "' is not 'monotonic_raw' or 'realtime'; using monotonic_raw");
  }
  c.cupti = BoolVar(env, "TRUFFLD_CUPTI", true, w);
  if (const char* a = env("TRUFFLD_CUPTI_API"); a) {
    const std::string s = a;
    c.trace_runtime = s.find("runtime") != std::string::npos;
    c.trace_driver = s.find("driver") != std::string::npos;
    if (!c.trace_runtime && !c.trace_driver && !s.empty() && s != "none") {
      w->push_back("TRUFFLD_CUPTI_API='" + s + "' names neither 'runtime' nor 'driver'; tracing no API calls");
    }
  }
  if (const char* a = env("TRUFFLD_CUPTI_API_SET"); a && *a) {
    const std::string s = a;
    if (s == "all") c.api_set = Config::ApiSet::kAll;
    else if (s == "essential") c.api_set = Config::ApiSet::kEssential;
    else if (s != "tiered")
      w->push_back("TRUFFLD_CUPTI_API_SET='" + s + "' is not 'tiered', 'essential' or 'all'; using tiered");
  }
  if (const char* l = env("TRUFFLD_CUPTI_LIBRARY")) c.cupti_library = l;
  if (const char* m = env("TRUFFLD_FILE_MODE"); m && *m) {
    int64_t mode;
    if (ParseInt(m, 8, &mode) && mode >= 0 && mode <= 0777) c.file_mode = static_cast<unsigned>(mode);
    else w->push_back(std::string("TRUFFLD_FILE_MODE='") + m + "' is not an octal mode; using 0640");
  }
  if (const char* d = env("TRUFFLD_DEVICE_WINDOWS"); d && *d) {
    std::string why;
    if (!ParseWindowPlan(d, &c.device_windows, &why))
      w->push_back(std::string("TRUFFLD_DEVICE_WINDOWS='") + d + "': " + why + "; using all");
  }
  ParseRequestedWindows(env, &c, w);
  if (const char* p = env("TRUFFLD_STEP_PREFIXES"); p && *p) {
    if (SplitPrefixes(p).empty()) w->push_back(std::string("TRUFFLD_STEP_PREFIXES='") + p + "' names no prefix; using the default");
    else c.step_prefixes = p;
  }
  c.verbose = BoolVar(env, "TRUFFLD_VERBOSE", false, w);
  c.use_counter = BoolVar(env, "TRUFFLD_TSC", true, w);
  c.direct_io = BoolVar(env, "TRUFFLD_DIRECT_IO", true, w);
  if (c.thread_buffer_kb * 1024 > c.max_buffer_mb * 1024 * 1024 / 2) {
    c.thread_buffer_kb = c.max_buffer_mb * 1024 / 2;
    w->push_back("TRUFFLD_THREAD_BUFFER_KB exceeds half of TRUFFLD_MAX_BUFFER_MB; using " +
                 std::to_string(c.thread_buffer_kb));
  }
  return c;
}

std::vector<std::pair<std::string, std::string>> Config::Describe() const {
  char mode[8];
  std::snprintf(mode, sizeof mode, "0%o", file_mode);
  std::string api = trace_runtime && trace_driver ? "runtime,driver"
                    : trace_runtime ? "runtime" : trace_driver ? "driver" : "none";
  return {{"output_dir", output_dir},
          {"flush_ms", std::to_string(flush_ms)},
          {"max_buffer_mb", std::to_string(max_buffer_mb)},
          {"thread_buffer_kb", std::to_string(thread_buffer_kb)},
          {"activity_buffer_kb", std::to_string(activity_buffer_kb)},
          {"compress", compress == Compression::kZstd ? "zstd" : "none"},
          {"process_filter", process_filter},
          {"clock_sync_s", std::to_string(clock_sync_s)},
          {"cupti", cupti ? "1" : "0"},
          {"cupti_api", api},
          {"cupti_api_set", api_set == ApiSet::kAll ? "all" : api_set == ApiSet::kEssential ? "essential" : "tiered"},
          {"file_mode", mode},
          {"tsc", use_counter ? "1" : "0"},
          {"direct_io", direct_io ? "1" : "0"},
          {"device_windows", DescribeWindowPlan(device_windows)},
          {"window_slow", FormatFactor(device_windows.slow_factor)},
          {"window_steps", std::to_string(device_windows.request_steps)},
          {"window_budget", FormatFactor(device_windows.trigger_budget)},
          {"window_control", window_control},
          {"step_prefixes", step_prefixes}};
}

RankInfo DetectRank(const EnvLookup& env) {
  RankInfo r;
  r.rank = FirstInt(env, {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID",
                          "MV2_COMM_WORLD_RANK"});
  r.local_rank = FirstInt(env, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                "SLURM_LOCALID"});
  r.world_size = FirstInt(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  if (r.world_size && *r.world_size == 0) r.world_size.reset();
  return r;
}

std::string SanitizeHost(std::string_view host) {
  std::string h;
  for (char c : host) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
        c == '_' || c == '-') {
      h.push_back(c);
    }
  }
  return h.empty() ? "unknown" : h;
}

std::string DumpFileName(std::string_view host, std::optional<int64_t> rank, int64_t pid,
                         Compression c, int attempt) {
  std::string n = "truffld-" + SanitizeHost(host) + "-r" + (rank ? std::to_string(*rank) : "-") +
                  "-p" + std::to_string(pid);
  if (attempt > 0) n += "." + std::to_string(attempt);
  n += ".jsonl";
  if (c == Compression::kZstd) n += ".zst";
  return n;
}

std::vector<std::string> SplitCmdline(std::string_view raw) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= raw.size(); ++i) {
    if (i == raw.size() || raw[i] == '\0') {
      if (i > start) out.emplace_back(raw.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

bool ProcessMatches(std::string_view filter, std::string_view cmdline, std::string* error) {
  if (filter.empty()) return true;
  regex_t re;
  const std::string pattern(filter);
  const int rc = regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char buf[256];
    regerror(rc, &re, buf, sizeof buf);
    if (error) *error = "TRUFFLD_PROCESS_FILTER='" + pattern + "' is not a valid regex: " + buf;
    return false;
  }
  const std::string text(cmdline);
  const bool match = regexec(&re, text.c_str(), 0, nullptr, 0) == 0;
  regfree(&re);
  return match;
}

}  // namespace truffld::inject
