// RangeClasses: see range_classes.h.
#include "core/range_classes.h"

#include <utility>

namespace truffld::merge {
namespace {

bool IsRuleLayer(Layer l) { return l <= Layer::kOther; }

}  // namespace

RangeClasses::RangeClasses(const Rules& rules, StringPool& strings, size_t max_cached)
    : rules_(rules), strings_(strings), number_blind_(rules.NumberBlind()), max_cached_(max_cached) {}

const RangeClass* RangeClasses::ByName(const ClassKey& k) {
  Slot& slot = front_[KeyHash()(k) % kFrontSlots];
  if (slot.rc && slot.key == k) return slot.rc;
  if (k.name >= named_.size() || !named_[k.name]) return nullptr;
  auto it = by_name_.find(k);
  if (it == by_name_.end()) return nullptr;
  slot = {k, &it->second};  // map nodes never move: the pointer stays valid
  return &it->second;
}

size_t RangeClasses::ShapeKey(const ClassKey& k) {
  if (!number_blind_) return 0;
  const std::string_view name = strings_.Get(k.name);
  if (name.size() > kMaxShapedName) return 0;
  const size_t cut = name.find(", ");
  if (cut == std::string_view::npos) return 0;
  shape_key_.assign(name);
  bool digits = false;
  for (size_t i = cut + 2; i < shape_key_.size(); ++i)
    if (unsigned(shape_key_[i] - '0') < 10) { shape_key_[i] = '0'; digits = true; }
  if (!digits) return 0;  // nothing numbered: the by-name cache serves it
  // The domain and category ids, after a byte no name of this length can hold at that place.
  shape_key_.push_back('\0');
  shape_key_.append(reinterpret_cast<const char*>(&k.domain), sizeof k.domain);
  shape_key_.append(reinterpret_cast<const char*>(&k.category), sizeof k.category);
  return cut + 2;
}

RangeClasses::ShapeSlot& RangeClasses::ShapeSlotOf(const ClassKey& k) {
  return shape_front_[KeyHash()(k) % kFrontSlots];
}

const RangeClasses::ShapeSlot* RangeClasses::ShapeFront(const ClassKey& k) {
  const ShapeSlot& slot = ShapeSlotOf(k);
  return slot.cls.family != kNoStr && slot.key == k ? &slot : nullptr;
}

const RangeClasses::ShapeClass* RangeClasses::ByShape() {
  auto it = by_shape_.find(shape_key_);
  return it == by_shape_.end() ? nullptr : &it->second;
}

void RangeClasses::KeepByName(const ClassKey& k, RangeClass rc, Source* src) {
  if (by_name_.size() >= max_cached_) return;
  by_name_.emplace(k, std::move(rc));
  if (k.name >= named_.size()) named_.resize(size_t(k.name) + 1 + named_.size() / 2);
  named_[k.name] = true;
  *src = Source::kByName;
}

Layer RangeClasses::LayerOf(const ClassKey& k, Source* src) {
  if (const RangeClass* c = ByName(k)) {
    ++by_name_hits_;
    *src = Source::kByName;
    return c->layer;
  }
  if (const ShapeSlot* s = ShapeFront(k)) {  // a numbered name that does repeat
    ++by_shape_hits_;
    *src = Source::kByShape;
    return s->cls.layer;
  }
  const size_t shared = ShapeKey(k);  // 0: no shape
  if (shared) {
    if (const ShapeClass* s = ByShape()) {
      ++by_shape_hits_;
      *src = Source::kByShape;
      ShapeSlotOf(k) = {k, *s};
      return s->layer;
    }
  }
  const std::string_view name = strings_.Get(k.name);
  const Layer layer = rules_.Classify(name, strings_.Get(k.domain), strings_.Get(k.category));
  *src = Source::kNone;
  const bool may_shape = shared && IsRuleLayer(layer) && by_shape_.size() < max_cached_;
  if (!may_shape && by_name_.size() >= max_cached_) return layer;  // ClassFor works it out
  RangeClass rc{layer, strings_.Intern(NormaliseFamily(layer, name)), rules_.ParseRequests(name)};
  // The family must lie in the part of the name every name of this shape shares (it always
  // does for rule layers; checked, not assumed).
  const std::string_view family = strings_.Get(rc.family);
  if (may_shape && rc.requests.empty() &&
      family.size() <= shared && name.substr(0, family.size()) == family) {
    by_shape_.emplace(shape_key_, ShapeClass{layer, rc.family});
    ShapeSlotOf(k) = {k, {layer, rc.family}};
    *src = Source::kByShape;
    return layer;
  }
  KeepByName(k, std::move(rc), src);
  return layer;
}

const RangeClass& RangeClasses::ClassFor(const ClassKey& k, Layer layer, Source src) {
  const RangeClass* c = src == Source::kByName ? ByName(k) : nullptr;
  if (c && c->layer == layer) return *c;
  const std::string_view name = strings_.Get(k.name);
  scratch_.layer = layer;
  if (src == Source::kByShape) {
    const ShapeSlot* f = ShapeFront(k);
    const ShapeClass* s = f ? &f->cls : ShapeKey(k) ? ByShape() : nullptr;
    if (s) {
      scratch_.requests.clear();  // a shape entry names none, whatever the layer
      scratch_.family = s->layer == layer ? s->family : strings_.Intern(NormaliseFamily(layer, name));
      return scratch_;
    }
  }
  scratch_.family = strings_.Intern(NormaliseFamily(layer, name));
  if (c) scratch_.requests = c->requests;
  else scratch_.requests = rules_.ParseRequests(name);
  return scratch_;
}

}  // namespace truffld::merge
