// The field values of one raw-dump record, as RawLineParser's two readers deliver them: the
// fast scanner (raw_fast_scan.cc) for the plain records that make up nearly all of a dump, and
// the simdjson DOM reader (raw_parser.cc) for everything else. Both fill the same struct with
// the same rules, and one function turns it into an Event.
// Pure data. String views point into the line (fast scanner) or the DOM (slow path) and live
// until the next line is parsed.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "truffld/time.h"
#include "truffld/wire.h"

namespace truffld::merge::raw {

enum F : int {
  kTimestamp, kStart, kEnd, kGpuStart, kGpuEnd, kDuration, kProcess, kThread, kCorr, kId,
  kCbid, kRet, kBytes, kDevice, kStream, kGraph, kGraphNode, kOrigGraphNode, kRank,
  kLocalRank, kWorldSize, kCategoryNum, kCount
};

// Record types and their spelling: the shared wire vocabulary (truffld/wire.h).
using truffld::RecordType;
using truffld::RecordTypeOf;

// Field values of one record, collected in one pass over its keys in order (a key seen twice:
// the later value wins; the `type` may come last).
struct Fields {
  std::string_view type, name, domain, category, copy_kind, payload, host, clock, schema;
  std::string_view edge;  // DEVICE_WINDOW: "start" or "end" (DOM reader only)
  // RecordTypeOf(type) when a reader knew it without comparing (a remembered type member);
  // otherwise unset, and the caller works it out.
  bool type_code_set = false;
  RecordType type_code = RecordType::kUnknown;
  bool has_name = false, name_null = false;
  bool has[kCount] = {};
  int64_t v[kCount];  // v[i] is read only where has[i]: left unset (one Fields per input line)
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  std::vector<std::pair<TimeNs, TimeNs>> clock_sync;
  bool rank_null = false;
  bool device_sampled = false;  // META.config.device_windows is not "all" (DOM reader only)
  bool device_all = false;      // META.config.device_windows is "all" (DOM reader only)
  uint64_t dropped = 0;
  bool has_dropped = false;
};

// Integer field for a key, or -1: a switch on length and first byte, then one compare, so
// the hot path does not scan a key table.
inline int IntField(std::string_view k) {
  auto is = [&](const char* lit, F f) { return k == lit ? int(f) : -1; };
  switch (k.size()) {
    case 2: return is("id", kId);
    case 3: return k[0] == 'e' ? is("end", kEnd) : -1;
    case 4: return is("cbid", kCbid);
    case 5: return k[0] == 's' ? is("start", kStart) : is("bytes", kBytes);
    case 6: return k[0] == 'd' ? is("device", kDevice) : is("stream", kStream);
    case 7: return is("gpu_end", kGpuEnd);
    case 8: return k[0] == 'd' ? is("duration", kDuration) : is("graph_id", kGraph);
    case 9: return k[0] == 't' ? (k[1] == 'i' ? is("timestamp", kTimestamp) : is("thread_id", kThread))
                               : is("gpu_start", kGpuStart);
    case 10: return k[0] == 'p' ? is("process_id", kProcess) : k[0] == 'l' ? is("local_rank", kLocalRank)
                                                                           : is("world_size", kWorldSize);
    case 11: return is("return_code", kRet);
    case 13: return is("graph_node_id", kGraphNode);
    case 14: return is("correlation_id", kCorr);
    case 22: return is("original_graph_node_id", kOrigGraphNode);
    default: return -1;
  }
}

// The keys of the last plain record of each type, in order, remembered so the next record of
// that type can recognise each key with one compare against `"key":` instead of scanning for
// its closing quote and looking it up (a dump is millions of records with a handful of key
// layouts). Only speed depends on it: a key that does not match its remembered text is read
// the ordinary way. Record types share slots by a hash of the type name; a clash only misses.
struct KeyMemo {
  static constexpr int kTypes = 16, kKeys = 16, kMaxText = 32;
  struct Key {
    // The key between its quotes and the colon, zero-padded; `mask` keeps the bytes that count,
    // so a match is four masked word compares.
    uint64_t text[kMaxText / 8] = {};
    uint64_t mask[kMaxText / 8] = {};
    uint8_t len = 0;  // bytes that count; 0 = nothing remembered
    int16_t id = 0;   // what the key means to the scanner
  };
  Key keys[kTypes][kKeys];

  // The members at the end of the last record of a type that the record before it ended with
  // too ("process_id":P,"thread_id":T} on every record of a thread, a kernel's launch geometry),
  // and what reading them did to Fields: when the next record of the type ends with exactly
  // those bytes, from a member boundary on, the scanner replays the effects instead of reading
  // the members (identical text reads identically). Only speed depends on it.
  struct Tail {
    static constexpr int kMaxText = 160, kMaxActs = 12;
    enum ActKind : uint8_t { kInt, kStr, kNameNull, kRankNull, kArray };
    struct Act {
      int64_t n = 0;                // kInt
      int32_t arr[3] = {0, 0, 0};   // kArray: the first `count` elements
      uint16_t off = 0, len = 0;    // kStr: the string's bytes, from the tail's start
      int16_t id = 0;               // F for kInt, the scanner's key id otherwise
      uint8_t kind = kInt, count = 0;
    };
    int at = -1;                    // member index where the tail starts; -1: none
    uint16_t len = 0;               // bytes of text
    uint8_t n_acts = 0;
    uint8_t misses = 0;             // records in a row that taught nothing (then learn less often)
    uint8_t skip = 0;
    char text[kMaxText];
    Act acts[kMaxActs];
    uint16_t prev_len = 0;          // the last bytes of the previous record of this type
    char prev[kMaxText];
  };
  Tail tails[kTypes];

  // Records that open with `{"type":"T",`: T's bytes with the closing quote and comma (at most
  // 16 bytes in all), found by the 7 bytes after `"type":"`; a match stands for reading the
  // type member (key, value, type slot) in two word compares.
  struct TypeMember {
    uint64_t text[2] = {};
    uint64_t mask[2] = {};
    uint8_t len = 0;   // the type's length; 0 = nothing remembered
    uint8_t slot = 0;  // its slot in keys and tails
    RecordType code = RecordType::kUnknown;
  };
  static constexpr int kTypeMembers = 16;
  TypeMember types[kTypeMembers];
};

// Reads `line` into *f when it is a plain record: one compact JSON object (no whitespace
// between tokens) whose keys and string values are printable ASCII without escapes, whose
// numbers are integers that fit int64, whose grid/block are arrays of three such integers, and
// which holds no other arrays or objects. Returns false, with *f unspecified, for anything
// else; the caller then reads the line with the full JSON parser, which reports problems.
// `memo`, when given, speeds up the next records (it never changes what is read).
// Thread-safety: pure function apart from *memo, which belongs to one caller.
bool FastScan(std::string_view line, Fields* f, KeyMemo* memo = nullptr);

}  // namespace truffld::merge::raw
