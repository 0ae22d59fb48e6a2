// FastScan: the plain-record reader of RawLineParser (see raw_fields.h).
//
// A dump is millions of records of one shape: a flat object of ASCII strings and integers
// written by the injector. Reading those with a general JSON parser (building a DOM, then
// looking fields up) was two thirds of the import time; this reader walks the line once,
// accepting only a strict subset of JSON, so anything it accepts is valid JSON that the DOM
// reader would read to the same Fields (a differential test and the raw-line fuzzer check this).
// Whatever it does not accept goes to the DOM reader, which handles and reports the rest.
#include <algorithm>
#include <cstring>
#include <iterator>

#include "json_bytes.h"
#include "raw_fields.h"

namespace truffld::merge::raw {
namespace {

// Eight ASCII digits in one little-endian word (timestamps have 19): the check and the
// three-multiply conversion are the usual SWAR ones.
// Each byte of the result is 0 where w holds a digit. A carry out of `+ 6` can only disturb
// bytes after a non-digit, so the first non-zero byte (little-endian) is always exact.
inline uint64_t NonDigits(uint64_t w) {
  return ((w & 0xF0F0F0F0F0F0F0F0ull) | (((w + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ^
         0x3333333333333333ull;
}
inline bool AllDigits(uint64_t w) { return NonDigits(w) == 0; }

constexpr uint64_t kPow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

__attribute__((always_inline)) inline uint64_t EightDigits(uint64_t w) {
  w -= 0x3030303030303030ull;
  w = w * 10 + (w >> 8);
  return (((w & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
          (((w >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
}

// The first k (1-7) digits of word x, as a number: shifted to the top behind '0' padding.
__attribute__((always_inline)) inline uint64_t HeadDigits(uint64_t x, unsigned k) {
  return EightDigits((x << (64 - 8 * k)) | (0x3030303030303030ull >> (8 * k)));
}

class Cursor {
 public:
  explicit Cursor(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  bool Eat(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool AtEnd() const { return p_ == end_; }
  char Peek() const { return p_ == end_ ? '\0' : *p_; }

  // After the opening quote: a string of printable ASCII without escapes, up to its closing
  // quote (consumed). False for anything else.
  __attribute__((always_inline)) bool PlainString(std::string_view* out) {
    const char* s = p_;
    const char* q = s + JsonPlainPrefix(s, size_t(end_ - s));
    return q != end_ && Close(s, q, out);
  }

  // -?(0|[1-9][0-9]*) that fits int64, followed by ',', '}' or ']' (not consumed).
  __attribute__((always_inline)) bool Integer(int64_t* out) {
    const bool neg = Eat('-');
    if (end_ - p_ >= 24) return WordInteger(neg, out);
    const char* s = p_;
    uint64_t v = 0;  // wraps beyond 19 digits, which are refused below
    uint64_t w = 0;
    for (; end_ - p_ >= 8 && (std::memcpy(&w, p_, 8), AllDigits(w)); p_ += 8)
      v = v * 100000000 + EightDigits(w);
    if (end_ - p_ >= 8) {
      // The 0-7 digits left, in one go.
      const unsigned n = unsigned(__builtin_ctzll(NonDigits(w))) / 8;  // not all digits: non-zero
      if (n) {
        v = v * kPow10[n] + HeadDigits(w, n);
        p_ += n;
      }
    } else {
      while (p_ != end_ && unsigned(*p_ - '0') < 10) v = v * 10 + unsigned(*p_++ - '0');
    }
    const size_t digits = size_t(p_ - s);
    if (digits == 0 || digits > 19 || (digits > 1 && *s == '0')) return false;
    const char c = Peek();
    if (c != ',' && c != '}' && c != ']') return false;
    if (v > uint64_t(INT64_MAX) + (neg ? 1 : 0)) return false;
    *out = neg ? int64_t(0 - v) : int64_t(v);
    return true;
  }

  // Integer's common case, with 24 bytes or more left: up to 19 digits lie in the three words
  // at the cursor, and the byte after the last digit too. Each word is checked and converted
  // once, without a loop: timestamps (19 digits) are most of a dump's integers.
  __attribute__((always_inline)) bool WordInteger(bool neg, int64_t* out) {
    uint64_t w[3];
    std::memcpy(w, p_, sizeof w);
    const uint64_t n0 = NonDigits(w[0]);
    uint64_t v;
    unsigned digits;
    uint64_t next;  // the word holding the byte after the digits, that byte at the bottom
    if (n0) {
      digits = unsigned(__builtin_ctzll(n0)) / 8;
      if (digits == 0) return false;
      v = HeadDigits(w[0], digits);
      next = w[0] >> (8 * digits);
    } else if (const uint64_t n1 = NonDigits(w[1])) {
      const unsigned k = unsigned(__builtin_ctzll(n1)) / 8;
      v = EightDigits(w[0]);
      if (k) v = v * kPow10[k] + HeadDigits(w[1], k);
      digits = 8 + k;
      next = w[1] >> (8 * k);
    } else {
      const uint64_t n2 = NonDigits(w[2]);
      const unsigned k = n2 ? unsigned(__builtin_ctzll(n2)) / 8 : 8;
      if (k > 3) return false;  // over 19 digits
      v = EightDigits(w[0]) * 100000000 + EightDigits(w[1]);
      if (k) v = v * kPow10[k] + HeadDigits(w[2], k);  // 19 digits: below 2^64, checked below
      digits = 16 + k;
      next = w[2] >> (8 * k);
    }
    // The same checks as Integer's last lines, written out again: a shared helper for both cost
    // 0.6 % more instructions on a whole merge (callgrind, 1 M dump).
    if (digits > 1 && *p_ == '0') return false;
    const char c = char(next & 0xFF);
    if (c != ',' && c != '}' && c != ']') return false;
    if (v > uint64_t(INT64_MAX) + (neg ? 1 : 0)) return false;
    p_ += digits;
    *out = neg ? int64_t(0 - v) : int64_t(v);
    return true;
  }

  // The bytes at the cursor are k's text: consumed, true.
  __attribute__((always_inline)) bool Match(const KeyMemo::Key& k) {
    const size_t n = k.len;
    if (size_t(end_ - p_) >= sizeof k.text) {
      // As many words as the key fills (most keys, quotes and colon included, fit in one or two).
      uint64_t w[4];
      std::memcpy(w, p_, sizeof w);
      uint64_t diff = (w[0] ^ k.text[0]) & k.mask[0];
      if (n > 8) {
        diff |= (w[1] ^ k.text[1]) & k.mask[1];
        if (n > 16) diff |= ((w[2] ^ k.text[2]) & k.mask[2]) | ((w[3] ^ k.text[3]) & k.mask[3]);
      }
      if (diff) return false;
    } else if (size_t(end_ - p_) < n || std::memcmp(p_, k.text, n) != 0) {
      return false;
    }
    p_ += n;
    return true;
  }

  template <size_t N>
  bool Literal(const char (&lit)[N]) {
    if (size_t(end_ - p_) < N - 1 || std::memcmp(p_, lit, N - 1) != 0) return false;
    p_ += N - 1;
    return true;
  }

 private:
  bool Close(const char* s, const char* q, std::string_view* out) {
    if (*q != '"') return false;  // an escape, a control or non-ASCII byte: not plain
    *out = std::string_view(s, size_t(q - s));
    p_ = q + 1;
    return true;
  }

  const char* p_;
  const char* end_;
};

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

// [i,i,...]: the first three integers land in out (as the DOM reader keeps them).
bool IntArray(Cursor& c, int32_t out[3]) {
  if (!c.Eat('[')) return false;
  if (c.Eat(']')) return true;
  for (int i = 0;; ++i) {
    int64_t n;
    if (!c.Integer(&n)) return false;
    if (i < 3) out[i] = static_cast<int32_t>(n);
    if (c.Eat(']')) return true;
    if (!c.Eat(',')) return false;
  }
}

// A string-valued field that may also be null (then left empty).
bool StringOrNull(Kind k, std::string_view s, std::string_view* dst) {
  if (k == Kind::kString) { *dst = s; return true; }
  return k == Kind::kNull;
}

// Remembers `key` (read at this position of a record of this type) for the next such record.
void Remember(std::string_view key, int id, KeyMemo::Key* slot) {
  const size_t n = key.size() + 3;  // '"', the key, '"' and ':' (as they stand in the line)
  if (n > sizeof slot->text) { slot->len = 0; return; }
  std::memset(slot->text, 0, sizeof slot->text);
  std::memcpy(slot->text, key.data() - 1, n);
  for (size_t i = 0; i < std::size(slot->mask); ++i) {
    const size_t have = n > 8 * i ? std::min<size_t>(n - 8 * i, 8) : 0;
    slot->mask[i] = have == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * have)) - 1;
  }
  slot->len = uint8_t(n);
  slot->id = int16_t(id);
}

// The memo slot of a record type (any spread will do: a clash costs speed only).
inline int TypeSlot(std::string_view t) {
  return t.empty() ? 0 : int((t.size() * 7 + uint8_t(t[0]) + 3u * uint8_t(t.back())) % KeyMemo::kTypes);
}

}  // namespace

bool FastScan(std::string_view line, Fields* f, KeyMemo* memo) {
  Cursor c(line);
  if (!c.Eat('{')) return false;
  if (c.Eat('}')) return c.AtEnd();
  KeyMemo::Key* remembered = nullptr;  // this record type's remembered keys, once the type is read
  for (int index = 0;; ++index) {
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
      }
    } else if (id == kGridKey || id == kBlockKey) {
      int32_t* dst = id == kGridKey ? f->grid : f->block;
      if (c.Peek() == '[') {
        if (!IntArray(c, dst)) return false;
      } else {
        const Kind k = Value(c, &s, &n);  // not an array: ignored, as the DOM reader does
        if (k == Kind::kBad || k == Kind::kArray || k == Kind::kObject) return false;
      }
    } else {
      const Kind k = Value(c, &s, &n);
      if (k == Kind::kBad || k == Kind::kArray || k == Kind::kObject) return false;
      switch (id) {
        case kTypeKey:
          if (k != Kind::kString) return false;
          f->type = s;
          if (memo && !remembered) remembered = memo->keys[TypeSlot(s)];
          break;
        case kNameKey:
          if (k == Kind::kNull) { f->has_name = f->name_null = true; }
          else if (k == Kind::kString) { f->has_name = true; f->name = s; }
          else return false;
          break;
        case kDomainKey: if (!StringOrNull(k, s, &f->domain)) return false; break;
        case kCategoryKey: if (!StringOrNull(k, s, &f->category)) return false; break;
        case kCopyKindKey: if (!StringOrNull(k, s, &f->copy_kind)) return false; break;
        case kHostKey: if (!StringOrNull(k, s, &f->host)) return false; break;
        case kClockKey: if (!StringOrNull(k, s, &f->clock)) return false; break;
        case kSchemaKey: if (!StringOrNull(k, s, &f->schema)) return false; break;
        case kPayloadKey: break;  // only an object payload is read (by the DOM reader)
        case kSlowKey: return false;  // META/STATS details: the DOM reader's job
        case kRankKey:
          if (k == Kind::kNull) f->rank_null = true;
          else if (k == Kind::kInt) { f->has[kRank] = true; f->v[kRank] = n; }
          else return false;
          break;
        default: break;  // other keys: any scalar is skipped
      }
    }
    if (c.Eat(',')) continue;  // most fields have another after them
    return c.Eat('}') && c.AtEnd();
  }
}

}  // namespace truffld::merge::raw
