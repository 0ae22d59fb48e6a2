// nvtx_app: a real NVTX 3 application used by the injector's integration tests.
//
// It is an ordinary program: it includes the NVTX headers and calls the public API; the tests
// run it with NVTX_INJECTION64_PATH pointing at libcupti_injector.so and compare the dump with
// the script each mode below performs. Modes:
//   basic           nested push/pop, start/end across threads, marks, categories, colors,
//                   scalar payloads, wide strings, domains, registered strings and NCCL-style
//                   payload-extension schemas (AllReduce, Send) with a registered enum
//   threads N M     N threads, each doing M push/pop pairs
//   sigterm H       loops pushing ranges until SIGTERM; H=1 installs an application handler
//                   (which prints "app handler ran" and lets main return), H=0 keeps default
//   fork            events before fork, in the child and in the parent after fork
//   noflush N       N push/pop pairs, then returns from main at once
//   sigkill N       N push/pop pairs, prints "ready", then sleeps until killed
//   fsize BYTES N   sets RLIMIT_FSIZE to BYTES, then N push/pop pairs
//   exec MS         a mark, sleeps MS ms (past a flush), then exec()s itself in noflush mode
//   hostile         push/pop ranges named with bytes a lenient UTF-8 decoder lets through:
//                   a lone surrogate, overlong forms, a code point above U+10FFFF, controls
//   rate R S        one thread writes R records/s (push/pop pairs) for S seconds, spinning
//                   between them (so it keeps one core busy); prints the records it issued and
//                   the CPU seconds of every other thread of the process (the tracer's writer)
//   bursts N B US   N push/pop pairs in bursts of B pairs, sleeping US microseconds after each
//                   burst (the pair-cost benchmark: a writer on the same core catches up)
//   longstep N      one step range naming N requests (the hooks' step name; ~38 bytes an id)
//   flood N M       N threads, each M times: outer push, inner push, mark, pop, pop, then a
//                   start ended at once on the same thread (odd iterations) or put in a shared
//                   queue of 64 from which the thread ends the oldest (mostly another thread's)
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <signal.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// Mirrors NCCL 2.2x's NVTX instrumentation: a static schema per collective whose entries carry
// NCCL's entry names, and the reduction op as a registered enum used as an entry type.
constexpr uint64_t kSchemaAllReduce = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5;
constexpr uint64_t kSchemaSend = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 9;
constexpr uint64_t kRedOpEnum = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 11;
constexpr uint64_t kSchemaCommInit = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 1;

struct AllReduceParams { uint64_t comm; size_t bytes; int op; };
struct SendParams { uint64_t comm; size_t bytes; int peer; };
struct CommInitParams { uint64_t comm; int nranks; int rank; int cuda_device; };

void RegisterNcclSchemas(nvtxDomainHandle_t nccl) {
  static const nvtxPayloadEnum_t kRedOps[] = {{"Sum", 0, 0}, {"Product", 1, 0}, {"Max", 2, 0},
                                              {"Min", 3, 0}, {"Avg", 4, 0}};
  nvtxPayloadEnumAttr_t e{};
  e.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
  e.entries = kRedOps;
  e.numEntries = 5;
  e.sizeOfEnum = sizeof(int);
  e.schemaId = kRedOpEnum;
  nvtxPayloadEnumRegister(nccl, &e);

  static const nvtxPayloadSchemaEntry_t kAllReduce[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(AllReduceParams, comm), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(AllReduceParams, bytes), nullptr, nullptr},
      {0, kRedOpEnum, "Reduction operation", nullptr, 0, offsetof(AllReduceParams, op), nullptr, nullptr}};
  static const nvtxPayloadSchemaEntry_t kSend[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(SendParams, comm), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(SendParams, bytes), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Peer rank", nullptr, 0, offsetof(SendParams, peer), nullptr, nullptr}};
  static const nvtxPayloadSchemaEntry_t kCommInit[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(CommInitParams, comm), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "No. of ranks", nullptr, 0, offsetof(CommInitParams, nranks), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Rank", nullptr, 0, offsetof(CommInitParams, rank), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "CUDA device", nullptr, 0, offsetof(CommInitParams, cuda_device), nullptr, nullptr}};
  for (auto [entries, n, id, name, size] :
       {std::tuple{kAllReduce, size_t{3}, kSchemaAllReduce, "AllReduce", sizeof(AllReduceParams)},
        std::tuple{kSend, size_t{3}, kSchemaSend, "Send", sizeof(SendParams)},
        std::tuple{kCommInit, size_t{4}, kSchemaCommInit, "CommInitRank", sizeof(CommInitParams)}}) {
    nvtxPayloadSchemaAttr_t s{};
    s.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                  NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                  NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME;
    s.name = name;
    s.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    s.entries = entries;
    s.numEntries = n;
    s.payloadStaticSize = size;
    s.schemaId = id;
    nvtxPayloadSchemaRegister(nccl, &s);
  }
}

nvtxEventAttributes_t Attr(const char* msg) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = msg;
  return a;
}

void Basic() {
  nvtxNameCategoryA(7, "compute");
  nvtxRangePushA("outer");
  nvtxEventAttributes_t a = Attr("inner");
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xFF00FF00u;
  a.category = 7;
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = 42;
  nvtxRangePushEx(&a);
  nvtxMarkA("tick");
  nvtxRangePop();
  nvtxRangePop();

  const nvtxRangeId_t req = nvtxRangeStartA("request cmpl-1");
  std::thread other([req] {
    nvtxRangePushW(L"wide \u2713");
    nvtxRangePop();
    nvtxRangeEnd(req);  // ends on another thread than it started
  });
  other.join();

  nvtxDomainHandle_t dom = nvtxDomainCreateA("myDomain");
  nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered step");
  nvtxEventAttributes_t r{};
  r.version = NVTX_VERSION;
  r.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  r.message.registered = reg;
  nvtxDomainRangePushEx(dom, &r);
  nvtxEventAttributes_t m = Attr("domain mark");
  m.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
  m.payload.dValue = 2.5;
  nvtxDomainMarkEx(dom, &m);
  nvtxDomainRangePop(dom);

  nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  RegisterNcclSchemas(nccl);
  AllReduceParams ar{0x1234abcdull, 4096, 0};
  nvtxPayloadData_t ard[] = {{kSchemaAllReduce, sizeof ar, &ar}};
  nvtxEventAttributes_t c = Attr("ncclAllReduce");
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(c, ard);
  nvtxDomainRangePushEx(nccl, &c);
  nvtxDomainRangePop(nccl);
  SendParams sp{0x1234abcdull, 1024, 3};
  nvtxPayloadData_t spd[] = {{kSchemaSend, sizeof sp, &sp}};
  nvtxEventAttributes_t s = Attr("ncclSend");
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(s, spd);
  nvtxDomainMarkEx(nccl, &s);
  // NCCL 2.2x's ncclCommInitRank: pushed by name, closed with the parameters it learned.
  nvtxEventAttributes_t ci = Attr("ncclCommInitRank");
  nvtxDomainRangePushEx(nccl, &ci);
  CommInitParams cp{0x77ull, 8, 5, 1};
  nvtxPayloadData_t cpd[] = {{kSchemaCommInit, sizeof cp, &cp}};
  nvtxRangePopPayload(nccl, cpd, 1);
  // The other payload-extension events: a nameless push carrying a payload, a start/end pair.
  nvtxRangePushPayload(nccl, spd, 1);
  nvtxDomainRangePop(nccl);
  nvtxRangeId_t pid = nvtxRangeStartPayload(nccl, ard, 1);
  nvtxRangeEndPayload(nccl, pid, cpd, 1);
  nvtxDomainDestroy(dom);
}

void PushPop(int n, const char* name) {
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA(name);
    nvtxRangePop();
  }
}

void Bursts(long n, long burst, long sleep_us) {
  for (long done = 0; done < n;) {
    const long b = burst < n - done ? burst : n - done;
    PushPop(static_cast<int>(b), "aten::mm, op_id = 42");
    done += b;
    if (sleep_us > 0) usleep(static_cast<useconds_t>(sleep_us));
  }
}

// The hooks' step name for `n` requests "chatcmpl-<index, 8 digits>-<24 hex digits>".
std::string LongStepName(int n) {
  std::string name = "step_execute_model[request_ids:";
  char id[64];
  for (int i = 0; i < n; ++i) {
    std::snprintf(id, sizeof id, "%schatcmpl-%08d-%024x", i ? "_" : "", i, i * 2654435761u);
    name += id;
  }
  return name + "][phase:decode]";
}

// Push/pop pairs at `records_per_s` for `seconds`, paced against the steady clock in batches
// of 64 records; the thread spins, never sleeps. Returns the records issued.
long Rate(double records_per_s, double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  const double ns_per_record = 1e9 / records_per_s;
  long issued = 0;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      nvtxRangePushA("aten::mm, op_id = 42");
      nvtxRangePop();
    }
    issued += 64;
    const auto due = start + std::chrono::nanoseconds(static_cast<long>(issued * ns_per_record));
    Clock::time_point now;
    while ((now = Clock::now()) < due) {
    }
    if (now >= end) return issued;
  }
}

// "other_threads_cpu_s X": user+system CPU of every thread but the calling one, from /proc.
void PrintOtherThreadsCpu() {
  const long hz = sysconf(_SC_CLK_TCK);
  const std::string self = std::to_string(static_cast<long>(gettid()));
  double total = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.' || self == e->d_name) continue;
      std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::istringstream fields(stat.substr(stat.rfind(')') + 2));
      std::string f;
      long utime = 0, stime = 0;
      for (int i = 3; fields >> f; ++i) {
        if (i == 14) utime = std::atol(f.c_str());
        if (i == 15) { stime = std::atol(f.c_str()); break; }
      }
      total += static_cast<double>(utime + stime) / static_cast<double>(hz);
    }
    closedir(d);
  }
  std::printf("other_threads_cpu_s %.2f\n", total);
}

void Flood(int threads, int iterations) {
  std::mutex mu;
  std::deque<nvtxRangeId_t> open;  // starts any thread may end
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back([&, iterations] {
      for (int k = 0; k < iterations; ++k) {
        nvtxRangePushA("outer");
        nvtxRangePushA("inner");
        nvtxMarkA("flood mark");
        nvtxRangePop();
        nvtxRangePop();
        const nvtxRangeId_t id = nvtxRangeStartA("flood start");
        if (k % 2) { nvtxRangeEnd(id); continue; }
        nvtxRangeId_t other = 0;
        {
          std::lock_guard<std::mutex> lock(mu);
          open.push_back(id);
          if (open.size() > 64) { other = open.front(); open.pop_front(); }
        }
        if (other) nvtxRangeEnd(other);
      }
    });
  }
  for (auto& t : ts) t.join();
  for (nvtxRangeId_t id : open) nvtxRangeEnd(id);
}

std::atomic<bool> g_term{false};
void OnTerm(int) {
  const char msg[] = "app handler ran\n";
  ssize_t rc = write(1, msg, sizeof msg - 1);
  (void)rc;
  g_term = true;
}

}  // namespace

// Names no valid UTF-8 text holds, each inside a push/pop pair on the main thread.
void Hostile() {
  const char* names[] = {"lone \xED\xA0\x80 surrogate", "overlong \xC0\xAF slash", "overlong \xE0\x80\xAF three",
                         "above \xF4\x90\x80\x80 U+10FFFF", "controls \x01\x1f\x7f end", "cut \xE2\x82"};
  nvtxRangePushA("step_execute_model[request_ids:1]");
  for (const char* n : names) {
    nvtxRangePushA(n);
    nvtxRangePop();
  }
  nvtxRangePop();
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "basic";
  auto arg = [&](int i, long dflt) { return argc > i ? std::atol(argv[i]) : dflt; };
  if (mode == "basic") {
    Basic();
  } else if (mode == "hostile") {
    Hostile();
  } else if (mode == "threads") {
    const int n = static_cast<int>(arg(2, 64)), m = static_cast<int>(arg(3, 1000));
    // NVTX loads its tool on the first call; its own fast path reads the init state without
    // atomics, so the threads below start after it (as ThreadSanitizer needs to see it).
    nvtxInitialize(nullptr);
    std::vector<std::thread> ts;
    for (int i = 0; i < n; ++i) ts.emplace_back([m] { PushPop(m, "hammer"); });
    for (auto& t : ts) t.join();
  } else if (mode == "rate") {
    const double r = argc > 2 ? std::atof(argv[2]) : 1e6, sec = argc > 3 ? std::atof(argv[3]) : 10;
    std::printf("issued %ld\n", Rate(r, sec));
    PrintOtherThreadsCpu();
  } else if (mode == "bursts") {
    Bursts(arg(2, 1000000), arg(3, 8192), arg(4, 5000));
  } else if (mode == "longstep") {
    nvtxRangePushA(LongStepName(static_cast<int>(arg(2, 512))).c_str());
    nvtxRangePop();
  } else if (mode == "flood") {
    nvtxInitialize(nullptr);  // see "threads"
    Flood(static_cast<int>(arg(2, 4)), static_cast<int>(arg(3, 20000)));
  } else if (mode == "sigterm") {
    if (arg(2, 1)) signal(SIGTERM, OnTerm);  // installed before NVTX initialises truffld
    nvtxMarkA("started");
    std::printf("ready\n");
    std::fflush(stdout);
    while (!g_term) { PushPop(1, "loop"); usleep(1000); }
    nvtxMarkA("after handler");
  } else if (mode == "fork") {
    nvtxMarkA("parent before fork");
    const pid_t child = fork();
    if (child == 0) {
      nvtxMarkA("in child");
      std::exit(0);
    }
    nvtxMarkA("parent after fork");
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  } else if (mode == "noflush") {
    PushPop(static_cast<int>(arg(2, 1000)), "quick");
  } else if (mode == "sigkill") {
    PushPop(static_cast<int>(arg(2, 1000)), "before kill");
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) pause();
  } else if (mode == "exec") {
    nvtxMarkA("before exec");
    usleep(static_cast<useconds_t>(arg(2, 300)) * 1000);
    char* const args[] = {argv[0], const_cast<char*>("noflush"), const_cast<char*>("10"), nullptr};
    execv("/proc/self/exe", args);
    std::perror("execv");
    return 1;
  } else if (mode == "fsize") {
    rlimit lim{static_cast<rlim_t>(arg(2, 4096)), static_cast<rlim_t>(arg(2, 4096))};
    setrlimit(RLIMIT_FSIZE, &lim);
    PushPop(static_cast<int>(arg(3, 20000)), "fill the disk");
    std::printf("still alive\n");
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  return 0;
}
