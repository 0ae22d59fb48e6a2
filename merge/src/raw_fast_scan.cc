// FastScan: the plain-record reader of RawLineParser (see raw_fields.h).
//
// A dump is millions of records of one shape: a flat object of ASCII strings and integers
// written by the injector. Reading those with a general JSON parser (building a DOM, then
// looking fields up) was two thirds of the import time; this reader walks the line once,
// accepting only a strict subset of JSON, so anything it accepts is valid JSON that the DOM
// reader would read to the same Fields (a differential test and the raw-line fuzzer check this).
// Whatever it does not accept goes to the DOM reader, which handles and reports the rest.
// Two memos (KeyMemo, per record type) only make it faster: each member's key is first compared
// with the key the last record of the type had at that position, and a record that ends with
// the same bytes as the last one did, from a member on, replays what reading them did (on the
// 1 M-event bench dump: 1,124 -> ~750 instructions a line, a whole merge 3.77 -> 3.43 G).
#include <algorithm>
#include <cstring>
#include <iterator>

#include "raw_cursor.h"
#include "raw_fields.h"

namespace truffld::merge::raw {
namespace {

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
int IntArray(Cursor& c, int32_t out[3]) {
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
void MaskedText(const char* src, size_t n, uint64_t* text, uint64_t* mask, size_t words) {
  std::memset(text, 0, 8 * words);
  std::memcpy(text, src, n);
  for (size_t i = 0; i < words; ++i) {
    const size_t have = n > 8 * i ? std::min<size_t>(n - 8 * i, 8) : 0;
    mask[i] = have == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * have)) - 1;
  }
}

// Remembers `key` (read at this position of a record of this type) for the next such record.
void Remember(std::string_view key, int id, KeyMemo::Key* slot) {
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
void RememberType(std::string_view type, int slot, KeyMemo* memo) {
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
std::string_view* StringField(int id, Fields* f) {
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
void Replay(const KeyMemo::Tail& t, const char* at, Fields* f) {
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

// The members of a record after its '{' (first key expected at the cursor) up to its '}' and
// the end of the line, noted in *scan. When scan->type_slot is set on entry, FastScan read the
// first member (the type) from its memo and reading starts at the second. With a log (kLog),
// every effect on *f is also written there and a "type" member fails (its effect is never
// replayed); the member starts are not kept.
template <bool kLog>
__attribute__((always_inline)) inline bool Members(Cursor& c, const char* begin, Fields* f, KeyMemo* memo,
                                                   MemberScan* scan, ActLog* log) {
  KeyMemo::Key* remembered = nullptr;  // this record type's remembered keys, once the type is read
  KeyMemo::Tail* tail = nullptr;       // and its remembered tail
  const int first = scan->type_slot >= 0 ? 1 : 0;
  if (first) {
    remembered = memo->keys[scan->type_slot];
    tail = &memo->tails[scan->type_slot];
  }
  for (int index = first;; ++index) {
    if (tail && index == tail->at && c.left() == tail->len && std::memcmp(c.pos(), tail->text, tail->len) == 0) {
      Replay(*tail, c.pos(), f);
      tail->misses = 0;
      scan->n = -1;  // nothing to learn from
      return true;
    }
    if (!kLog && index < MemberScan::kMaxStarts) scan->starts[index] = uint32_t(c.pos() - begin);
    std::string_view key, s;
    int64_t n = 0;
    KeyMemo::Key* slot = remembered && index < KeyMemo::kKeys ? &remembered[index] : nullptr;
    int id;
    if (slot && slot->len && c.Match(*slot)) {
      id = slot->id;
    } else {
      if (!c.Eat('"') || !c.PlainString(&key) || !c.Eat(':')) return false;
      id = KeyOf(key);
      if (slot) Remember(key, id, slot);
    }
    if (unsigned(id) < unsigned(kCount)) {  // an integer field (the most common): integer or null
      if (c.Peek() == 'n') {
        if (!c.Literal("null")) return false;
      } else {
        if (!c.Integer(&n)) return false;
        f->has[id] = true;
        f->v[id] = n;
        if (kLog) if (auto* a = log->Add(KeyMemo::Tail::kInt, id)) a->n = n;
      }
    } else if (id == kGridKey || id == kBlockKey) {
      int32_t* dst = id == kGridKey ? f->grid : f->block;
      if (c.Peek() == '[') {
        const int got = IntArray(c, dst);
        if (got < 0) return false;
        if (kLog) if (auto* a = log->Add(KeyMemo::Tail::kArray, id)) {
          a->count = uint8_t(got);
          std::memcpy(a->arr, dst, sizeof a->arr);
        }
      } else {
        const Kind k = Value(c, &s, &n);  // not an array: ignored, as the DOM reader does
        if (k == Kind::kBad || k == Kind::kArray || k == Kind::kObject) return false;
      }
    } else {
      const Kind k = Value(c, &s, &n);
      if (k == Kind::kBad || k == Kind::kArray || k == Kind::kObject) return false;
      auto str = [&](std::string_view* dst) {
        if (k == Kind::kString) {
          *dst = s;
          if (kLog) log->Str(id, s);
          return true;
        }
        return k == Kind::kNull;  // null: left as it is
      };
      switch (id) {
        case kTypeKey:
          if (kLog || k != Kind::kString) return false;
          f->type = s;
          f->type_code_set = false;  // a later type member wins over a remembered first one
          scan->type_index = index;
          if (memo && !remembered) {
            scan->type_slot = TypeSlot(s);
            remembered = memo->keys[scan->type_slot];
            tail = &memo->tails[scan->type_slot];
            if (index == 0 && c.left() >= 16 && c.Peek() == ',') RememberType(s, scan->type_slot, memo);
          }
          break;
        case kNameKey:
          if (k == Kind::kNull) {
            f->has_name = f->name_null = true;
            if (kLog) log->Add(KeyMemo::Tail::kNameNull, id);
          } else if (k == Kind::kString) {
            f->has_name = true;
            f->name = s;
            if (kLog) log->Str(id, s);
          } else {
            return false;
          }
          break;
        case kDomainKey: case kCategoryKey: case kCopyKindKey: case kHostKey: case kClockKey: case kSchemaKey:
          if (!str(StringField(id, f))) return false;
          break;
        case kPayloadKey: break;  // only an object payload is read (by the DOM reader)
        case kSlowKey: return false;  // META/STATS details: the DOM reader's job
        case kRankKey:
          if (k == Kind::kNull) {
            f->rank_null = true;
            if (kLog) log->Add(KeyMemo::Tail::kRankNull, id);
          } else if (k == Kind::kInt) {
            f->has[kRank] = true;
            f->v[kRank] = n;
            if (kLog) if (auto* a = log->Add(KeyMemo::Tail::kInt, kRank)) a->n = n;
          } else {
            return false;
          }
          break;
        default: break;  // other keys: any scalar is skipped
      }
    }
    if (c.Eat(',')) continue;  // most fields have another after them
    scan->n = index + 1;
    return c.Eat('}') && c.AtEnd();
  }
}

// Remembers the members of `line` (as Members found them) that the previous record of its type
// ended with too, reading them again with a log; then keeps this record's last bytes for the
// next one. Records that keep teaching nothing make it try only every 16th time.
void Learn(KeyMemo::Tail* t, std::string_view line, const MemberScan& scan) {
  using Tail = KeyMemo::Tail;
  if (t->misses >= 16 && (++t->skip & 15) != 0) return;
  const size_t max = std::min(line.size(), size_t(t->prev_len));
  const char* a = line.data() + line.size();
  const char* b = t->prev + t->prev_len;
  size_t common = 0;  // bytes that end both records
  for (uint64_t x, y; common + 8 <= max; common += 8) {
    std::memcpy(&x, a - common - 8, 8);
    std::memcpy(&y, b - common - 8, 8);
    if (x != y) break;
  }
  while (common < max && a[-1 - ptrdiff_t(common)] == b[-1 - ptrdiff_t(common)]) ++common;
  bool learned = false;
  for (int m = scan.type_index + 1; m < std::min(scan.n, MemberScan::kMaxStarts); ++m) {
    const size_t len = line.size() - scan.starts[m];
    if (len > common) continue;  // the earliest member the two records end the same from
    Cursor c(line.substr(scan.starts[m]));
    ActLog log;
    log.base = c.pos();
    Fields scratch;
    MemberScan unused;
    if (Members<true>(c, log.base, &scratch, nullptr, &unused, &log) && !log.overflow) {
      t->at = m;
      t->len = uint16_t(len);
      std::memcpy(t->text, log.base, len);
      t->n_acts = uint8_t(log.n);
      std::copy(log.acts, log.acts + log.n, t->acts);
      learned = true;
    }
    break;
  }
  if (learned) {
    t->misses = 0;
  } else {
    t->at = -1;
    if (t->misses < 255) ++t->misses;
  }
  t->prev_len = uint16_t(std::min<size_t>(line.size(), Tail::kMaxText));
  std::memcpy(t->prev, line.data() + line.size() - t->prev_len, t->prev_len);
}

}  // namespace

bool FastScan(std::string_view line, Fields* f, KeyMemo* memo) {
  Cursor c(line);
  if (!c.Eat('{')) return false;
  if (c.Eat('}')) return c.AtEnd();
  MemberScan scan;
  if (memo && c.left() >= 24) {  // `"type":"T",` as a record opened before: two word compares
    uint64_t w[3];
    std::memcpy(w, c.pos(), sizeof w);
    if (w[0] == kTypeKeyWord) {
      const KeyMemo::TypeMember& m = memo->types[TypeBucket(w[1])];
      if (m.len && ((w[1] ^ m.text[0]) & m.mask[0]) == 0 && ((w[2] ^ m.text[1]) & m.mask[1]) == 0) {
        scan.starts[0] = uint32_t(c.pos() - line.data());
        f->type = std::string_view(c.pos() + 8, m.len);
        f->type_code = m.code;
        f->type_code_set = true;
        c.Skip(8 + m.len + 2);
        scan.type_index = 0;
        scan.type_slot = m.slot;
      }
    }
  }
  if (!Members<false>(c, line.data(), f, memo, &scan, nullptr)) return false;
  if (memo && scan.type_slot >= 0 && scan.n > 0) Learn(&memo->tails[scan.type_slot], line, scan);
  return true;
}

}  // namespace truffld::merge::raw
