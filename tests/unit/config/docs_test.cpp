// docs/configuration.md documents every leaf and leaf-list of the YANG model:
// a key added to config/yang/mcgw.yang without a row in the reference fails
// here.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "config/loader_detail.hpp"
#include "config/schema.hpp"
#include "config/text.hpp"

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
        "peers[].lines[].local-vtep", "peers[].lines[].next-hop", "peers[].inner-mac",
        "ports[].tenant", "ports[].neighbors[].mac", "fast-path.idle-sleep-max-us",
        "bgp.timers.hold", "bgp.neighbors[].asn", "vrrp[].virtual-addresses",
        "address-plan.store.endpoints", "address-plan.clouds[].regions[].vpcs[].prefixes",
        "logging.level"}) {
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

// Every list's max-elements is in the Limits table, as "| `path` | max |".
TEST(ConfigDocs, EveryListLimitIsDocumented) {
  const std::string doc = readDoc();
  const auto limits = Schema::instance().listLimits();
  // Not an empty walk: two limits as the model states them.
  auto limit = [&](const std::string& path) -> int64_t {
    for (const auto& l : limits) {
      if (l.path == path) {
        return l.max;
      }
    }
    return -1;
  };
  EXPECT_EQ(limit("ports[].neighbors"), 4096);
  EXPECT_EQ(limit("bgp.neighbors"), 256);
  std::string missing;
  for (const auto& l : limits) {
    const std::string row = "| `" + l.path + "` | " + std::to_string(l.max) + " |";
    if (doc.find(row) == std::string::npos) {
      missing += "\n  " + row;
    }
  }
  EXPECT_TRUE(missing.empty()) << "docs/configuration.md (Limits) lacks the rows:" << missing;
}

// The limits every file is held to, as the Limits section states them.
TEST(ConfigDocs, FileLimitsAreDocumented) {
  const std::string doc = readDoc();
  const std::vector<std::string> rows = {
      "| File size | 4 MiB (" + std::to_string(kMaxFileBytes) + " bytes) |",
      "| " + std::to_string(kMaxDepth) + " levels (a valid config needs " +
          std::to_string(Schema::instance().yamlDepth()) + ":",
      "| 1,000,000, an alias counting",
      "| One key or value | " + std::to_string(kMaxValueBytes) + " bytes",
      "| 32 MiB (" + std::to_string(kMaxExpandedBytes) + " bytes), an alias counting",
      "after **" + std::to_string(text::kMaxQuoted) + " bytes**",
      "At most **" + std::to_string(detail::ErrorSink::kMaxErrors) + " errors**",
      "| Lines (or values) with bytes that are not text, listed | " + std::to_string(kMaxReported) +
          " |"};
  for (const auto& row : rows) {
    EXPECT_NE(doc.find(row), std::string::npos) << row;
  }
  EXPECT_EQ(kMaxNodes, 1000000u);
}

// "The YAML examples of all sections below, put together, make one valid file."
TEST(ConfigDocs, SectionExamplesTogetherLoad) {
  const std::string doc = readDoc();
  std::string yaml;
  int blocks = 0;
  for (size_t at = doc.find("```yaml\n"); at != std::string::npos; at = doc.find("```yaml\n", at)) {
    at += 8;
    size_t end = doc.find("```", at);
    ASSERT_NE(end, std::string::npos);
    yaml += doc.substr(at, end - at);
    at = end + 3;
    ++blocks;
  }
  EXPECT_GE(blocks, 10);
  LoadResult r = loadConfigText(yaml, "configuration.md");
  std::string errors;
  if (!r.ok()) {
    for (const auto& e : r.error()) {
      errors += "\n  " + e.toString();
    }
  }
  EXPECT_TRUE(r.ok()) << "the examples of docs/configuration.md do not load together:" << errors
                      << "\n"
                      << yaml;
}

}  // namespace
}  // namespace mcgw::config
