// The one list of drop reasons against a literal copy of it: the names are
// what `mcgwctl show counters`, the JSON and the docs show, so changing,
// reordering or adding one must be deliberate (update this table too), and
// docs/architecture.md explains each one.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "dataplane/engine/drop_reason.hpp"

namespace mcgw::engine {
namespace {

using R = DropReason;

struct Expected {
  DropReason reason;
  std::string_view name;
};

// In the order of drop_reason.h (the counters' order).
constexpr Expected kExpected[] = {
    {R::kMALFORMED, "malformed"},
    {R::kBAD_CHECKSUM, "bad-checksum"},
    {R::kOUTER_FRAGMENT, "outer-fragment"},
    {R::kUNKNOWN_VTEP, "unknown-vtep"},
    {R::kUNKNOWN_VNI, "unknown-vni"},
    {R::kCRITICAL_OPTION, "critical-option"},
    {R::kOAM, "oam"},
    {R::kECN, "ecn"},
    {R::kNO_ROUTE, "no-route"},
    {R::kNO_TUNNEL, "no-tunnel"},
    {R::kTTL_EXPIRED, "ttl-expired"},
    {R::kTOO_BIG, "too-big"},
    {R::kNO_BUFFER, "no-buffer"},
    {R::kTX_FULL, "tx-full"},
    {R::kNOT_IP, "not-ip"},
    {R::kOTHER_HOST, "other-host"},
    {R::kLOCAL, "local"},
    {R::kNOT_OVERLAY, "not-overlay"},
    {R::kNO_NEIGHBOR, "no-neighbor"},
    {R::kNO_TENANT, "no-tenant"},
    {R::kSEGMENTED, "segmented"},
    {R::kESP_UNKNOWN_SPI, "esp-unknown-spi"},
    {R::kESP_AUTH, "esp-auth"},
    {R::kESP_REPLAY, "esp-replay"},
    {R::kESP_MALFORMED, "esp-malformed"},
    {R::kCLEAR_TEXT, "clear-text"},
    {R::kESP_ERROR, "esp-error"},
    {R::kESP_SEQ_LIMIT, "esp-seq-limit"},
    {R::kPOLICY_DENY, "policy-deny"},
    {R::kTENANT_ISOLATION, "tenant-isolation"},
    {R::kRATE_LIMIT, "rate-limit"},
    {R::kLINE_FULL, "line-full"},
};

TEST(DropReason, NamesAndOrderAreTheLiteralList) {
  ASSERT_EQ(kDropReasonCount, 32u);
  ASSERT_EQ(std::size(kExpected), 32u);
  for (size_t i = 0; i < std::size(kExpected); ++i) {
    EXPECT_EQ(static_cast<size_t>(kExpected[i].reason), i) << kExpected[i].name;
    EXPECT_EQ(toString(kExpected[i].reason), kExpected[i].name);
    EXPECT_EQ(kDropReasons[i].name, kExpected[i].name);
    EXPECT_FALSE(kDropReasons[i].description.empty()) << kExpected[i].name;
  }
}

TEST(DropReason, OutOfRangeIsUnknown) {
  EXPECT_EQ(toString(DropReason::kCount), "unknown");
  EXPECT_EQ(toString(static_cast<DropReason>(200)), "unknown");
}

TEST(DropReason, EveryReasonIsDocumented) {
  std::ifstream in(std::string(MCGW_SOURCE_DIR) + "/docs/architecture.md");
  ASSERT_TRUE(in) << "docs/architecture.md not found";
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& e : kExpected) {
    EXPECT_NE(text.str().find("| `" + std::string(e.name) + "` |"), std::string::npos)
        << "docs/architecture.md has no table row for drop reason " << e.name;
  }
}

}  // namespace
}  // namespace mcgw::engine
