// mcgwd follows its address plan's store (issue 15, item 4), on net_null
// vdevs: a revision written by `mcgwctl plan allocate` is applied like a
// reload; a revision that conflicts with the daemon's own file is refused and
// shown, and applied once a reload of the file resolves the conflict; with
// etcd as the store, etcd stopped leaves the plan in force and status says
// so, etcd back is seen, and a gateway that starts while etcd is down runs
// the plan it cached.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/daemon.hpp"
#include "tests/support/etcd.hpp"

namespace mcgw::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The plan of the tests: one tenant, a pool, one VPC of the file (and more
// VPCs in `more_vpcs`, the same indentation).
std::string planConfig(const std::string& store, const std::string& more_vpcs = "") {
  return "tenants:\n"
         "  - name: training\n"
         "    vni: 1001\n"
         "address-plan:\n"
         "  store:\n" +
         store +
         "  pools:\n"
         "    - name: cloud-pool\n"
         "      prefixes: [10.64.0.0/10]\n"
         "      allocation-length: 16\n"
         "  clouds:\n"
         "    - name: idc\n"
         "      regions:\n"
         "        - name: shanghai\n"
         "          vpcs:\n"
         "            - name: idc-sh\n"
         "              prefixes: [10.64.0.0/16]\n"
         "              tenant: training\n"
         "              site: lab\n" +
         more_vpcs;
}

class DaemonPlanTest : public DaemonTest {
 protected:
  std::string fileStore() { return "    type: file\n    path: " + dir_.file("plan.yaml") + "\n"; }

  // A config the CLI allocates with: the same store, maybe another file plan.
  std::string cliConfig(const std::string& store, const std::string& more_vpcs = "") {
    std::string path = dir_.file("cli.yaml");
    writeFile(path,
              nullConfig(dir_.file("unused.sock"), prefix_ + "c", planConfig(store, more_vpcs)));
    return path;
  }

  CommandResult allocate(const std::string& cli_config, const std::string& vpc) {
    return run(kMcgwctl + " plan -c " + cli_config +
               " allocate --cloud aws --region us-east-1 --vpc " + vpc +
               " --tenant training --site lab --json");
  }

  // Polls status until pred holds; the last status either way.
  json waitStatus(const std::function<bool(const json&)>& pred, std::chrono::seconds limit = 15s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    json s;
    while (std::chrono::steady_clock::now() < deadline) {
      s = status();
      if (s.is_object() && s.contains("address_plan") && pred(s)) {
        return s;
      }
      std::this_thread::sleep_for(200ms);
    }
    return s;
  }
  static const json& store(const json& s) { return s["address_plan"]["store"]; }
};

TEST_F(DaemonPlanTest, AppliesWhatTheStoreGets) {
  writeFile(config_, nullConfig(socket_, prefix_, planConfig(fileStore())));
  start();
  json s = status();
  ASSERT_TRUE(s["address_plan"]["store"].is_object()) << s.dump();
  EXPECT_EQ(store(s)["state"], "ok");
  EXPECT_EQ(store(s)["revision"], 0);
  EXPECT_EQ(s["address_plan"]["vpcs"], 1);

  CommandResult r = allocate(cliConfig(fileStore()), "train-use1");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["prefixes"], json::array({"10.65.0.0/16"}));

  s = waitStatus([](const json& s) { return s["address_plan"]["vpcs"] == 2; });
  EXPECT_EQ(s["address_plan"]["vpcs"], 2) << s.dump() << log();
  EXPECT_EQ(store(s)["revision"], 1);
  EXPECT_EQ(store(s)["stored_vpcs"], 1);
  EXPECT_EQ(s["health"]["state"], "healthy") << s["health"].dump();
  EXPECT_NE(log().find("address plan: applying store revision 1"), std::string::npos) << log();

  // The human view shows the store.
  r = ctl("status");
  EXPECT_NE(r.out.find("Address plan  2 VPCs, 0 mapped ranges, 1 pools; store file " +
                       dir_.file("plan.yaml") + ": ok, revision 1 (1 stored VPCs)"),
            std::string::npos)
      << r.out;
}

TEST_F(DaemonPlanTest, RefusesARevisionThatConflictsWithItsFile) {
  // The daemon's file has a VPC the allocating operator's file does not:
  // the allocation takes its block, and the daemon refuses that revision.
  const std::string x_only =
      "            - name: x-only\n"
      "              prefixes: [10.65.0.0/16]\n";
  writeFile(config_, nullConfig(socket_, prefix_, planConfig(fileStore(), x_only)));
  start();
  CommandResult r = allocate(cliConfig(fileStore()), "train-use1");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["prefixes"], json::array({"10.65.0.0/16"}));

  json s = waitStatus([](const json& s) { return store(s).contains("refused"); });
  ASSERT_TRUE(store(s).contains("refused")) << s.dump() << log();
  EXPECT_EQ(store(s)["refused"]["revision"], 1);
  const std::string errors = store(s)["refused"]["errors"].dump();
  EXPECT_NE(errors.find("train-use1"), std::string::npos) << errors;
  EXPECT_NE(errors.find("x-only"), std::string::npos) << errors;
  EXPECT_EQ(store(s)["revision"], 0);       // the plan in force is unchanged
  EXPECT_EQ(s["address_plan"]["vpcs"], 2);  // the file's two
  EXPECT_EQ(s["health"]["state"], "degraded");
  EXPECT_NE(s["health"]["reasons"].dump().find("address plan revision 1 refused"),
            std::string::npos)
      << s["health"].dump();

  // The file without x-only: the reload is applied, then the held revision.
  writeFile(config_, nullConfig(socket_, prefix_, planConfig(fileStore())));
  r = ctl("reload");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  s = waitStatus([](const json& s) { return store(s)["revision"] == 1; });
  EXPECT_EQ(store(s)["revision"], 1) << s.dump() << log();
  EXPECT_FALSE(store(s).contains("refused"));
  EXPECT_EQ(s["address_plan"]["vpcs"], 2);  // idc-sh and train-use1
  EXPECT_EQ(s["health"]["state"], "healthy") << s["health"].dump();

  // A reload whose file overlaps a stored VPC is refused: the plan stays.
  writeFile(config_, nullConfig(socket_, prefix_, planConfig(fileStore(), x_only)));
  r = ctl("reload");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("x-only"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("train-use1"), std::string::npos) << r.err;
  s = status();
  EXPECT_EQ(store(s)["revision"], 1);
}

TEST_F(DaemonPlanTest, EtcdDownKeepsThePlanAndSaysSo) {
  EtcdServer etcd;
  ASSERT_TRUE(etcd.start()) << etcd.log();
  const std::string store_yaml = "    type: etcd\n    endpoints: [" + etcd.endpoint() + "]\n";
  writeFile(config_, nullConfig(socket_, prefix_, planConfig(store_yaml)));
  start();
  CommandResult r = allocate(cliConfig(store_yaml), "train-use1");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json s = waitStatus([](const json& s) { return s["address_plan"]["vpcs"] == 2; });
  ASSERT_EQ(s["address_plan"]["vpcs"], 2) << s.dump() << log();
  const json revision = store(s)["revision"];

  etcd.stop();
  s = waitStatus([](const json& s) { return store(s)["state"] == "unreachable"; });
  EXPECT_EQ(store(s)["state"], "unreachable") << s.dump();
  EXPECT_EQ(store(s)["revision"], revision);
  EXPECT_EQ(s["address_plan"]["vpcs"], 2);
  EXPECT_EQ(s["health"]["state"], "degraded");
  EXPECT_NE(s["health"]["reasons"].dump().find("unreachable since"), std::string::npos)
      << s["health"].dump();

  ASSERT_TRUE(etcd.start()) << etcd.log();
  s = waitStatus([](const json& s) { return store(s)["state"] == "ok"; }, 30s);
  EXPECT_EQ(store(s)["state"], "ok") << s.dump();
  EXPECT_EQ(store(s)["revision"], revision);
  EXPECT_EQ(s["health"]["state"], "healthy") << s["health"].dump();

  // Started while etcd is down: the cached plan, and status says so.
  etcd.stop();
  daemon_.reset();
  start();
  s = status();
  EXPECT_EQ(s["address_plan"]["vpcs"], 2) << s.dump();
  EXPECT_EQ(store(s)["revision"], revision);
  EXPECT_EQ(store(s)["state"], "unreachable");
  EXPECT_NE(store(s)["error"].get<std::string>().find("running the cached plan"), std::string::npos)
      << store(s).dump();
}

}  // namespace
}  // namespace mcgw::test
