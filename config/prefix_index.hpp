// Prefixes that do not overlap each other, indexed by their first address:
// the one a new prefix overlaps is found in O(log n).  Used by the plan's
// overlap checks (a scan of all of them made a plan of 60000 VPCs take a
// minute) and by the allocator.
#pragma once

#include <map>
#include <utility>

#include "config/net.hpp"

namespace mcgw::config {

template <typename Owner>
class DisjointPrefixes {
 public:
  // The owner of a prefix that overlaps p, or nullptr.
  const Owner* overlapping(const IpPrefix& p) const {
    const Range r = rangeOf(p);
    auto it = by_first_.upper_bound(r.last);
    if (it == by_first_.begin()) {
      return nullptr;
    }
    --it;  // the last one starting at or before p's last address
    return it->second.last >= r.first ? &it->second.owner : nullptr;
  }
  // Adds p, which overlaps none of them.
  void add(const IpPrefix& p, Owner owner) {
    const Range r = rangeOf(p);
    by_first_.emplace(r.first, Entry{r.last, std::move(owner)});
  }
  bool empty() const { return by_first_.empty(); }

  // The first and last address of p.
  struct Range {
    IpAddress first;  // family first: the families never overlap
    IpAddress last;
  };
  static Range rangeOf(const IpPrefix& p) {
    const IpAddress first = p.network().address;
    IpAddress last = first;
    for (unsigned bit = p.length; bit < last.bits(); ++bit) {
      last.bytes[bit / 8] |= static_cast<uint8_t>(0x80 >> (bit % 8));
    }
    return {first, last};
  }

 private:
  struct Entry {
    IpAddress last;
    Owner owner;
  };
  std::map<IpAddress, Entry> by_first_;
};

}  // namespace mcgw::config
