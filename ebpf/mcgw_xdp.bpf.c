// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* mcgw's XDP program for af_xdp ports: data-plane packets go to the AF_XDP
 * socket DPDK reads (xsks_map, one socket per rx queue), everything else to
 * the Linux kernel, which keeps the control plane (BGP, BFD, SSH, ping to the
 * gateway, ARP/ND).  The DPDK af_xdp PMD loads it (vdev argument
 * xdp_prog=.../mcgw_xdp.bpf.o), attaches it to the port's interface and puts
 * its sockets into xsks_map; mcgwd fills the other maps (mcgw_xdp_maps.h).
 *
 * Decision order (README.md has the table):
 *   pass-all flag -> kernel
 *   short Ethernet header -> kernel (malformed)
 *   VLAN tag -> kernel;  ARP -> kernel;  not IPv4/IPv6 -> kernel
 *   invalid or truncated IP header -> kernel (malformed)
 *   LAN port, VRRP (IP protocol 112) -> kernel (mcgwd reads VRRP through a
 *     packet socket on the port's kernel side, on every kind of port)
 *   destination is our VTEP: fragment -> kernel; UDP 4789/6081, ESP
 *                            (IP protocol 50) and UDP 4500 (ESP in UDP)
 *                            -> DPDK; anything else -> kernel (local)
 *   destination is a local address -> kernel
 *   (to a VTEP or local address: BGP or BFD while no AF_XDP socket is open
 *    -> dropped, so that routing shares the fast path's fate)
 *   IPv6 neighbour discovery -> kernel
 *   broadcast, multicast, link-local destination or group MAC -> kernel
 *   LAN port -> DPDK (transit);  WAN port or role unset -> kernel
 *
 * Parsing is bounded: one Ethernet header (no VLAN walk), the IPv4 header
 * with its options (IHL) or the fixed IPv6 header, and the UDP header or the
 * ICMPv6 type right behind it; IPv6 extension headers are not walked. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "ebpf/mcgw_xdp_maps.h"

/* The DPDK af_xdp PMD inserts its AF_XDP socket at the queue index. */
struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, MCGW_XDP_MAX_QUEUES);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct mcgw_xdp_port_config);
} mcgw_port_cfg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, MCGW_XDP_MAX_VTEPS);
  __type(key, struct mcgw_xdp_addr);
  __type(value, struct mcgw_xdp_addr_info);
} mcgw_vteps SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, MCGW_XDP_MAX_LOCAL);
  __type(key, struct mcgw_xdp_addr);
  __type(value, struct mcgw_xdp_addr_info);
} mcgw_local SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, MCGW_XDP_VERDICT_COUNT);
  __type(key, __u32);
  __type(value, struct mcgw_xdp_counter);
} mcgw_counters SEC(".maps");

#define ETH_P_8021AD_ 0x88A8      /* not in every linux/if_ether.h */
#define IPV4_FRAGMENT_MASK 0x3FFF /* MF flag and fragment offset */
#define IPPROTO_ICMPV6_ 58
#define IPPROTO_FRAGMENT_ 44
#define IPPROTO_VRRP_ 112
#define IPPROTO_ESP_ 50
#define MCGW_NATT_PORT 4500 /* ESP in UDP, RFC 3948 */

static __always_inline void count(struct xdp_md* ctx, __u32 verdict) {
  struct mcgw_xdp_counter* c = bpf_map_lookup_elem(&mcgw_counters, &verdict);
  if (c) {
    /* Per CPU and XDP does not migrate mid-program: no atomics needed. */
    c->packets += 1;
    c->bytes += (__u64)(ctx->data_end - ctx->data);
  }
}

static __always_inline int pass(struct xdp_md* ctx, __u32 verdict) {
  count(ctx, verdict);
  return XDP_PASS;
}

/* To DPDK; without a socket on this queue (DPDK not started, or the queue is
 * not one of its queues) the packet goes to the kernel instead. */
static __always_inline int redirect(struct xdp_md* ctx, __u32 verdict) {
  count(ctx, verdict);
  long action = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
  if (action != XDP_REDIRECT) {
    count(ctx, MCGW_XDP_REDIRECT_NO_SOCKET);
  }
  return (int)action;
}

static __always_inline int drop(struct xdp_md* ctx, __u32 verdict) {
  count(ctx, verdict);
  return XDP_DROP;
}

/* BGP (TCP port 179 either way) or BFD (UDP 3784 single hop, 3785 echo, 4784
 * multihop). */
static __always_inline int is_routing_protocol(__u8 l4proto, void* l4, void* data_end) {
  if (l4proto == IPPROTO_TCP) {
    struct tcphdr* tcp = l4;
    if ((void*)(tcp + 1) > data_end) {
      return 0;
    }
    return tcp->dest == bpf_htons(179) || tcp->source == bpf_htons(179);
  }
  if (l4proto == IPPROTO_UDP) {
    struct udphdr* udp = l4;
    if ((void*)(udp + 1) > data_end) {
      return 0;
    }
    return udp->dest == bpf_htons(3784) || udp->dest == bpf_htons(3785) ||
           udp->dest == bpf_htons(4784);
  }
  return 0;
}

/* Whether DPDK holds an AF_XDP socket on any queue of this port.  The kernel
 * removes a socket from xsks_map when it is closed, also when mcgwd is killed
 * and leaves this program attached: then the gateway has no fast path, and
 * its BGP and BFD sessions must go down so that the remote sites and routers
 * stop sending it traffic (rather than being answered by the kernel as if
 * nothing happened).  The packet's own queue first; the scan runs only for
 * routing-protocol packets, a few per second. */
static __always_inline int fast_path_alive(struct xdp_md* ctx) {
  __u32 q = ctx->rx_queue_index;
  if (bpf_map_lookup_elem(&xsks_map, &q)) {
    return 1;
  }
  for (__u32 i = 0; i < MCGW_XDP_MAX_QUEUES; i++) {
    if (bpf_map_lookup_elem(&xsks_map, &i)) {
      return 1;
    }
  }
  return 0;
}

/* To the kernel as our own traffic, unless routing would outlive the fast path.
 * A frame to a VRRP virtual MAC (00-00-5E-00-01-xx / 00-00-5E-00-02-xx: an
 * Active group's virtual address in accept mode) gets the interface's MAC
 * as destination, or the kernel would take it for another host's. */
static __always_inline int local(struct xdp_md* ctx, struct ethhdr* eth,
                                 const struct mcgw_xdp_port_config* cfg, __u8 l4proto, void* l4,
                                 void* data_end) {
  if (is_routing_protocol(l4proto, l4, data_end) && !fast_path_alive(ctx)) {
    return drop(ctx, MCGW_XDP_DROP_NO_FAST_PATH);
  }
  const __u8* d = eth->h_dest;
  if (cfg && d[0] == 0 && d[1] == 0 && d[2] == 0x5E && d[3] == 0 && (d[4] == 1 || d[4] == 2) &&
      (cfg->mac[0] | cfg->mac[1] | cfg->mac[2] | cfg->mac[3] | cfg->mac[4] | cfg->mac[5])) {
    __builtin_memcpy(eth->h_dest, cfg->mac, 6);
  }
  return pass(ctx, MCGW_XDP_PASS_LOCAL);
}

static __always_inline int is_special_ipv4(const __u8* a) {
  if ((a[0] & 0xF0) == 0xE0) { /* 224.0.0.0/4 multicast */
    return 1;
  }
  if (a[0] == 169 && a[1] == 254) { /* 169.254.0.0/16 link-local */
    return 1;
  }
  return a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255; /* broadcast */
}

static __always_inline int is_special_ipv6(const __u8* a) {
  if (a[0] == 0xFF) { /* ff00::/8 multicast */
    return 1;
  }
  return a[0] == 0xFE && (a[1] & 0xC0) == 0x80; /* fe80::/10 link-local */
}

SEC("xdp")
int mcgw_xdp(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* data_end = (void*)(long)ctx->data_end;

  __u32 zero = 0;
  const struct mcgw_xdp_port_config* cfg = bpf_map_lookup_elem(&mcgw_port_cfg, &zero);
  __u32 role = cfg ? cfg->role : MCGW_XDP_ROLE_NONE;
  if (cfg && (cfg->flags & MCGW_XDP_FLAG_PASS_ALL)) {
    return pass(ctx, MCGW_XDP_PASS_ALL);
  }

  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) {
    return pass(ctx, MCGW_XDP_PASS_MALFORMED);
  }
  __u16 ethertype = eth->h_proto;
  if (ethertype == bpf_htons(ETH_P_8021Q) || ethertype == bpf_htons(ETH_P_8021AD_)) {
    return pass(ctx, MCGW_XDP_PASS_VLAN);
  }
  if (ethertype == bpf_htons(ETH_P_ARP)) {
    return pass(ctx, MCGW_XDP_PASS_ARP);
  }

  struct mcgw_xdp_addr dst = {};
  void* l4;     /* the header behind the IP header */
  __u8 l4proto; /* IPv4 protocol or IPv6 next header */
  int fragment; /* an IPv4 fragment, or IPv6 with a fragment header next */
  int special;  /* broadcast, multicast or link-local destination */
  if (ethertype == bpf_htons(ETH_P_IP)) {
    __u8* ip = (__u8*)(eth + 1);
    if ((void*)(ip + sizeof(struct iphdr)) > data_end) {
      return pass(ctx, MCGW_XDP_PASS_MALFORMED);
    }
    struct iphdr* ip4 = (struct iphdr*)ip;
    __u32 hlen = (__u32)(ip[0] & 0x0F) * 4; /* at most 60: the verifier sees the bound */
    __u32 total = bpf_ntohs(ip4->tot_len);
    if ((ip[0] >> 4) != 4 || hlen < sizeof(struct iphdr) || total < hlen ||
        (void*)(ip + hlen) > data_end || (void*)(ip + total) > data_end) {
      return pass(ctx, MCGW_XDP_PASS_MALFORMED);
    }
    dst.family = MCGW_XDP_FAMILY_IPV4;
    __builtin_memcpy(dst.addr, &ip4->daddr, 4);
    l4 = ip + hlen;
    l4proto = ip4->protocol;
    fragment = (ip4->frag_off & bpf_htons(IPV4_FRAGMENT_MASK)) != 0;
    special = is_special_ipv4(dst.addr);
  } else if (ethertype == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = (struct ipv6hdr*)(eth + 1);
    if ((void*)(ip6 + 1) > data_end) {
      return pass(ctx, MCGW_XDP_PASS_MALFORMED);
    }
    __u32 payload = bpf_ntohs(ip6->payload_len); /* 0: jumbogram, not checked */
    if ((*(__u8*)ip6 >> 4) != 6 || (void*)((__u8*)(ip6 + 1) + payload) > data_end) {
      return pass(ctx, MCGW_XDP_PASS_MALFORMED);
    }
    dst.family = MCGW_XDP_FAMILY_IPV6;
    __builtin_memcpy(dst.addr, &ip6->daddr, 16);
    l4 = ip6 + 1;
    l4proto = ip6->nexthdr;
    fragment = l4proto == IPPROTO_FRAGMENT_;
    special = is_special_ipv6(dst.addr);
  } else {
    return pass(ctx, MCGW_XDP_PASS_NOT_IP);
  }

  /* Before the address checks: unicast VRRP goes to our LAN address, and
   * mcgwd's packet socket on this interface (not DPDK) reads VRRP. */
  if (role == MCGW_XDP_ROLE_LAN && l4proto == IPPROTO_VRRP_) {
    return pass(ctx, MCGW_XDP_PASS_VRRP);
  }
  if (bpf_map_lookup_elem(&mcgw_vteps, &dst)) {
    /* Never split a datagram between DPDK and the kernel: the UDP header is
     * in the first fragment only, so every fragment goes to the kernel. */
    if (fragment) {
      return pass(ctx, MCGW_XDP_PASS_VTEP_FRAGMENT);
    }
    /* Encrypted lines (docs/encryption.md): the fast path opens ESP. */
    if (l4proto == IPPROTO_ESP_) {
      return redirect(ctx, MCGW_XDP_REDIRECT_OVERLAY);
    }
    if (l4proto == IPPROTO_UDP) {
      struct udphdr* udp = l4;
      if ((void*)(udp + 1) > data_end) {
        return pass(ctx, MCGW_XDP_PASS_MALFORMED);
      }
      if (udp->dest == bpf_htons(MCGW_XDP_VXLAN_PORT) ||
          udp->dest == bpf_htons(MCGW_XDP_GENEVE_PORT) || udp->dest == bpf_htons(MCGW_NATT_PORT)) {
        return redirect(ctx, MCGW_XDP_REDIRECT_OVERLAY);
      }
    }
    /* Anything else to a VTEP address (BGP, BFD, ping on a WAN address). */
    return local(ctx, eth, cfg, l4proto, l4, data_end);
  }
  if (bpf_map_lookup_elem(&mcgw_local, &dst)) {
    return local(ctx, eth, cfg, l4proto, l4, data_end);
  }
  if (dst.family == MCGW_XDP_FAMILY_IPV6 && l4proto == IPPROTO_ICMPV6_) {
    __u8* icmp6 = l4;
    if ((void*)(icmp6 + 1) > data_end) {
      return pass(ctx, MCGW_XDP_PASS_MALFORMED);
    }
    if (icmp6[0] >= 133 && icmp6[0] <= 137) { /* RS, RA, NS, NA, redirect */
      return pass(ctx, MCGW_XDP_PASS_ND);
    }
  }
  if (special || (eth->h_dest[0] & 0x01)) {
    return pass(ctx, MCGW_XDP_PASS_LINK_LOCAL_OR_MULTICAST);
  }
  if (role == MCGW_XDP_ROLE_LAN) {
    return redirect(ctx, MCGW_XDP_REDIRECT_TRANSIT);
  }
  if (role == MCGW_XDP_ROLE_WAN) {
    return pass(ctx, MCGW_XDP_PASS_NOT_OURS_WAN);
  }
  return pass(ctx, MCGW_XDP_PASS_UNCONFIGURED);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
