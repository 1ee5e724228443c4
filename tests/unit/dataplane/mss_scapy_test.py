#!/usr/bin/python3
"""MSS clamp checked by scapy (issue 5): an independent opinion on checksums.

Builds SYNs with scapy (the edge cases of mss_test.cpp and a few hundred
random ones), runs them through clampMss() with tests/tools/mss_tool, and
checks each result with scapy: a rewritten packet (clamped, inserted) must
rebuild to the same bytes with its IPv4 and TCP checksums deleted (so scapy
computes the same checksums from scratch) and carry the expected MSS
options; any other verdict must leave the packet byte-identical.

Run by ctest (unit.mss_scapy):
    /usr/bin/python3 mss_scapy_test.py --tool PATH [--seed N] [--random N] [-v]
Needs scapy (python3-scapy).
"""

import argparse
import logging
import random
import subprocess
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.all import (  # noqa: E402
    IP,
    TCP,
    UDP,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    Raw,
    RouterAlert,
    in4_chksum,
    in6_chksum,
    raw,
)

UNCHANGED = {"none", "already-below", "no-option", "malformed"}
SRC4, DST4 = "192.0.2.1", "198.51.100.7"
SRC6, DST6 = "2001:db8::1", "2001:db8:ff::abc"

TS = ("Timestamp", (123456, 0))


def ip4(**kw):
    return IP(src=SRC4, dst=DST4, id=0xABCD, **kw)


def ip6(*ext):
    p = IPv6(src=SRC6, dst=DST6)
    for e in ext:
        p = p / e
    return p


def syn(options=(), flags="S", payload=b""):
    t = TCP(sport=40000, dport=443, seq=0x11223344, flags=flags, window=64240,
            options=list(options))
    return t / Raw(payload) if payload else t


def raw_syn(option_bytes, dataofs=None, flags="S", payload=b""):
    """A TCP SYN with its option bytes as given (malformed ones too)."""
    padded = option_bytes + b"\x00" * (-len(option_bytes) % 4)
    if dataofs is None:
        dataofs = (20 + len(padded)) // 4
    return TCP(sport=40000, dport=443, seq=0x11223344, flags=flags, window=64240,
               dataofs=dataofs) / Raw(padded + payload)


class Case:
    def __init__(self, name, pkt, max_mss, insert, verdict, mss=None, cut=None):
        self.name = name
        self.v6 = pkt.haslayer(IPv6) if not isinstance(pkt, bytes) else False
        self.data = raw(pkt) if not isinstance(pkt, bytes) else pkt
        if cut is not None:
            self.data = self.data[:cut]
        self.max_mss = max_mss
        self.insert = insert
        self.verdict = verdict
        self.mss = mss  # the MSS option values after, in order (clamped / inserted)


def edge_cases():
    c = []
    add = c.append
    # Insert.
    add(Case("v4 no MSS, insert off", ip4() / syn(), 1410, 0, "no-option"))
    add(Case("v4 no MSS, insert on", ip4() / syn(), 1410, 1, "inserted", [1410]))
    add(Case("v4 no MSS with SAckOK/TS/WS, insert on",
             ip4() / syn([("SAckOK", b""), TS, ("NOP", None), ("WScale", 7)]), 1410, 1,
             "inserted", [1410]))
    add(Case("v4 no MSS, TFO data, insert on",
             ip4() / syn([("TFO", b"\x01\x02\x03\x04\x05\x06\x07\x08")], payload=b"hello"),
             1410, 1, "inserted", [1410]))
    add(Case("v4 no room (data offset 60)",
             ip4() / raw_syn(b"\x04\x02" + b"\x01" * 38), 1410, 1, "no-option"))
    add(Case("v4 data offset 56, insert", ip4() / raw_syn(b"\x04\x02" + b"\x01" * 34), 1410,
             1, "inserted", [1410]))
    add(Case("v6 no MSS, insert on", ip6() / syn([("SAckOK", b"")], payload=b"abc"), 1390, 1,
             "inserted", [1390]))
    # Clamp.
    add(Case("v4 MSS 536 already below", ip4() / syn([("MSS", 536)]), 1410, 1,
             "already-below"))
    add(Case("v4 MSS 1460 -> 1410", ip4() / syn([("MSS", 1460)]), 1410, 0, "clamped", [1410]))
    add(Case("v6 MSS 1460 -> 1390", ip6() / syn([("MSS", 1460)]), 1390, 0, "clamped", [1390]))
    add(Case("v4 SYN-ACK", ip4() / syn([("MSS", 1460), ("SAckOK", b"")], flags="SA"), 1410,
             0, "clamped", [1410]))
    add(Case("v6 SYN-ACK", ip6() / syn([("MSS", 1440), ("NOP", None), ("WScale", 9)],
                                       flags="SA"), 1390, 0, "clamped", [1390]))
    orders = [
        [("MSS", 1460), ("SAckOK", b""), TS, ("NOP", None), ("WScale", 7)],
        [("NOP", None), ("NOP", None), TS, ("SAckOK", b""), ("WScale", 7), ("NOP", None),
         ("MSS", 1460)],
        [("WScale", 7), ("MSS", 1460)],
        [("NOP", None), ("MSS", 1460)],
        [("SAckOK", b""), ("NOP", None), ("MSS", 0xFFFF)],
        [TS, ("MSS", 8960), ("SAckOK", b"")],
        [("SAck", (1, 2)), ("MSS", 1460)],
    ]
    for i, o in enumerate(orders):
        for v6 in (False, True):
            ip = ip6() if v6 else ip4()
            add(Case("%s order %d" % ("v6" if v6 else "v4", i), ip / syn(o, payload=b"x" * i),
                     1390, 0, "clamped", [1390]))
    add(Case("v4 odd offset, both bytes change", ip4() / raw_syn(b"\x03\x03\x07\x02\x04\x20\x00"),
             1410, 0, "clamped", [1410]))
    add(Case("v4 two MSS options", ip4() / raw_syn(b"\x02\x04\x05\xb4\x01\x02\x04\x02\x18"),
             1410, 0, "clamped", [1410, 536]))
    # Malformed: unchanged.
    add(Case("length-0 option", ip4() / raw_syn(b"\x02\x04\x05\xb4\x08\x00"), 1410, 1,
             "malformed"))
    add(Case("length-1 option", ip4() / raw_syn(b"\x03\x01\x02\x04\x05\xb4"), 1410, 1,
             "malformed"))
    add(Case("overrunning the data offset", ip4() / raw_syn(b"\x02\x04\x05\xb4\x08\x0a\x00\x00"),
             1410, 1, "malformed"))
    add(Case("MSS length 3", ip4() / raw_syn(b"\x02\x03\x05\x01"), 1410, 1, "malformed"))
    add(Case("data offset 4", ip4() / raw_syn(b"", dataofs=4), 1410, 1, "malformed"))
    add(Case("data offset beyond the packet", ip4() / raw_syn(b"\x02\x04\x05\xb4", dataofs=15),
             1410, 1, "malformed"))
    add(Case("v6 length-0 option", ip6() / raw_syn(b"\x01\x02\x04\x05\xb4\x04\x00"), 1390, 1,
             "malformed"))
    # EOL before MSS: the MSS after it does not count.
    add(Case("EOL before MSS, insert off", ip4() / raw_syn(b"\x00\x00\x00\x00\x02\x04\x05\xb4"),
             1410, 0, "no-option"))
    add(Case("EOL before MSS, insert on", ip4() / raw_syn(b"\x00\x00\x00\x00\x02\x04\x05\xb4"),
             1410, 1, "inserted", [1410]))
    # Fragments.
    add(Case("v4 first fragment: clamped", ip4(flags="MF") / syn([("MSS", 1460)]), 1410, 1,
             "clamped", [1410]))
    add(Case("v4 first fragment: no insert", ip4(flags="MF") / syn(), 1410, 1, "no-option"))
    add(Case("v4 later fragment", ip4(flags="MF", frag=185) / syn([("MSS", 1460)]), 1410, 1,
             "none"))
    add(Case("v4 last fragment", ip4(frag=3) / syn([("MSS", 1460)]), 1410, 1, "none"))
    add(Case("v6 first fragment: clamped",
             ip6(IPv6ExtHdrFragment(m=1, id=7)) / syn([("MSS", 1460)]), 1390, 1, "clamped",
             [1390]))
    add(Case("v6 first fragment: no insert", ip6(IPv6ExtHdrFragment(m=1, id=7)) / syn(), 1390, 1,
             "no-option"))
    add(Case("v6 later fragment", ip6(IPv6ExtHdrFragment(offset=185, id=7)) / syn([("MSS", 1460)]),
             1390, 1, "none"))
    # IPv4 options, IPv6 extension headers.
    add(Case("v4 IHL 6", ip4(options=[RouterAlert()]) / syn([("NOP", None), ("MSS", 1460)]),
             1410, 1, "clamped", [1410]))
    add(Case("v4 IHL 6, insert", ip4(options=[RouterAlert()]) / syn(), 1410, 1, "inserted",
             [1410]))
    add(Case("v4 IHL 15", ip4(options=Raw(b"\x01" * 39 + b"\x00")) / syn([("MSS", 1460)]),
             1410, 1, "clamped", [1410]))
    exts = (IPv6ExtHdrHopByHop(), IPv6ExtHdrRouting(type=253), IPv6ExtHdrDestOpt())
    add(Case("v6 behind hop-by-hop", ip6(exts[0]) / syn([("MSS", 1460)]), 1390, 0, "clamped",
             [1390]))
    add(Case("v6 behind routing", ip6(exts[1]) / syn([("MSS", 1460)]), 1390, 0, "clamped",
             [1390]))
    add(Case("v6 behind destination options", ip6(exts[2]) / syn([("MSS", 1460)]), 1390, 0,
             "clamped", [1390]))
    add(Case("v6 behind all three", ip6(*exts) / syn([("NOP", None), ("MSS", 1460)]), 1390, 0,
             "clamped", [1390]))
    add(Case("v6 behind all three, insert", ip6(*exts) / syn(payload=b"data!"), 1390, 1,
             "inserted", [1390]))
    # Not for us.
    add(Case("v4 ACK", ip4() / syn([("MSS", 1460)], flags="A"), 1410, 1, "none"))
    add(Case("v6 ACK", ip6() / syn([("MSS", 1460)], flags="A"), 1390, 1, "none"))
    add(Case("v4 UDP", ip4() / UDP(sport=1, dport=2) / Raw(b"\x02" * 40), 1410, 1, "none"))
    # Truncated: every cut of a SYN, with the IP length left as it was.
    for v6 in (False, True):
        full = (ip6() if v6 else ip4()) / syn([("MSS", 1460), ("SAckOK", b""), TS])
        for cut in range(0, len(raw(full))):
            case = Case("%s cut at %d" % ("v6" if v6 else "v4", cut), full, 1400, 1, "malformed",
                        cut=cut)
            case.v6 = v6
            add(case)
    return c


def random_cases(rng, n):
    c = []
    kinds = ["MSS", "SAckOK", "TS", "NOP", "WScale", "SAck"]
    for i in range(n):
        v6 = rng.random() < 0.5
        opts = []
        has_mss = rng.random() < 0.7
        chosen = rng.sample(kinds[1:], rng.randint(0, 5))
        if has_mss:
            chosen.insert(rng.randint(0, len(chosen)), "MSS")
        mss = rng.choice([536, 1220, 1360, 1400, 1440, 1460, 8960, 65535, rng.randint(1, 65535)])
        for k in chosen:
            if k == "MSS":
                opts.append(("MSS", mss))
            elif k == "SAckOK":
                opts.append(("SAckOK", b""))
            elif k == "TS":
                opts.append(("Timestamp", (rng.getrandbits(32), rng.getrandbits(32))))
            elif k == "NOP":
                opts.extend([("NOP", None)] * rng.randint(1, 3))
            elif k == "WScale":
                opts.append(("WScale", rng.randint(0, 14)))
            elif k == "SAck":
                opts.append(("SAck", (rng.getrandbits(32), rng.getrandbits(32))))
        payload = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 0, 1, 7, 100])))
        flags = rng.choice(["S", "SA", "SE", "SAEC"])
        if v6:
            ext = rng.sample([IPv6ExtHdrHopByHop(), IPv6ExtHdrRouting(type=253),
                              IPv6ExtHdrDestOpt()], rng.randint(0, 3))
            pkt = ip6(*ext) / syn(opts, flags=flags, payload=payload)
        else:
            ip_opts = [RouterAlert()] if rng.random() < 0.3 else []
            pkt = ip4(options=ip_opts, tos=rng.getrandbits(8)) / syn(opts, flags=flags,
                                                                       payload=payload)
        max_mss = rng.choice([1200, 1300, 1360, 1390, 1410, 1436, 1448, rng.randint(500, 9000)])
        insert = rng.randint(0, 1)
        tcp_len = len(raw(pkt[TCP])) - len(payload)
        if has_mss:
            verdict, mss_after = ("clamped", [max_mss]) if mss > max_mss else ("already-below",
                                                                               None)
        elif insert and tcp_len <= 56:
            verdict, mss_after = "inserted", [max_mss]
        else:
            verdict, mss_after = "no-option", None
        c.append(Case("random %d" % i, pkt, max_mss, insert, verdict, mss_after))
    return c


def mss_values(tcp):
    return [v for k, v in tcp.options if k == "MSS"]


def check(case, verdict, out):
    """The problems with one result, as a list of strings."""
    problems = []
    if verdict != case.verdict:
        problems.append("verdict %s, expected %s" % (verdict, case.verdict))
    if verdict in UNCHANGED:
        if out != case.data:
            problems.append("packet changed by a '%s' verdict" % verdict)
        return problems
    expected_len = len(case.data) + (4 if verdict == "inserted" else 0)
    if len(out) != expected_len:
        problems.append("length %d, expected %d" % (len(out), expected_len))
    p = (IPv6 if case.v6 else IP)(out)
    if TCP not in p:
        return problems + ["scapy finds no TCP header in the result"]
    if case.mss is not None and mss_values(p[TCP]) != case.mss:
        problems.append("MSS options %s, expected %s" % (mss_values(p[TCP]), case.mss))
    if verdict == "inserted" and p[TCP].options[:1] != [("MSS", case.max_mss)]:
        problems.append("the inserted MSS is not the first option: %s" % p[TCP].options)
    # Everything but the MSS values (and the lengths an insert changes) as before.
    q = (IPv6 if case.v6 else IP)(case.data)
    if verdict == "clamped":
        diff = [i for i in range(len(out)) if out[i] != case.data[i]]
        tcp_at = len(out) - len(p[TCP])
        allowed = {tcp_at + 16, tcp_at + 17}
        for (k, _), off in zip(q[TCP].options, option_offsets(out[tcp_at:])):
            if k == "MSS":
                allowed |= {tcp_at + off + 2, tcp_at + off + 3}
        if not set(diff) <= allowed:
            problems.append("bytes other than MSS and checksum changed: %s" % diff)
    elif bytes(q[TCP].payload) != bytes(p[TCP].payload):
        problems.append("TCP data changed")
    # Checksums from scratch by scapy: delete them and rebuild.  scapy drops
    # what follows an EOL when it rebuilds options, so where the input does
    # not rebuild to itself it sums the TCP bytes as they are instead.
    cls = IPv6 if case.v6 else IP

    def rebuild(data):
        r = cls(data)
        if not case.v6:
            del r.chksum
        del r[TCP].chksum
        return raw(r)

    if rebuild(case.data) == case.data:
        rebuilt = rebuild(out)
        if rebuilt != out:
            problems.append("scapy rebuilds different bytes:\n   got %s\n  want %s" % (
                out.hex(), rebuilt.hex()))
    else:
        segment = bytearray(raw(p[TCP]))
        segment[16:18] = b"\0\0"
        want = (in6_chksum if case.v6 else in4_chksum)(6, p[TCP].underlayer, bytes(segment))
        if want != p[TCP].chksum:
            problems.append("TCP checksum %#06x, scapy computes %#06x" % (p[TCP].chksum, want))
        if not case.v6:
            r = IP(out)
            del r.chksum
            if IP(raw(r)).chksum != p.chksum:
                problems.append("IPv4 checksum %#06x, scapy computes %#06x" % (
                    p.chksum, IP(raw(r)).chksum))
    return problems


def option_offsets(tcp_bytes):
    """Offsets (from the TCP header) of each option scapy lists, NOP/EOL included."""
    hl = (tcp_bytes[12] >> 4) * 4
    offs, i = [], 20
    while i < hl:
        offs.append(i)
        k = tcp_bytes[i]
        if k == 0:
            break
        i += 1 if k == 1 else max(tcp_bytes[i + 1], 2)
    return offs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", required=True, help="build/tests/tools/mss_tool")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--random", type=int, default=300, help="random cases besides the edge cases")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    cases = edge_cases() + random_cases(random.Random(args.seed), args.random)
    lines = "".join("%d %d %d %s\n" % (c.max_mss, c.insert, int(c.v6), c.data.hex())
                    for c in cases)
    run = subprocess.run([args.tool], input=lines, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.exit("mss_tool failed (%d): %s" % (run.returncode, run.stderr))
    results = run.stdout.splitlines()
    if len(results) != len(cases):
        sys.exit("mss_tool answered %d lines for %d packets" % (len(results), len(cases)))
    failed = 0
    counts = {}
    for case, line in zip(cases, results):
        verdict, _, hexed = line.partition(" ")
        counts[verdict] = counts.get(verdict, 0) + 1
        problems = check(case, verdict, bytes.fromhex(hexed))
        if problems:
            failed += 1
            print("FAIL %s:" % case.name)
            for p in problems:
                print("  " + p)
            print("  in  %s" % case.data.hex())
        elif args.verbose:
            print("ok   %s: %s" % (case.name, verdict))
    print("%d cases (seed %d): %s; %d failed" % (
        len(cases), args.seed, ", ".join("%s %d" % kv for kv in sorted(counts.items())), failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
