#!/usr/bin/env python3
"""Write the two input pcaps of scripts/compare.sh.

encap: 64-byte LAN frames (Ethernet + IPv4 + UDP, no FCS) from a host on the
       LAN to 4,096 flows (random destination in --encap-prefix, random UDP
       source port), addressed to the gateway port's MAC.
decap: the same kind of 64-byte frames towards --decap-prefix, carried in
       VXLAN (UDP 4789, VNI --vni) from --remote-vtep to --local-vtep,
       addressed to the gateway port's MAC: 114-byte frames.

The same files feed dpdk-testpmd, OVS-DPDK and mcgwd: OVS's underlay bridge
and mcgwd's net_pcap port are given the MAC --gw-mac, and both hold
--local-vtep.  Run with Debian's python3 (python3-scapy).
"""
import argparse
import ipaddress
import random

from scapy.all import IP, UDP, VXLAN, Ether, Raw, wrpcap  # noqa: E402

FRAME = 64  # bytes of inner Ethernet frame, without FCS


def frame(args, rng, prefix):
    net = ipaddress.ip_network(prefix)
    # A host address of the prefix (never the network or broadcast address).
    dst = str(net.network_address + rng.randrange(1, net.num_addresses - 1))
    sport = rng.randrange(1024, 65536)
    pkt = (Ether(src=args.host_mac, dst=args.gw_mac) /
           IP(src=args.host_ip, dst=dst, ttl=64) /
           UDP(sport=sport, dport=5001))
    pad = FRAME - len(pkt)
    return Ether(bytes(pkt / Raw(b"\x00" * pad)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encap", required=True, help="output: LAN frames")
    ap.add_argument("--decap", required=True, help="output: VXLAN frames")
    ap.add_argument("--flows", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gw-mac", default="02:70:63:61:70:00",
                    help="MAC of the receiving port (net_pcap's first port)")
    ap.add_argument("--host-mac", default="02:00:00:00:01:0a")
    ap.add_argument("--host-ip", default="10.1.0.10")
    ap.add_argument("--encap-prefix", default="10.2.0.0/16")
    ap.add_argument("--decap-prefix", default="10.99.0.0/16")
    ap.add_argument("--remote-mac", default="02:00:00:00:0b:02")
    ap.add_argument("--local-vtep", default="172.16.0.1")
    ap.add_argument("--remote-vtep", default="172.16.0.2")
    ap.add_argument("--vni", type=int, default=1001)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    encap = [frame(args, rng, args.encap_prefix) for _ in range(args.flows)]
    decap = []
    for _ in range(args.flows):
        inner = frame(args, rng, args.decap_prefix)
        inner[Ether].src = "02:00:00:00:0b:0a"
        inner[IP].src = "10.2.0.10"
        inner = Ether(bytes(inner))
        decap.append(Ether(src=args.remote_mac, dst=args.gw_mac) /
                     IP(src=args.remote_vtep, dst=args.local_vtep, ttl=64,
                        flags="DF") /
                     UDP(sport=rng.randrange(49152, 65536), dport=4789,
                         chksum=0) /
                     VXLAN(flags=0x08, vni=args.vni) / inner)
    assert all(len(p) == FRAME for p in encap)
    assert all(len(p) == FRAME + 50 for p in decap)
    wrpcap(args.encap, encap)
    wrpcap(args.decap, decap)


if __name__ == "__main__":
    main()
