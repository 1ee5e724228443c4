// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* mcgw's tc egress guard for af_xdp interfaces (README.md, "The egress
 * guard"): the BFD that the gateway's kernel sends leaves only while mcgwd
 * lives and the site's LAN is reachable.  On an af_xdp port the kernel
 * transmits straight to the interface, so FRR would go on sending BFD Up
 * for a gateway whose mcgwd was killed (the XDP program only stops what
 * comes in); the remote would see the gateway's lines alive for another
 * detection time or two.
 *
 * mcgwd_alive holds sockets of mcgwd's (unnamed Unix datagram sockets that
 * it never uses otherwise).  The kernel removes a socket from a SOCKMAP when
 * it is closed, also when the process is killed.  Key 0 is mcgwd's life,
 * key 1 the site's LAN: mcgwd takes key 1 out while a LAN port with a VRRP
 * group has no link (the gateway cannot deliver to its site).  Without
 * either, BFD is dropped at the interface's tc egress, so the remote sites
 * take this gateway's lines out of use.  Everything else passes, BGP
 * included: its sessions end by their hold timers, as before (the XDP
 * program drops BGP coming in while mcgwd is gone), and survive a quick
 * restart of mcgwd.
 *
 * Parsing is bounded: one Ethernet header and at most one VLAN tag, the IPv4
 * header with its options or the fixed IPv6 header, the UDP ports;
 * non-first IPv4 fragments and IPv6 extension headers pass. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
  __uint(type, BPF_MAP_TYPE_SOCKMAP);
  __uint(max_entries, 2);
  __type(key, __u32);
  __type(value, __u64);
} mcgwd_alive SEC(".maps");

static __always_inline int holds(__u32 key) {
  struct bpf_sock* sk = bpf_map_lookup_elem(&mcgwd_alive, &key);
  if (!sk) {
    return 0;
  }
  bpf_sk_release(sk);
  return 1;
}

/* BFD: UDP to 3784 (single hop), 3785 (echo) or 4784 (multihop). */
static __always_inline int is_bfd(__u8 l4proto, void* l4, void* data_end) {
  if (l4proto != IPPROTO_UDP) {
    return 0;
  }
  struct udphdr* udp = l4;
  if ((void*)(udp + 1) > data_end) {
    return 0;
  }
  return udp->dest == bpf_htons(3784) || udp->dest == bpf_htons(3785) ||
         udp->dest == bpf_htons(4784);
}

SEC("tc")
int mcgw_tc_egress(struct __sk_buff* skb) {
  void* data = (void*)(long)skb->data;
  void* data_end = (void*)(long)skb->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) {
    return TC_ACT_OK;
  }
  /* One VLAN tag (a VLAN device on the interface, without TX offload). */
  __be16 proto = eth->h_proto;
  void* l3 = eth + 1;
  if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
    struct vlan_tag {
      __be16 tci;
      __be16 proto;
    }* tag = l3;
    if ((void*)(tag + 1) > data_end) {
      return TC_ACT_OK;
    }
    proto = tag->proto;
    l3 = tag + 1;
  }
  __u8 l4proto;
  void* l4;
  if (proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = l3;
    if ((void*)(ip + 1) > data_end) {
      return TC_ACT_OK;
    }
    __u32 hlen = (__u32)ip->ihl * 4;
    if (hlen < sizeof(*ip) || (ip->frag_off & bpf_htons(0x1FFF))) {
      return TC_ACT_OK;
    }
    l4proto = ip->protocol;
    l4 = (void*)ip + hlen;
  } else if (proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = l3;
    if ((void*)(ip6 + 1) > data_end) {
      return TC_ACT_OK;
    }
    l4proto = ip6->nexthdr;
    l4 = ip6 + 1;
  } else {
    return TC_ACT_OK;
  }
  if (is_bfd(l4proto, l4, data_end) && !(holds(0) && holds(1))) {
    return TC_ACT_SHOT;
  }
  return TC_ACT_OK;
}

/* The MAC of the interface (index 0, 6 bytes), for mcgw_tc_vmac_host. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} port_mac SEC(".maps");

/* At tc ingress of an af_xdp LAN interface: a frame the XDP program passed
 * to the kernel after rewriting its destination from a VRRP virtual MAC to
 * the interface's (accept mode) may still be marked for another host: the
 * veth driver classifies the frame before XDP runs and keeps that after
 * it, where a NIC driver builds the packet after XDP.  Such a frame, now to
 * our MAC, is ours. */
SEC("tc")
int mcgw_tc_vmac_host(struct __sk_buff* skb) {
  if (skb->pkt_type != PACKET_OTHERHOST) {
    return TC_ACT_OK;
  }
  void* data = (void*)(long)skb->data;
  void* data_end = (void*)(long)skb->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) {
    return TC_ACT_OK;
  }
  __u32 zero = 0;
  const __u8* mac = bpf_map_lookup_elem(&port_mac, &zero);
  if (!mac) {
    return TC_ACT_OK;
  }
  for (int i = 0; i < 6; i++) {
    if (eth->h_dest[i] != mac[i]) {
      return TC_ACT_OK;
    }
  }
  bpf_skb_change_type(skb, PACKET_HOST);
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
