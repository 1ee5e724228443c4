// docs/configuration.md documents every leaf and leaf-list of the YANG model:
// a key added to config/yang/mcgw.yang without a row in the reference fails
// here.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/schema.hpp"

namespace mcgw::config {
namespace {

std::string readDoc() {
  const std::string path = std::string(MCGW_SOURCE_DIR) + "/docs/configuration.md";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

TEST(ConfigDocs, ModelHasLeaves) {
  const std::vector<std::string> paths = Schema::instance().leafKeyPaths();
  EXPECT_GT(paths.size(), 60u);
}

// The spelling the reference uses: dotted YAML keys, "[]" after a list key,
// choices flattened (pci and vdev are keys of a port).
TEST(ConfigDocs, KeyPathSpelling) {
  const std::vector<std::string> paths = Schema::instance().leafKeyPaths();
  for (const char* expected :
       {"node.name", "eal.workers", "ports[].mtu", "ports[].pci", "tenants[].routes[].next-hop",
        "peers[].lines[].local-vtep", "bgp.timers.hold", "bgp.neighbors[].asn",
        "vrrp[].virtual-addresses", "address-plan.store.endpoints",
        "address-plan.clouds[].regions[].vpcs[].prefixes", "logging.level"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), expected), paths.end())
        << expected << " is not among the model's key paths";
  }
}

TEST(ConfigDocs, EveryLeafIsDocumented) {
  const std::string doc = readDoc();
  ASSERT_FALSE(doc.empty());
  std::vector<std::string> missing;
  for (const auto& path : Schema::instance().leafKeyPaths()) {
    if (doc.find("`" + path + "`") == std::string::npos) {
      missing.push_back(path);
    }
  }
  std::string list;
  for (const auto& m : missing) {
    list += "\n  " + m;
  }
  EXPECT_TRUE(missing.empty()) << missing.size()
                               << " key(s) of config/yang/mcgw.yang are not documented in "
                                  "docs/configuration.md (write each as `path` in a table row):"
                               << list;
}

}  // namespace
}  // namespace mcgw::config
