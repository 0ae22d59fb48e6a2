// The wire vocabulary shared by every stage, defined once: the record types of the raw event
// contract (../shared/contract/events-v1.md, schemas/events.schema.json) and the node layers of
// trees.jsonl (schemas/trees.schema.json), with their spellings.
//
// The injector and truffld-synth write these records, truffld-merge reads them and writes the
// layers, truffld-diagnose reads the layers. Pure constants and functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace truffld {

// Raw record types ("type" field). kUnknown stands for any other text.
enum class RecordType : uint8_t {
  kUnknown, kMeta, kClock, kStats, kNvtxPush, kNvtxMark, kNvtxStart, kNvtxPop, kNvtxEnd, kNvtxMarker,
  kRuntime, kDriver, kKernel, kMemcpy, kMemset, kSync, kGraphNode, kDeviceWindow,
};
inline constexpr int kRecordTypeCount = int(RecordType::kDeviceWindow) + 1;

// The contract spelling ("META", "NVTX_PUSH", ...); "" for kUnknown.
constexpr std::string_view RecordTypeName(RecordType t) noexcept {
  constexpr std::string_view kNames[kRecordTypeCount] = {
      "", "META", "CLOCK", "STATS", "NVTX_PUSH", "NVTX_MARK", "NVTX_START", "NVTX_POP", "NVTX_END",
      "NVTX_MARKER", "RUNTIME", "DRIVER", "KERNEL", "MEMCPY", "MEMSET", "SYNC", "GRAPH_NODE",
      "DEVICE_WINDOW"};
  return int(t) < kRecordTypeCount ? kNames[int(t)] : std::string_view();
}

// The type spelled `text`; kUnknown for anything else.
constexpr RecordType RecordTypeOf(std::string_view text) noexcept {
  for (int t = 1; t < kRecordTypeCount; ++t)
    if (RecordTypeName(RecordType(t)) == text) return RecordType(t);
  return RecordType::kUnknown;
}

// Tree node layers, in trees.schema.json's order.
enum class Layer : uint8_t {
  kStep, kFrontend, kBackend, kComm, kOther,
  kRuntime, kDriver, kKernel, kMemcpy, kMemset, kSync,
};
inline constexpr uint32_t kLayerCount = uint32_t(Layer::kSync) + 1;  // for tables indexed by layer

// "step", "frontend_op", "backend_op", "comm", "other", "runtime_call", "driver_call", "kernel",
// "memcpy", "memset", "sync".
constexpr const char* LayerName(Layer l) noexcept {
  constexpr const char* kNames[kLayerCount] = {"step",         "frontend_op", "backend_op", "comm",
                                               "other",        "runtime_call", "driver_call", "kernel",
                                               "memcpy",       "memset",       "sync"};
  return uint32_t(l) < kLayerCount ? kNames[uint32_t(l)] : "other";
}

// Parses a layer name (also the short "frontend" / "backend"). False when unknown.
constexpr bool ParseLayerName(std::string_view s, Layer* out) noexcept {
  for (uint32_t i = 0; i < kLayerCount; ++i)
    if (s == LayerName(Layer(i))) { *out = Layer(i); return true; }
  if (s == "frontend") { *out = Layer::kFrontend; return true; }
  if (s == "backend") { *out = Layer::kBackend; return true; }
  return false;
}

// Device work (kernels, copies, memsets) and API calls (runtime, driver), as layers.
constexpr bool IsDeviceLayer(Layer l) noexcept { return l == Layer::kKernel || l == Layer::kMemcpy || l == Layer::kMemset; }
constexpr bool IsApiLayer(Layer l) noexcept { return l == Layer::kRuntime || l == Layer::kDriver; }

}  // namespace truffld
