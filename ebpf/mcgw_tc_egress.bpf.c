// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* mcgw's tc egress guard for af_xdp interfaces (README.md, "Egress guard"):
 * the BGP and BFD that the gateway's kernel sends leave only while mcgwd
 * lives.  On an af_xdp port the kernel transmits straight to the interface,
 * so FRR would go on sending BFD Up for a gateway whose mcgwd was killed
 * (the XDP program only stops what comes in); the remote would then see the
 * gateway's lines alive for another detection time or two.
 *
 * mcgwd_alive holds one socket of mcgwd's (an unnamed Unix datagram socket
 * that it never uses otherwise).  The kernel removes a socket from a
 * SOCKMAP when it is closed, also when the process is killed; from then on
 * this program drops the routing protocols at the interface's tc egress.
 * Everything else passes, and so does everything while the socket lives.
 *
 * Parsing is bounded: one Ethernet header (a VLAN tag passes), the IPv4
 * header with its options or the fixed IPv6 header, the TCP or UDP ports;
 * non-first IPv4 fragments and IPv6 extension headers pass. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
  __uint(type, BPF_MAP_TYPE_SOCKMAP);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} mcgwd_alive SEC(".maps");

/* BGP (TCP port 179 either way) or BFD (UDP to 3784 single hop, 3785 echo,
 * 4784 multihop): the same set the XDP program drops on the way in. */
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

SEC("tc")
int mcgw_tc_egress(struct __sk_buff* skb) {
  void* data = (void*)(long)skb->data;
  void* data_end = (void*)(long)skb->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) {
    return TC_ACT_OK;
  }
  __u8 l4proto;
  void* l4;
  if (eth->h_proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > data_end) {
      return TC_ACT_OK;
    }
    __u32 hlen = (__u32)ip->ihl * 4;
    if (hlen < sizeof(*ip) || (ip->frag_off & bpf_htons(0x1FFF))) {
      return TC_ACT_OK;
    }
    l4proto = ip->protocol;
    l4 = (void*)ip + hlen;
  } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = (void*)(eth + 1);
    if ((void*)(ip6 + 1) > data_end) {
      return TC_ACT_OK;
    }
    l4proto = ip6->nexthdr;
    l4 = ip6 + 1;
  } else {
    return TC_ACT_OK;
  }
  if (!is_routing_protocol(l4proto, l4, data_end)) {
    return TC_ACT_OK;
  }
  __u32 zero = 0;
  struct bpf_sock* sk = bpf_map_lookup_elem(&mcgwd_alive, &zero);
  if (sk) {
    bpf_sk_release(sk);
    return TC_ACT_OK;
  }
  return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
