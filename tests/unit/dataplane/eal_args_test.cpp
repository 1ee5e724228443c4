#include <gtest/gtest.h>

#include "config/loader.hpp"
#include "dataplane/engine/eal.hpp"

namespace mcgw::engine {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) {
    s += (s.empty() ? "" : " ") + a;
  }
  return s;
}

TEST(EalArguments, NoHugeVdevOnly) {
  auto c = config::loadConfigText(
      "node: {name: a, site: b}\neal: {hugepages: false, memory-mb: 128, file-prefix: t1}\n"
      "ports:\n  - {name: p0, role: lan, vdev: net_null0}\n",
      "t.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(joined(ealArguments(**c, "mcgwd", "info")),
            "mcgwd -l 0 --main-lcore 0 -m 128 --file-prefix t1 --no-huge --no-shconf --no-pci "
            "--log-level=*:notice");
}

TEST(EalArguments, HugepagesPciWorkersExtra) {
  auto c = config::loadConfigText(
      "node: {name: a, site: b}\n"
      "eal: {main-lcore: 1, workers: [3, 2], memory-mb: 1024, extra-args: [--iova-mode=va]}\n"
      "ports:\n  - {name: p0, role: lan, pci: '0000:00:08.0'}\n"
      "  - {name: p1, role: wan, vdev: net_null0}\n",
      "t.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(joined(ealArguments(**c, "mcgwd", "debug")),
            "mcgwd -l 1,2,3 --main-lcore 1 -m 1024 --file-prefix mcgw -a 0000:00:08.0 "
            "--log-level=*:info --iova-mode=va");
}

}  // namespace
}  // namespace mcgw::engine
