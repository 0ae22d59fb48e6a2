// Integration: names no valid UTF-8 text holds (lone surrogates, overlong forms, code points
// above U+10FFFF, control bytes) through the injector and then truffld-merge's importer: the
// injector writes them with the shared strict escaper (truffld/json_escape.h), so the dump is
// valid UTF-8 JSON and the merge counts no invalid_utf8 in it. (The injector's own escaper let
// surrogates, overlong forms and > U+10FFFF through, and the merge flagged its dumps.)
#include <gtest/gtest.h>

#include "inject_test_util.h"
#include "truffld/merge/import.h"
#include "truffld/merge/pipeline.h"

namespace truffld::inject::testing {
namespace {

TEST(HostileNames, TheInjectorsDumpsMergeWithoutInvalidUtf8) {
  TempDir dir;
  const Exit run = RunProgram({AppPath("truffld_nvtx_app"), "hostile"}, InjectEnv(dir.path()));
  ASSERT_EQ(run.code, 0) << run.err;
  const std::vector<Dump> dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  auto f = merge::ImportFile(dumps[0].path, {});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->stats.Get(merge::Problem::kInvalidUtf8), 0u);
  EXPECT_EQ(merge::MalformedLines(f->stats), 0u);
  int replaced = 0, pushes = 0;
  for (const merge::Event& e : f->events) {
    if (e.kind != merge::EventKind::kNvtxRange && e.kind != merge::EventKind::kNvtxPush) continue;
    ++pushes;
    const std::string_view name = f->strings.Get(e.name);
    replaced += name.find("\xEF\xBF\xBD") != std::string_view::npos;
  }
  EXPECT_EQ(pushes, 7);    // the step and six hostile names
  EXPECT_EQ(replaced, 5);  // all but the controls (valid text: written as \u0001, read back as is)
}

}  // namespace
}  // namespace truffld::inject::testing
