// The scanner's key table and memo helpers, private to raw_fast_scan.cc (split out to keep each
// file to one idea: this one is what a key means and how the memos are filled and replayed).
// All inline: FastScan's inner loop calls them per member.
#pragma once

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>

#include "importers/raw/raw_cursor.h"
#include "importers/raw/raw_fields.h"

namespace truffld::merge::raw::detail {

// What a key means to the scanner. Integer fields map to kIntBase + F.
enum KeyId : int {
  kUnknownKey = -1, kTypeKey = 100, kNameKey, kDomainKey, kCategoryKey, kCopyKindKey, kHostKey,
  kClockKey, kSchemaKey, kPayloadKey, kGridKey, kBlockKey, kRankKey, kSlowKey
};

// Fixed-size compares (inlined by the compiler) after a switch on length: no memcmp calls.
template <size_t N>
inline bool Is(std::string_view k, const char (&lit)[N]) {
  return std::memcmp(k.data(), lit, N - 1) == 0;
}

inline int KeyOf(std::string_view k) {
  switch (k.size()) {
    case 4:
      if (Is(k, "type")) return kTypeKey;
      if (Is(k, "name")) return kNameKey;
      if (Is(k, "grid")) return kGridKey;
      if (Is(k, "host")) return kHostKey;
      if (Is(k, "rank")) return kRankKey;
      if (Is(k, "cbid")) return kCbid;
      if (Is(k, "edge")) return kSlowKey;  // DEVICE_WINDOW (rare): the DOM reader's job
      return kUnknownKey;
    case 5:
      if (Is(k, "start")) return kStart;
      if (Is(k, "bytes")) return kBytes;
      if (Is(k, "block")) return kBlockKey;
      if (Is(k, "clock")) return kClockKey;
      return kUnknownKey;
    case 6:
      if (Is(k, "device")) return kDevice;
      if (Is(k, "stream")) return kStream;
      if (Is(k, "domain")) return kDomainKey;
      if (Is(k, "schema")) return kSchemaKey;
      return kUnknownKey;
    case 7: return Is(k, "gpu_end") ? int(kGpuEnd) : Is(k, "payload") ? int(kPayloadKey) : int(kUnknownKey);
    case 8:
      if (Is(k, "category")) return kCategoryKey;
      return IntField(k);
    case 9:
      if (Is(k, "copy_kind")) return kCopyKindKey;
      if (Is(k, "sync_kind")) return kCategoryKey;
      return IntField(k);
    case 10: return Is(k, "clock_sync") ? kSlowKey : IntField(k);
    case 13: return Is(k, "cupti_dropped") ? kSlowKey : IntField(k);
    case 15: return Is(k, "records_dropped") ? kSlowKey : kUnknownKey;
    default: return IntField(k);
  }
}

// A scalar value: kind and, for strings and integers, the value.
enum class Kind { kString, kInt, kNull, kBool, kArray, kObject, kBad };

__attribute__((always_inline)) inline Kind Value(Cursor& c, std::string_view* str, int64_t* num) {
  const char ch = c.Peek();
  if (ch == '"') { c.Eat('"'); return c.PlainString(str) ? Kind::kString : Kind::kBad; }
  if (ch == '-' || unsigned(ch - '0') < 10) return c.Integer(num) ? Kind::kInt : Kind::kBad;
  if (ch == 'n') return c.Literal("null") ? Kind::kNull : Kind::kBad;
  if (ch == 't') return c.Literal("true") ? Kind::kBool : Kind::kBad;
  if (ch == 'f') return c.Literal("false") ? Kind::kBool : Kind::kBad;
  if (ch == '[') return Kind::kArray;
  if (ch == '{') return Kind::kObject;
  return Kind::kBad;
}

// [i,i,...]: the first three integers land in out (as the DOM reader keeps them). Returns how
// many did (0-3), or -1 for anything else.
inline int IntArray(Cursor& c, int32_t out[3]) {
  if (!c.Eat('[')) return -1;
  if (c.Eat(']')) return 0;
  for (int i = 0;; ++i) {
    int64_t n;
    if (!c.Integer(&n)) return -1;
    if (i < 3) out[i] = static_cast<int32_t>(n);
    if (c.Eat(']')) return std::min(i + 1, 3);
    if (!c.Eat(',')) return -1;
  }
}

// Copies the n bytes at src into text[0, words) zero-padded, and sets mask[i] to the bytes of
// word i that count: the form remembered text is compared in (masked word compares).
inline void MaskedText(const char* src, size_t n, uint64_t* text, uint64_t* mask, size_t words) {
  std::memset(text, 0, 8 * words);
  std::memcpy(text, src, n);
  for (size_t i = 0; i < words; ++i) {
    const size_t have = n > 8 * i ? std::min<size_t>(n - 8 * i, 8) : 0;
    mask[i] = have == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * have)) - 1;
  }
}

// Remembers `key` (read at this position of a record of this type) for the next such record.
inline void Remember(std::string_view key, int id, KeyMemo::Key* slot) {
  const size_t n = key.size() + 3;  // '"', the key, '"' and ':' (as they stand in the line)
  if (n > sizeof slot->text) { slot->len = 0; return; }
  MaskedText(key.data() - 1, n, slot->text, slot->mask, std::size(slot->mask));
  slot->len = uint8_t(n);
  slot->id = int16_t(id);
}

// The memo slot of a record type (any spread will do: a clash costs speed only).
inline int TypeSlot(std::string_view t) {
  return t.empty() ? 0 : int((t.size() * 7 + uint8_t(t[0]) + 3u * uint8_t(t.back())) % KeyMemo::kTypes);
}


// `"type":"` as the word it loads as.
constexpr uint64_t kTypeKeyWord = 0x223A226570797422ull;
static_assert(kTypeKeyWord == ('"' | uint64_t('t') << 8 | uint64_t('y') << 16 | uint64_t('p') << 24 |
                               uint64_t('e') << 32 | uint64_t('"') << 40 | uint64_t(':') << 48 | uint64_t('"') << 56),
              "little-endian text of \"type\":\"");

// The bucket of a type member by the 7 bytes after `"type":"` (types of 4 bytes or more fill
// them with their own bytes, the quote, the comma and the next key's quote).
inline int TypeBucket(uint64_t w) {
  return int(((w & 0x00FFFFFFFFFFFFFFull) * 0x9E3779B97F4A7C15ull) >> 60) % KeyMemo::kTypeMembers;
}

// Remembers the type member that opened a record: `type` (a view into the line, at `"type":"`
// + 8) followed by `",`.
inline void RememberType(std::string_view type, int slot, KeyMemo* memo) {
  const size_t n = type.size() + 2;  // the quote and the comma
  if (type.size() < 4 || n > 16) return;
  uint64_t w;
  std::memcpy(&w, type.data(), 8);  // within the line: 16 bytes or more follow the type's quote
  KeyMemo::TypeMember& m = memo->types[TypeBucket(w)];
  MaskedText(type.data(), n, m.text, m.mask, std::size(m.mask));
  m.len = uint8_t(type.size());
  m.slot = uint8_t(slot);
  m.code = RecordTypeOf(type);
}

// The string field of *f that key id fills (kNameKey ... kSchemaKey), or nullptr.
inline std::string_view* StringField(int id, Fields* f) {
  switch (id) {
    case kNameKey: return &f->name;
    case kDomainKey: return &f->domain;
    case kCategoryKey: return &f->category;
    case kCopyKindKey: return &f->copy_kind;
    case kHostKey: return &f->host;
    case kClockKey: return &f->clock;
    case kSchemaKey: return &f->schema;
    default: return nullptr;
  }
}

// Applies a remembered tail's effects to *f; `at`: where the same bytes stand in this record.
inline void Replay(const KeyMemo::Tail& t, const char* at, Fields* f) {
  for (int i = 0; i < t.n_acts; ++i) {
    const KeyMemo::Tail::Act& a = t.acts[i];
    switch (a.kind) {
      case KeyMemo::Tail::kInt:
        f->has[a.id] = true;
        f->v[a.id] = a.n;
        break;
      case KeyMemo::Tail::kStr:
        *StringField(a.id, f) = std::string_view(at + a.off, a.len);  // logged for such ids only
        if (a.id == kNameKey) f->has_name = true;
        break;
      case KeyMemo::Tail::kNameNull: f->has_name = f->name_null = true; break;
      case KeyMemo::Tail::kRankNull: f->rank_null = true; break;
      case KeyMemo::Tail::kArray: {
        int32_t* dst = a.id == kGridKey ? f->grid : f->block;
        for (int k = 0; k < a.count; ++k) dst[k] = a.arr[k];
        break;
      }
    }
  }
}

// What one record's members did to Fields, written down while a tail is read (Learn) so the
// next records ending the same way can replay it (Replay).
struct ActLog {
  const char* base = nullptr;  // the tail's first byte: string offsets count from it
  KeyMemo::Tail::Act acts[KeyMemo::Tail::kMaxActs];
  int n = 0;
  bool overflow = false;
  KeyMemo::Tail::Act* Add(uint8_t kind, int id) {
    if (n == KeyMemo::Tail::kMaxActs) { overflow = true; return nullptr; }
    KeyMemo::Tail::Act* a = &acts[n++];
    *a = {};
    a->kind = kind;
    a->id = int16_t(id);
    return a;
  }
  void Str(int id, std::string_view s) {
    if (auto* a = Add(KeyMemo::Tail::kStr, id)) { a->off = uint16_t(s.data() - base); a->len = uint16_t(s.size()); }
  }
};

// Where a record's members start and what they were, for Learn.
struct MemberScan {
  static constexpr int kMaxStarts = 24;
  uint32_t starts[kMaxStarts];  // each member's first byte, from the line's start (the first kMaxStarts)
  int n = 0;                    // members read; -1 when a remembered tail was replayed
  int type_index = -1;          // the (last) type member's index
  int type_slot = -1;           // the memo slot of the first type member's type
};

}  // namespace truffld::merge::raw::detail
