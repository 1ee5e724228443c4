#!/usr/bin/python3
"""Expected bytes for tests/unit/dataplane/prefix_map_test.cpp, built by
scapy (python3-scapy) with every checksum computed from scratch: each case is
the packet before and after translation, written as hex for the byte
tables.  Run it to print the tables again:
    python3 tests/unit/dataplane/prefix_map_vectors.py
"""
from scapy.all import IP, IPv6, TCP, UDP, ICMP, ICMPv6EchoRequest, ICMPv6PacketTooBig, \
    IPv6ExtHdrFragment, Raw, fragment, raw

REAL4, MAPPED4 = "10.1.", "100.65."           # 10.1.0.0/16 <-> 100.65.0.0/16
REAL6, MAPPED6 = "fd12:3456:789a:1", "fd99:8888:7777:6"  # .../52 (a partial nibble)


def hx(b):
    return " ".join(f"{x:02x}" for x in b)


def case(name, before, after):
    print(f'    {{"{name}",\n     "{hx(before)}",\n     "{hx(after)}"}},')


def tcp4(src, dst):
    return raw(IP(src=src, dst=dst, id=0x1234, flags="DF", ttl=63) /
               TCP(sport=40000, dport=443, seq=1000, ack=2000, flags="PA", window=501) /
               Raw(b"hello mapped world"))


def udp4(src, dst, chksum=None):
    return raw(IP(src=src, dst=dst, id=7, ttl=64) /
               UDP(sport=5353, dport=53, chksum=chksum) / Raw(b"\x12\x34query!"))


def echo4(src, dst):
    return raw(IP(src=src, dst=dst, id=9, ttl=64) / ICMP(type=8, id=0x77, seq=3) / Raw(b"ping" * 4))


def fragneeded4(src, dst, quoted, n):
    return raw(IP(src=src, dst=dst, id=1, ttl=64) / ICMP(type=3, code=4, nexthopmtu=1400) /
               Raw(quoted[:n]))


def tcp6(src, dst):
    return raw(IPv6(src=src, dst=dst, hlim=63, fl=0x12345) /
               TCP(sport=40000, dport=443, seq=1, ack=2, flags="A", window=600) / Raw(b"v6 data!"))


def udp6(src, dst):
    return raw(IPv6(src=src, dst=dst, hlim=64) / UDP(sport=1000, dport=2000) / Raw(b"abcdefg"))


def echo6(src, dst):
    return raw(IPv6(src=src, dst=dst, hlim=64) / ICMPv6EchoRequest(id=5, seq=6, data=b"ping6"))


def ptb6(src, dst, quoted):
    return raw(IPv6(src=src, dst=dst, hlim=64) / ICMPv6PacketTooBig(mtu=1280) / Raw(quoted))


def frag6(src, dst):
    # A later fragment (offset 8 units) of a UDP datagram: no UDP header.
    return raw(IPv6(src=src, dst=dst, hlim=64) /
               IPv6ExtHdrFragment(nh=17, offset=8, m=0, id=0xabcd) / Raw(b"fragment tail data"))


print("  // Egress (source, real -> mapped)")
case("Tcp4", tcp4(REAL4 + "2.3", "10.2.0.5"), tcp4(MAPPED4 + "2.3", "10.2.0.5"))
case("Udp4", udp4(REAL4 + "2.3", "10.2.0.5"), udp4(MAPPED4 + "2.3", "10.2.0.5"))
case("Udp4ZeroChecksum", udp4(REAL4 + "2.3", "10.2.0.5", 0), udp4(MAPPED4 + "2.3", "10.2.0.5", 0))
case("Echo4", echo4(REAL4 + "200.1", "10.2.0.5"), echo4(MAPPED4 + "200.1", "10.2.0.5"))
# frag-needed from a host of the real range about a packet sent to it.
case("FragNeededQuotingTcp",
     fragneeded4(REAL4 + "0.1", "10.2.0.5", tcp4("10.2.0.5", REAL4 + "2.3"), 48),
     fragneeded4(MAPPED4 + "0.1", "10.2.0.5", tcp4("10.2.0.5", MAPPED4 + "2.3"), 48))
# 8 bytes of TCP quoted: its checksum is not in the quote.
case("FragNeededQuotingTcpHead",
     fragneeded4(REAL4 + "0.1", "10.2.0.5", tcp4("10.2.0.5", REAL4 + "2.3"), 28),
     fragneeded4(MAPPED4 + "0.1", "10.2.0.5", tcp4("10.2.0.5", MAPPED4 + "2.3"), 28))
case("FragNeededQuotingUdp",
     fragneeded4(REAL4 + "0.1", "10.2.0.5", udp4("10.2.0.5", REAL4 + "2.3"), 36),
     fragneeded4(MAPPED4 + "0.1", "10.2.0.5", udp4("10.2.0.5", MAPPED4 + "2.3"), 36))
# From an address outside the range (the gateway's own) quoting a mapped flow.
case("FragNeededFromOutsideQuotingUdp",
     fragneeded4("192.168.9.1", "10.2.0.5", udp4("10.2.0.5", REAL4 + "2.3"), 36),
     fragneeded4("192.168.9.1", "10.2.0.5", udp4("10.2.0.5", MAPPED4 + "2.3"), 36))
big = lambda s: IP(src=s, dst="10.2.0.5", id=0x4242, ttl=64) / UDP(sport=7, dport=9) / Raw(bytes(range(48)))
f_real = fragment(big(REAL4 + "2.3"), fragsize=24)
f_mapped = fragment(big(MAPPED4 + "2.3"), fragsize=24)
case("FirstFragment4", raw(f_real[0]), raw(f_mapped[0]))
case("LaterFragment4", raw(f_real[1]), raw(f_mapped[1]))
case("Tcp6", tcp6(REAL6 + "abc::7", "fd00::5"), tcp6(MAPPED6 + "abc::7", "fd00::5"))
case("Udp6", udp6(REAL6 + "abc::7", "fd00::5"), udp6(MAPPED6 + "abc::7", "fd00::5"))
case("Echo6", echo6(REAL6 + "abc::7", "fd00::5"), echo6(MAPPED6 + "abc::7", "fd00::5"))
case("LaterFragment6", frag6(REAL6 + "abc::7", "fd00::5"), frag6(MAPPED6 + "abc::7", "fd00::5"))
print("  // Ingress (destination, mapped -> real)")
case("Tcp4In", tcp4("10.2.0.5", MAPPED4 + "2.3"), tcp4("10.2.0.5", REAL4 + "2.3"))
case("FragNeededInQuotingUdp",
     fragneeded4("10.9.0.1", MAPPED4 + "2.3", udp4(MAPPED4 + "2.3", "10.2.0.5"), 36),
     fragneeded4("10.9.0.1", REAL4 + "2.3", udp4(REAL4 + "2.3", "10.2.0.5"), 36))
case("PacketTooBigInQuotingTcp",
     ptb6("fd00::1", MAPPED6 + "abc::7", tcp6(MAPPED6 + "abc::7", "fd00::5")),
     ptb6("fd00::1", REAL6 + "abc::7", tcp6(REAL6 + "abc::7", "fd00::5")))
case("PacketTooBigInQuotingEcho",
     ptb6("fd00::1", MAPPED6 + "abc::7", echo6(MAPPED6 + "abc::7", "fd00::5")),
     ptb6("fd00::1", REAL6 + "abc::7", echo6(REAL6 + "abc::7", "fd00::5")))
