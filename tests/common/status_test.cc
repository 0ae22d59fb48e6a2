#include "truffld/status.h"

#include <gtest/gtest.h>

namespace truffld {
namespace {

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = ParseError(AtLocation("a.jsonl", 7, "expected '}'"));
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kParseError);
  EXPECT_EQ(s.ToString(), "parse error: a.jsonl:7: expected '}'");
}

TEST(Status, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c)
    EXPECT_STRNE(StatusCodeName(static_cast<StatusCode>(c)), "unknown status");
}

Status Fails() { return IoError("disk"); }
Status Propagates() {
  TRUFFLD_RETURN_IF_ERROR(Fails());
  return Status::Ok();
}

TEST(Status, ReturnIfErrorPropagates) { EXPECT_EQ(Propagates().code(), StatusCode::kIoError); }

TEST(Result, HoldsValueOrError) {
  Result<int> a = 5;
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 5);
  Result<int> b = NotFound("x");
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace truffld
