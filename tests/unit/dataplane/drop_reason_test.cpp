// The one list of drop reasons: unique names, and docs/architecture.md
// explains each one.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "dataplane/engine/drop_reason.hpp"

namespace mcgw::engine {
namespace {

TEST(DropReason, NamesAreUniqueAndNonEmpty) {
  std::set<std::string_view> seen;
  for (const auto& r : kDropReasons) {
    EXPECT_FALSE(r.name.empty());
    EXPECT_FALSE(r.description.empty());
    EXPECT_TRUE(seen.insert(r.name).second) << "duplicate drop reason " << r.name;
  }
  EXPECT_EQ(toString(DropReason::kUNKNOWN_VNI), "unknown-vni");
  EXPECT_EQ(toString(DropReason::kCount), "unknown");
}

TEST(DropReason, EveryReasonIsDocumented) {
  std::ifstream in(std::string(MCGW_SOURCE_DIR) + "/docs/architecture.md");
  ASSERT_TRUE(in) << "docs/architecture.md not found";
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& r : kDropReasons) {
    EXPECT_NE(text.str().find("| `" + std::string(r.name) + "` |"), std::string::npos)
        << "docs/architecture.md has no table row for drop reason " << r.name;
  }
}

}  // namespace
}  // namespace mcgw::engine
