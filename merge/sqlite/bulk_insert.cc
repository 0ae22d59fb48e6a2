// BulkInsert: rows kept, then written by one multi-row INSERT (see bulk_insert.h).
#include "bulk_insert.h"

namespace truffld::rundb {

namespace {

std::string RowPlaceholders(int columns) {
  std::string row = "(";
  for (int i = 0; i < columns; ++i) row += i ? ",?" : "?";
  return row + ")";
}

}  // namespace

Result<BulkInsert> BulkInsert::Create(SqliteDb* db, const std::string& table, int columns) {
  BulkInsert b;
  b.columns_ = columns;
  b.table_ = table;
  const std::string row = RowPlaceholders(columns), head = "INSERT INTO " + table + " VALUES ";
  std::string many = head;
  for (int i = 0; i < kRows; ++i) many += (i ? "," : "") + row;
  auto m = db->Prepare(many);
  if (!m.ok()) return m.status();
  auto o = db->Prepare(head + row);
  if (!o.ok()) return o.status();
  b.many_ = std::move(m).value();
  b.one_ = std::move(o).value();
  b.values_.resize(static_cast<size_t>(kRows) * columns);
  b.held_.assign(b.values_.size(), Value{Value::kText, 0, 0});  // unknown: bound on first use
  return b;
}

void BulkInsert::TextKeepEmpty(std::string_view v) {
  values_[used_++] = Value{Value::kText, static_cast<int64_t>(texts_.size()), static_cast<uint32_t>(v.size())};
  texts_.append(v);
}

void BulkInsert::BindRow(SqliteStmt* s, size_t first_value, int first_param, Value* held) const {
  for (int c = 0; c < columns_; ++c) {
    const Value& v = values_[first_value + c];
    if (held) {
      Value& h = held[c];
      if (v.type != Value::kText && v.type == h.type && (v.type == Value::kNull || v.v == h.v)) continue;
      h = v;
    }
    const int i = first_param + c;
    if (v.type == Value::kInt) s->Bind(i, v.v);
    else if (v.type == Value::kText) s->Bind(i, std::string_view(texts_.data() + v.v, v.n));
    else s->BindNull(i);
  }
}

Status BulkInsert::EndRow() {
  if (used_ != static_cast<size_t>(rows_ + 1) * columns_) {
    return Internal(table_ + ": a row of " + std::to_string(used_ - static_cast<size_t>(rows_) * columns_) +
                    " values for " + std::to_string(columns_) + " columns");
  }
  if (++rows_ < kRows) return Status::Ok();
  for (int r = 0; r < kRows; ++r) {
    const size_t first = static_cast<size_t>(r) * columns_;
    BindRow(&many_, first, r * columns_ + 1, &held_[first]);
  }
  Status st = many_.Run();
  rows_ = 0;
  used_ = 0;
  texts_.clear();
  return st;
}

Status BulkInsert::Flush() {
  Status st;
  for (int r = 0; r < rows_ && st.ok(); ++r) {
    BindRow(&one_, static_cast<size_t>(r) * columns_, 1, nullptr);
    st = one_.Run();
  }
  rows_ = 0;
  used_ = 0;
  texts_.clear();
  return st;
}

}  // namespace truffld::rundb
