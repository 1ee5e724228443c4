// libFuzzer target: any bytes as a cloud's VPC listing (control/plan/
// cloud_import).  The first byte picks the cloud (aws, aliyun, huawei) and
// whether --region is given; the rest is the listing.
//
// parseListing must return VPCs or one error, never crash, hang or throw.
// An error names an element by a JSON pointer and is one line of valid
// text.  Accepted VPCs have valid plan names and regions, at most 64
// distinct blocks, and an id.  The report on a fixed plan is consistent:
// a VPC fits exactly when it has no conflict and is not in the plan yet;
// the VPCs that fit, once added to the store, are all "already in the
// plan" on a second look (they overlap nothing and no name twice); the
// JSON rendering dumps strictly (all its strings are UTF-8) and the text
// rendering has no control character but its line ends.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "config/text.hpp"
#include "control/plan/cloud_import.hpp"

namespace {

using namespace mcgw::plan;
using mcgw::config::IpPrefix;

[[noreturn]] void fail(const char* what, std::string_view s) {
  std::fprintf(stderr, "%s: %s\n", what, mcgw::text::escape(s, 512).c_str());
  std::abort();
}

IpPrefix prefix(const char* text) {
  return *IpPrefix::parse(text);
}

// The plan of config/examples/address-plan.yaml, and a store with one VPC.
const mcgw::config::Config& plan() {
  static const mcgw::config::Config c = [] {
    mcgw::config::Config c;
    c.address_plan.vpcs.push_back(
        {"idc", "shanghai", "idc-a", {prefix("10.1.0.0/16")}, "training", "idc-a"});
    c.address_plan.vpcs.push_back({"aws",
                                   "us-east-1",
                                   "train-use1",
                                   {prefix("10.2.0.0/16"), prefix("10.12.0.0/16")},
                                   "training",
                                   "aws-use1"});
    c.address_plan.vpcs.push_back(
        {"idc", "shanghai", "idc-v6", {prefix("2001:db8:100::/48")}, "", ""});
    c.address_plan.mapped_ranges.push_back(
        {"legacy-erp", prefix("10.1.0.0/16"), prefix("100.65.0.0/16"), "huawei-gz"});
    return c;
  }();
  return c;
}

Snapshot store() {
  Snapshot s;
  s.vpcs.push_back(
      {"web-use2", "aws", "us-east-2", {prefix("10.64.0.0/16")}, "cloud-pool", "", "", "allocate"});
  return s;
}

bool isPlanName(const std::string& s) {
  return !s.empty() && sanitizedName(s) == s;
}

void checkText(const char* what, const std::string& s, mcgw::text::Breaks breaks) {
  if (auto problem = mcgw::text::findProblem(s, breaks)) {
    fail(what, s);
  }
  if (breaks == mcgw::text::Breaks::kAllowed &&
      (s.find('\t') != std::string::npos || s.find('\r') != std::string::npos)) {
    fail(what, s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const Cloud from = static_cast<Cloud>(data[0] % 3);
  const char* region = (data[0] & 0x80) ? "" : "r-1";
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  auto listing = parseListing(from, text, region);
  if (!listing.ok()) {
    const ListingError& e = listing.error();
    if (e.message.empty() || (!e.pointer.empty() && e.pointer[0] != '/')) {
      fail("error without message or pointer", e.toString());
    }
    checkText("error is not one line of valid text", e.toString(), mcgw::text::Breaks::kNone);
    // That catch-all is for running out of memory: any other exception
    // reaching it is a case the parser should have named.
    if (e.message.rfind("cannot read the listing", 0) == 0) {
      fail("an exception reached the catch-all", e.message);
    }
    return 0;
  }
  for (const ImportedVpc& v : listing->vpcs) {
    if (!isPlanName(v.name) || !isPlanName(v.region) || v.cloud_id.empty() || v.pointer.empty() ||
        v.pointer[0] != '/') {
      fail("bad VPC", v.name + " " + v.region + " " + v.cloud_id + " " + v.pointer);
    }
    if (v.prefixes.size() > kMaxPrefixesPerVpc ||
        std::set<IpPrefix>(v.prefixes.begin(), v.prefixes.end()).size() != v.prefixes.size()) {
      fail("bad blocks", v.name);
    }
  }

  ImportReport report = findConflicts(plan(), store(), *listing);
  for (const VpcVerdict& v : report.vpcs) {
    const bool fits = v.status == VpcVerdict::Status::kFits;
    const bool in_plan = v.status == VpcVerdict::Status::kAlreadyInPlan;
    if (fits != (v.conflicts.empty() && !in_plan) || v.conflicts.size() > kMaxConflictsPerVpc + 1) {
      fail("inconsistent verdict", v.vpc.name);
    }
    for (const Conflict& c : v.conflicts) {
      checkText("conflict is not one line of valid text", c.message, mcgw::text::Breaks::kNone);
    }
  }
  Snapshot after = store();
  for (StoredVpc& s : toStoredVpcs(report)) {
    after.vpcs.push_back(std::move(s));
  }
  if (after.vpcs.size() - 1 != report.count(VpcVerdict::Status::kFits)) {
    fail("toStoredVpcs lost a VPC", "");
  }
  ImportReport again = findConflicts(plan(), after, *listing);
  for (size_t i = 0; i < report.vpcs.size(); ++i) {
    if (report.vpcs[i].status == VpcVerdict::Status::kFits &&
        again.vpcs[i].status != VpcVerdict::Status::kAlreadyInPlan) {
      fail("a VPC that fit is not in the plan once added", report.vpcs[i].vpc.name);
    }
  }

  try {
    (void)toJson(report).dump();  // strict: throws on a string that is not UTF-8
  } catch (const std::exception& e) {
    fail("JSON rendering", e.what());
  }
  checkText("text rendering", toText(report), mcgw::text::Breaks::kAllowed);
  return 0;
}
