// Helpers for the injector's integration tests: see inject_test_util.h.
#include "inject_test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "truffld/line_reader.h"

extern char** environ;

namespace truffld::inject::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "truffld-inject-XXXXXX").string();
  char* p = ::mkdtemp(tmpl.data());
  path_ = p ? p : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

std::string InjectorPath() { return TRUFFLD_INJECTOR_PATH; }
std::string AppPath(const std::string& name) { return std::string(TRUFFLD_TEST_BIN_DIR) + "/" + name; }

std::vector<std::string> InjectEnv(const std::string& out_dir) {
  return {"NVTX_INJECTION64_PATH=" + InjectorPath(), "TRUFFLD_OUTPUT_DIR=" + out_dir};
}

Child Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  Child c;
  int out[2];
  if (::pipe(out) != 0) return c;
  static int counter = 0;
  c.err_path = (fs::temp_directory_path() /
                ("truffld-inject-stderr-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.emplace_back(*e);
  for (const auto& e : env) envs.push_back(e);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addopen(&fa, 2, c.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (posix_spawn(&c.pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data()) != 0) c.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  c.out_fd = out[0];
  return c;
}

std::string ReadLine(Child& c) {
  std::string line;
  char ch;
  while (::read(c.out_fd, &ch, 1) == 1) {
    line.push_back(ch);
    if (ch == '\n') break;
  }
  return line;
}

Exit Wait(Child& c, int timeout_s) {
  Exit e;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(c.out_fd, buf, sizeof buf)) > 0) e.out.append(buf, static_cast<size_t>(n));
  ::close(c.out_fd);
  std::ifstream f(c.err_path);
  std::stringstream ss;
  ss << f.rdbuf();
  e.err = ss.str();
  std::error_code ec;
  fs::remove(c.err_path, ec);
  return e;
}

Exit RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env, int timeout_s) {
  Child c = Spawn(argv, env);
  return Wait(c, timeout_s);
}

std::vector<Dump> ReadDumps(const std::string& dir) {
  std::vector<Dump> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("truffld-", 0) != 0) continue;
    Dump d;
    d.path = entry.path().string();
    auto reader = LineReader::Open(d.path);
    if (!reader.ok()) continue;
    std::string_view line;
    while (reader.value()->Next(&line)) {
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        d.truncated_last_line = true;
        continue;
      }
      d.records.push_back(std::move(j));
    }
    d.truncated_last_line = d.truncated_last_line || reader.value()->truncated_last_line();
    out.push_back(std::move(d));
  }
  return out;
}

std::string ValidateAgainstSchema(const std::vector<Dump>& dumps) {
  const std::string src = TRUFFLD_SOURCE_DIR_STR;
  const std::string schema = src + "/schemas/events.schema.json";
  if (!fs::exists(schema)) return "";
  std::vector<std::string> argv = {"/usr/bin/python3", src + "/tests/inject/validate_events.py", schema};
  for (const auto& d : dumps) {
    if (d.path.size() > 6 && d.path.substr(d.path.size() - 6) == ".jsonl") argv.push_back(d.path);
  }
  if (argv.size() == 3) return "";
  Exit e = RunProgram(argv, {}, 120);
  if (e.code == 0) return "";
  return "schema validation failed (exit " + std::to_string(e.code) + "):\n" + e.out + e.err;
}

std::vector<nlohmann::json> OfType(const Dump& d, const std::string& type) {
  std::vector<nlohmann::json> v;
  for (const auto& r : d.records) if (r.value("type", "") == type) v.push_back(r);
  return v;
}

}  // namespace truffld::inject::testing
