/* The one list of reasons the fast path drops a packet.  It generates the
 * C++ enum and its names (drop_reason.hpp), the counter names in status and
 * the JSON/CLI strings.  Plain C, so that a BPF program could share it (the
 * XDP program never drops: its verdicts are their own list).
 *
 * X(ENUM_NAME, "cli-name", "what happened") */
#ifndef MCGW_DATAPLANE_ENGINE_DROP_REASON_H
#define MCGW_DATAPLANE_ENGINE_DROP_REASON_H

#define MCGW_DROP_REASONS(X)                                                                     \
  X(MALFORMED, "malformed", "a header could not be parsed")                                      \
  X(BAD_CHECKSUM, "bad-checksum", "tunnel packet whose outer IPv4 header checksum is wrong")     \
  X(OUTER_FRAGMENT, "outer-fragment", "a fragmented tunnel packet (RFC 7348 4.3)")               \
  X(UNKNOWN_VTEP, "unknown-vtep", "tunnel packet from an address that is no peer VTEP")          \
  X(UNKNOWN_VNI, "unknown-vni", "tunnel packet with a VNI the peer does not carry")              \
  X(CRITICAL_OPTION, "critical-option", "Geneve option marked critical not understood")          \
  X(OAM, "oam", "Geneve control packet (O bit): never forwarded to a tenant")                    \
  X(ECN, "ecn", "CE outside a Not-ECT packet (RFC 6040)")                                        \
  X(NO_ROUTE, "no-route", "no route in the tenant's table")                                      \
  X(NO_TUNNEL, "no-tunnel", "route to a peer without a usable line")                             \
  X(TTL_EXPIRED, "ttl-expired", "TTL or hop limit reached zero")                                 \
  X(TOO_BIG, "too-big", "larger than the path MTU and not fragmentable (DF or IPv6: ICMP sent)") \
  X(NO_BUFFER, "no-buffer", "no packet buffer or headroom")                                      \
  X(TX_FULL, "tx-full", "the transmit queue was full")                                           \
  X(NOT_IP, "not-ip", "not an untagged IPv4/IPv6 frame (ARP, LLDP, VLAN): not forwarded")        \
  X(OTHER_HOST, "other-host", "destination MAC is neither the port's nor an active virtual MAC") \
  X(LOCAL, "local", "addressed to the gateway itself (or multicast, link-local): not forwarded") \
  X(NOT_OVERLAY, "not-overlay", "non-overlay packet on a WAN port: not forwarded")               \
  X(NO_NEIGHBOR, "no-neighbor", "the next hop's MAC address is unknown")                         \
  X(NO_TENANT, "no-tenant", "arrived on a LAN port that carries no tenant")                      \
  X(SEGMENTED, "segmented", "a frame in several buffers (larger than one mbuf)")                 \
  X(ESP_UNKNOWN_SPI, "esp-unknown-spi", "ESP packet whose SPI is no inbound SA of its line")     \
  X(ESP_AUTH, "esp-auth", "ESP packet whose ICV did not verify (forged, corrupted, wrong key)")  \
  X(ESP_REPLAY, "esp-replay", "ESP packet already received or older than the replay window")     \
  X(ESP_MALFORMED, "esp-malformed", "ESP packet too short, misaligned or with bad padding")      \
  X(CLEAR_TEXT, "clear-text", "tunnel packet in clear text on an encrypted line")                \
  X(ESP_ERROR, "esp-error", "the crypto engine failed to seal a packet (never expected)")        \
  X(ESP_SEQ_LIMIT, "esp-seq-limit",                                                              \
    "outbound SA past the sequence numbers reserved on disk (static keys)")                      \
  X(POLICY_DENY, "policy-deny", "a tenant policy rule (or the tenant's default) denied it")      \
  X(TENANT_ISOLATION, "tenant-isolation",                                                        \
    "no route, and the destination belongs to another tenant only")                              \
  X(RATE_LIMIT, "rate-limit", "red: above the tenant's peak rate into the line")                 \
  X(LINE_FULL, "line-full", "the queue of the tenant's priority on a shaped line was full")

#endif
