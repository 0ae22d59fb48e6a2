// KeptArgs (see kept_args.h): compact args objects, checked in batches.
#include "importers/kineto/kept_args.h"

#include <algorithm>

#include <simdjson.h>

namespace truffld::merge::kineto {
namespace {

// A batch this big (and its parse) stays in the CPU's caches, and the parser's buffers,
// allocated for twice that at the first big batch, are reused (each new allocation would be
// touched afresh).
constexpr size_t kBatchBytes = 256 << 10;

// Whether `array` (a parsed batch) holds exactly `n` objects.
bool AllObjects(simdjson::dom::element array, size_t n) {
  simdjson::dom::array a;
  if (array.get_array().get(a) != simdjson::SUCCESS) return false;
  size_t count = 0;
  for (simdjson::dom::element e : a) {
    if (!e.is_object()) return false;
    ++count;
  }
  return count == n;
}

}  // namespace

KeptArgs::KeptArgs(StringPool* pool, std::vector<StrId>* ids)
    : pool_(*pool), ids_(*ids), parser_(std::make_unique<simdjson::dom::parser>()) {}

KeptArgs::~KeptArgs() = default;

bool KeptArgs::Add(std::string_view raw, uint64_t event_number) {
  size_t len = 0;
  scratch_.resize(raw.size());
  if (raw.empty() || simdjson::minify(raw.data(), raw.size(), scratch_.data(), len) != simdjson::SUCCESS ||
      len <= 2) {  // none, or "{}"
    ids_.push_back(kNoStr);
    return false;
  }
  const std::string_view compact(scratch_.data(), len);
  ids_.push_back(pool_.Add(compact));
  pending_.push_back({ids_.size() - 1, event_number, raw.data()});
  if (batch_.capacity() < kBatchBytes) batch_.reserve(2 * kBatchBytes + simdjson::SIMDJSON_PADDING);
  if (batch_.size() > 1) batch_ += ',';
  batch_ += compact;
  return batch_.size() >= kBatchBytes;
}

std::vector<KeptArgs::Rejected> KeptArgs::Check() {
  std::vector<Rejected> rejected;
  if (pending_.empty()) return rejected;
  batch_ += ']';
  batch_.reserve(batch_.size() + simdjson::SIMDJSON_PADDING);
  // Room for any ordinary batch at once (a small document needs only its own size); on failure
  // here, parse allocates (and reports failure) itself.
  if (parser_->capacity() < batch_.size())
    (void)!parser_->allocate(std::max(batch_.size(), std::min(2 * kBatchBytes, 2 * batch_.size())));
  simdjson::dom::element parsed;
  const bool ok = parser_->parse(batch_.data(), batch_.size(), false).get(parsed) == simdjson::SUCCESS &&
                  AllObjects(parsed, pending_.size());
  if (!ok) {
    for (const Pending& p : pending_) {
      if (Valid(pool_.Get(ids_[p.id_index]))) continue;
      ids_[p.id_index] = kNoStr;
      rejected.push_back({p.event_number, p.where});
    }
  }
  pending_.clear();
  batch_.assign(1, '[');
  return rejected;
}

bool KeptArgs::Valid(std::string_view compact) {
  scratch_.assign(compact);
  scratch_.reserve(compact.size() + simdjson::SIMDJSON_PADDING);
  simdjson::dom::element el;
  return parser_->parse(scratch_.data(), scratch_.size(), false).get(el) == simdjson::SUCCESS && el.is_object();
}

}  // namespace truffld::merge::kineto
