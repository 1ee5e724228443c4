// The file store: its text, corrupt files reported with their line, four
// processes allocating at once, and waitChange following another process.
#include "control/plan/file_store.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "control/plan/allocator.hpp"

namespace mcgw::plan {
namespace {

namespace fs = std::filesystem;
using config::IpPrefix;

IpPrefix P(const char* text) {
  return *IpPrefix::parse(text);
}

// A fresh directory for one test, removed after it.
class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mcgw-plan-XXXXXX").string();
    ASSERT_TRUE(::mkdtemp(tmpl.data()));
    dir_ = tmpl;
    path_ = (dir_ / "plan.yaml").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& text) { std::ofstream(path_) << text; }
  std::string read() {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The error of loading text as the plan file.
  std::string corrupt(const std::string& text) {
    write(text);
    auto r = FileStore(path_).load();
    if (r) {
      return "loaded";
    }
    EXPECT_EQ(r.error().kind, StoreError::Kind::kCorrupt);
    // Relative to the directory, for literal expectations.
    std::string m = r.error().message;
    const std::string prefix = dir_.string() + "/";
    return m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
  }

  fs::path dir_;
  std::string path_;
};

const StoredVpc kWeb{"web",  "aws",  "us-east-1", {P("10.1.0.0/16")},
                     "main", "blue", "bj",        "allocate"};
const StoredVpc kNull{
    "null", "huaweicloud",  "cn-north-4", {P("fd00:1::/48"), P("172.16.0.0/20")}, "", "",
    "",     "import:huawei"};

TEST_F(FileStoreTest, RoundTripAndText) {
  FileStore store(path_);
  auto empty = store.load();
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(*empty, Snapshot{});

  auto written = store.update([](Snapshot& s) -> Result<bool, std::string> {
    s.vpcs.push_back(kWeb);
    s.vpcs.push_back(kNull);  // out of order: the store sorts
    return true;
  });
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->revision, 1u);
  const Snapshot expected{1, {kNull, kWeb}};
  EXPECT_EQ(*written, expected);
  EXPECT_EQ(read(),
            "# The address plan's stored VPCs (docs/address-plan.md).\n"
            "# Written by mcgwctl (plan allocate, release, import) under plan.yaml.lock;\n"
            "# change it with mcgwctl, not by hand: a hand edit bypasses the lock and\n"
            "# the overlap checks.\n"
            "revision: 1\n"
            "vpcs:\n"
            "  - name: \"null\"\n"
            "    cloud: \"huaweicloud\"\n"
            "    region: \"cn-north-4\"\n"
            "    prefixes: [\"fd00:1::/48\", \"172.16.0.0/20\"]\n"
            "    pool: \"\"\n"
            "    tenant: \"\"\n"
            "    site: \"\"\n"
            "    source: \"import:huawei\"\n"
            "  - name: \"web\"\n"
            "    cloud: \"aws\"\n"
            "    region: \"us-east-1\"\n"
            "    prefixes: [\"10.1.0.0/16\"]\n"
            "    pool: \"main\"\n"
            "    tenant: \"blue\"\n"
            "    site: \"bj\"\n"
            "    source: \"allocate\"\n");
  auto again = FileStore(path_).load();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, expected);
  EXPECT_TRUE(fs::exists(path_ + ".lock"));
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2);

  // A change that writes nothing keeps the revision; a refused one too.
  auto same = store.update([](Snapshot&) -> Result<bool, std::string> { return false; });
  ASSERT_TRUE(same);
  EXPECT_EQ(same->revision, 1u);
  auto refused = store.update(
      [](Snapshot&) -> Result<bool, std::string> { return unexpected(std::string("no room")); });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, StoreError::Kind::kAborted);
  EXPECT_EQ(refused.error().message, "no room");
  auto invalid = store.update([](Snapshot& s) -> Result<bool, std::string> {
    s.vpcs[0].name = "bad name";
    return true;
  });
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().kind, StoreError::Kind::kAborted);
  EXPECT_EQ(invalid.error().message,
            "the change would store an invalid plan: VPC \"bad name\": the name is not valid "
            "(1..63 letters, digits, '_', '.', '-' starting with a letter)");
  EXPECT_EQ(FileStore(path_).load()->revision, 1u);

  auto released = store.update([](Snapshot& s) -> Result<bool, std::string> {
    auto r = release(s, "null");
    if (!r) {
      return unexpected(r.error());
    }
    return true;
  });
  ASSERT_TRUE(released);
  EXPECT_EQ(*released, (Snapshot{2, {kWeb}}));
  EXPECT_EQ(store.describe(), "file " + path_);
}

TEST_F(FileStoreTest, MissingFileAndDirectory) {
  auto r = FileStore(path_).load();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->revision, 0u);
  EXPECT_TRUE(r->vpcs.empty());
  FileStore nowhere((dir_ / "gone" / "plan.yaml").string());
  auto lost = nowhere.load();
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().kind, StoreError::Kind::kUnreachable);
  EXPECT_EQ(lost.error().message,
            "the plan's directory " + (dir_ / "gone").string() + " does not exist");
  auto unwritable = nowhere.update([](Snapshot&) -> Result<bool, std::string> { return true; });
  ASSERT_FALSE(unwritable);
  EXPECT_EQ(unwritable.error().kind, StoreError::Kind::kUnreachable);
}

TEST_F(FileStoreTest, CorruptFilesNameTheLine) {
  const std::string head = "revision: 3\nvpcs:\n  - name: web\n    cloud: aws\n    region: r\n";
  EXPECT_EQ(corrupt(head + "    prefixes: [10.0.0.300/16]\n"),
            "plan.yaml:6:16: vpcs[0].prefixes: \"10.0.0.300/16\" is not an IP prefix such as "
            "10.1.0.0/16 or fd00:1::/48");
  EXPECT_EQ(corrupt(head + "    prefixes: [10.0.0.1/16]\n"),
            "plan.yaml:6:16: vpcs[0].prefixes: 10.0.0.1/16 has host bits set; the prefix is "
            "10.0.0.0/16");
  EXPECT_EQ(corrupt(head + "    prefixes: [10.0.0.0/16\n"),
            "plan.yaml:6:15: invalid YAML: end of sequence flow not found (the '[' here is never "
            "closed)");
  EXPECT_EQ(corrupt(head + "    prefixes: [10.0.0.0/16]\n    colour: red\n"),
            "plan.yaml:7:5: vpcs[0]: unknown key \"colour\"");
  EXPECT_EQ(corrupt(head + "    prefixes: []\n"),
            "plan.yaml:6:15: vpcs[0].prefixes: expected a list of 1..64 prefixes");
  EXPECT_EQ(corrupt(head), "plan.yaml:3:5: vpcs[0]: prefixes: is missing");
  EXPECT_EQ(corrupt(head + "    prefixes: [10.0.0.0/16]\n    tenant: 7up\n"),
            "plan.yaml:7:13: vpcs[0].tenant: \"7up\" is not a valid name: 1..63 letters, digits, "
            "'_', '.', '-' starting with a letter");
  EXPECT_EQ(corrupt(head + "    prefixes: [10.0.0.0/16]\n" +
                    "  - name: web\n    cloud: aws\n"
                    "    region: r\n    prefixes: [10.1.0.0/16]\n"),
            "plan.yaml:7:5: vpcs[1]: VPC web is here a second time");
  EXPECT_EQ(corrupt("revision: -1\nvpcs: []\n"),
            "plan.yaml:1:11: revision: expected a whole number of 0..18446744073709551615, found "
            "\"-1\"");
  EXPECT_EQ(corrupt("revision: 1\nrevision: 2\nvpcs: []\n"),
            "plan.yaml:2:1: key \"revision\" is here a second time");
  EXPECT_EQ(corrupt("vpcs: []\n"), "plan.yaml:1:1: revision: is missing");
  EXPECT_EQ(corrupt(""), "plan.yaml: the file is empty; a plan file has revision: and vpcs:");
  EXPECT_EQ(corrupt("revision: 1\nvpcs: []\n"), "loaded");

  // update() leaves a corrupt file as it is.
  write("revision: 1\nvpcs: [\n");
  auto r = FileStore(path_).update([](Snapshot&) -> Result<bool, std::string> { return true; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, StoreError::Kind::kCorrupt);
  EXPECT_EQ(read(), "revision: 1\nvpcs: [\n");
}

config::Config poolConfig() {
  config::Config c;
  c.address_plan.pools.push_back({"main", {P("10.0.0.0/16")}, 24, {}});
  return c;
}

// Allocates one VPC through the store, as `mcgwctl plan allocate` does.
StoreResult<Snapshot> allocateThrough(Store& store, const config::Config& c,
                                      const std::string& name) {
  return store.update([&](Snapshot& s) -> Result<bool, std::string> {
    Request r;
    r.cloud = "aws";
    r.region = "r";
    r.vpc = name;
    auto a = allocate(c, s, r, {});
    if (!a) {
      return unexpected(a.error());
    }
    insert(s, a->vpc);
    return a->created;
  });
}

TEST_F(FileStoreTest, FourProcessesAllocateDistinctBlocks) {
  const config::Config c = poolConfig();
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      FileStore store(path_);
      int failures = 0;
      for (int i = 0; i < 50; ++i) {
        if (!allocateThrough(store, c, "p" + std::to_string(p) + "-" + std::to_string(i))) {
          ++failures;
        }
      }
      ::_exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  auto s = FileStore(path_).load();
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->revision, 200u);
  ASSERT_EQ(s->vpcs.size(), 200u);
  // Serialised by the lock, each took the lowest free /24: 10.0.0.0 .. 10.0.199.0.
  std::set<std::string> blocks;
  for (const auto& v : s->vpcs) {
    ASSERT_EQ(v.prefixes.size(), 1u);
    blocks.insert(v.prefixes[0].toString());
  }
  std::set<std::string> expected;
  for (int i = 0; i < 200; ++i) {
    expected.insert("10.0." + std::to_string(i) + ".0/24");
  }
  EXPECT_EQ(blocks, expected);
  EXPECT_TRUE(checkSnapshot(c, *s, {}).empty());
}

TEST_F(FileStoreTest, WaitChangeSeesAnotherProcessWrite) {
  FileStore store(path_);
  const config::Config c = poolConfig();
  ASSERT_TRUE(allocateThrough(store, c, "first"));
  std::atomic<bool> stop{false};

  // Nothing changes: the content after the timeout, unchanged.
  auto quiet = store.waitChange(1, std::chrono::milliseconds(120), stop);
  ASSERT_TRUE(quiet);
  EXPECT_EQ(quiet->revision, 1u);
  // Already above `after`: at once.
  auto above = store.waitChange(0, std::chrono::seconds(30), stop);
  ASSERT_TRUE(above);
  EXPECT_EQ(above->revision, 1u);

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::usleep(300 * 1000);
    FileStore writer(path_);
    ::_exit(allocateThrough(writer, c, "second") ? 0 : 1);
  }
  auto changed = store.waitChange(1, std::chrono::seconds(30), stop);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_EQ(changed->revision, 2u);
  ASSERT_TRUE(changed->find("second"));
  EXPECT_EQ(changed->find("second")->prefixes.at(0).toString(), "10.0.1.0/24");

  // Stop ends the wait with the content as it is.
  stop = true;
  auto stopped = store.waitChange(2, std::chrono::seconds(30), stop);
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->revision, 2u);
}

TEST_F(FileStoreTest, WaitChangeReportsACorruptFileThatStaysSo) {
  write("revision: [\n");
  FileStore store(path_);
  std::atomic<bool> stop{false};
  auto r = store.waitChange(0, std::chrono::milliseconds(100), stop);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, StoreError::Kind::kCorrupt);
}

}  // namespace
}  // namespace mcgw::plan

namespace mcgw::plan {
namespace {

TEST_F(FileStoreTest, SixtyThousandVpcs) {
  FileStore store(path_);
  auto written = store.update([](Snapshot& s) -> Result<bool, std::string> {
    for (uint32_t i = 0; i < 60000; ++i) {
      IpPrefix p;
      p.address.bytes = {10, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i & 0xff), 0};
      p.length = 24;
      s.vpcs.push_back(
          {"vpc" + std::to_string(i), "aws", "us-east-1", {p}, "main", "", "", "allocate"});
    }
    return true;
  });
  ASSERT_TRUE(written) << written.error().message;
  auto loaded = FileStore(path_).load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(*loaded, *written);
  ASSERT_EQ(loaded->vpcs.size(), 60000u);
  EXPECT_EQ(loaded->find("vpc59999")->prefixes.at(0).toString(), "10.234.95.0/24");
}

}  // namespace
}  // namespace mcgw::plan
