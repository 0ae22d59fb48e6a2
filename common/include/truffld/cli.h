// What every truffld command-line tool shares: exit statuses, the version line, and a progress
// line that appears only on a terminal.
//
// Exit statuses (the same in every tool, its --help and the README):
//   0 success; 1 an input could not be used (missing, unreadable, nothing to read);
//   2 usage error (a bad flag or value); 3 an output could not be written.
// Thread-safety: ExitCodeName and VersionLine are reentrant; a Progress belongs to one thread.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace truffld {

enum ExitCode : int {
  kExitOk = 0,
  kExitInput = 1,
  kExitUsage = 2,
  kExitOutput = 3,
};

// The exit-status paragraph every --help ends with.
extern const char* const kExitStatusHelp;
// The paragraph of the tools that hold an output lock (truffld/output_lock.h) and take
// --wait-lock: truffld-merge and truffld-diagnose.
extern const char* const kOutputLockHelp;

// "0.1.0" from CMake's project version, plus " (git <describe>)" when built from a git checkout.
const char* VersionString();
// "<tool> <VersionString()>".
std::string VersionLine(const char* tool);

// One status line on stderr, rewritten in place ("\r\033[K"), shown only when stderr is a
// terminal and the tool is not quiet: logs and pipes never see it.
// Thread-safety: one thread at a time (a ProgressTimer uses it while its owner waits).
class Progress {
 public:
  explicit Progress(bool quiet = false);
  ~Progress();  // clears the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  bool enabled() const noexcept { return enabled_; }
  void Say(const std::string& text);  // replaces the line (text is escaped for the terminal)
  void Done();                        // clears the line; later messages start on a clean line
 private:
  bool enabled_;
  bool shown_ = false;
};

// While alive, shows "<label> <n> s" on `progress`, updated every second from its own thread,
// so a long phase (Stage I over millions of instances) shows it is alive. Does nothing when the
// progress line is disabled. The owner must not use `progress` until the timer is destroyed.
class ProgressTimer {
 public:
  ProgressTimer(Progress& progress, std::string label);
  ~ProgressTimer();  // stops the thread and clears the line
  ProgressTimer(const ProgressTimer&) = delete;
  ProgressTimer& operator=(const ProgressTimer&) = delete;

 private:
  Progress& progress_;
  std::string label_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace truffld
