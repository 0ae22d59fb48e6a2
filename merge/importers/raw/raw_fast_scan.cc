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

#include "importers/raw/raw_cursor.h"
#include "importers/raw/raw_fields.h"
#include "importers/raw/raw_scan_keys.h"

namespace truffld::merge::raw {
namespace {
using namespace detail;  // raw_scan_keys.h

// The members of a record after its '{' (first key expected at the cursor) up to its '}' and
// the end of the line, noted in *scan. When scan->type_slot is set on entry, FastScan read the
// first member (the type) from its memo and reading starts at the second. With a log (kLog),
// every effect on *f is also written there and a "type" member fails (its effect is never
// replayed); the member starts are not kept. Every method inlines into Run: this is the loop
// that reads nearly every record of a dump.
template <bool kLog>
class MemberReader {
 public:
  MemberReader(Cursor& c, const char* begin, Fields* f, KeyMemo* memo, MemberScan* scan, ActLog* log)
      : c_(c), begin_(begin), f_(f), memo_(memo), scan_(scan), log_(log) {}

  __attribute__((always_inline)) bool Run() {
    const int first = scan_->type_slot >= 0 ? 1 : 0;
    if (first) {
      remembered_ = memo_->keys[scan_->type_slot];
      tail_ = &memo_->tails[scan_->type_slot];
    }
    for (int index = first;; ++index) {
      if (tail_ && index == tail_->at && c_.left() == tail_->len && std::memcmp(c_.pos(), tail_->text, tail_->len) == 0) {
        Replay(*tail_, c_.pos(), f_);
        tail_->misses = 0;
        scan_->n = -1;  // nothing to learn from
        return true;
      }
      if (!kLog && index < MemberScan::kMaxStarts) scan_->starts[index] = uint32_t(c_.pos() - begin_);
      int id;
      if (!Key(index, &id)) return false;
      const bool ok = unsigned(id) < unsigned(kCount)            ? IntMember(id)
                      : id == kGridKey || id == kBlockKey ? ArrayMember(id)
                                                                  : OtherMember(id, index);
      if (!ok) return false;
      if (c_.Eat(',')) continue;  // most fields have another after them
      scan_->n = index + 1;
      return c_.Eat('}') && c_.AtEnd();
    }
  }

 private:
  // The key of member `index`: a masked compare with the one remembered there, or read.
  __attribute__((always_inline)) bool Key(int index, int* id) {
    KeyMemo::Key* slot = remembered_ && index < KeyMemo::kKeys ? &remembered_[index] : nullptr;
    if (slot && slot->len && c_.Match(*slot)) {
      *id = slot->id;
      return true;
    }
    std::string_view key;
    if (!c_.Eat('"') || !c_.PlainString(&key) || !c_.Eat(':')) return false;
    *id = KeyOf(key);
    if (slot) Remember(key, *id, slot);
    return true;
  }

  // An integer field (the most common): an integer or null.
  __attribute__((always_inline)) bool IntMember(int id) {
    if (c_.Peek() == 'n') return c_.Literal("null");
    int64_t n = 0;
    if (!c_.Integer(&n)) return false;
    f_->has[id] = true;
    f_->v[id] = n;
    if (kLog) if (auto* a = log_->Add(KeyMemo::Tail::kInt, id)) a->n = n;
    return true;
  }

  // grid or block: an array of integers; any other scalar is ignored, as the DOM reader does.
  __attribute__((always_inline)) bool ArrayMember(int id) {
    int32_t* dst = id == kGridKey ? f_->grid : f_->block;
    if (c_.Peek() != '[') {
      std::string_view s;
      int64_t n = 0;
      const Kind k = Value(c_, &s, &n);
      return k != Kind::kBad && k != Kind::kArray && k != Kind::kObject;
    }
    const int got = IntArray(c_, dst);
    if (got < 0) return false;
    if (kLog) if (auto* a = log_->Add(KeyMemo::Tail::kArray, id)) {
      a->count = uint8_t(got);
      std::memcpy(a->arr, dst, sizeof a->arr);
    }
    return true;
  }

  // Any other member: a scalar, read into its field when the key means one.
  __attribute__((always_inline)) bool OtherMember(int id, int index) {
    std::string_view s;
    int64_t n = 0;
    const Kind k = Value(c_, &s, &n);
    if (k == Kind::kBad || k == Kind::kArray || k == Kind::kObject) return false;
    switch (id) {
      case kTypeKey: return TypeMember(k, s, index);
      case kNameKey:
        if (k == Kind::kNull) {
          f_->has_name = f_->name_null = true;
          if (kLog) log_->Add(KeyMemo::Tail::kNameNull, id);
          return true;
        }
        if (k != Kind::kString) return false;
        f_->has_name = true;
        f_->name = s;
        if (kLog) log_->Str(id, s);
        return true;
      case kDomainKey: case kCategoryKey: case kCopyKindKey: case kHostKey: case kClockKey: case kSchemaKey:
        if (k == Kind::kNull) return true;  // null: left as it is
        if (k != Kind::kString) return false;
        *StringField(id, f_) = s;
        if (kLog) log_->Str(id, s);
        return true;
      case kPayloadKey: return true;  // only an object payload is read (by the DOM reader)
      case kSlowKey: return false;    // META/STATS details: the DOM reader's job
      case kRankKey: return RankMember(k, n);
      default: return true;           // other keys: any scalar is skipped
    }
  }

  __attribute__((always_inline)) bool TypeMember(Kind k, std::string_view s, int index) {
    if (kLog || k != Kind::kString) return false;
    f_->type = s;
    f_->type_code_set = false;  // a later type member wins over a remembered first one
    scan_->type_index = index;
    if (memo_ && !remembered_) {
      scan_->type_slot = TypeSlot(s);
      remembered_ = memo_->keys[scan_->type_slot];
      tail_ = &memo_->tails[scan_->type_slot];
      if (index == 0 && c_.left() >= 16 && c_.Peek() == ',') RememberType(s, scan_->type_slot, memo_);
    }
    return true;
  }

  __attribute__((always_inline)) bool RankMember(Kind k, int64_t n) {
    if (k == Kind::kNull) {
      f_->rank_null = true;
      if (kLog) log_->Add(KeyMemo::Tail::kRankNull, kRankKey);
      return true;
    }
    if (k != Kind::kInt) return false;
    f_->has[kRank] = true;
    f_->v[kRank] = n;
    if (kLog) if (auto* a = log_->Add(KeyMemo::Tail::kInt, kRank)) a->n = n;
    return true;
  }

  Cursor& c_;
  const char* begin_;
  Fields* f_;
  KeyMemo* memo_;
  MemberScan* scan_;
  ActLog* log_;
  KeyMemo::Key* remembered_ = nullptr;  // this record type's remembered keys, once the type is read
  KeyMemo::Tail* tail_ = nullptr;       // and its remembered tail
};

template <bool kLog>
__attribute__((always_inline)) inline bool Members(Cursor& c, const char* begin, Fields* f, KeyMemo* memo,
                                                   MemberScan* scan, ActLog* log) {
  return MemberReader<kLog>(c, begin, f, memo, scan, log).Run();
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
