#include "control/plan/cloud_import.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "config/prefix_index.hpp"
#include "config/text.hpp"
#include "control/api/json_text.hpp"

namespace mcgw::plan {

using config::Family;
using config::IpAddress;
using config::IpPrefix;
using nlohmann::json;

std::optional<Cloud> cloudFromFlag(std::string_view flag) {
  if (flag == "aws") {
    return Cloud::kAws;
  }
  if (flag == "aliyun") {
    return Cloud::kAliyun;
  }
  if (flag == "huawei") {
    return Cloud::kHuawei;
  }
  return std::nullopt;
}

const char* flagName(Cloud c) {
  switch (c) {
    case Cloud::kAws:
      return "aws";
    case Cloud::kAliyun:
      return "aliyun";
    case Cloud::kHuawei:
      return "huawei";
  }
  return "?";
}

const char* planCloudName(Cloud c) {
  switch (c) {
    case Cloud::kAws:
      return "aws";
    case Cloud::kAliyun:
      return "aliyun";
    case Cloud::kHuawei:
      return "huaweicloud";
  }
  return "?";
}

std::string ListingError::toString() const {
  return (pointer.empty() ? std::string("the listing") : pointer) + ": " + message;
}

namespace {

bool isLetter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
bool isNameChar(char c) {
  return isLetter(c) || isDigit(c) || c == '_' || c == '.' || c == '-';
}

// A cloud's VPC id: vpc-0a1b2c3d (AWS), vpc-bp1... (Alibaba Cloud), a UUID
// (Huawei Cloud).  Stricter than any of them need, so that an id can be
// printed and used as a name without surprises.
bool isCloudId(std::string_view s) {
  return !s.empty() && s.size() <= 128 && (isLetter(s[0]) || isDigit(s[0])) &&
         std::all_of(s.begin(), s.end(), isNameChar);
}

std::string child(const std::string& pointer, std::string_view key) {
  std::string out = pointer + "/";
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string child(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

// Nesting is checked on the text, before nlohmann builds (and later frees,
// recursively) a tree of it.
std::optional<ListingError> checkNesting(std::string_view text) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxListingDepth) {
        const text::LineColumn lc = text::lineColumn(text, i);
        return ListingError{"", "nested deeper than " + std::to_string(kMaxListingDepth) +
                                    " levels at line " + std::to_string(lc.line) + ", column " +
                                    std::to_string(lc.column) + "; a VPC listing nests at most 7"};
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

// Reads one listing; the first error found stops it.
class ListingReader {
 public:
  ListingReader(Cloud from, std::string_view region_hint)
      : from_(from), region_hint_(region_hint) {}

  Result<Listing, ListingError> read(const json& doc) {
    listing_.from = from_;
    if (!doc.is_object()) {
      fail("", std::string("the listing is ") + api::typeName(doc) + ", not a JSON object; " +
                   expectedShape());
    } else {
      switch (from_) {
        case Cloud::kAws:
          readAws(doc);
          break;
        case Cloud::kAliyun:
          readAliyun(doc);
          break;
        case Cloud::kHuawei:
          readHuawei(doc);
          break;
      }
    }
    if (error_) {
      return unexpected(*error_);
    }
    return std::move(listing_);
  }

 private:
  std::string expectedShape() const {
    switch (from_) {
      case Cloud::kAws:
        return "expected what `aws ec2 describe-vpcs` prints: {\"Vpcs\": [...]}";
      case Cloud::kAliyun:
        return "expected what `aliyun vpc DescribeVpcs` prints: {\"Vpcs\": {\"Vpc\": [...]}, ...}";
      case Cloud::kHuawei:
        return "expected what Huawei Cloud's ListVpcs returns: {\"vpcs\": [...], ...}";
    }
    return "";
  }

  bool fail(const std::string& pointer, std::string message) {
    if (!error_) {
      error_ = ListingError{pointer, std::move(message)};
    }
    return false;
  }

  // obj[key], or nullptr when it is absent (or null: the SDKs print an
  // absent member so).
  const json* member(const json& obj, std::string_view key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      return nullptr;
    }
    return &*it;
  }

  const json* required(const json& obj, const std::string& pointer, std::string_view key) {
    const json* m = member(obj, key);
    if (!m) {
      fail(child(pointer, key), "missing; " + expectedShape());
    }
    return m;
  }

  bool isType(const json& v, const std::string& pointer, json::value_t type, const char* want) {
    if (v.type() == type) {
      return true;
    }
    return fail(pointer, std::string("is ") + api::typeName(v) + ", expected " + want);
  }

  // A string the import uses: valid single-line text of bounded length.
  std::optional<std::string> string(const json& v, const std::string& pointer) {
    if (!isType(v, pointer, json::value_t::string, "a string")) {
      return std::nullopt;
    }
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() > kMaxListedString) {
      fail(pointer, "a string of " + std::to_string(s.size()) + " bytes; at most " +
                        std::to_string(kMaxListedString) + " are read");
      return std::nullopt;
    }
    if (auto problem = text::findProblem(s)) {
      fail(pointer, text::quote(s) + ": " + problem->message());
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::string> optionalString(const json& obj, const std::string& pointer,
                                            std::string_view key) {
    const json* m = member(obj, key);
    if (!m) {
      return std::string();
    }
    return string(*m, child(pointer, key));
  }

  std::optional<uint64_t> count(const json& v, const std::string& pointer) {
    if (v.is_number_unsigned()) {
      return v.get<uint64_t>();
    }
    if (v.is_number_integer() && v.get<int64_t>() >= 0) {
      return static_cast<uint64_t>(v.get<int64_t>());
    }
    fail(pointer, std::string("is ") + api::typeName(v) + ", expected a count (an integer >= 0)");
    return std::nullopt;
  }

  std::optional<std::string> cloudId(const json& vpc, const std::string& pointer,
                                     std::string_view key) {
    const json* m = required(vpc, pointer, key);
    if (!m) {
      return std::nullopt;
    }
    auto id = string(*m, child(pointer, key));
    if (!id) {
      return std::nullopt;
    }
    if (!isCloudId(*id)) {
      fail(child(pointer, key),
           text::quote(*id) + " is not a VPC id (1..128 letters, digits, '_', '.', '-')");
      return std::nullopt;
    }
    auto [it, fresh] = ids_.emplace(*id, pointer);
    if (!fresh) {
      fail(child(pointer, key), "VPC " + *id + " is listed twice (also at " + it->second + ")");
      return std::nullopt;
    }
    return id;
  }

  std::optional<std::string> region(const json* listed, const std::string& pointer) {
    if (listed) {
      auto r = string(*listed, pointer);
      if (!r) {
        return std::nullopt;
      }
      if (!r->empty()) {
        if (!isValidName(*r)) {
          fail(pointer, text::quote(*r) +
                            " is not a region name (1..63 letters, digits, '_', "
                            "'.', '-' starting with a letter)");
          return std::nullopt;
        }
        return r;
      }
    }
    if (region_hint_.empty()) {
      fail(listed ? pointer : "", std::string("the ") + flagName(from_) +
                                      " listing does not name the region of its VPCs; give it "
                                      "with --region");
      return std::nullopt;
    }
    if (!isValidName(region_hint_)) {
      fail("", "--region " + text::quote(region_hint_) +
                   " is not a region name (1..63 letters, digits, '_', '.', '-' starting with "
                   "a letter)");
      return std::nullopt;
    }
    return region_hint_;
  }

  // Adds a listed CIDR block to vpc.  allow_empty: the cloud documents ""
  // for "none" (Alibaba Cloud's Ipv6CidrBlock, Huawei Cloud's cidr).
  bool prefix(ImportedVpc& vpc, const json& v, const std::string& pointer, Family family,
              bool allow_empty) {
    auto s = string(v, pointer);
    if (!s) {
      return false;
    }
    if (s->empty() && allow_empty) {
      return true;
    }
    auto p = IpPrefix::parse(*s);
    if (!p) {
      return fail(pointer, "not a CIDR block: " + text::quote(*s));
    }
    if (p->address.family != family) {
      return fail(pointer, p->toString() + " is an " + (family == Family::V4 ? "IPv6" : "IPv4") +
                               " block where the " + "listing has " +
                               (family == Family::V4 ? "IPv4" : "IPv6") + " blocks");
    }
    if (std::find(vpc.prefixes.begin(), vpc.prefixes.end(), *p) != vpc.prefixes.end()) {
      return true;  // AWS lists the primary block twice, Alibaba Cloud the first IPv6 one
    }
    if (vpc.prefixes.size() >= kMaxPrefixesPerVpc) {
      return fail(pointer,
                  "more than " + std::to_string(kMaxPrefixesPerVpc) + " CIDR blocks in one VPC");
    }
    vpc.prefixes.push_back(*p);
    return true;
  }

  // An array member, or nullptr when absent; false on a wrong type.
  bool optionalArray(const json& obj, const std::string& pointer, std::string_view key,
                     const json*& out) {
    out = member(obj, key);
    return !out || isType(*out, child(pointer, key), json::value_t::array, "an array");
  }
  bool optionalObject(const json& obj, const std::string& pointer, std::string_view key,
                      const json*& out) {
    out = member(obj, key);
    return !out || isType(*out, child(pointer, key), json::value_t::object, "an object");
  }

  bool vpcCount(const json& array, const std::string& pointer) {
    if (array.size() > kMaxImportedVpcs) {
      return fail(pointer, "lists " + std::to_string(array.size()) + " VPCs; at most " +
                               std::to_string(kMaxImportedVpcs) + " are read in one import");
    }
    return true;
  }

  // The name, the cloud and the notes every cloud's VPC gets.
  void finish(ImportedVpc& vpc) {
    vpc.cloud = planCloudName(from_);
    vpc.source = std::string("import:") + flagName(from_);
    vpc.name = sanitizedName(vpc.listed_name);
    if (vpc.listed_name.empty()) {
      vpc.name = sanitizedName(vpc.cloud_id);
      vpc.notes.push_back("no name listed: named after its id, " + vpc.name);
    } else if (vpc.name.empty()) {
      vpc.name = sanitizedName(vpc.cloud_id);
      vpc.notes.push_back("listed name " + text::quote(vpc.listed_name) +
                          " has nothing a plan name can keep: named after its id, " + vpc.name);
    } else if (vpc.name != vpc.listed_name) {
      vpc.notes.push_back("listed name " + text::quote(vpc.listed_name) +
                          " is not a plan name: imported as " + vpc.name);
    }
    listing_.vpcs.push_back(std::move(vpc));
  }

  // An AWS CIDR block association is in use unless it is being removed or
  // failed (VpcCidrBlockState: associating | associated | disassociating |
  // disassociated | failing | failed).
  bool associated(ImportedVpc& vpc, const json& assoc, const std::string& pointer,
                  std::string_view state_key, std::string_view block_key, bool& in_use) {
    in_use = true;
    const json* state = nullptr;
    if (!optionalObject(assoc, pointer, state_key, state)) {
      return false;
    }
    if (!state) {
      return true;
    }
    auto s = optionalString(*state, child(pointer, state_key), "State");
    if (!s) {
      return false;
    }
    if (s->empty() || *s == "associated" || *s == "associating") {
      return true;
    }
    if (*s != "disassociating" && *s != "disassociated" && *s != "failing" && *s != "failed") {
      // A closed set in the API reference: anything else is not what the
      // CLI prints, and guessing whether the block is in use could hide an
      // overlap or import space that is not the VPC's.
      return fail(child(child(pointer, state_key), "State"),
                  text::quote(*s) +
                      " is not a CIDR block state (associating, associated, disassociating, "
                      "disassociated, failing, failed)");
    }
    in_use = false;
    std::string block = "a block";
    if (const json* b = member(assoc, block_key); b && b->is_string()) {
      auto p = IpPrefix::parse(b->get_ref<const std::string&>());
      block = p ? p->toString() : text::quote(b->get_ref<const std::string&>());
    }
    vpc.notes.push_back(block + " is " + *s + " (" + pointer + "): left out");
    return true;
  }

  // `aws ec2 describe-vpcs` (the DescribeVpcs response as the AWS CLI
  // prints it): {"Vpcs": [{"VpcId", "CidrBlock", "CidrBlockAssociationSet":
  // [{"CidrBlock", "CidrBlockState": {"State"}}], "Ipv6CidrBlockAssociationSet":
  // [{"Ipv6CidrBlock", "Ipv6CidrBlockState": {"State"}}], "Tags": [{"Key",
  // "Value"}], ...}], "NextToken"}.  No region: the caller's.
  void readAws(const json& doc) {
    const json* vpcs = required(doc, "", "Vpcs");
    if (!vpcs || !isType(*vpcs, "/Vpcs", json::value_t::array, "an array") ||
        !vpcCount(*vpcs, "/Vpcs")) {
      return;
    }
    if (const json* next = member(doc, "NextToken")) {
      if (!string(*next, "/NextToken")) {
        return;
      }
      listing_.notes.push_back(
          "the listing has a NextToken: it is one page of several (run aws ec2 describe-vpcs "
          "without --max-items to list every VPC)");
    }
    for (size_t i = 0; i < vpcs->size(); ++i) {
      const std::string p = child("/Vpcs", i);
      const json& v = (*vpcs)[i];
      if (!isType(v, p, json::value_t::object, "an object")) {
        return;
      }
      ImportedVpc vpc;
      vpc.pointer = p;
      auto id = cloudId(v, p, "VpcId");
      auto reg = id ? region(nullptr, p) : std::nullopt;
      if (!reg) {
        return;
      }
      vpc.cloud_id = *id;
      vpc.region = *reg;
      const json* tags = nullptr;
      if (!optionalArray(v, p, "Tags", tags)) {
        return;
      }
      for (size_t t = 0; tags && t < tags->size(); ++t) {
        const std::string tp = child(child(p, "Tags"), t);
        const json& tag = (*tags)[t];
        if (!isType(tag, tp, json::value_t::object, "an object")) {
          return;
        }
        auto key = optionalString(tag, tp, "Key");
        if (!key) {
          return;
        }
        if (*key == "Name") {
          auto value = optionalString(tag, tp, "Value");
          if (!value) {
            return;
          }
          vpc.listed_name = *value;
        }
      }
      if (const json* primary = member(v, "CidrBlock")) {
        if (!prefix(vpc, *primary, child(p, "CidrBlock"), Family::V4, false)) {
          return;
        }
      }
      // The IPv4 and the IPv6 association sets: each block with its state
      // (blocks being removed are left out, with a note).
      auto associations = [&](const char* set_key, const char* state_key, const char* block_key,
                              Family family) {
        const json* set = nullptr;
        if (!optionalArray(v, p, set_key, set)) {
          return false;
        }
        for (size_t a = 0; set && a < set->size(); ++a) {
          const std::string ap = child(child(p, set_key), a);
          const json& assoc = (*set)[a];
          bool in_use = true;
          if (!isType(assoc, ap, json::value_t::object, "an object") ||
              !associated(vpc, assoc, ap, state_key, block_key, in_use)) {
            return false;
          }
          const json* block = required(assoc, ap, block_key);
          if (!block || (in_use && !prefix(vpc, *block, child(ap, block_key), family, false))) {
            return false;
          }
        }
        return true;
      };
      if (!associations("CidrBlockAssociationSet", "CidrBlockState", "CidrBlock", Family::V4) ||
          !associations("Ipv6CidrBlockAssociationSet", "Ipv6CidrBlockState", "Ipv6CidrBlock",
                        Family::V6)) {
        return;
      }
      finish(vpc);
    }
  }

  // Alibaba Cloud's DescribeVpcs (`aliyun vpc DescribeVpcs`): {"TotalCount",
  // "PageNumber", "PageSize", "Vpcs": {"Vpc": [{"VpcId", "VpcName",
  // "RegionId", "CidrBlock", "SecondaryCidrBlocks": {"SecondaryCidrBlock":
  // [...]}, "Ipv6CidrBlock", "Ipv6CidrBlocks": {"Ipv6CidrBlock":
  // [{"Ipv6CidrBlock", "Ipv6Isp"}]}, "UserCidrs", ...}]}}.  UserCidrs are
  // not the VPC's own space and are not read.
  void readAliyun(const json& doc) {
    const json* outer = required(doc, "", "Vpcs");
    if (!outer || !isType(*outer, "/Vpcs", json::value_t::object, "an object")) {
      return;
    }
    const json* vpcs = required(*outer, "/Vpcs", "Vpc");
    if (!vpcs || !isType(*vpcs, "/Vpcs/Vpc", json::value_t::array, "an array") ||
        !vpcCount(*vpcs, "/Vpcs/Vpc")) {
      return;
    }
    std::optional<uint64_t> total;
    if (const json* t = member(doc, "TotalCount")) {
      if (!(total = count(*t, "/TotalCount"))) {
        return;
      }
    }
    for (const char* key : {"PageNumber", "PageSize"}) {
      if (const json* n = member(doc, key); n && !count(*n, child("", key))) {
        return;
      }
    }
    for (size_t i = 0; i < vpcs->size(); ++i) {
      const std::string p = child("/Vpcs/Vpc", i);
      const json& v = (*vpcs)[i];
      if (!isType(v, p, json::value_t::object, "an object")) {
        return;
      }
      ImportedVpc vpc;
      vpc.pointer = p;
      auto id = cloudId(v, p, "VpcId");
      auto reg = id ? region(member(v, "RegionId"), child(p, "RegionId")) : std::nullopt;
      auto name = reg ? optionalString(v, p, "VpcName") : std::nullopt;
      if (!name) {
        return;
      }
      vpc.cloud_id = *id;
      vpc.region = *reg;
      vpc.listed_name = *name;
      if (const json* primary = member(v, "CidrBlock")) {
        if (!prefix(vpc, *primary, child(p, "CidrBlock"), Family::V4, true)) {
          return;
        }
      }
      const json* secondary = nullptr;
      if (!optionalObject(v, p, "SecondaryCidrBlocks", secondary)) {
        return;
      }
      if (secondary) {
        const std::string sp = child(p, "SecondaryCidrBlocks");
        const json* list = nullptr;
        if (!optionalArray(*secondary, sp, "SecondaryCidrBlock", list)) {
          return;
        }
        for (size_t s = 0; list && s < list->size(); ++s) {
          if (!prefix(vpc, (*list)[s], child(child(sp, "SecondaryCidrBlock"), s), Family::V4,
                      false)) {
            return;
          }
        }
      }
      if (const json* v6 = member(v, "Ipv6CidrBlock")) {
        if (!prefix(vpc, *v6, child(p, "Ipv6CidrBlock"), Family::V6, true)) {
          return;
        }
      }
      const json* blocks6 = nullptr;
      if (!optionalObject(v, p, "Ipv6CidrBlocks", blocks6)) {
        return;
      }
      if (blocks6) {
        const std::string bp = child(p, "Ipv6CidrBlocks");
        const json* list = nullptr;
        if (!optionalArray(*blocks6, bp, "Ipv6CidrBlock", list)) {
          return;
        }
        for (size_t s = 0; list && s < list->size(); ++s) {
          const std::string ep = child(child(bp, "Ipv6CidrBlock"), s);
          const json& entry = (*list)[s];
          if (!isType(entry, ep, json::value_t::object, "an object")) {
            return;
          }
          const json* block = required(entry, ep, "Ipv6CidrBlock");
          if (!block || !prefix(vpc, *block, child(ep, "Ipv6CidrBlock"), Family::V6, false)) {
            return;
          }
        }
      }
      finish(vpc);
    }
    if (total && *total > vpcs->size()) {
      listing_.notes.push_back("the listing holds " + std::to_string(vpcs->size()) + " of " +
                               std::to_string(*total) +
                               " VPCs (TotalCount): it is one page of several (run aliyun vpc "
                               "DescribeVpcs with --pager to list every VPC)");
    }
  }

  // Huawei Cloud's ListVpcs, v3 (GET /v3/{project_id}/vpc/vpcs): {"vpcs":
  // [{"id", "name", "cidr", "extend_cidrs": [...], "status", ...}],
  // "page_info": {"next_marker", ...}}; v1 (GET /v1/{project_id}/vpcs) has
  // the same "vpcs" without extend_cidrs.  Huawei Cloud gives VPCs no IPv6
  // block (IPv6 is per subnet) and names no region: the caller's.
  void readHuawei(const json& doc) {
    const json* vpcs = required(doc, "", "vpcs");
    if (!vpcs || !isType(*vpcs, "/vpcs", json::value_t::array, "an array") ||
        !vpcCount(*vpcs, "/vpcs")) {
      return;
    }
    const json* page = nullptr;
    if (!optionalObject(doc, "", "page_info", page)) {
      return;
    }
    if (page) {
      auto next = optionalString(*page, "/page_info", "next_marker");
      if (!next) {
        return;
      }
      if (!next->empty()) {
        listing_.notes.push_back(
            "the listing has a page_info.next_marker: it is one page of several (list with "
            "--limit=2000, and with --marker for more than 2000 VPCs)");
      }
    }
    for (size_t i = 0; i < vpcs->size(); ++i) {
      const std::string p = child("/vpcs", i);
      const json& v = (*vpcs)[i];
      if (!isType(v, p, json::value_t::object, "an object")) {
        return;
      }
      ImportedVpc vpc;
      vpc.pointer = p;
      auto id = cloudId(v, p, "id");
      auto reg = id ? region(nullptr, p) : std::nullopt;
      auto name = reg ? optionalString(v, p, "name") : std::nullopt;
      if (!name) {
        return;
      }
      vpc.cloud_id = *id;
      vpc.region = *reg;
      vpc.listed_name = *name;
      if (const json* cidr = member(v, "cidr")) {
        if (!prefix(vpc, *cidr, child(p, "cidr"), Family::V4, true)) {
          return;
        }
      }
      const json* extend = nullptr;
      if (!optionalArray(v, p, "extend_cidrs", extend)) {
        return;
      }
      for (size_t e = 0; extend && e < extend->size(); ++e) {
        if (!prefix(vpc, (*extend)[e], child(child(p, "extend_cidrs"), e), Family::V4, false)) {
          return;
        }
      }
      finish(vpc);
    }
  }

  Cloud from_;
  std::string region_hint_;
  Listing listing_;
  std::map<std::string, std::string> ids_;  // VPC id -> where it is listed
  std::optional<ListingError> error_;
};

}  // namespace

std::string sanitizedName(std::string_view listed) {
  if (isValidName(listed)) {
    return std::string(listed);
  }
  std::string out;
  for (char c : listed) {
    if (isNameChar(c)) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';  // one '-' for a run of spaces, punctuation or non-ASCII characters
    }
  }
  while (!out.empty() && out.back() == '-') {
    out.pop_back();
  }
  size_t lead = out.find_first_not_of('-');
  out.erase(0, lead == std::string::npos ? out.size() : lead);
  if (out.empty()) {
    return out;
  }
  if (!isLetter(out[0])) {
    out = "vpc-" + out;
  }
  if (out.size() > 63) {
    out.resize(63);
    while (out.back() == '-') {
      out.pop_back();
    }
  }
  return out;
}

Result<Listing, ListingError> parseListing(Cloud from, std::string_view json_text,
                                           std::string_view region_hint) {
  try {
    if (json_text.size() > kMaxListingBytes) {
      return unexpected(ListingError{"", "the file has " + std::to_string(json_text.size()) +
                                             " bytes; at most " + std::to_string(kMaxListingBytes) +
                                             " are read (list fewer VPCs per file)"});
    }
    if (auto deep = checkNesting(json_text)) {
      return unexpected(*deep);
    }
    json doc;
    try {
      doc = json::parse(json_text.begin(), json_text.end());
    } catch (const json::parse_error& e) {
      const size_t at = e.byte > 0 ? e.byte - 1 : 0;
      const text::LineColumn lc = text::lineColumn(json_text, at);
      return unexpected(ListingError{"", "not valid JSON: at line " + std::to_string(lc.line) +
                                             ", column " + std::to_string(lc.column) + ": " +
                                             api::parseErrorReason(e.what())});
    } catch (const json::exception& e) {
      // A number too large for a double ("1e400"): nlohmann says so
      // without a position.
      std::string what = e.what();
      if (size_t end = what.find("] "); end != std::string::npos) {
        what = what.substr(end + 2);
      }
      return unexpected(ListingError{"", "not valid JSON: " + text::escape(what, 200)});
    }
    return ListingReader(from, region_hint).read(doc);
  } catch (const std::exception& e) {
    // Nothing above throws on any input but for want of memory; say so
    // rather than let it out.
    return unexpected(
        ListingError{"", std::string("cannot read the listing: ") + text::escape(e.what(), 200)});
  }
}

const char* toString(Conflict::Kind k) {
  switch (k) {
    case Conflict::Kind::kOverlapVpc:
      return "overlap-vpc";
    case Conflict::Kind::kOverlapMappedRange:
      return "overlap-mapped-range";
    case Conflict::Kind::kOverlapStoredVpc:
      return "overlap-stored-vpc";
    case Conflict::Kind::kOverlapImported:
      return "overlap-imported-vpc";
    case Conflict::Kind::kNameTaken:
      return "name-taken";
    case Conflict::Kind::kHostBits:
      return "host-bits";
    case Conflict::Kind::kReserved:
      return "reserved";
    case Conflict::Kind::kNoPrefixes:
      return "no-prefixes";
    case Conflict::Kind::kMore:
      return "more";
  }
  return "?";
}

const char* toString(VpcVerdict::Status s) {
  switch (s) {
    case VpcVerdict::Status::kFits:
      return "fits";
    case VpcVerdict::Status::kAlreadyInPlan:
      return "already-in-plan";
    case VpcVerdict::Status::kConflicts:
      return "conflicts";
  }
  return "?";
}

size_t ImportReport::count(VpcVerdict::Status s) const {
  return static_cast<size_t>(
      std::count_if(vpcs.begin(), vpcs.end(), [&](const VpcVerdict& v) { return v.status == s; }));
}

namespace {

using Range = config::DisjointPrefixes<int>::Range;
Range rangeOf(const IpPrefix& p) {
  return config::DisjointPrefixes<int>::rangeOf(p);
}

// Who holds a block of the plan.
struct Holder {
  Conflict::Kind kind = Conflict::Kind::kOverlapVpc;
  IpPrefix prefix;
  std::string what;  // "VPC aws/us-east-1/train-use1 in the config", escaped
};

// The plan's blocks, which do not overlap each other, by first address.
// Unlike config::DisjointPrefixes it lists every block a prefix overlaps,
// not just one: the report names them all (up to a limit).
class PlanBlocks {
 public:
  // Adds p unless it overlaps a block already there (a plan that overlaps
  // itself is the config check's and the store's to refuse, not import's).
  void add(const IpPrefix& p, Holder holder) {
    const Range r = rangeOf(p);
    if (!overlapping(p, 1).empty()) {
      return;
    }
    by_first_.emplace(r.first, Entry{r.last, std::move(holder)});
  }

  // The blocks p overlaps, at most limit of them, highest first.
  std::vector<const Holder*> overlapping(const IpPrefix& p, size_t limit) const {
    std::vector<const Holder*> out;
    const Range r = rangeOf(p);
    auto it = by_first_.upper_bound(r.last);
    // Blocks are disjoint, so their last addresses grow with their first:
    // walking down from the last one starting at or before p's end, the
    // first that ends before p's start ends the overlapping run.
    while (it != by_first_.begin() && out.size() < limit) {
      --it;
      if (it->second.last < r.first) {
        break;
      }
      out.push_back(&it->second.holder);
    }
    return out;
  }

 private:
  struct Entry {
    IpAddress last;
    Holder holder;
  };
  std::map<IpAddress, Entry> by_first_;
};

struct ReservedRange {
  const char* prefix;
  const char* why;
};
// Ranges no VPC can use (RFC 6890 special-purpose ranges that are not
// unicast private space).  The shared 100.64.0.0/10 is not here: some
// clouds let VPCs use it, and the config's checks own that decision.
constexpr ReservedRange kReserved[] = {
    {"0.0.0.0/8", "\"this network\""},
    {"127.0.0.0/8", "loopback"},
    {"169.254.0.0/16", "link-local addresses"},
    {"224.0.0.0/4", "multicast"},
    {"240.0.0.0/4", "future use and broadcast"},
    {"::/127", "the unspecified and loopback addresses"},
    {"fe80::/10", "link-local addresses"},
    {"ff00::/8", "multicast"},
};

std::string label(const std::string& cloud, const std::string& region, const std::string& name) {
  return text::escape(cloud) + "/" + text::escape(region) + "/" + text::escape(name);
}

std::string label(const ImportedVpc& v) {
  return label(v.cloud, v.region, v.name) + " (" + text::escape(v.cloud_id) + ")";
}

std::string joined(const std::vector<IpPrefix>& prefixes) {
  std::string out;
  for (const IpPrefix& p : prefixes) {
    out += (out.empty() ? "" : ", ") + p.toString();
  }
  return out.empty() ? "no CIDR block" : out;
}

std::vector<IpPrefix> sortedNetworks(const std::vector<IpPrefix>& prefixes) {
  std::vector<IpPrefix> out;
  for (const IpPrefix& p : prefixes) {
    out.push_back(p.network());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// A VPC name the plan already uses.
struct NameHolder {
  std::string what;   // "VPC aws/us-east-1/train-use1 in the config"
  std::string where;  // "config" or "store"
  std::vector<IpPrefix> prefixes;
};

// Collects a verdict's conflicts up to kMaxConflictsPerVpc; past that it
// only says there are more (counting them all could take a walk over the
// whole store for each block of a hostile listing).
struct VerdictBuilder {
  VpcVerdict verdict;
  size_t omitted = 0;
  std::set<std::tuple<size_t, IpPrefix, IpPrefix>> imported_pairs;  // (other, mine, theirs)

  void add(Conflict c) {
    if (verdict.conflicts.size() < kMaxConflictsPerVpc) {
      verdict.conflicts.push_back(std::move(c));
    } else {
      ++omitted;
    }
  }
  // How many more conflicts are listed.  Callers ask for one more than
  // that (so that "more" is said) and skip building the rest: a hostile
  // listing could otherwise have each VPC build thousands.
  size_t room() const { return kMaxConflictsPerVpc - verdict.conflicts.size(); }
  VpcVerdict done() && {
    if (omitted > 0) {
      Conflict more;
      more.kind = Conflict::Kind::kMore;
      more.message = "more conflicts not listed (the report lists " +
                     std::to_string(kMaxConflictsPerVpc) + " per VPC)";
      verdict.conflicts.push_back(std::move(more));
    }
    if (verdict.status != VpcVerdict::Status::kAlreadyInPlan) {
      verdict.status =
          verdict.conflicts.empty() ? VpcVerdict::Status::kFits : VpcVerdict::Status::kConflicts;
    }
    return std::move(verdict);
  }
};

// For an overlap with a config VPC: a mapped range that already maps a
// copy of exactly this block (the legacy VPC being imported is reached
// through the mapping and stays out of the plan).
std::string mappedHint(const config::MappedRange& m) {
  return "; mapped range " + text::escape(m.name) + " already maps a copy of " + m.real.toString() +
         (m.site.empty() ? "" : " at site " + text::escape(m.site)) + " to " + m.mapped.toString() +
         ": such a copy stays out of the plan";
}

}  // namespace

ImportReport findConflicts(const config::Config& config, const Snapshot& store,
                           const std::vector<ImportedVpc>& vpcs) {
  ImportReport report;
  if (!vpcs.empty()) {
    const std::string& source = vpcs.front().source;
    if (source.rfind("import:", 0) == 0) {
      report.from = source.substr(7);
    }
  }

  PlanBlocks plan;
  std::map<std::string, NameHolder> names;
  for (const config::VpcConfig& v : config.address_plan.vpcs) {
    const std::string what = "VPC " + label(v.cloud, v.region, v.name) + " in the config";
    for (const IpPrefix& p : v.prefixes) {
      plan.add(p.network(), {Conflict::Kind::kOverlapVpc, p, what});
    }
    names.emplace(v.name, NameHolder{what, "config", sortedNetworks(v.prefixes)});
  }
  for (const config::MappedRange& m : config.address_plan.mapped_ranges) {
    plan.add(m.mapped.network(), {Conflict::Kind::kOverlapMappedRange, m.mapped,
                                  "mapped range " + text::escape(m.name) + " in the config"});
  }
  for (const StoredVpc& v : store.vpcs) {
    const std::string what = "VPC " + label(v.cloud, v.region, v.name) + " in the store (" +
                             text::escape(v.source) + ")";
    for (const IpPrefix& p : v.prefixes) {
      plan.add(p.network(), {Conflict::Kind::kOverlapStoredVpc, p, what});
    }
    names.emplace(v.name, NameHolder{what, "store", sortedNetworks(v.prefixes)});
  }
  std::map<IpPrefix, const config::MappedRange*> mapped_by_real;
  for (const config::MappedRange& m : config.address_plan.mapped_ranges) {
    mapped_by_real.emplace(m.real.network(), &m);
  }
  std::vector<std::pair<IpPrefix, std::string>> reserved;
  for (const ReservedRange& r : kReserved) {
    reserved.emplace_back(*IpPrefix::parse(r.prefix), r.why);
  }
  // And what this config keeps out (the underlay, 100.64.0.0/10 where a
  // cloud of the plan keeps it, the operator's list).
  for (auto& r : reservedRanges(config, &store)) {
    if (std::none_of(reserved.begin(), reserved.end(),
                     [&](const auto& have) { return have.first == r.prefix; })) {
      reserved.emplace_back(r.prefix, std::move(r.why));
    }
  }

  std::vector<VerdictBuilder> builders(vpcs.size());
  for (size_t i = 0; i < vpcs.size(); ++i) {
    const ImportedVpc& vpc = vpcs[i];
    VerdictBuilder& b = builders[i];
    b.verdict.vpc = vpc;
    if (auto it = names.find(vpc.name); it != names.end()) {
      if (!vpc.prefixes.empty() && it->second.prefixes == sortedNetworks(vpc.prefixes)) {
        b.verdict.status = VpcVerdict::Status::kAlreadyInPlan;
        b.verdict.already_in = it->second.where;
        continue;  // a re-import: it overlaps only itself
      }
      Conflict c;
      c.kind = Conflict::Kind::kNameTaken;
      c.other = it->second.what;
      c.message = "the name " + text::escape(vpc.name) + " is already used by " + it->second.what +
                  ", with " + joined(it->second.prefixes);
      b.add(std::move(c));
    }
    if (vpc.prefixes.empty()) {
      Conflict c;
      c.kind = Conflict::Kind::kNoPrefixes;
      c.message = "no CIDR block in use to import";
      b.add(std::move(c));
    }
    for (const IpPrefix& p : vpc.prefixes) {
      if (p.hasHostBits()) {
        Conflict c;
        c.kind = Conflict::Kind::kHostBits;
        c.prefix = p;
        c.message =
            p.toString() + " has host bits set (the network is " + p.network().toString() + ")";
        b.add(std::move(c));
      }
      for (const auto& [range, why] : reserved) {
        if (p.overlaps(range)) {
          Conflict c;
          c.kind = Conflict::Kind::kReserved;
          c.prefix = p;
          c.other = why;
          c.other_prefix = range;
          c.message = p.toString() + " overlaps " + range.toString() + ", reserved for " + why;
          b.add(std::move(c));
        }
      }
      if (b.room() == 0) {
        ++b.omitted;
        continue;
      }
      for (const Holder* h : plan.overlapping(p.network(), b.room() + 1)) {
        Conflict c;
        c.kind = h->kind;
        c.prefix = p;
        c.other = h->what;
        c.other_prefix = h->prefix;
        c.message = p.toString() + " overlaps " + h->prefix.toString() + " of " + h->what;
        if (auto m = mapped_by_real.find(p.network());
            h->kind == Conflict::Kind::kOverlapVpc && m != mapped_by_real.end()) {
          c.message += mappedHint(*m->second);
        }
        b.add(std::move(c));
      }
    }
  }

  // Within the listing: names used twice, blocks that overlap.  A VPC
  // already in the plan is left out (its blocks are the plan's, checked
  // above).
  std::map<std::string, std::vector<size_t>> by_name;
  for (size_t i = 0; i < vpcs.size(); ++i) {
    if (builders[i].verdict.status != VpcVerdict::Status::kAlreadyInPlan) {
      by_name[vpcs[i].name].push_back(i);
    }
  }
  for (const auto& [name, users] : by_name) {
    for (size_t i : users) {
      for (size_t j : users) {
        if (i == j) {
          continue;
        }
        if (builders[i].room() == 0) {
          ++builders[i].omitted;
          break;
        }
        Conflict c;
        c.kind = Conflict::Kind::kNameTaken;
        c.other = "imported VPC " + label(vpcs[j]) + " in this listing";
        c.message = "the name " + text::escape(name) + " is also the name of " + c.other;
        builders[i].add(std::move(c));
      }
    }
  }
  // A sweep in address order: each block is paired with the block seen so
  // far that reaches furthest, if they overlap.  Every block that overlaps
  // another is paired at least once, in O(n log n) even when a hostile
  // listing repeats one block thousands of times.
  struct Block {
    Range range;
    size_t vpc;
    IpPrefix prefix;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < vpcs.size(); ++i) {
    if (builders[i].verdict.status == VpcVerdict::Status::kAlreadyInPlan) {
      continue;
    }
    for (const IpPrefix& p : vpcs[i].prefixes) {
      blocks.push_back({rangeOf(p), i, p});
    }
  }
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) {
    return std::tie(a.range.first, a.vpc, a.prefix) < std::tie(b.range.first, b.vpc, b.prefix);
  });
  const Block* furthest = nullptr;
  for (const Block& b : blocks) {
    if (furthest && furthest->range.first.family == b.range.first.family &&
        furthest->range.last >= b.range.first) {
      const Block& a = *furthest;
      auto pair = [&](const Block& mine, const Block& theirs) {
        VerdictBuilder& vb = builders[mine.vpc];
        if (!vb.imported_pairs.emplace(theirs.vpc, mine.prefix, theirs.prefix).second) {
          return;
        }
        Conflict c;
        c.kind = Conflict::Kind::kOverlapImported;
        c.prefix = mine.prefix;
        c.other_prefix = theirs.prefix;
        if (mine.vpc == theirs.vpc) {
          c.other = "this VPC";
          c.message =
              mine.prefix.toString() + " overlaps its own block " + theirs.prefix.toString();
        } else {
          c.other = "imported VPC " + label(vpcs[theirs.vpc]) + " in this listing";
          c.message =
              mine.prefix.toString() + " overlaps " + theirs.prefix.toString() + " of " + c.other;
        }
        vb.add(std::move(c));
      };
      pair(b, a);
      if (a.vpc != b.vpc) {
        pair(a, b);
      }
    }
    if (!furthest || furthest->range.first.family != b.range.first.family ||
        b.range.last > furthest->range.last) {
      furthest = &b;
    }
  }

  for (VerdictBuilder& b : builders) {
    report.vpcs.push_back(std::move(b).done());
  }
  return report;
}

ImportReport findConflicts(const config::Config& config, const Snapshot& store,
                           const Listing& listing) {
  ImportReport report = findConflicts(config, store, listing.vpcs);
  report.from = flagName(listing.from);
  report.notes = listing.notes;
  return report;
}

std::vector<StoredVpc> toStoredVpcs(const ImportReport& report) {
  std::vector<StoredVpc> out;
  for (const VpcVerdict& v : report.vpcs) {
    if (v.status != VpcVerdict::Status::kFits) {
      continue;
    }
    StoredVpc s;
    s.name = v.vpc.name;
    s.cloud = v.vpc.cloud;
    s.region = v.vpc.region;
    s.prefixes = v.vpc.prefixes;
    s.source = v.vpc.source;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const StoredVpc& a, const StoredVpc& b) { return a.name < b.name; });
  return out;
}

Result<ImportReport, std::string> applyListing(const config::Config& config, const Listing& listing,
                                               Snapshot& store) {
  ImportReport report = findConflicts(config, store, listing);
  std::vector<StoredVpc> fits = toStoredVpcs(report);
  if (store.vpcs.size() + fits.size() > kMaxStoredVpcs) {
    return unexpected("the store holds " + std::to_string(store.vpcs.size()) + " VPCs; adding " +
                      std::to_string(fits.size()) + " would pass its limit of " +
                      std::to_string(kMaxStoredVpcs));
  }
  for (StoredVpc& v : fits) {
    store.vpcs.push_back(std::move(v));
  }
  std::sort(store.vpcs.begin(), store.vpcs.end(),
            [](const StoredVpc& a, const StoredVpc& b) { return a.name < b.name; });
  return report;
}

json toJson(const ImportReport& report) {
  json vpcs = json::array();
  for (const VpcVerdict& v : report.vpcs) {
    json prefixes = json::array();
    for (const IpPrefix& p : v.vpc.prefixes) {
      prefixes.push_back(p.toString());
    }
    json conflicts = json::array();
    for (const Conflict& c : v.conflicts) {
      json jc = {{"kind", toString(c.kind)}, {"message", c.message}};
      if (c.kind != Conflict::Kind::kNameTaken && c.kind != Conflict::Kind::kNoPrefixes &&
          c.kind != Conflict::Kind::kMore) {
        jc["prefix"] = c.prefix.toString();
      }
      if (!c.other.empty()) {
        jc["other"] = c.other;
      }
      if (c.kind != Conflict::Kind::kNameTaken && c.kind != Conflict::Kind::kNoPrefixes &&
          c.kind != Conflict::Kind::kMore && c.kind != Conflict::Kind::kHostBits) {
        jc["other_prefix"] = c.other_prefix.toString();
      }
      conflicts.push_back(std::move(jc));
    }
    json jv = {{"name", v.vpc.name},
               {"cloud", v.vpc.cloud},
               {"region", v.vpc.region},
               {"cloud_id", v.vpc.cloud_id},
               {"listed_name", v.vpc.listed_name},
               {"prefixes", std::move(prefixes)},
               {"pointer", v.vpc.pointer},
               {"status", toString(v.status)},
               {"conflicts", std::move(conflicts)},
               {"notes", v.vpc.notes}};
    if (v.status == VpcVerdict::Status::kAlreadyInPlan) {
      jv["already_in"] = v.already_in;
    }
    vpcs.push_back(std::move(jv));
  }
  return {{"from", report.from},
          {"vpcs", std::move(vpcs)},
          {"notes", report.notes},
          {"counts",
           {{"listed", report.vpcs.size()},
            {"fits", report.count(VpcVerdict::Status::kFits)},
            {"already_in_plan", report.count(VpcVerdict::Status::kAlreadyInPlan)},
            {"conflicts", report.count(VpcVerdict::Status::kConflicts)}}}};
}

std::string toText(const ImportReport& report) {
  std::string out = "import from " + text::escape(report.from.empty() ? "?" : report.from) + ": " +
                    std::to_string(report.vpcs.size()) + " VPCs listed, " +
                    std::to_string(report.count(VpcVerdict::Status::kFits)) + " fit, " +
                    std::to_string(report.count(VpcVerdict::Status::kAlreadyInPlan)) +
                    " already in the plan, " +
                    std::to_string(report.count(VpcVerdict::Status::kConflicts)) + " in conflict\n";
  for (const VpcVerdict& v : report.vpcs) {
    const char* status = v.status == VpcVerdict::Status::kFits            ? "fits     "
                         : v.status == VpcVerdict::Status::kAlreadyInPlan ? "in plan  "
                                                                          : "conflict ";
    std::string blocks;
    for (const IpPrefix& p : v.vpc.prefixes) {
      blocks += (blocks.empty() ? "" : ", ") + p.toString();
    }
    out += std::string("  ") + status + label(v.vpc) + " " +
           (blocks.empty() ? std::string("(no CIDR block)") : blocks);
    if (v.status == VpcVerdict::Status::kAlreadyInPlan) {
      out += " (already in the " + v.already_in + ")";
    }
    out += "\n";
    for (const Conflict& c : v.conflicts) {
      out += "      " + c.message + "\n";
    }
    for (const std::string& n : v.vpc.notes) {
      out += "      note: " + n + "\n";
    }
  }
  for (const std::string& n : report.notes) {
    out += "note: " + n + "\n";
  }
  return out;
}

}  // namespace mcgw::plan
