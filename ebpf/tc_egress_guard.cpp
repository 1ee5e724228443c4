#include "ebpf/tc_egress_guard.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ebpf/tc_common.hpp"
#include "ebpf/xdp_maps.hpp"

namespace mcgw::ebpf {
namespace {

using tc::failure;
using tc::quietly;

void egressHook(int ifindex, bpf_tc_hook& hook) {
  tc::hook(ifindex, BPF_TC_EGRESS, hook);
}

void filterOpts(bpf_tc_opts& opts) {
  tc::filter(kEgressGuardHandle, kEgressGuardPriority, opts);
}

}  // namespace

std::string defaultTcEgressObjectPath() {
  return (std::filesystem::path(defaultXdpObjectPath()).parent_path() / "mcgw_tc_egress.bpf.o")
      .string();
}

Result<std::unique_ptr<EgressGuard>, std::string> EgressGuard::attach(const std::string& ifname,
                                                                      const std::string& object) {
  std::unique_ptr<EgressGuard> g(new EgressGuard());
  g->ifname_ = ifname;
  g->ifindex_ = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (g->ifindex_ == 0) {
    return unexpected(failure(ifname, "if_nametoindex", errno));
  }
  g->object_ = bpf_object__open_file(object.c_str(), nullptr);
  if (!g->object_) {
    return unexpected(failure(ifname, ("opening " + object).c_str(), errno));
  }
  if (int ret = bpf_object__load(g->object_); ret < 0) {
    return unexpected(failure(ifname, ("loading " + object).c_str(), ret));
  }
  bpf_program* prog = bpf_object__find_program_by_name(g->object_, "mcgw_tc_egress");
  bpf_map* alive = bpf_object__find_map_by_name(g->object_, "mcgwd_alive");
  if (!prog || !alive) {
    return unexpected(ifname + ": " + object + " has no program mcgw_tc_egress or map mcgwd_alive");
  }
  // The socket whose life is mcgwd's: an unnamed Unix datagram socket
  // (nothing can reach it), never read or written.
  g->socket_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  g->site_socket_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (g->socket_ < 0 || g->site_socket_ < 0) {
    return unexpected(failure(ifname, "socket", errno));
  }
  const uint32_t key = 0;
  const uint64_t value = static_cast<uint64_t>(g->socket_);
  if (int ret = bpf_map__update_elem(alive, &key, sizeof key, &value, sizeof value, BPF_ANY);
      ret < 0) {
    return unexpected(failure(ifname, "putting the socket into mcgwd_alive", ret));
  }
  if (auto r = g->setSiteReachable(true); !r) {
    return unexpected(r.error());
  }
  bpf_tc_hook hook;
  egressHook(g->ifindex_, hook);
  if (int ret = quietly([&] { return bpf_tc_hook_create(&hook); }); ret < 0 && ret != -EEXIST) {
    return unexpected(failure(ifname, "bpf_tc_hook_create (clsact)", ret));
  }
  bpf_tc_opts opts;
  filterOpts(opts);
  opts.prog_fd = bpf_program__fd(prog);
  opts.flags = BPF_TC_F_REPLACE;
  if (int ret = bpf_tc_attach(&hook, &opts); ret < 0) {
    return unexpected(failure(ifname, "bpf_tc_attach (egress)", ret));
  }
  return g;
}

EgressGuard::~EgressGuard() {
  if (object_ && ifindex_ != 0 && !keep_filter_) {
    // Only our own program: a later mcgwd's guard may have replaced it.
    bpf_tc_hook hook;
    egressHook(ifindex_, hook);
    bpf_tc_opts opts;
    filterOpts(opts);
    if (quietly([&] { return bpf_tc_query(&hook, &opts); }) == 0) {
      bpf_program* prog = bpf_object__find_program_by_name(object_, "mcgw_tc_egress");
      bpf_prog_info info{};
      uint32_t len = sizeof info;
      if (prog && bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0 &&
          info.id == opts.prog_id) {
        filterOpts(opts);
        (void)quietly([&] { return bpf_tc_detach(&hook, &opts); });
      }
    }
  }
  for (int fd : {socket_, site_socket_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  if (object_) {
    bpf_object__close(object_);
  }
}

Result<bool, std::string> EgressGuard::setSiteReachable(bool reachable) {
  bpf_map* alive = bpf_object__find_map_by_name(object_, "mcgwd_alive");
  if (!alive) {
    return unexpected(ifname_ + ": no map mcgwd_alive");
  }
  const uint32_t key = 1;
  if (reachable) {
    const uint64_t value = static_cast<uint64_t>(site_socket_);
    if (int ret = bpf_map__update_elem(alive, &key, sizeof key, &value, sizeof value, BPF_ANY);
        ret < 0) {
      return unexpected(failure(ifname_, "mcgwd_alive: the site's socket in", ret));
    }
    return true;
  }
  // An empty slot answers EINVAL (sock_map_delete_elem): already out.
  if (int ret = bpf_map_delete_elem(bpf_map__fd(alive), &key);
      ret < 0 && ret != -EINVAL && ret != -ENOENT) {
    return unexpected(failure(ifname_, "mcgwd_alive: the site's socket out", ret));
  }
  return true;
}

Result<bool, std::string> attachVirtualMacHost(const std::string& ifname,
                                               const std::array<uint8_t, 6>& mac,
                                               const std::string& object) {
  const int ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (ifindex == 0) {
    return unexpected(failure(ifname, "if_nametoindex", errno));
  }
  bpf_object* obj = bpf_object__open_file(object.c_str(), nullptr);
  if (!obj) {
    return unexpected(failure(ifname, ("opening " + object).c_str(), errno));
  }
  auto fail = [obj](std::string why) {
    bpf_object__close(obj);
    return unexpected(std::move(why));
  };
  if (int ret = bpf_object__load(obj); ret < 0) {
    return fail(failure(ifname, ("loading " + object).c_str(), ret));
  }
  bpf_program* prog = bpf_object__find_program_by_name(obj, "mcgw_tc_vmac_host");
  bpf_map* port_mac = bpf_object__find_map_by_name(obj, "port_mac");
  if (!prog || !port_mac) {
    return fail(ifname + ": " + object + " has no program mcgw_tc_vmac_host or map port_mac");
  }
  const uint32_t key = 0;
  uint64_t value = 0;
  std::memcpy(&value, mac.data(), mac.size());
  if (int ret = bpf_map__update_elem(port_mac, &key, sizeof key, &value, sizeof value, BPF_ANY);
      ret < 0) {
    return fail(failure(ifname, "port_mac", ret));
  }
  bpf_tc_hook hook;
  tc::hook(ifindex, BPF_TC_INGRESS, hook);
  if (int ret = quietly([&] { return bpf_tc_hook_create(&hook); }); ret < 0 && ret != -EEXIST) {
    return fail(failure(ifname, "bpf_tc_hook_create (clsact)", ret));
  }
  bpf_tc_opts opts;
  tc::filter(kVirtualMacHostHandle, kVirtualMacHostPriority, opts);
  opts.prog_fd = bpf_program__fd(prog);
  opts.flags = BPF_TC_F_REPLACE;
  if (int ret = bpf_tc_attach(&hook, &opts); ret < 0) {
    return fail(failure(ifname, "bpf_tc_attach (ingress)", ret));
  }
  bpf_object__close(obj);  // the filter holds the program, the program its map
  return true;
}

Result<bool, std::string> detachEgressGuard(const std::string& ifname) {
  return tc::detach(ifname, BPF_TC_EGRESS, kEgressGuardHandle, kEgressGuardPriority);
}

}  // namespace mcgw::ebpf
