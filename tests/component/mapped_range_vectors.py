#!/usr/bin/python3
"""Expected inner packets for tests/component/mapped_range_test.cpp, built by
scapy (python3-scapy) with every checksum computed from scratch: the IP
packet as the test sends it (TTL / hop limit 64) and as the gateway must
forward it (63, addresses translated).  Prints the byte table:
    /usr/bin/python3 tests/component/mapped_range_vectors.py
"""
from scapy.all import IP, IPv6, TCP, UDP, ICMP, Raw, raw


def hx(b):
    return " ".join(f"{x:02x}" for x in b)


def case(name, before, after):
    print(f'    {{"{name}",\n     "{hx(before)}",\n     "{hx(after)}"}},')


def udp4(src, dst, ttl):
    return raw(IP(src=src, dst=dst, id=7, ttl=ttl) / UDP(sport=5353, dport=53) / Raw(b"mapped udp"))


def tcp4(src, dst, ttl):
    return raw(IP(src=src, dst=dst, id=0x1234, flags="DF", ttl=ttl) /
               TCP(sport=443, dport=40000, seq=1000, ack=2000, flags="PA", window=501) /
               Raw(b"reply from b"))


def tcp6(src, dst, hlim):
    return raw(IPv6(src=src, dst=dst, hlim=hlim) /
               TCP(sport=40000, dport=22, seq=1, ack=2, flags="A", window=600) / Raw(b"v6"))


def fragneeded(src, dst, ttl, quoted):
    return raw(IP(src=src, dst=dst, id=1, ttl=ttl) / ICMP(type=3, code=4, nexthopmtu=1400) /
               Raw(quoted[:28]))


print("// Egress: from lan0 into the tunnel to site-b.")
case("Udp4Mapped", udp4("10.1.2.3", "10.2.0.5", 64), udp4("100.65.2.3", "10.2.0.5", 63))
case("Tcp6Mapped", tcp6("fd12:3456:789a:1abc::7", "fd00:2::5", 64),
     tcp6("fd99:8888:7777:6abc::7", "fd00:2::5", 63))
case("OtherSiteNotMapped", udp4("10.4.0.7", "10.2.0.5", 64), udp4("10.4.0.7", "10.2.0.5", 63))
print("// Ingress: out of the tunnel from site-b to lan0.")
case("Tcp4Unmapped", tcp4("10.2.0.5", "100.65.2.3", 64), tcp4("10.2.0.5", "10.1.2.3", 63))
case("Tcp6Unmapped", tcp6("fd00:2::5", "fd99:8888:7777:6abc::7", 64),
     tcp6("fd00:2::5", "fd12:3456:789a:1abc::7", 63))
case("FragNeededUnmapped",
     fragneeded("10.2.0.1", "100.65.2.3", 64, udp4("100.65.2.3", "10.2.0.5", 63)),
     fragneeded("10.2.0.1", "10.1.2.3", 63, udp4("10.1.2.3", "10.2.0.5", 63)))
