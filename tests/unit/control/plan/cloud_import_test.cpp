// Import of cloud VPC listings: the committed samples (written from each
// cloud's API reference, tests/unit/control/plan/import) parse to literal
// VPCs, the conflict report says literally what it should, and malformed
// listings give errors that name the element.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "control/plan/cloud_import.hpp"

namespace mcgw::plan {
namespace {

using config::IpPrefix;
using nlohmann::json;

IpPrefix pfx(const char* text) {
  auto p = IpPrefix::parse(text);
  EXPECT_TRUE(p.has_value()) << text;
  return p.value_or(IpPrefix{});
}

std::vector<IpPrefix> pfxs(std::initializer_list<const char*> texts) {
  std::vector<IpPrefix> out;
  for (const char* t : texts) {
    out.push_back(pfx(t));
  }
  return out;
}

std::string sample(const std::string& file) {
  std::ifstream in(std::string(MCGW_SOURCE_DIR) + "/tests/unit/control/plan/import/" + file,
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << file;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The plan of config/examples/address-plan.yaml, written out here so that
// a change to the example does not change these tests.
config::Config examplePlan() {
  config::Config c;
  auto& plan = c.address_plan;
  plan.pools.push_back({"cloud-pool", pfxs({"10.64.0.0/10"}), 16, {}});
  plan.vpcs.push_back({"idc", "shanghai", "idc-a", pfxs({"10.1.0.0/16"}), "training", "idc-a"});
  plan.vpcs.push_back({"aws", "us-east-1", "train-use1", pfxs({"10.2.0.0/16", "10.12.0.0/16"}),
                       "training", "aws-use1"});
  plan.vpcs.push_back(
      {"aliyun", "cn-shanghai", "infer-sh", pfxs({"10.3.0.0/16"}), "training", "aliyun-sh"});
  plan.mapped_ranges.push_back(
      {"legacy-erp", pfx("10.1.0.0/16"), pfx("100.65.0.0/16"), "huawei-gz"});
  return c;
}

// A store holding one allocation from the pool.
Snapshot exampleStore() {
  Snapshot s;
  s.revision = 7;
  StoredVpc web;
  web.name = "web-use2";
  web.cloud = "aws";
  web.region = "us-east-2";
  web.prefixes = pfxs({"10.64.0.0/16"});
  web.pool = "cloud-pool";
  web.source = "allocate";
  s.vpcs.push_back(web);
  return s;
}

ImportedVpc vpc(const char* cloud, const char* source, const char* region, const char* name,
                const char* listed, const char* id, std::vector<IpPrefix> prefixes,
                const char* pointer, std::vector<std::string> notes = {}) {
  return {cloud, source, region, name, listed, id, std::move(prefixes), pointer, std::move(notes)};
}

Listing parsed(Cloud from, const std::string& text, const char* region) {
  auto r = parseListing(from, text, region);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().toString());
  return r.ok() ? *r : Listing{};
}

std::string errorOf(Cloud from, const std::string& text, const char* region = "r1") {
  auto r = parseListing(from, text, region);
  return r.ok() ? "(parsed)" : r.error().toString();
}

std::vector<std::string> messages(const VpcVerdict& v) {
  std::vector<std::string> out;
  for (const Conflict& c : v.conflicts) {
    out.push_back(c.message);
  }
  return out;
}

// --- the samples -----------------------------------------------------------

TEST(CloudImport, AwsSampleParses) {
  Listing l = parsed(Cloud::kAws, sample("aws-describe-vpcs.json"), "us-east-1");
  std::vector<ImportedVpc> want = {
      vpc("aws", "import:aws", "us-east-1", "train-use1", "train-use1", "vpc-0a1b2c3d4e5f60718",
          pfxs({"10.2.0.0/16", "10.12.0.0/16"}), "/Vpcs/0"),
      vpc("aws", "import:aws", "us-east-1", "data-lake-prod", "data lake (prod)",
          "vpc-0b2c3d4e5f6071829",
          pfxs({"10.20.0.0/16", "10.21.0.0/16", "2600:1f18:4a3:6e00::/56"}), "/Vpcs/1",
          {"10.22.0.0/16 is disassociated (/Vpcs/1/CidrBlockAssociationSet/2): left out",
           "listed name \"data lake (prod)\" is not a plan name: imported as data-lake-prod"}),
      vpc("aws", "import:aws", "us-east-1", "vpc-0c3d4e5f607182930", "", "vpc-0c3d4e5f607182930",
          pfxs({"172.31.0.0/16"}), "/Vpcs/2",
          {"no name listed: named after its id, vpc-0c3d4e5f607182930"}),
      vpc("aws", "import:aws", "us-east-1", "batch", "batch", "vpc-0d4e5f60718293a41",
          pfxs({"10.64.16.0/20"}), "/Vpcs/3"),
  };
  EXPECT_EQ(l.vpcs, want);
  EXPECT_TRUE(l.notes.empty());
  EXPECT_EQ(l.from, Cloud::kAws);
}

TEST(CloudImport, AliyunSampleParses) {
  // RegionId comes from the listing: the hint is not used.
  Listing l = parsed(Cloud::kAliyun, sample("aliyun-describe-vpcs.json"), "");
  std::vector<ImportedVpc> want = {
      vpc("aliyun", "import:aliyun", "cn-shanghai", "infer-sh", "infer-sh",
          "vpc-uf6infer0sh3a7k2q9x1", pfxs({"10.3.0.0/16", "10.13.0.0/16"}), "/Vpcs/Vpc/0"),
      vpc("aliyun", "import:aliyun", "cn-hangzhou", "gpu", "训练集群-gpu",
          "vpc-bp1gpu7t2r4n6m8k0j2h",
          pfxs({"192.168.0.0/16", "10.30.0.0/16", "2408:4005:3ed:c500::/56"}), "/Vpcs/Vpc/1",
          {"listed name \"训练集群-gpu\" is not a plan name: imported as gpu"}),
      vpc("aliyun", "import:aliyun", "cn-shanghai", "poc-2022", "poc-2022",
          "vpc-uf6ovl9p8o7i6u5y4t3r", pfxs({"10.2.128.0/17"}), "/Vpcs/Vpc/2"),
      vpc("aliyun", "import:aliyun", "cn-hangzhou", "dev-a", "dev-a", "vpc-bp1deva0z9y8x7w6v5u4",
          pfxs({"172.16.0.0/12"}), "/Vpcs/Vpc/3"),
      vpc("aliyun", "import:aliyun", "cn-hangzhou", "dev-b", "dev-b", "vpc-bp1devb1a2s3d4f5g6h7",
          pfxs({"172.16.0.0/16"}), "/Vpcs/Vpc/4"),
  };
  EXPECT_EQ(l.vpcs, want);
  EXPECT_TRUE(l.notes.empty());  // TotalCount 5, all 5 listed
}

TEST(CloudImport, HuaweiSampleParses) {
  Listing l = parsed(Cloud::kHuawei, sample("huawei-list-vpcs.json"), "cn-south-1");
  std::vector<ImportedVpc> want = {
      vpc("huaweicloud", "import:huawei", "cn-south-1", "erp-legacy", "erp-legacy",
          "5d2f0c4e-8b1a-4c7d-9e3f-6a1b2c3d4e5f", pfxs({"10.1.0.0/16"}), "/vpcs/0"),
      vpc("huaweicloud", "import:huawei", "cn-south-1", "mes-prod", "mes-prod",
          "7e4a2b6c-1d3f-4e5a-8b7c-9d0e1f2a3b4c", pfxs({"10.40.0.0/16", "10.41.0.0/16"}),
          "/vpcs/1"),
      vpc("huaweicloud", "import:huawei", "cn-south-1", "vpc-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d",
          "", "0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d", {}, "/vpcs/2",
          {"no name listed: named after its id, vpc-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"}),
      vpc("huaweicloud", "import:huawei", "cn-south-1", "infer-sh", "infer-sh",
          "3f1e2d3c-4b5a-4968-8776-655443322110", pfxs({"10.50.0.0/16"}), "/vpcs/3"),
  };
  EXPECT_EQ(l.vpcs, want);
  EXPECT_TRUE(l.notes.empty());
}

TEST(CloudImport, HuaweiV1ListingParses) {
  // GET /v1/{project_id}/vpcs: the same "vpcs", one cidr each, routes.
  Listing l = parsed(Cloud::kHuawei, R"({"vpcs": [
      {"id": "13551d6b-755d-4757-b956-536f674975c0", "name": "default", "description": "",
       "cidr": "172.16.0.0/16", "status": "OK", "routes": [],
       "tenant_id": "087679f0aa80d32a2f4ec0172f5e902b",
       "created_at": "2022-12-15T02:11:13", "updated_at": "2022-12-15T02:11:13"}]})",
                     "eu-west-101");
  std::vector<ImportedVpc> want = {vpc("huaweicloud", "import:huawei", "eu-west-101", "default",
                                       "default", "13551d6b-755d-4757-b956-536f674975c0",
                                       pfxs({"172.16.0.0/16"}), "/vpcs/0")};
  EXPECT_EQ(l.vpcs, want);
}

TEST(CloudImport, IncompleteListingsAreNoted) {
  EXPECT_EQ(parsed(Cloud::kAws, R"({"Vpcs": [], "NextToken": "eyJ2IjoxfQ=="})", "us-east-1").notes,
            std::vector<std::string>{
                "the listing has a NextToken: it is one page of several (run aws ec2 "
                "describe-vpcs without --max-items to list every VPC)"});
  EXPECT_EQ(
      parsed(Cloud::kAliyun,
             R"({"TotalCount": 12, "PageNumber": 1, "PageSize": 1, "Vpcs": {"Vpc": [
                 {"VpcId": "vpc-a1", "RegionId": "cn-beijing", "VpcName": "a", "CidrBlock": "10.9.0.0/16"}]}})",
             "")
          .notes,
      std::vector<std::string>{"the listing holds 1 of 12 VPCs (TotalCount): it is one page of "
                               "several (run aliyun vpc DescribeVpcs with --pager to list every "
                               "VPC)"});
  EXPECT_EQ(
      parsed(Cloud::kHuawei, R"({"vpcs": [], "page_info": {"next_marker": "abc"}})", "r1").notes,
      std::vector<std::string>{"the listing has a page_info.next_marker: it is one page of "
                               "several (list with --limit=2000, and with --marker for more "
                               "than 2000 VPCs)"});
}

// --- the conflict report ---------------------------------------------------

TEST(CloudImport, AwsSampleReport) {
  Listing l = parsed(Cloud::kAws, sample("aws-describe-vpcs.json"), "us-east-1");
  ImportReport r = findConflicts(examplePlan(), exampleStore(), l);
  EXPECT_EQ(toText(r),
            "import from aws: 4 VPCs listed, 2 fit, 1 already in the plan, 1 in conflict\n"
            "  in plan  aws/us-east-1/train-use1 (vpc-0a1b2c3d4e5f60718) 10.2.0.0/16, "
            "10.12.0.0/16 (already in the config)\n"
            "  fits     aws/us-east-1/data-lake-prod (vpc-0b2c3d4e5f6071829) 10.20.0.0/16, "
            "10.21.0.0/16, 2600:1f18:4a3:6e00::/56\n"
            "      note: 10.22.0.0/16 is disassociated (/Vpcs/1/CidrBlockAssociationSet/2): left "
            "out\n"
            "      note: listed name \"data lake (prod)\" is not a plan name: imported as "
            "data-lake-prod\n"
            "  fits     aws/us-east-1/vpc-0c3d4e5f607182930 (vpc-0c3d4e5f607182930) "
            "172.31.0.0/16\n"
            "      note: no name listed: named after its id, vpc-0c3d4e5f607182930\n"
            "  conflict aws/us-east-1/batch (vpc-0d4e5f60718293a41) 10.64.16.0/20\n"
            "      10.64.16.0/20 overlaps 10.64.0.0/16 of VPC aws/us-east-2/web-use2 in the store "
            "(allocate)\n");

  ASSERT_EQ(r.vpcs.size(), 4u);
  ASSERT_EQ(r.vpcs[3].conflicts.size(), 1u);
  const Conflict& c = r.vpcs[3].conflicts[0];
  EXPECT_EQ(c.kind, Conflict::Kind::kOverlapStoredVpc);
  EXPECT_EQ(c.prefix, pfx("10.64.16.0/20"));
  EXPECT_EQ(c.other_prefix, pfx("10.64.0.0/16"));
  EXPECT_EQ(c.other, "VPC aws/us-east-2/web-use2 in the store (allocate)");

  std::vector<StoredVpc> stored = toStoredVpcs(r);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0], (StoredVpc{"data-lake-prod", "aws", "us-east-1",
                                  pfxs({"10.20.0.0/16", "10.21.0.0/16", "2600:1f18:4a3:6e00::/56"}),
                                  "", "", "", "import:aws"}));
  EXPECT_EQ(stored[1], (StoredVpc{"vpc-0c3d4e5f607182930", "aws", "us-east-1",
                                  pfxs({"172.31.0.0/16"}), "", "", "", "import:aws"}));
}

TEST(CloudImport, AliyunSampleReport) {
  Listing l = parsed(Cloud::kAliyun, sample("aliyun-describe-vpcs.json"), "");
  ImportReport r = findConflicts(examplePlan(), exampleStore(), l);
  ASSERT_EQ(r.vpcs.size(), 5u);
  using S = VpcVerdict::Status;
  EXPECT_EQ(r.vpcs[0].status, S::kConflicts);
  EXPECT_EQ(messages(r.vpcs[0]),
            (std::vector<std::string>{
                "the name infer-sh is already used by VPC aliyun/cn-shanghai/infer-sh in the "
                "config, with 10.3.0.0/16",
                "10.3.0.0/16 overlaps 10.3.0.0/16 of VPC aliyun/cn-shanghai/infer-sh in the "
                "config"}));
  EXPECT_EQ(r.vpcs[1].status, S::kFits);
  EXPECT_EQ(r.vpcs[2].status, S::kConflicts);
  EXPECT_EQ(
      messages(r.vpcs[2]),
      std::vector<std::string>{
          "10.2.128.0/17 overlaps 10.2.0.0/16 of VPC aws/us-east-1/train-use1 in the config"});
  // dev-a and dev-b overlap each other: both conflict, each names the other.
  EXPECT_EQ(r.vpcs[3].status, S::kConflicts);
  EXPECT_EQ(messages(r.vpcs[3]),
            std::vector<std::string>{
                "172.16.0.0/12 overlaps 172.16.0.0/16 of imported VPC aliyun/cn-hangzhou/dev-b "
                "(vpc-bp1devb1a2s3d4f5g6h7) in this listing"});
  EXPECT_EQ(r.vpcs[4].status, S::kConflicts);
  EXPECT_EQ(messages(r.vpcs[4]),
            std::vector<std::string>{
                "172.16.0.0/16 overlaps 172.16.0.0/12 of imported VPC aliyun/cn-hangzhou/dev-a "
                "(vpc-bp1deva0z9y8x7w6v5u4) in this listing"});
  EXPECT_EQ(r.vpcs[3].conflicts[0].kind, Conflict::Kind::kOverlapImported);

  std::vector<StoredVpc> stored = toStoredVpcs(r);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].name, "gpu");
  EXPECT_EQ(stored[0].source, "import:aliyun");
}

TEST(CloudImport, HuaweiSampleReport) {
  Listing l = parsed(Cloud::kHuawei, sample("huawei-list-vpcs.json"), "cn-south-1");
  ImportReport r = findConflicts(examplePlan(), exampleStore(), l);
  EXPECT_EQ(toText(r),
            "import from huawei: 4 VPCs listed, 1 fit, 0 already in the plan, 3 in conflict\n"
            "  conflict huaweicloud/cn-south-1/erp-legacy (5d2f0c4e-8b1a-4c7d-9e3f-6a1b2c3d4e5f) "
            "10.1.0.0/16\n"
            "      10.1.0.0/16 overlaps 10.1.0.0/16 of VPC idc/shanghai/idc-a in the config; "
            "mapped range legacy-erp already maps a copy of 10.1.0.0/16 at site huawei-gz to "
            "100.65.0.0/16: such a copy stays out of the plan\n"
            "  fits     huaweicloud/cn-south-1/mes-prod (7e4a2b6c-1d3f-4e5a-8b7c-9d0e1f2a3b4c) "
            "10.40.0.0/16, 10.41.0.0/16\n"
            "  conflict huaweicloud/cn-south-1/vpc-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d "
            "(0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d) (no CIDR block)\n"
            "      no CIDR block in use to import\n"
            "      note: no name listed: named after its id, "
            "vpc-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d\n"
            "  conflict huaweicloud/cn-south-1/infer-sh (3f1e2d3c-4b5a-4968-8776-655443322110) "
            "10.50.0.0/16\n"
            "      the name infer-sh is already used by VPC aliyun/cn-shanghai/infer-sh in the "
            "config, with 10.3.0.0/16\n");
  std::vector<StoredVpc> stored = toStoredVpcs(r);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0],
            (StoredVpc{"mes-prod", "huaweicloud", "cn-south-1",
                       pfxs({"10.40.0.0/16", "10.41.0.0/16"}), "", "", "", "import:huawei"}));
}

TEST(CloudImport, ReimportChangesNothing) {
  // --apply, then the same listing again: what was added is "already in
  // the plan", nothing fits twice, the conflicts stay.
  const config::Config plan = examplePlan();
  Snapshot store = exampleStore();
  Listing l = parsed(Cloud::kAws, sample("aws-describe-vpcs.json"), "us-east-1");
  for (StoredVpc& v : toStoredVpcs(findConflicts(plan, store, l))) {
    store.vpcs.push_back(std::move(v));
  }
  ImportReport again = findConflicts(plan, store, l);
  using S = VpcVerdict::Status;
  ASSERT_EQ(again.vpcs.size(), 4u);
  EXPECT_EQ(again.vpcs[0].status, S::kAlreadyInPlan);
  EXPECT_EQ(again.vpcs[0].already_in, "config");
  EXPECT_EQ(again.vpcs[1].status, S::kAlreadyInPlan);
  EXPECT_EQ(again.vpcs[1].already_in, "store");
  EXPECT_EQ(again.vpcs[2].status, S::kAlreadyInPlan);
  EXPECT_EQ(again.vpcs[3].status, S::kConflicts);
  EXPECT_TRUE(toStoredVpcs(again).empty());
}

TEST(CloudImport, ApplyAddsWhatFitsSortedByName) {
  const config::Config plan = examplePlan();
  Snapshot store = exampleStore();
  Listing l = parsed(Cloud::kAws, sample("aws-describe-vpcs.json"), "us-east-1");
  auto applied = applyListing(plan, l, store);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->count(VpcVerdict::Status::kFits), 2u);
  std::vector<std::string> names;
  for (const StoredVpc& v : store.vpcs) {
    names.push_back(v.name);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"data-lake-prod", "vpc-0c3d4e5f607182930", "web-use2"}));
  EXPECT_EQ(store.revision, 7u);  // the store counts its own writes
  ASSERT_NE(store.find("data-lake-prod"), nullptr);
  EXPECT_EQ(store.find("data-lake-prod")->source, "import:aws");

  // A second apply adds nothing.
  const Snapshot before = store;
  auto again = applyListing(plan, l, store);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->count(VpcVerdict::Status::kFits), 0u);
  EXPECT_EQ(store, before);
}

TEST(CloudImport, JsonReport) {
  Listing l = parsed(Cloud::kAws, sample("aws-describe-vpcs.json"), "us-east-1");
  json j = toJson(findConflicts(examplePlan(), exampleStore(), l));
  EXPECT_EQ(j["from"], "aws");
  EXPECT_EQ(j["counts"], json::parse(R"({"listed": 4, "fits": 2, "already_in_plan": 1,
                                          "conflicts": 1})"));
  EXPECT_EQ(j["notes"], json::array());
  ASSERT_EQ(j["vpcs"].size(), 4u);
  EXPECT_EQ(j["vpcs"][0], json::parse(R"({
      "name": "train-use1", "cloud": "aws", "region": "us-east-1",
      "cloud_id": "vpc-0a1b2c3d4e5f60718", "listed_name": "train-use1",
      "prefixes": ["10.2.0.0/16", "10.12.0.0/16"], "pointer": "/Vpcs/0",
      "status": "already-in-plan", "already_in": "config", "conflicts": [], "notes": []})"));
  EXPECT_EQ(j["vpcs"][3], json::parse(R"J({
      "name": "batch", "cloud": "aws", "region": "us-east-1",
      "cloud_id": "vpc-0d4e5f60718293a41", "listed_name": "batch",
      "prefixes": ["10.64.16.0/20"], "pointer": "/Vpcs/3", "status": "conflicts",
      "conflicts": [{"kind": "overlap-stored-vpc", "prefix": "10.64.16.0/20",
                     "other": "VPC aws/us-east-2/web-use2 in the store (allocate)",
                     "other_prefix": "10.64.0.0/16",
                     "message": "10.64.16.0/20 overlaps 10.64.0.0/16 of VPC aws/us-east-2/web-use2 in the store (allocate)"
}],
      "notes": []
})J"));
}

// An AWS listing of one VPC with these CIDR blocks (the first is primary).
std::string awsVpc(const char* id, const char* name, std::initializer_list<const char*> blocks) {
  json v = {{"VpcId", id}, {"Tags", json::array({{{"Key", "Name"}, {"Value", name}}})}};
  json set = json::array();
  for (const char* b : blocks) {
    if (std::string(b).find(':') == std::string::npos) {
      set.push_back({{"CidrBlock", b}, {"CidrBlockState", {{"State", "associated"}}}});
    }
  }
  json set6 = json::array();
  for (const char* b : blocks) {
    if (std::string(b).find(':') != std::string::npos) {
      set6.push_back({{"Ipv6CidrBlock", b}, {"Ipv6CidrBlockState", {{"State", "associated"}}}});
    }
  }
  v["CidrBlockAssociationSet"] = set;
  v["Ipv6CidrBlockAssociationSet"] = set6;
  return v.dump();
}

std::string awsListing(std::initializer_list<std::string> vpcs) {
  std::string out = R"({"Vpcs": [)";
  bool first = true;
  for (const std::string& v : vpcs) {
    out += (first ? "" : ",") + v;
    first = false;
  }
  return out + "]}";
}

std::vector<std::vector<std::string>> reportMessages(const config::Config& plan,
                                                     const Snapshot& store,
                                                     const std::string& listing) {
  Listing l = parsed(Cloud::kAws, listing, "us-east-1");
  std::vector<std::vector<std::string>> out;
  for (const VpcVerdict& v : findConflicts(plan, store, l).vpcs) {
    out.push_back(messages(v));
  }
  return out;
}

TEST(CloudImport, ApplyKeepsTheStoreBound) {
  Snapshot store;
  for (size_t i = 0; i < kMaxStoredVpcs; ++i) {
    store.vpcs.push_back({"s" + std::to_string(i), "aws", "r1", {}, "", "", "", "allocate"});
  }
  Listing l = parsed(Cloud::kAws, awsListing({awsVpc("vpc-1", "one", {"10.0.0.0/16"})}), "r1");
  auto applied = applyListing(config::Config{}, l, store);
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.error(), "the store holds 65536 VPCs; adding 1 would pass its limit of 65536");
  EXPECT_EQ(store.vpcs.size(), kMaxStoredVpcs);
}

TEST(CloudImport, HostBitsReservedAndOwnOverlap) {
  EXPECT_EQ(
      reportMessages(examplePlan(), {},
                     awsListing({awsVpc("vpc-1", "odd", {"10.9.1.0/16"}),
                                 awsVpc("vpc-2", "ll", {"169.254.0.0/16", "fe80::/64"}),
                                 awsVpc("vpc-3", "nested", {"10.70.0.0/16", "10.70.1.0/24"})})),
      (std::vector<std::vector<std::string>>{
          {"10.9.1.0/16 has host bits set (the network is 10.9.0.0/16)"},
          {"169.254.0.0/16 overlaps 169.254.0.0/16, reserved for link-local addresses",
           "fe80::/64 overlaps fe80::/10, reserved for link-local addresses"},
          {"10.70.1.0/24 overlaps its own block 10.70.0.0/16"}}));
}

TEST(CloudImport, Ipv6OverlapsAreFound) {
  config::Config plan = examplePlan();
  plan.address_plan.vpcs.push_back(
      {"idc", "shanghai", "idc-v6", pfxs({"2001:db8:100::/48"}), "", ""});
  Snapshot store;
  store.vpcs.push_back(
      {"v6-store", "aws", "us-west-2", pfxs({"2001:db8:200::/48"}), "", "", "", "import:aws"});
  EXPECT_EQ(reportMessages(plan, store,
                           awsListing({awsVpc("vpc-1", "wide", {"10.80.0.0/16", "2001:db8::/32"}),
                                       awsVpc("vpc-2", "narrow", {"2001:db8:100:1::/64"})})),
            (std::vector<std::vector<std::string>>{
                {"2001:db8::/32 overlaps 2001:db8:200::/48 of VPC aws/us-west-2/v6-store in the "
                 "store (import:aws)",
                 "2001:db8::/32 overlaps 2001:db8:100::/48 of VPC idc/shanghai/idc-v6 in the "
                 "config",
                 "2001:db8::/32 overlaps 2001:db8:100:1::/64 of imported VPC "
                 "aws/us-east-1/narrow (vpc-2) in this listing"},
                {"2001:db8:100:1::/64 overlaps 2001:db8:100::/48 of VPC idc/shanghai/idc-v6 in "
                 "the config",
                 "2001:db8:100:1::/64 overlaps 2001:db8::/32 of imported VPC aws/us-east-1/wide "
                 "(vpc-1) in this listing"}}));
}

TEST(CloudImport, MappedRangeAndNamesInTheListing) {
  EXPECT_EQ(reportMessages(examplePlan(), {},
                           awsListing({awsVpc("vpc-1", "web", {"100.65.8.0/24"}),
                                       awsVpc("vpc-2", "web", {"10.90.0.0/16"})})),
            (std::vector<std::vector<std::string>>{
                {"100.65.8.0/24 overlaps 100.64.0.0/10, reserved for Alibaba Cloud's own services "
                 "(a cloud "
                 "of the plan)",
                 "100.65.8.0/24 overlaps 100.65.0.0/16 of mapped range legacy-erp in the config",
                 "the name web is also the name of imported VPC aws/us-east-1/web (vpc-2) in "
                 "this listing"},
                {"the name web is also the name of imported VPC aws/us-east-1/web (vpc-1) in "
                 "this listing"}}));
}

TEST(CloudImport, ManyConflictsAreCapped) {
  Snapshot store;
  for (int i = 0; i < 40; ++i) {
    std::string p = "10." + std::to_string(100 + i) + ".0.0/16";
    store.vpcs.push_back({"s" + std::to_string(100 + i), "aws", "us-east-1", pfxs({p.c_str()}), "",
                          "", "", "allocate"});
  }
  std::sort(store.vpcs.begin(), store.vpcs.end(),
            [](const StoredVpc& a, const StoredVpc& b) { return a.name < b.name; });
  Listing l = parsed(Cloud::kAws, awsListing({awsVpc("vpc-1", "all", {"10.0.0.0/8"})}), "r1");
  ImportReport r = findConflicts(config::Config{}, store, l);
  ASSERT_EQ(r.vpcs.size(), 1u);
  ASSERT_EQ(r.vpcs[0].conflicts.size(), kMaxConflictsPerVpc + 1);
  // Highest first: the walk goes down from the end of 10.0.0.0/8.
  EXPECT_EQ(r.vpcs[0].conflicts[0].message,
            "10.0.0.0/8 overlaps 10.139.0.0/16 of VPC aws/us-east-1/s139 in the store (allocate)");
  EXPECT_EQ(r.vpcs[0].conflicts.back().kind, Conflict::Kind::kMore);
  EXPECT_EQ(r.vpcs[0].conflicts.back().message,
            "more conflicts not listed (the report lists 32 per VPC)");
}

TEST(CloudImport, ManyNamesakesAreCapped) {
  std::string listing = R"({"Vpcs": [)";
  for (int i = 0; i < 100; ++i) {
    listing += (i ? "," : "") + awsVpc(("vpc-" + std::to_string(i)).c_str(), "web",
                                       {("10." + std::to_string(i) + ".0.0/16").c_str()});
  }
  listing += "]}";
  Listing l = parsed(Cloud::kAws, listing, "r1");
  ImportReport r = findConflicts(config::Config{}, Snapshot{}, l);
  ASSERT_EQ(r.vpcs.size(), 100u);
  for (const VpcVerdict& v : r.vpcs) {
    ASSERT_EQ(v.conflicts.size(), kMaxConflictsPerVpc + 1);
    EXPECT_EQ(v.conflicts.back().kind, Conflict::Kind::kMore);
  }
  EXPECT_EQ(r.vpcs[0].conflicts[0].message,
            "the name web is also the name of imported VPC aws/r1/web (vpc-1) in this listing");
  EXPECT_EQ(r.vpcs[5].conflicts[0].message,
            "the name web is also the name of imported VPC aws/r1/web (vpc-0) in this listing");
}

TEST(CloudImport, UntrustedNamesAreEscapedInTheText) {
  // U+202E (right-to-left override) is refused in a string the import reads.
  EXPECT_EQ(errorOf(Cloud::kAws, awsListing({awsVpc("vpc-1",
                                                    "\xe2\x80\xae"
                                                    "x",
                                                    {})})),
            "/Vpcs/0/Tags/0/Value: \"\\u202Ex\": bidirectional formatting character U+202E");
  // A backslash and quotes are fine in a cloud's name, not in a plan name:
  // renamed, and the listed name quoted escaped.
  Listing l =
      parsed(Cloud::kAws, awsListing({awsVpc("vpc-1", "a\\b \"c\"", {"10.91.0.0/16"})}), "r1");
  ASSERT_EQ(l.vpcs.size(), 1u);
  EXPECT_EQ(l.vpcs[0].name, "a-b-c");
  EXPECT_EQ(l.vpcs[0].listed_name, "a\\b \"c\"");
  EXPECT_EQ(l.vpcs[0].notes,
            std::vector<std::string>{
                "listed name \"a\\\\b \\\"c\\\"\" is not a plan name: imported as a-b-c"});
}

// --- names -----------------------------------------------------------------

TEST(CloudImport, SanitizedNames) {
  struct Case {
    std::string listed;
    std::string want;
  };
  const Case cases[] = {
      {"web-prod", "web-prod"},
      {"data lake (prod)", "data-lake-prod"},
      {"训练集群-gpu", "gpu"},
      {"生产环境", ""},
      {"1st-vpc", "vpc-1st-vpc"},
      {"_tmp", "vpc-_tmp"},
      {"--a--", "a"},
      {"a//b", "a-b"},
      {"", ""},
      {"a.b_c-D9", "a.b_c-D9"},
      {"5d2f0c4e-8b1a-4c7d-9e3f-6a1b2c3d4e5f", "vpc-5d2f0c4e-8b1a-4c7d-9e3f-6a1b2c3d4e5f"},
      {std::string(63, 'a'), std::string(63, 'a')},
      {std::string(64, 'a'), std::string(63, 'a')},
      // Cut at 63, then the '-' left at the end dropped.
      {std::string(62, 'a') + " b", std::string(62, 'a')},
      {"9" + std::string(66, 'a'), "vpc-9" + std::string(58, 'a')},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(sanitizedName(c.listed), c.want) << c.listed;
  }
}

TEST(CloudImport, CloudNames) {
  EXPECT_EQ(cloudFromFlag("aws"), Cloud::kAws);
  EXPECT_EQ(cloudFromFlag("aliyun"), Cloud::kAliyun);
  EXPECT_EQ(cloudFromFlag("huawei"), Cloud::kHuawei);
  EXPECT_EQ(cloudFromFlag("huaweicloud"), std::nullopt);
  EXPECT_STREQ(planCloudName(Cloud::kHuawei), "huaweicloud");
  EXPECT_STREQ(flagName(Cloud::kHuawei), "huawei");
}

// --- malformed listings ----------------------------------------------------

TEST(CloudImport, MalformedListingsNameTheElement) {
  struct Case {
    Cloud from;
    std::string text;
    const char* want;
  };
  const Case cases[] = {
      {Cloud::kAws, "not json",
       "the listing: not valid JSON: at line 1, column 2: invalid literal"},
      {Cloud::kAws, "{\"Vpcs\": [\n  {\"VpcId\": \"vpc-1\",}\n]}",
       "the listing: not valid JSON: at line 2, column 21: unexpected '}'; expected string "
       "literal"},
      {Cloud::kAws, "",
       "the listing: not valid JSON: at line 1, column 1: unexpected end of input; expected '[', "
       "'{', or a literal"},
      {Cloud::kAws, R"({"Vpcs": [], "n": 1e400})",
       "the listing: not valid JSON: number overflow parsing '1e400'"},
      {Cloud::kAws, "[]",
       "the listing: the listing is an array, not a JSON object; expected what `aws ec2 "
       "describe-vpcs` prints: {\"Vpcs\": [...]}"},
      {Cloud::kAws, "{}",
       "/Vpcs: missing; expected what `aws ec2 describe-vpcs` prints: {\"Vpcs\": [...]}"},
      {Cloud::kAws, R"({"Vpcs": {}})", "/Vpcs: is an object, expected an array"},
      {Cloud::kAws, R"({"Vpcs": [7]})", "/Vpcs/0: is a number, expected an object"},
      {Cloud::kAws, R"({"Vpcs": [{"VpcId": 7}]})", "/Vpcs/0/VpcId: is a number, expected a string"},
      {Cloud::kAws, R"({"Vpcs": [{"CidrBlock": "10.0.0.0/16"}]})",
       "/Vpcs/0/VpcId: missing; expected what `aws ec2 describe-vpcs` prints: {\"Vpcs\": [...]}"},
      {Cloud::kAws, R"({"Vpcs": [{"VpcId": "vpc 1; rm -rf"}]})",
       "/Vpcs/0/VpcId: \"vpc 1; rm -rf\" is not a VPC id (1..128 letters, digits, '_', '.', "
       "'-')"},
      {Cloud::kAws, R"({"Vpcs": [{"VpcId": "vpc-1"}, {"VpcId": "vpc-1"}]})",
       "/Vpcs/1/VpcId: VPC vpc-1 is listed twice (also at /Vpcs/0)"},
      {Cloud::kAws, R"({"Vpcs": [{"VpcId": "vpc-1", "CidrBlock": "10.0.0.0/33"}]})",
       "/Vpcs/0/CidrBlock: not a CIDR block: \"10.0.0.0/33\""},
      {Cloud::kAws, R"({"Vpcs": [{"VpcId": "vpc-1", "CidrBlock": ""}]})",
       "/Vpcs/0/CidrBlock: not a CIDR block: \"\""},
      {Cloud::kAws, R"({"Vpcs": [{"VpcId": "vpc-1", "CidrBlock": "2001:db8::/32"}]})",
       "/Vpcs/0/CidrBlock: 2001:db8::/32 is an IPv6 block where the listing has IPv4 blocks"},
      {Cloud::kAws,
       R"({"Vpcs": [{"VpcId": "vpc-1", "Ipv6CidrBlockAssociationSet": [{"Ipv6CidrBlock": "10.0.0.0/8"}]}]})",
       "/Vpcs/0/Ipv6CidrBlockAssociationSet/0/Ipv6CidrBlock: 10.0.0.0/8 is an IPv4 block where "
       "the listing has IPv6 blocks"},
      {Cloud::kAws,
       R"({"Vpcs": [{"VpcId": "vpc-1", "CidrBlockAssociationSet": [{"CidrBlock": "10.0.0.0/8", "CidrBlockState": {"State": "gone"}}]}]})",
       "/Vpcs/0/CidrBlockAssociationSet/0/CidrBlockState/State: \"gone\" is not a CIDR block "
       "state (associating, associated, disassociating, disassociated, failing, failed)"},
      {Cloud::kAws,
       R"({"Vpcs": [{"VpcId": "vpc-1", "CidrBlockAssociationSet": [{"CidrBlockState": {"State": "associated"}}]}]})",
       "/Vpcs/0/CidrBlockAssociationSet/0/CidrBlock: missing; expected what `aws ec2 "
       "describe-vpcs` prints: {\"Vpcs\": [...]}"},
      {Cloud::kAws, R"({"Vpcs": [{"VpcId": "vpc-1", "Tags": {"Name": "x"}}]})",
       "/Vpcs/0/Tags: is an object, expected an array"},
      {Cloud::kAws,
       R"({"Vpcs": [{"VpcId": "vpc-1", "Tags": [{"Key": "Name", "Value": "a\u001b[31mb"}]}]})",
       "/Vpcs/0/Tags/0/Value: \"a\\u001B[31mb\": control character U+001B"},
      {Cloud::kAws,
       R"({"Vpcs": [{"VpcId": "vpc-1", "Tags": [{"Key": "Name", "Value": "a\u0000b"}]}]})",
       "/Vpcs/0/Tags/0/Value: \"a\\u0000b\": a NUL byte"},
      // The column is where the parser noticed: the byte after the bad one.
      {Cloud::kAws, "{\"Vpcs\": [{\"VpcId\": \"vpc-\xe9\"}]}",
       "the listing: not valid JSON: at line 1, column 27: invalid string: ill-formed UTF-8 byte"},
      {Cloud::kAws, R"({"Vpcs": [{"VpcId": "vpc-\ud800"}]})",
       "the listing: not valid JSON: at line 1, column 32: invalid string: surrogate "
       "U+D800..U+DBFF must be followed by U+DC00..U+DFFF"},
      {Cloud::kAws, R"({"Vpcs": [], "NextToken": 5})",
       "/NextToken: is a number, expected a string"},
      {Cloud::kAliyun, R"({"Vpcs": []})", "/Vpcs: is an array, expected an object"},
      {Cloud::kAliyun, R"({"Vpcs": {}})",
       "/Vpcs/Vpc: missing; expected what `aliyun vpc DescribeVpcs` prints: {\"Vpcs\": "
       "{\"Vpc\": [...]}, ...}"},
      {Cloud::kAliyun, R"({"TotalCount": -1, "Vpcs": {"Vpc": []}})",
       "/TotalCount: is a number, expected a count (an integer >= 0)"},
      {Cloud::kAliyun, R"({"PageSize": "10", "Vpcs": {"Vpc": []}})",
       "/PageSize: is a string, expected a count (an integer >= 0)"},
      {Cloud::kAliyun, R"({"Vpcs": {"Vpc": [{"VpcId": "vpc-1", "RegionId": "cn/hangzhou"}]}})",
       "/Vpcs/Vpc/0/RegionId: \"cn/hangzhou\" is not a region name (1..63 letters, digits, "
       "'_', '.', '-' starting with a letter)"},
      {Cloud::kAliyun,
       R"({"Vpcs": {"Vpc": [{"VpcId": "vpc-1", "RegionId": "cn-hangzhou", "SecondaryCidrBlocks": {"SecondaryCidrBlock": ["10.1.0.0/16", "x"]}}]}})",
       "/Vpcs/Vpc/0/SecondaryCidrBlocks/SecondaryCidrBlock/1: not a CIDR block: \"x\""},
      {Cloud::kAliyun,
       R"({"Vpcs": {"Vpc": [{"VpcId": "vpc-1", "RegionId": "cn-hangzhou", "SecondaryCidrBlocks": ["10.1.0.0/16"]}]}})",
       "/Vpcs/Vpc/0/SecondaryCidrBlocks: is an array, expected an object"},
      {Cloud::kAliyun,
       R"({"Vpcs": {"Vpc": [{"VpcId": "vpc-1", "RegionId": "cn-hangzhou", "Ipv6CidrBlocks": {"Ipv6CidrBlock": ["2408::/56"]}}]}})",
       "/Vpcs/Vpc/0/Ipv6CidrBlocks/Ipv6CidrBlock/0: is a string, expected an object"},
      {Cloud::kAliyun, R"({"Vpcs": {"Vpc": [{"VpcId": "vpc-1", "VpcName": ["a"]}]}})",
       "/Vpcs/Vpc/0/VpcName: is an array, expected a string"},
      {Cloud::kHuawei, R"({"vpcs": [{"id": "u-1", "extend_cidrs": "10.0.0.0/8"}]})",
       "/vpcs/0/extend_cidrs: is a string, expected an array"},
      {Cloud::kHuawei, R"({"vpcs": [{"id": "u-1", "cidr": null, "name": 5}]})",
       "/vpcs/0/name: is a number, expected a string"},
      {Cloud::kHuawei, R"({"vpcs": [], "page_info": []})",
       "/page_info: is an array, expected an object"},
      {Cloud::kHuawei, R"({"Vpcs": []})",
       "/vpcs: missing; expected what Huawei Cloud's ListVpcs returns: {\"vpcs\": [...], ...}"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(errorOf(c.from, c.text), c.want) << c.text;
  }
}

TEST(CloudImport, RegionComesFromTheCallerWhenTheListingHasNone) {
  EXPECT_EQ(errorOf(Cloud::kAws, R"({"Vpcs": [{"VpcId": "vpc-1"}]})", ""),
            "the listing: the aws listing does not name the region of its VPCs; give it with "
            "--region");
  EXPECT_EQ(errorOf(Cloud::kHuawei, R"({"vpcs": [{"id": "u-1"}]})", "cn north"),
            "the listing: --region \"cn north\" is not a region name (1..63 letters, digits, "
            "'_', '.', '-' starting with a letter)");
  EXPECT_EQ(errorOf(Cloud::kAliyun, R"({"Vpcs": {"Vpc": [{"VpcId": "vpc-1"}]}})", ""),
            "the listing: the aliyun listing does not name the region of its VPCs; give it with "
            "--region");
  // An empty listing needs no region.
  EXPECT_EQ(errorOf(Cloud::kAws, R"({"Vpcs": []})", ""), "(parsed)");
  // Alibaba Cloud's RegionId wins over the caller's.
  Listing l = parsed(Cloud::kAliyun,
                     R"({"Vpcs": {"Vpc": [{"VpcId": "vpc-1", "RegionId": "cn-beijing"},
                                          {"VpcId": "vpc-2", "RegionId": ""}]}})",
                     "cn-qingdao");
  ASSERT_EQ(l.vpcs.size(), 2u);
  EXPECT_EQ(l.vpcs[0].region, "cn-beijing");
  EXPECT_EQ(l.vpcs[1].region, "cn-qingdao");
}

TEST(CloudImport, BoundsAreEnforced) {
  // A huge string where a name is read.
  EXPECT_EQ(errorOf(Cloud::kAws,
                    awsListing({awsVpc("vpc-1", std::string(2000, 'a').c_str(), {"10.0.0.0/16"})})),
            "/Vpcs/0/Tags/0/Value: a string of 2000 bytes; at most 1024 are read");
  // A file over 16 MiB is not parsed at all.
  std::string big = R"({"Vpcs": [], "pad": ")" + std::string(kMaxListingBytes, ' ') + "\"}";
  EXPECT_EQ(errorOf(Cloud::kAws, big),
            "the listing: the file has " + std::to_string(big.size()) +
                " bytes; at most 16777216 are read (list fewer VPCs per file)");
  // Nesting, counted outside strings only.
  EXPECT_EQ(errorOf(Cloud::kAws, std::string(100000, '[') + std::string(100000, ']')),
            "the listing: nested deeper than 32 levels at line 1, column 33; a VPC listing "
            "nests at most 7");
  EXPECT_EQ(errorOf(Cloud::kAws, R"({"Vpcs": [], "x": ")" + std::string(100, '[') + "\"}"),
            "(parsed)");
  EXPECT_EQ(errorOf(Cloud::kAws, std::string(32, '[') + std::string(32, ']')),
            "the listing: the listing is an array, not a JSON object; expected what `aws ec2 "
            "describe-vpcs` prints: {\"Vpcs\": [...]}");
  // Too many VPCs.
  std::string many = R"({"Vpcs": [)";
  for (size_t i = 0; i <= kMaxImportedVpcs; ++i) {
    many += (i ? ",{}" : "{}");
  }
  many += "]}";
  EXPECT_EQ(errorOf(Cloud::kAws, many),
            "/Vpcs: lists 4097 VPCs; at most 4096 are read in one import");
  // Too many blocks in one VPC.
  json v = {{"VpcId", "vpc-1"}, {"RegionId", "cn-hangzhou"}, {"CidrBlock", "10.0.0.0/16"}};
  json secondary = json::array();
  for (int i = 1; i <= 64; ++i) {
    secondary.push_back("10." + std::to_string(i) + ".0.0/16");
  }
  v["SecondaryCidrBlocks"] = {{"SecondaryCidrBlock", secondary}};
  json doc = {{"Vpcs", {{"Vpc", json::array({v})}}}};
  EXPECT_EQ(errorOf(Cloud::kAliyun, doc.dump()),
            "/Vpcs/Vpc/0/SecondaryCidrBlocks/SecondaryCidrBlock/63: more than 64 CIDR blocks in "
            "one VPC");
}

TEST(CloudImport, RepeatedBlocksAllConflict) {
  // A hostile listing: 4096 VPCs with the same block.  Every one conflicts
  // and names one it overlaps (the first), without a check of every pair.
  std::string listing = R"({"Vpcs": [)";
  for (size_t i = 0; i < kMaxImportedVpcs; ++i) {
    listing += (i ? "," : "") + std::string(R"({"VpcId": "vpc-)") + std::to_string(i) +
               R"(", "CidrBlock": "10.0.0.0/8"})";
  }
  listing += "]}";
  Listing l = parsed(Cloud::kAws, listing, "r1");
  ImportReport r = findConflicts(config::Config{}, Snapshot{}, l);
  ASSERT_EQ(r.vpcs.size(), kMaxImportedVpcs);
  EXPECT_EQ(r.count(VpcVerdict::Status::kConflicts), kMaxImportedVpcs);
  EXPECT_EQ(messages(r.vpcs[4095]),
            std::vector<std::string>{"10.0.0.0/8 overlaps 10.0.0.0/8 of imported VPC "
                                     "aws/r1/vpc-0 (vpc-0) in this listing"});
  ASSERT_EQ(r.vpcs[0].conflicts.size(), kMaxConflictsPerVpc + 1);
  EXPECT_EQ(r.vpcs[0].conflicts[0].message,
            "10.0.0.0/8 overlaps 10.0.0.0/8 of imported VPC aws/r1/vpc-1 (vpc-1) in this listing");
  EXPECT_EQ(r.vpcs[0].conflicts.back().kind, Conflict::Kind::kMore);
}

}  // namespace
}  // namespace mcgw::plan
