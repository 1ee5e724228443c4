// What the two tc filters of mcgw_ebpf share (tc_ingress_drop.cpp,
// tc_egress_guard.cpp): libbpf's tc hook and filter options, error text,
// and silencing libbpf for calls whose expected failures it would print.
#pragma once

#include <bpf/libbpf.h>
#include <net/if.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "config/result.hpp"

namespace mcgw::ebpf::tc {

inline std::string failure(const std::string& ifname, const char* call, int ret) {
  return ifname + ": " + call + ": " + std::strerror(ret < 0 ? -ret : ret);
}

// libbpf refuses options whose padding is not zero, which aggregate
// initialisation does not promise: hence memset, and no copies.
inline void hook(int ifindex, bpf_tc_attach_point where, bpf_tc_hook& h) {
  std::memset(&h, 0, sizeof h);
  h.sz = sizeof h;
  h.ifindex = ifindex;
  h.attach_point = where;
}

inline void filter(unsigned handle, unsigned priority, bpf_tc_opts& opts) {
  std::memset(&opts, 0, sizeof opts);
  opts.sz = sizeof opts;
  opts.handle = handle;
  opts.priority = priority;
}

// Creating clsact where it exists fails with EEXIST, and detaching where
// there is nothing fails with ENOENT or EINVAL; both are fine for the
// callers, but libbpf prints the kernel's message for them ("Exclusivity
// flag on, cannot modify") to stderr as a warning.  Silences libbpf for such
// a call; the caller reports real failures itself.  (The setting is
// process-wide; in mcgwd one thread at a time calls libbpf: the control
// loop, or a reload on its background thread while the loop's gateway
// sources and API wait.)
template <typename Call>
int quietly(Call call) {
  const libbpf_print_fn_t previous = libbpf_set_print(nullptr);
  const int ret = call();
  libbpf_set_print(previous);
  return ret;
}

// Detaches the filter at (handle, priority) of `where` on `ifname`: true if
// there was one, false if not (or no clsact at all: the kernel says EINVAL).
inline Result<bool, std::string> detach(const std::string& ifname, bpf_tc_attach_point where,
                                        unsigned handle, unsigned priority) {
  const int ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (ifindex == 0) {
    return unexpected(failure(ifname, "if_nametoindex", errno));
  }
  bpf_tc_hook h;
  hook(ifindex, where, h);
  bpf_tc_opts opts;
  filter(handle, priority, opts);
  const int ret = quietly([&] { return bpf_tc_detach(&h, &opts); });
  if (ret == -ENOENT || ret == -EINVAL) {
    return false;
  }
  if (ret < 0) {
    return unexpected(failure(ifname, "bpf_tc_detach", ret));
  }
  return true;
}

}  // namespace mcgw::ebpf::tc
