#include "ebpf/tc_ingress_drop.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>

#include "ebpf/tc_common.hpp"

namespace mcgw::ebpf {
namespace {

using tc::failure;
using tc::quietly;

void ingressHook(int ifindex, bpf_tc_hook& hook) {
  tc::hook(ifindex, BPF_TC_INGRESS, hook);
}

void filterOpts(bpf_tc_opts& opts) {
  tc::filter(kIngressDropHandle, kIngressDropPriority, opts);
}

}  // namespace

Result<bool, std::string> attachIngressDrop(const std::string& ifname) {
  const int ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (ifindex == 0) {
    return unexpected(failure(ifname, "if_nametoindex", errno));
  }
  bpf_tc_hook hook;
  ingressHook(ifindex, hook);
  // clsact left by an earlier mcgwd (or anyone else) is fine: the filter goes
  // under it.
  if (int ret = quietly([&] { return bpf_tc_hook_create(&hook); }); ret < 0 && ret != -EEXIST) {
    return unexpected(failure(ifname, "bpf_tc_hook_create (clsact)", ret));
  }
  const bpf_insn drop[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, TC_ACT_SHOT},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  const int prog = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "mcgw_tc_drop", "GPL", drop,
                                 sizeof drop / sizeof drop[0], nullptr);
  if (prog < 0) {
    return unexpected(failure(ifname, "bpf_prog_load", prog));
  }
  bpf_tc_opts opts;
  filterOpts(opts);
  opts.prog_fd = prog;
  opts.flags = BPF_TC_F_REPLACE;
  const int ret = bpf_tc_attach(&hook, &opts);
  // The filter holds its own reference to the program.
  ::close(prog);
  if (ret < 0) {
    return unexpected(failure(ifname, "bpf_tc_attach", ret));
  }
  return true;
}

Result<bool, std::string> detachIngressDrop(const std::string& ifname) {
  return tc::detach(ifname, BPF_TC_INGRESS, kIngressDropHandle, kIngressDropPriority);
}

}  // namespace mcgw::ebpf
