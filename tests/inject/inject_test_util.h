// Helpers for the injector's integration tests: run a program with an environment, read the
// dumps it leaves, validate them against schemas/events.schema.json.
// Thread-safety: test-only, single-threaded use.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace truffld::inject::testing {

// A temporary directory removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // child's stdout
  std::string err_path;  // child's stderr is written here
};

// Starts argv[0] with the current environment plus `env` ("NAME=value").
Child Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env);
// Reads the child's stdout up to and including the next '\n' (empty at EOF).
std::string ReadLine(Child& c);

struct Exit {
  int code = -1;    // exit status, or -1 when killed
  int signal = 0;   // terminating signal, or 0
  std::string out;  // rest of stdout
  std::string err;  // whole stderr
};
// Waits (at most timeout_s, then SIGKILL) and collects the outputs.
Exit Wait(Child& c, int timeout_s = 60);
// Spawn + Wait.
Exit RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env, int timeout_s = 60);

struct Dump {
  std::string path;
  std::vector<nlohmann::json> records;
  bool truncated_last_line = false;
};
// Every truffld-*.jsonl[.zst] file in `dir`, parsed (through truffld's LineReader).
std::vector<Dump> ReadDumps(const std::string& dir);

// Runs tests/inject/validate_events.py on plain dumps; returns its report ("" when valid).
std::string ValidateAgainstSchema(const std::vector<Dump>& dumps);

// Records of one type.
std::vector<nlohmann::json> OfType(const Dump& d, const std::string& type);

// Environment every injected run needs: NVTX_INJECTION64_PATH and TRUFFLD_OUTPUT_DIR.
std::vector<std::string> InjectEnv(const std::string& out_dir);

std::string InjectorPath();
std::string AppPath(const std::string& name);

}  // namespace truffld::inject::testing
