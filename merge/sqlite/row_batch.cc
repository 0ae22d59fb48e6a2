// RowBatch and StringIds (see row_batch.h).
#include "row_batch.h"

#include <algorithm>
#include <cstring>

namespace truffld::rundb {

namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

}  // namespace

int64_t StringIds::Id(std::string_view text, bool* fresh) {
  *fresh = false;
  if (text.empty()) return 0;
  Seen* slot = nullptr;
  if (stable_) {
    if (seen_.empty()) seen_.resize(kSeenSlots);
    const auto addr = reinterpret_cast<uintptr_t>(text.data());
    slot = &seen_[((addr >> 3) ^ (addr >> 15) ^ text.size()) & (kSeenSlots - 1)];
    if (slot->data == text.data() && slot->size == text.size()) return slot->id;
  }
  const size_t before = pool_.size();
  const StrId id = pool_.Intern(text);
  *fresh = pool_.size() != before;
  if (slot) *slot = Seen{text.data(), text.size(), static_cast<int64_t>(id)};
  return id;
}

void RowBatch::ReserveLike(const RowBatch& other) {
  steps_.reserve(other.steps_.size());
  requests_.reserve(other.requests_.size());
  ops_.reserve(other.ops_.size());
  calls_.reserve(other.calls_.size());
  devices_.reserve(other.devices_.size());
  collectives_.reserve(other.collectives_.size());
}

void RowBatch::Clear() {
  strings_.clear();
  steps_.clear();
  requests_.clear();
  ops_.clear();
  calls_.clear();
  devices_.clear();
  collectives_.clear();
  rows_ = 0;
  if (chunks_.size() > 1 || chunk_size_ != kChunkBytes) {
    chunks_.clear();
    chunk_size_ = 0;
  }
  chunk_used_ = 0;
}

int64_t RowBatch::Intern(std::string_view s) {
  bool fresh = false;
  const int64_t id = ids_->Id(s, &fresh);
  if (fresh) strings_.emplace_back(id, Keep(s));
  return id;
}

std::string_view RowBatch::Keep(std::string_view s) {
  if (s.empty()) return {};
  if (chunks_.empty() || chunk_used_ + s.size() > chunk_size_) {
    chunk_size_ = std::max(kChunkBytes, s.size());
    chunks_.push_back(std::make_unique<char[]>(chunk_size_));
    chunk_used_ = 0;
  }
  char* p = chunks_.back().get() + chunk_used_;
  std::memcpy(p, s.data(), s.size());
  chunk_used_ += s.size();
  return {p, s.size()};
}

Status RowBatch::Step(const StepRow& r) {
  StepRow c = r;
  c.host = Keep(r.host);
  c.name = Keep(r.name);
  c.phase = Keep(r.phase);
  c.source = Keep(r.source);
  steps_.push_back(c);
  ++rows_;
  return Status::Ok();
}

Status RowBatch::Request(int64_t step_id, std::string_view request_id, int64_t position) {
  requests_.push_back(RequestRow{step_id, position, Keep(request_id)});
  ++rows_;
  return Status::Ok();
}

Status RowBatch::Op(const OpRow& r) {
  OpRow c = r;
  c.view = Keep(r.view);
  c.layer = Keep(r.layer);
  c.family_id = Intern(r.family);
  c.name_id = Intern(r.name);
  c.family = c.name = {};
  c.domain = Keep(r.domain);
  ops_.push_back(c);
  ++rows_;
  return Status::Ok();
}

Status RowBatch::Call(const CallRow& r) {
  CallRow c = r;
  c.layer = Keep(r.layer);
  c.name_id = Intern(r.name);
  c.family_id = Intern(r.family);
  c.name = c.family = {};
  calls_.push_back(c);
  ++rows_;
  return Status::Ok();
}

Status RowBatch::Device(const DeviceRow& r) {
  DeviceRow c = r;
  c.layer = Keep(r.layer);
  c.name_id = Intern(r.name);
  c.family_id = r.layer == "kernel" ? Intern(r.family) : 0;  // only kernels keep a family
  c.name = c.family = {};
  c.copy_kind = Keep(r.copy_kind);
  devices_.push_back(c);
  ++rows_;
  return Status::Ok();
}

Status RowBatch::Collective(const CollectiveRow& r) {
  collectives_.push_back(r);
  ++rows_;
  return Status::Ok();
}

Status RowBatch::Replay(RowSink* sink) const {
  for (const auto& [id, text] : strings_) TRUFFLD_RETURN_IF_ERROR(sink->String(id, text));
  for (const StepRow& r : steps_) TRUFFLD_RETURN_IF_ERROR(sink->Step(r));
  for (const RequestRow& r : requests_) TRUFFLD_RETURN_IF_ERROR(sink->Request(r.step_id, r.id, r.position));
  for (const OpRow& r : ops_) TRUFFLD_RETURN_IF_ERROR(sink->Op(r));
  for (const CallRow& r : calls_) TRUFFLD_RETURN_IF_ERROR(sink->Call(r));
  for (const DeviceRow& r : devices_) TRUFFLD_RETURN_IF_ERROR(sink->Device(r));
  for (const CollectiveRow& r : collectives_) TRUFFLD_RETURN_IF_ERROR(sink->Collective(r));
  return Status::Ok();
}

}  // namespace truffld::rundb
