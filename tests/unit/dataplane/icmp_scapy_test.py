#!/usr/bin/python3
"""The ICMP error codec and IPv4 fragmentation checked independently by scapy.

Packets are built with scapy, handed to tests/tools/icmp_tool (which runs
dataplane/proto/icmp_error.hpp on them), and what comes back is dissected and
checked with scapy: IP and ICMP/ICMPv6 checksums (deleted and rebuilt by
scapy, then compared), the ICMP error's fields, the quoted packet (dissected,
and byte for byte the original as its sender sent it, TTL restored), and
fragments: their checksums, sizes, offsets and flags, and scapy's
reassembly (defragment) giving back the original.

Run by ctest (unit.icmp_scapy):
    /usr/bin/python3 icmp_scapy_test.py --tool build/tests/tools/icmp_tool [-v]

Needs scapy (python3-scapy).
"""

import argparse
import logging
import os
import random
import socket
import subprocess
import sys
import unittest

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.all import (  # noqa: E402
    ICMP,
    IP,
    TCP,
    UDP,
    ICMPv6DestUnreach,
    ICMPv6EchoRequest,
    ICMPv6PacketTooBig,
    ICMPv6TimeExceeded,
    IPerror,
    IPerror6,
    IPOption_LSRR,
    IPOption_NOP,
    IPOption_RR,
    IPOption_Security,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrHopByHop,
    Raw,
    TCPerror,
    UDPerror,
    defragment,
    fragment,
)

TOOL = None
SOURCE4 = "192.0.2.1"
SOURCE6 = "2001:db8:ff::9"


def run_tool(lines):
    """One answer per request line."""
    r = subprocess.run([TOOL], input="".join(line + "\n" for line in lines),
                       capture_output=True, text=True, timeout=60)
    answers = r.stdout.splitlines()
    if r.returncode != 0 or len(answers) != len(lines):
        raise AssertionError("icmp_tool failed (%d): %s %s" % (r.returncode, answers, r.stderr))
    return answers


def addr_hex(addr, v6):
    return socket.inet_pton(socket.AF_INET6 if v6 else socket.AF_INET, addr).hex()


def icmp_error(pkt, kind, mtu=0, ttl_restore=0):
    """The error the codec builds about pkt (bytes), or None."""
    v6 = isinstance(pkt, IPv6)
    src = SOURCE6 if v6 else SOURCE4
    line = "error %d %s %d %s %d %s" % (v6, kind, mtu, addr_hex(src, v6), ttl_restore,
                                        bytes(pkt).hex())
    out = run_tool([line])[0]
    return None if out == "-" else bytes.fromhex(out)


def fragments(pkt, mtu):
    out = run_tool(["frag %d %s" % (mtu, bytes(pkt).hex())])[0]
    return [] if out == "-" else [bytes.fromhex(h) for h in out.split()]


def payload(n, seed=1):
    rnd = random.Random(seed)
    return bytes(rnd.randrange(256) for _ in range(n))


class Checks(unittest.TestCase):
    def assert_ipv4_checksum(self, ip):
        """scapy rebuilds the same header checksum."""
        again = ip.copy()
        del again.chksum
        self.assertEqual(IP(bytes(again)).chksum, ip.chksum)

    def check_ipv4_error(self, raw, original, type_, code, quote_len):
        """raw: the error from the codec; original: the packet as sent."""
        e = IP(raw)
        self.assertEqual(len(raw), 20 + 8 + quote_len)
        self.assertEqual((e.version, e.ihl, e.ttl, e.proto, e.len), (4, 5, 64, 1, len(raw)))
        self.assertEqual((e.src, e.dst), (SOURCE4, original[IP].src))
        self.assert_ipv4_checksum(e)
        icmp = e[ICMP]
        self.assertEqual((icmp.type, icmp.code), (type_, code))
        again = IP(raw)
        del again[ICMP].chksum
        self.assertEqual(IP(bytes(again))[ICMP].chksum, icmp.chksum)
        # scapy dissects the quote as the offending packet ...
        self.assertIn(IPerror, e)
        q = e[IPerror]
        self.assertEqual((q.src, q.dst, q.ttl, q.id), (original.src, original.dst, original.ttl,
                                                       original.id))
        # ... which is the original, byte for byte, as far as it goes.
        quote = raw[28:]
        self.assertEqual(quote, bytes(original)[:quote_len])
        self.assert_ipv4_checksum(IP(quote[:original.ihl * 4]))  # with the TTL restored
        return e

    def check_ipv6_error(self, raw, original, layer, quote_len):
        e = IPv6(raw)
        self.assertEqual(len(raw), 40 + 8 + quote_len)
        self.assertEqual((e.version, e.nh, e.hlim, e.plen), (6, 58, 64, len(raw) - 40))
        self.assertEqual((e.src, e.dst), (SOURCE6, original[IPv6].src))
        self.assertIn(layer, e)
        icmp = e[layer]
        again = IPv6(raw)
        del again[layer].cksum
        self.assertEqual(IPv6(bytes(again))[layer].cksum, icmp.cksum)
        self.assertIn(IPerror6, e)
        q = e[IPerror6]
        self.assertEqual((q.src, q.dst, q.hlim), (original.src, original.dst, original.hlim))
        self.assertEqual(raw[48:], bytes(original)[:quote_len])
        return e


class IcmpErrors(Checks):
    def test_frag_needed_ipv4(self):
        sent = IP(src="10.0.0.1", dst="10.1.0.1", ttl=64, flags="DF", id=77) / UDP(
            sport=1234, dport=5678) / Raw(payload(1472))
        forwarded = sent.copy()
        forwarded.ttl = 63  # the gateway decremented it
        raw = icmp_error(IP(bytes(forwarded)), "too-big", 1450, ttl_restore=1)
        self.assertIsNotNone(raw)
        e = self.check_ipv4_error(raw, IP(bytes(sent)), 3, 4, 548)
        self.assertEqual(e[ICMP].nexthopmtu, 1450)
        self.assertIn(UDPerror, e)
        self.assertEqual(e[UDPerror].dport, 5678)

    def test_time_exceeded_ipv4_with_options(self):
        sent = IP(src="10.0.0.1", dst="10.1.0.1", ttl=1,
                  options=[IPOption_RR(routers=["1.2.3.4"]), IPOption_NOP(),
                           IPOption_LSRR(routers=["198.51.100.1"])]) / TCP(
            sport=40000, dport=443, flags="S") / Raw(b"x" * 20)
        sent = IP(bytes(sent))
        forwarded = sent.copy()
        forwarded.ttl = 0
        del forwarded.chksum
        raw = icmp_error(IP(bytes(forwarded)), "time-exceeded", 0, ttl_restore=1)
        e = self.check_ipv4_error(raw, sent, 11, 0, len(sent))
        self.assertIn(TCPerror, e)
        self.assertEqual(e[TCPerror].dport, 443)

    def test_time_exceeded_ipv4_echo(self):
        sent = IP(src="10.0.0.1", dst="10.1.0.1", ttl=5) / ICMP(type=8, id=3, seq=4) / Raw(
            payload(56))
        raw = icmp_error(IP(bytes(sent)), "time-exceeded")
        self.check_ipv4_error(raw, IP(bytes(sent)), 11, 0, len(sent))

    def test_packet_too_big_ipv6(self):
        sent = IPv6(src="2001:db8::1", dst="2001:db8:1::1", hlim=64) / UDP(
            sport=1, dport=2) / Raw(payload(1452))
        forwarded = sent.copy()
        forwarded.hlim = 63
        raw = icmp_error(IPv6(bytes(forwarded)), "too-big", 1280, ttl_restore=1)
        e = self.check_ipv6_error(raw, IPv6(bytes(sent)), ICMPv6PacketTooBig, 1232)
        self.assertEqual(e[ICMPv6PacketTooBig].mtu, 1280)
        self.assertEqual(e[ICMPv6PacketTooBig].code, 0)

    def test_time_exceeded_ipv6_behind_extension_headers(self):
        sent = IPv6(src="2001:db8::1", dst="2001:db8:1::1", hlim=2) / IPv6ExtHdrHopByHop() / \
            IPv6ExtHdrDestOpt() / ICMPv6EchoRequest(id=1, seq=2, data=payload(100))
        forwarded = sent.copy()
        forwarded.hlim = 0
        raw = icmp_error(IPv6(bytes(forwarded)), "time-exceeded", 0, ttl_restore=2)
        e = self.check_ipv6_error(raw, IPv6(bytes(sent)), ICMPv6TimeExceeded, len(sent))
        self.assertEqual(e[ICMPv6TimeExceeded].code, 0)

    def test_not_answered(self):
        cases = [
            IP(src="10.0.0.1", dst="10.1.0.1") / ICMP(type=3, code=1) / IPerror(
                src="10.1.0.1", dst="10.0.0.1") / UDPerror(),
            IP(src="224.0.0.5", dst="10.1.0.1") / UDP(),
            IP(src="255.255.255.255", dst="10.1.0.1") / UDP(),
            IP(src="0.0.0.0", dst="10.1.0.1") / UDP(),
            IP(src="127.0.0.1", dst="10.1.0.1") / UDP(),
            IP(src="10.0.0.1", dst="239.1.1.1") / UDP(),
            IP(src="10.0.0.1", dst="255.255.255.255") / UDP(),
            IP(src="10.0.0.1", dst="10.1.0.1", frag=185) / Raw(payload(100)),
            IPv6(src="2001:db8::1", dst="2001:db8:1::1") / IPv6ExtHdrHopByHop() /
            ICMPv6DestUnreach() / IPerror6() / UDPerror(),
            IPv6(src="::", dst="2001:db8:1::1") / UDP(),
            IPv6(src="::1", dst="2001:db8:1::1") / UDP(),
            IPv6(src="ff02::1", dst="2001:db8:1::1") / UDP(),
            IPv6(src="2001:db8::1", dst="ff02::1") / UDP(),
        ]
        for pkt in cases:
            with self.subTest(pkt=pkt.summary()):
                self.assertIsNone(icmp_error(pkt.__class__(bytes(pkt)), "time-exceeded"))
        # And the same rules through mayAnswer directly.
        lines = ["may %d %s" % (isinstance(p, IPv6), bytes(p).hex()) for p in cases]
        self.assertEqual(run_tool(lines), ["0"] * len(cases))
        ok = [IP(src="10.0.0.1", dst="10.1.0.1") / ICMP(type=8),
              IPv6(src="2001:db8::1", dst="2001:db8:1::1") / ICMPv6EchoRequest()]
        lines = ["may %d %s" % (isinstance(p, IPv6), bytes(p).hex()) for p in ok]
        self.assertEqual(run_tool(lines), ["1"] * len(ok))


class Fragmentation(Checks):
    def check_fragments(self, frags, original, mtu, copied_options=None):
        """Checks each fragment, then reassembles them with scapy."""
        self.assertGreater(len(frags), 1)
        parsed = []
        for i, raw in enumerate(frags):
            f = IP(raw)
            parsed.append(f)
            self.assertLessEqual(len(raw), mtu)
            self.assertEqual(f.len, len(raw))
            self.assert_ipv4_checksum(f)
            self.assertEqual((f.id, f.src, f.dst, f.proto, f.ttl),
                             (original.id, original.src, original.dst, original.proto,
                              original.ttl))
            self.assertFalse(f.flags.DF)
            last = i == len(frags) - 1
            self.assertEqual(bool(f.flags.MF), not last or bool(original.flags.MF))
            data = len(raw) - f.ihl * 4
            if not last:
                self.assertEqual(data % 8, 0)
            if i == 0:
                self.assertEqual(raw[20:f.ihl * 4], bytes(original)[20:original.ihl * 4])
            elif copied_options is not None:
                self.assertEqual(raw[20:f.ihl * 4], copied_options)
        # Contiguous, in order.
        at = original.frag * 8
        for f in parsed:
            self.assertEqual(f.frag * 8, at)
            at += f.len - f.ihl * 4
        self.assertEqual(at, original.frag * 8 + original.len - original.ihl * 4)
        return parsed

    def reassembled(self, frags):
        out = defragment([IP(raw) for raw in frags])
        self.assertEqual(len(out), 1)
        return out[0]

    def test_udp_1500_at_1450(self):
        original = IP(bytes(IP(src="10.0.0.1", dst="10.1.0.1", id=4242, ttl=63) /
                            UDP(sport=1, dport=2) / Raw(payload(1472))))
        frags = fragments(original, 1450)
        self.assertEqual(len(frags), 2)
        f = self.check_fragments(frags, original, 1450)
        self.assertEqual([x.frag for x in f], [0, 178])
        self.assertEqual([len(x) for x in frags], [1444, 76])
        whole = self.reassembled(frags)
        self.assertEqual(bytes(whole), bytes(original))
        self.assertIn(UDP, whole)

    def test_options_copied_or_not(self):
        original = IP(bytes(IP(src="10.0.0.1", dst="10.1.0.1", id=9, options=[
            IPOption_RR(routers=["1.2.3.4", "5.6.7.8"]), IPOption_NOP(),
            IPOption_Security(), IPOption_LSRR(routers=["198.51.100.1"])]) /
            UDP(sport=1, dport=2) / Raw(payload(1200))))
        # Copied: security (0x82, 11 bytes) and LSRR (0x83, 7 bytes) → 18, padded to 20.
        copied = bytes(IPOption_Security()) + bytes(IPOption_LSRR(routers=["198.51.100.1"]))
        copied += b"\x00" * (-len(copied) % 4)
        frags = fragments(original, 576)
        self.check_fragments(frags, original, 576, copied_options=copied)
        self.assertEqual([IP(f).ihl * 4 for f in frags][:2], [original.ihl * 4, 40])
        whole = self.reassembled(frags)
        # scapy rebuilds the reassembled header from the first fragment's.
        self.assertEqual(bytes(whole), bytes(original))

    def test_fragment_of_fragments(self):
        original = IP(bytes(IP(src="10.0.0.1", dst="10.1.0.1", id=7) / UDP(sport=1, dport=2) /
                            Raw(payload(4000))))
        pieces = []
        for first in fragment(original, fragsize=1480):  # scapy's own fragmentation
            first = IP(bytes(first))
            frags = fragments(first, 576)
            self.check_fragments(frags, first, 576)
            pieces += frags
        self.assertEqual(bytes(self.reassembled(pieces)), bytes(original))

    def test_many_sizes(self):
        rnd = random.Random(5)
        for mtu in (68, 100, 576, 1000, 1280, 1400, 1450):
            for size in (mtu + 1, mtu + 7, mtu + 8, 2 * mtu, 1500, 9000):
                if size <= mtu:
                    continue
                with self.subTest(mtu=mtu, size=size):
                    original = IP(bytes(IP(src="10.0.0.1", dst="10.1.0.1",
                                           id=rnd.randrange(65536)) /
                                        Raw(payload(size - 20, seed=size))))
                    frags = fragments(original, mtu)
                    self.check_fragments(frags, original, mtu)
                    self.assertEqual(len(frags), -(-(size - 20) // ((mtu - 20) & ~7)))
                    self.assertEqual(bytes(self.reassembled(frags)), bytes(original))

    def test_not_fragmented(self):
        df = IP(src="10.0.0.1", dst="10.1.0.1", flags="DF") / Raw(payload(1480))
        self.assertEqual(fragments(df, 1450), [])
        tiny = IP(src="10.0.0.1", dst="10.1.0.1") / Raw(payload(1480))
        self.assertEqual(fragments(tiny, 27), [])
        fits = IP(bytes(IP(src="10.0.0.1", dst="10.1.0.1", flags="DF") / Raw(payload(100))))
        self.assertEqual(fragments(fits, 1450), [bytes(fits)])


def main():
    global TOOL
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", required=True, help="path of icmp_tool")
    args, rest = ap.parse_known_args()
    TOOL = args.tool
    if not os.access(TOOL, os.X_OK):
        sys.exit("%s: not executable" % TOOL)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
