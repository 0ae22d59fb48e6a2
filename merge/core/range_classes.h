// RangeClasses: the class (layer, operator family, request ids) of each host range's name, as
// the rules give it, with the caches that keep the rules off the hot path.
//
// Every range is looked at twice (the tree builder's Classify wants its layer, EmitNodes its
// family and request ids), and a dump repeats a few hundred names: those are cached by
// (name, domain, category), for at most kMaxCached of them, with a small direct-mapped front.
//
// Profilers number each operator call ("aten::mm, seq = 1234, op_id = 56789"), so most names of
// a realistic dump never repeat and would miss that cache. They share a second cache keyed by
// the name's *shape*: the name with every digit after its first ", " written as '0' (lengths
// kept). That is exact, not a guess, under conditions checked here:
//  - the rules are number-blind (Rules::NumberBlind: no regex can tell names of one shape
//    apart), so names of one shape get one layer and match the request regex alike;
//  - the layer is a rule layer (step, frontend, backend, comm, other), whose family is "step"
//    or the name cut at its first separator, which lies at or before that ", ";
//  - the name names no request ids (a shape entry holds none);
//  - the name is at most kMaxShapedName bytes (building the key stays cheap).
// A differential test (range_classes_test) compares both caches against the rules.
//
// Thread-safety: none; one per tree builder. Interns families into the file's string pool.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "truffld/merge/classify.h"
#include "truffld/merge/string_pool.h"

namespace truffld::merge {

struct RangeClass {
  Layer layer = Layer::kOther;
  StrId family = kNoStr;
  std::vector<std::string> requests;  // ids this range's name names (empty: none)
};

// The name, domain and category a range is classified by (string ids of one pool).
struct ClassKey {
  StrId name = kNoStr, domain = kNoStr, category = kNoStr;
  bool operator==(const ClassKey& o) const { return name == o.name && domain == o.domain && category == o.category; }
};

class RangeClasses {
 public:
  // Where LayerOf found a range's class; ClassFor goes back there.
  enum class Source : uint8_t { kByName, kByShape, kNone };
  static constexpr size_t kMaxCached = size_t{1} << 16;  // per cache, by default
  static constexpr size_t kMaxShapedName = 256;           // bytes

  // `rules` and `strings` must outlive this object. `max_cached`: entries per cache (tests
  // make it small to reach what happens when the caches are full).
  RangeClasses(const Rules& rules, StringPool& strings, size_t max_cached = kMaxCached);

  // The layer the rules give the range; *src says where its class is kept now (kNone: not
  // cached, and never will be).
  Layer LayerOf(const ClassKey& k, Source* src);

  // Family (for `layer`, the range's final layer) and request ids of the range's name. Valid
  // until the next call. Equal to normalising the name for `layer` and parsing its request ids.
  // `src`: what LayerOf said for this range.
  const RangeClass& ClassFor(const ClassKey& k, Layer layer, Source src);

  // Tests: how many lookups each cache answered.
  uint64_t by_name_hits() const { return by_name_hits_; }
  uint64_t by_shape_hits() const { return by_shape_hits_; }

 private:
  struct KeyHash {
    size_t operator()(const ClassKey& t) const noexcept {
      return (size_t(t.name) * 0x9E3779B97F4A7C15ull) ^ (size_t(t.domain) * 0xC2B2AE3D27D4EB4Full) ^
             (size_t(t.category) << 42) ^ t.category;
    }
  };
  struct ShapeClass { Layer layer = Layer::kOther; StrId family = kNoStr; };
  // The shape classes of the names seen last, by name (kNoStr family: empty): numbered names
  // that repeat (a dump whose operator names carry fixed numbers) skip building the key.
  struct ShapeSlot { ClassKey key; ShapeClass cls; };

  const RangeClass* ByName(const ClassKey& k);
  // Builds k's shape key into shape_key_ and returns the length of the name's part that every
  // name of its shape shares (through the first ", "); 0 when the name has no shape (above).
  size_t ShapeKey(const ClassKey& k);
  const ShapeClass* ByShape();
  ShapeSlot& ShapeSlotOf(const ClassKey& k);         // k's slot in shape_front_
  const ShapeSlot* ShapeFront(const ClassKey& k);    // the slot when it holds k's class
  // Keeps rc by k's name while the cache has room (then *src = kByName).
  void KeepByName(const ClassKey& k, RangeClass rc, Source* src);

  const Rules& rules_;
  StringPool& strings_;
  const bool number_blind_;
  const size_t max_cached_;
  std::unordered_map<ClassKey, RangeClass, KeyHash> by_name_;
  std::vector<bool> named_;  // per name id: may be in by_name_ (spares most missing lookups)
  static constexpr size_t kFrontSlots = 1024;
  struct Slot { ClassKey key; const RangeClass* rc = nullptr; };
  std::array<Slot, kFrontSlots> front_{};
  std::unordered_map<std::string, ShapeClass> by_shape_;
  std::array<ShapeSlot, kFrontSlots> shape_front_{};
  std::string shape_key_;
  RangeClass scratch_;
  uint64_t by_name_hits_ = 0, by_shape_hits_ = 0;
};

}  // namespace truffld::merge
