// Import of VPCs that already exist: the JSON a cloud's own VPC listing
// prints (AWS `aws ec2 describe-vpcs`, Alibaba Cloud `aliyun vpc
// DescribeVpcs`, Huawei Cloud `ListVpcs` v3 or v1) read into VPCs, checked
// against the plan (config and store) before anything is connected, and the
// ones that fit turned into the store's VPCs (docs/address-plan.md).
//
// Pure: the caller reads the file and the store and writes the result; no
// I/O here.  The listing is untrusted input: bounded in size, nesting and
// counts, every string it reads validated, every error names the element
// by its JSON pointer (RFC 6901), and nothing throws out of these functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "config/net.hpp"
#include "config/result.hpp"
#include "control/plan/plan.hpp"

namespace mcgw::plan {

// Where a listing comes from: `mcgwctl plan import --from aws|aliyun|huawei`.
enum class Cloud { kAws, kAliyun, kHuawei };

// "aws", "aliyun", "huawei" (the --from spelling) to a Cloud; nullopt otherwise.
std::optional<Cloud> cloudFromFlag(std::string_view flag);
// The --from spelling: "aws", "aliyun", "huawei"; also the store's source
// "import:<flag>".
const char* flagName(Cloud c);
// The plan's name of the cloud (address-plan.clouds[].name): "aws",
// "aliyun", "huaweicloud".
const char* planCloudName(Cloud c);

// Bounds of what a listing may hold (docs/address-plan.md, "Limits").
inline constexpr size_t kMaxListingBytes = size_t{16} << 20;
inline constexpr size_t kMaxListingDepth = 32;     // Alibaba Cloud's nests 7 deep
inline constexpr size_t kMaxImportedVpcs = 4096;   // per listing
inline constexpr size_t kMaxListedString = 1024;   // bytes of one string read
inline constexpr size_t kMaxConflictsPerVpc = 32;  // the report lists at most these

// One VPC of a listing.
struct ImportedVpc {
  std::string cloud;        // the plan's name: aws, aliyun, huaweicloud
  std::string source;       // import:aws, import:aliyun, import:huawei
  std::string region;       // from the listing, else the caller's --region
  std::string name;         // a valid plan name (see sanitizedName)
  std::string listed_name;  // the name as listed ("" when it had none)
  std::string cloud_id;     // vpc-0a1b2c3d, vpc-bp1..., a Huawei UUID
  // The CIDR blocks in use, IPv4 then IPv6, in listing order, no duplicates.
  // Blocks being removed (AWS disassociating, disassociated, failed) are left
  // out and said so in notes.
  std::vector<config::IpPrefix> prefixes;
  std::string pointer;             // the VPC's element in the listing: /Vpcs/2
  std::vector<std::string> notes;  // what was left out or renamed, for the operator
  bool operator==(const ImportedVpc&) const = default;
};

struct ListingError {
  std::string pointer;  // RFC 6901 pointer to the offending element; "" = the document
  std::string message;  // untrusted text in it is escaped
  // "/Vpcs/2/CidrBlock: not a CIDR block: \"10.0.0.0/33\"".
  std::string toString() const;
};

struct Listing {
  Cloud from = Cloud::kAws;
  std::vector<ImportedVpc> vpcs;
  // About the listing as a whole: "holds 3 of 12 VPCs (TotalCount): ...".
  std::vector<std::string> notes;
};

// Parses what the cloud's listing printed.  region_hint is the operator's
// --region ("" when not given): the region of VPCs whose listing does not
// name one (AWS and Huawei Cloud never do; Alibaba Cloud names it per VPC).
Result<Listing, ListingError> parseListing(Cloud from, std::string_view json_text,
                                           std::string_view region_hint);

// A listed name as a plan name (1..63 of letters, digits, '_', '.', '-',
// starting with a letter; config/yang/mcgw.yang, typedef name): a valid name
// is kept; otherwise every run of other characters becomes one '-', '-' at
// either end is dropped, a leading digit, '_' or '.' gets "vpc-" before it,
// and it is cut to 63.  "" when nothing is left.
std::string sanitizedName(std::string_view listed);

// Why an imported VPC cannot be added as it is.
struct Conflict {
  enum class Kind {
    kOverlapVpc,          // a VPC of the config
    kOverlapMappedRange,  // the mapped side of a config mapped range
    kOverlapStoredVpc,    // a VPC in the store
    kOverlapImported,     // another VPC of the same listing (or its own block)
    kNameTaken,           // the name is used by a different VPC
    kHostBits,            // a block with host bits set
    kReserved,            // loopback, link-local, multicast, ...: never a VPC
    kNoPrefixes,          // no CIDR block in use to import
    kMore,                // more conflicts than the report lists
  } kind = Kind::kOverlapVpc;
  config::IpPrefix prefix;        // the imported block (overlaps, host bits, reserved)
  std::string other;              // who the block or name belongs to
  config::IpPrefix other_prefix;  // the other's block (overlaps, reserved)
  std::string message;            // one line for the operator, escaped
  bool operator==(const Conflict&) const = default;
};
const char* toString(Conflict::Kind k);  // "overlap-vpc", "name-taken", ...

struct VpcVerdict {
  enum class Status {
    kFits,           // --apply adds it
    kAlreadyInPlan,  // same name and blocks already in the config or store
    kConflicts,      // see conflicts; --apply leaves it out
  } status = Status::kFits;
  ImportedVpc vpc;
  std::vector<Conflict> conflicts;
  // Where the same VPC already is: "config" or "store" (kAlreadyInPlan).
  std::string already_in;
};
const char* toString(VpcVerdict::Status s);  // "fits", "already-in-plan", "conflicts"

struct ImportReport {
  std::string from;                // --from: aws, aliyun, huawei ("" when unknown)
  std::vector<VpcVerdict> vpcs;    // in listing order
  std::vector<std::string> notes;  // the listing's notes
  size_t count(VpcVerdict::Status s) const;
};

// Checks each imported VPC against the plan in force (the config's VPCs and
// mapped ranges, the store's VPCs) and against the other VPCs of the
// listing: every overlap (IPv4 and IPv6) naming both VPCs and both blocks,
// a name used by a different VPC, host bits, reserved ranges.  A VPC whose
// name and blocks are already in the plan is "already in the plan" (a
// re-import changes nothing).  Two VPCs of the listing that overlap each
// other both conflict: which one to keep (or map) is the operator's call.
ImportReport findConflicts(const config::Config& config, const Snapshot& store,
                           const std::vector<ImportedVpc>& vpcs);
// The same, with the listing's notes and --from in the report.
ImportReport findConflicts(const config::Config& config, const Snapshot& store,
                           const Listing& listing);

// The VPCs that fit, as the store holds them (source import:<from>, no pool,
// tenant or site), sorted by name.
std::vector<StoredVpc> toStoredVpcs(const ImportReport& report);

// --apply, inside Store::update's change function: checks the listing
// again against the snapshot it is given (the store may have changed since
// the report was shown), adds the VPCs that fit and keeps the snapshot's
// VPCs sorted by name.  Returns the report it acted on, or an error (and
// changes nothing) when the store would hold more than kMaxStoredVpcs.
Result<ImportReport, std::string> applyListing(const config::Config& config, const Listing& listing,
                                               Snapshot& store);

// The report as JSON (`mcgwctl plan import --json`; write it with
// api::dump) and as text for a terminal (untrusted strings escaped).
nlohmann::json toJson(const ImportReport& report);
std::string toText(const ImportReport& report);

}  // namespace mcgw::plan
