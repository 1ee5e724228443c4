/* The maps of mcgw's XDP program (mcgw_xdp.bpf.c), defined once for both
 * sides: the BPF program (clang -target bpf) and the C++ that fills and reads
 * them (xdp_maps.hpp, tests).  Plain C with fixed-width types; no kernel
 * header on the C/C++ path.
 *
 * Every map is per port: the DPDK af_xdp PMD loads its own copy of the
 * program (and so of every map) for each port it opens, and mcgwd finds the
 * maps through the program attached to the port's interface (README.md). */
#ifndef MCGW_EBPF_MCGW_XDP_MAPS_H
#define MCGW_EBPF_MCGW_XDP_MAPS_H

#if defined(__bpf__)
#include <linux/types.h>
typedef __u8 mcgw_u8;
typedef __u16 mcgw_u16;
typedef __u32 mcgw_u32;
typedef __u64 mcgw_u64;
#else
#include <stdint.h>
typedef uint8_t mcgw_u8;
typedef uint16_t mcgw_u16;
typedef uint32_t mcgw_u32;
typedef uint64_t mcgw_u64;
#endif

/* Map names as the kernel reports them (at most 15 characters: the program's
 * map variables carry exactly these names).  xsks_map is the name the DPDK
 * af_xdp PMD looks up in a custom program. */
#define MCGW_XDP_MAP_XSKS "xsks_map"
#define MCGW_XDP_MAP_PORT_CONFIG "mcgw_port_cfg"
#define MCGW_XDP_MAP_VTEPS "mcgw_vteps"
#define MCGW_XDP_MAP_LOCAL "mcgw_local"
#define MCGW_XDP_MAP_COUNTERS "mcgw_counters"

#define MCGW_XDP_MAX_QUEUES 256 /* xsks_map: rx queue index -> AF_XDP socket */
#define MCGW_XDP_MAX_VTEPS 64
#define MCGW_XDP_MAX_LOCAL 256

/* Overlay UDP destination ports (the fast path decapsulates both). */
#define MCGW_XDP_VXLAN_PORT 4789
#define MCGW_XDP_GENEVE_PORT 6081

/* mcgw_port_cfg: an array of one entry (key 0).  Until mcgwd sets the role
 * the port behaves as a WAN port (counted as pass-unconfigured). */
#define MCGW_XDP_ROLE_NONE 0 /* not set yet */
#define MCGW_XDP_ROLE_LAN 1  /* VPC/IDC side: transit traffic goes to DPDK */
#define MCGW_XDP_ROLE_WAN 2  /* underlay: only overlay packets to our VTEPs go to DPDK */

/* Port flags. */
#define MCGW_XDP_FLAG_PASS_ALL 0x1u /* every packet to the kernel (maintenance, debugging) */

struct mcgw_xdp_port_config {
  mcgw_u32 role;  /* MCGW_XDP_ROLE_* */
  mcgw_u32 flags; /* MCGW_XDP_FLAG_* */
  /* The interface's MAC (zero: not set): a frame to a VRRP virtual MAC for
   * one of our addresses (accept mode) reaches the kernel with it, since the
   * kernel takes only its own MAC as addressed to it. */
  mcgw_u8 mac[6];
  mcgw_u8 pad[2];
};

/* Key of mcgw_vteps and mcgw_local: an IPv4 address in addr[0..3] (network
 * order, the rest zero) or an IPv6 address.  No implicit padding: the pad
 * bytes are zero, as every byte of a hash key counts. */
#define MCGW_XDP_FAMILY_IPV4 4
#define MCGW_XDP_FAMILY_IPV6 6

struct mcgw_xdp_addr {
  mcgw_u8 family; /* MCGW_XDP_FAMILY_* */
  mcgw_u8 pad[3];
  mcgw_u8 addr[16];
};

/* Value of mcgw_vteps and mcgw_local: reserved, written as zero. */
struct mcgw_xdp_addr_info {
  mcgw_u32 flags;
};

/* Why the program passed a packet to the kernel or redirected it to DPDK.
 * Every packet is counted under exactly one of these, in the decision order
 * of README.md, except REDIRECT_NO_SOCKET, counted in addition to a
 * REDIRECT_* verdict when no AF_XDP socket was bound to the packet's queue
 * (so the kernel got it after all).
 *
 * X(ENUM_NAME, "cli-name", "what it means") */
#define MCGW_XDP_VERDICTS(X)                                                                      \
  X(PASS_ALL, "pass-all", "the port's pass-all flag is set")                                      \
  X(PASS_MALFORMED, "pass-malformed", "truncated or invalid Ethernet, IP or UDP header")          \
  X(PASS_VLAN, "pass-vlan", "VLAN-tagged frame (the fast path forwards untagged frames only)")    \
  X(PASS_ARP, "pass-arp", "ARP")                                                                  \
  X(PASS_NOT_IP, "pass-not-ip", "neither IPv4, IPv6 nor ARP (LLDP, ...)")                         \
  X(PASS_VRRP, "pass-vrrp",                                                                       \
    "LAN port: VRRP (IP protocol 112): mcgwd reads it on the port's kernel side")                 \
  X(PASS_VTEP_FRAGMENT, "pass-vtep-fragment",                                                     \
    "IP fragment to one of our VTEPs (overlay packets are never fragmented)")                     \
  X(REDIRECT_OVERLAY, "redirect-overlay", "VXLAN or Geneve to one of our VTEPs")                  \
  X(PASS_LOCAL, "pass-local", "to an address of the gateway (BGP, BFD, SSH, ping, ...)")          \
  X(PASS_ND, "pass-nd", "IPv6 neighbour discovery (ICMPv6 133-137)")                              \
  X(PASS_LINK_LOCAL_OR_MULTICAST, "pass-link-local-or-multicast",                                 \
    "to a broadcast, multicast or link-local address, or a group MAC address")                    \
  X(REDIRECT_TRANSIT, "redirect-transit", "LAN port: transit traffic for the fast path to route") \
  X(PASS_NOT_OURS_WAN, "pass-not-ours-wan", "WAN port: not overlay to our VTEPs, not ours")       \
  X(PASS_UNCONFIGURED, "pass-unconfigured", "the port's role is not set yet")                     \
  X(REDIRECT_NO_SOCKET, "redirect-no-socket",                                                     \
    "besides a redirect verdict: no AF_XDP socket on the queue, the kernel got it")               \
  X(DROP_NO_FAST_PATH, "drop-no-fast-path",                                                       \
    "BGP or BFD to the gateway while no AF_XDP socket is open (mcgwd is not running)")

enum mcgw_xdp_verdict {
#define MCGW_XDP_X(name, cli, text) MCGW_XDP_##name,
  MCGW_XDP_VERDICTS(MCGW_XDP_X)
#undef MCGW_XDP_X
      MCGW_XDP_VERDICT_COUNT
};

/* mcgw_counters: a per-CPU array indexed by enum mcgw_xdp_verdict. */
struct mcgw_xdp_counter {
  mcgw_u64 packets;
  mcgw_u64 bytes;
};

#if !defined(__bpf__)
static const char* const mcgw_xdp_verdict_names[MCGW_XDP_VERDICT_COUNT] = {
#define MCGW_XDP_X(name, cli, text) cli,
    MCGW_XDP_VERDICTS(MCGW_XDP_X)
#undef MCGW_XDP_X
};
static const char* const mcgw_xdp_verdict_descriptions[MCGW_XDP_VERDICT_COUNT] = {
#define MCGW_XDP_X(name, cli, text) text,
    MCGW_XDP_VERDICTS(MCGW_XDP_X)
#undef MCGW_XDP_X
};
#endif

#endif
