// Shared helpers of the real-data tests: locating ../shared/data, counting what a TraceFile
// holds, and checking the merge's structural invariants on every tree.
//
// The invariants (issue 3): every host node lies within its parent's interval; every device
// node starts no earlier than the API call that launched it; device ops in trees (unique) plus
// reported unattributed ones equal the device ops read. Violations are counted and the first
// few described, so one bad file yields one readable failure rather than thousands.
// Thread-safety: test-only helpers, single-threaded.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unordered_set>

#include "truffld/merge/event.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge::realdata {

// Full path of `rel` under $TRUFFLD_SHARED_DATA, or "" (with *why set) when unavailable.
inline std::string SharedDataFile(const std::string& rel, std::string* why) {
  const char* root = std::getenv("TRUFFLD_SHARED_DATA");
  if (!root || !*root) {
    *why = "TRUFFLD_SHARED_DATA is not set; real traces unavailable";
    return {};
  }
  std::string p = std::string(root) + "/" + rel;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) {
    *why = p + " is absent; real-data test skipped";
    return {};
  }
  return p;
}

// Device ops whose correlation id matches an API call of the same process in the file.
inline uint64_t DeviceOpsWithLaunch(const TraceFile& tf) {
  std::unordered_set<uint64_t> keys;
  auto key = [](int64_t pid, int64_t corr) {
    return (static_cast<uint64_t>(pid) << 40) ^ static_cast<uint64_t>(corr);
  };
  for (const Event& e : tf.events)
    if (IsApiKind(e.kind) && tf.Correlation(e) != kNone) keys.insert(key(tf.ProcessOf(e), tf.Correlation(e)));
  uint64_t n = 0;
  for (const Event& e : tf.events)
    if (IsDeviceKind(e.kind) && tf.Correlation(e) != kNone && keys.count(key(tf.ProcessOf(e), tf.Correlation(e))))
      ++n;
  return n;
}

inline uint64_t CountKind(const TraceFile& tf, EventKind k) {
  uint64_t n = 0;
  for (const Event& e : tf.events) n += e.kind == k;
  return n;
}

// Device work and SYNC records: nodes timed on the device side of their launch.
inline bool IsDeviceOrSyncLayer(Layer l) { return IsDeviceLayer(l) || l == Layer::kSync; }

struct TreeFacts {
  uint64_t nodes_checked = 0;
  uint64_t host_outside_parent = 0;
  uint64_t device_before_launch = 0;
  uint64_t device_not_under_api = 0;
  std::string first_problem;
  std::unordered_set<uint64_t> device_events;  // unique (file, event) of device nodes
  std::unordered_set<uint64_t> kernel_events;
};

// Walks every tree of `m` and records the invariant checks.
inline TreeFacts WalkTrees(const MergeResult& m) {
  TreeFacts f;
  auto note = [&](const Node& n, const Node& p, const char* what) {
    if (f.first_problem.size() > 2000) return;
    f.first_problem += std::string(what) + ": '" + std::string(m.Name(n)) + "' [" +
                       std::to_string(m.Start(n)) + ", " + std::to_string(m.End(n)) + "] under '" +
                       std::string(m.Name(p)) + "' [" + std::to_string(m.Start(p)) + ", " +
                       std::to_string(m.End(p)) + "]\n";
  };
  std::vector<uint32_t> stack;
  for (const Tree& t : m.trees) {
    if (t.root == kNoNode) continue;
    stack.assign(1, t.root);
    while (!stack.empty()) {
      uint32_t pi = stack.back();
      stack.pop_back();
      const Node& p = m.node(pi);
      m.ForEachChild(pi, [&](uint32_t ci) {
        const Node& n = m.node(ci);
        ++f.nodes_checked;
        if (IsDeviceOrSyncLayer(n.layer)) {
          uint64_t k = (uint64_t{n.file} << 32) | n.event;
          f.device_events.insert(k);
          if (n.layer == Layer::kKernel) f.kernel_events.insert(k);
          if (p.layer != Layer::kRuntime && p.layer != Layer::kDriver) {
            ++f.device_not_under_api;
            note(n, p, "device node not under an API call");
          } else if (m.Start(n) < m.Start(p)) {
            ++f.device_before_launch;
            note(n, p, "device node starts before its launch");
          }
        } else if (m.Start(n) < m.Start(p) || m.End(n) > m.End(p)) {
          ++f.host_outside_parent;
          note(n, p, "host node outside its parent");
        }
        stack.push_back(ci);
      });
    }
  }
  return f;
}

// The invariants every merged real file must satisfy, given what the importer produced.
inline void ExpectMergeInvariants(const MergeResult& m, uint64_t kernels_read,
                                  uint64_t device_ops_read, uint64_t device_ops_with_launch) {
  const MergeCounters& c = m.summary.total;
  TreeFacts f = WalkTrees(m);
  EXPECT_GT(m.trees.size(), 0u);
  EXPECT_EQ(f.host_outside_parent, 0u) << f.first_problem;
  EXPECT_EQ(f.device_before_launch, 0u) << f.first_problem;
  EXPECT_EQ(f.device_not_under_api, 0u) << f.first_problem;
  EXPECT_EQ(c.kernels_read, kernels_read);
  EXPECT_EQ(c.device_ops_read, device_ops_read);
  // Unique kernels in trees + reported unattributed kernels = kernels read.
  EXPECT_EQ(f.kernel_events.size(), c.kernels_linked_unique);
  EXPECT_EQ(f.kernel_events.size() + c.kernels_unattributed, kernels_read);
  EXPECT_EQ(f.device_events.size() + c.device_ops_unattributed, device_ops_read);
  // Every device op whose correlation matches an API call of its process is linked.
  EXPECT_EQ(f.device_events.size(), device_ops_with_launch);
}

}  // namespace truffld::merge::realdata
