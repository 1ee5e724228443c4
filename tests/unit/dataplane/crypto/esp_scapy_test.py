#!/usr/bin/python3
"""ESP with AES-256-GCM checked independently by scapy's SecurityAssociation.

tests/tools/esp_tool runs espSeal/espOpen (dataplane/crypto/esp.hpp) on hex
ESP packets.  Here scapy (AES-GCM, crypt_key = key || salt, 64-bit ESN):
  (a) decrypts the packets we seal, wrapped in IP(proto=50), and gets the
      payload back; scapy sealing the same payload with our IV (the sequence
      number) gives the same bytes;
  (b) encrypts tunnel datagrams (UDP/VXLAN/Ethernet/IPv4, random IVs, also
      with the NAT-T UDP header of RFC 3948) that our tool opens;
  (c) a replay, a packet too old for the window, a flipped bit and a packet
      under another key are refused by our tool.
Sequence numbers cross the 2^32 boundary, so the high 32 bits (never sent)
enter the AAD on both sides.

Run by ctest (unit.esp_scapy on OpenSSL EVP; component.esp_scapy_cryptodev
on the cryptodev engine, an EAL with --no-huge in each esp_tool):
    /usr/bin/python3 esp_scapy_test.py --tool build/tests/tools/esp_tool \
        [--engine openssl|cryptodev] [-v]

Needs scapy (python3-scapy) and python3-cryptography.
"""

import argparse
import logging
import os
import random
import struct
import subprocess
import sys
import unittest

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.all import ICMP, IP, UDP, Ether, Raw, raw  # noqa: E402
from scapy.layers.ipsec import ESP, IPSecIntegrityError, SecurityAssociation  # noqa: E402
from scapy.layers.vxlan import VXLAN  # noqa: E402

TOOL = None
TOOL_ARGS = []
KEY = bytes(range(0x20, 0x40))
SALT = bytes.fromhex("c0ffee11")
SPI = 0x8F00_0001
OUTER = dict(src="192.0.2.10", dst="198.51.100.20")
K32 = 1 << 32


def run_tool(lines):
    """One answer per seal/open line."""
    r = subprocess.run([TOOL] + TOOL_ARGS, input="".join(line + "\n" for line in lines),
                       capture_output=True, text=True, timeout=60)
    answers = r.stdout.splitlines()
    expected = sum(1 for line in lines if line.split()[0] in ("seal", "open"))
    if r.returncode != 0 or len(answers) != expected:
        raise AssertionError("esp_tool failed (%d): %s %s" % (r.returncode, answers, r.stderr))
    return answers


def sa_line(key=KEY, salt=SALT, window=1024):
    return "sa %s %d" % ((key + salt).hex(), window)


def scapy_sa(key=KEY, nat_t=False):
    return SecurityAssociation(
        ESP, spi=SPI, crypt_algo="AES-GCM", crypt_key=key + SALT, esn_en=True,
        nat_t_header=UDP(sport=4500, dport=4500) if nat_t else None)


def vxlan_datagram(vni, inner_len, seed):
    """What a worker hands to the ESP stage: the tunnel's UDP datagram."""
    rnd = random.Random(seed)
    inner = (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
             / IP(src="10.1.0.1", dst="10.2.0.1", id=seed & 0xFFFF)
             / ICMP(id=7, seq=seed & 0xFFFF)
             / Raw(bytes(rnd.randrange(256) for _ in range(inner_len))))
    return raw(UDP(sport=49152 + seed % 1000, dport=4789) / VXLAN(vni=vni) / inner)


def scapy_encrypt(sa, seq, payload, iv=None, nh=17):
    """scapy's ESP packet (SPI to ICV) for payload.

    scapy reads seq_num=0 / esn=0 as 'use the SA's', so set those instead."""
    sa.seq_num = seq & 0xFFFFFFFF
    sa.esn = seq >> 32
    pkt = sa.encrypt(IP(proto=nh, **OUTER) / Raw(payload), iv=iv)
    data = raw(pkt)
    self_check = IP(data)
    skip = self_check.ihl * 4 + (8 if sa.nat_t_header else 0)
    if sa.nat_t_header:
        assert self_check.proto == 17 and self_check[UDP].dport == 4500
    else:
        assert self_check.proto == 50
    return data[skip:]


def scapy_decrypt(sa, seq, esp, nh=17):
    """The payload scapy finds in our ESP packet, wrapped in IP(proto=50)."""
    sa.esn = seq >> 32
    pkt = IP(raw(IP(proto=50, **OUTER) / Raw(esp)))
    assert isinstance(pkt.payload, ESP), pkt.summary()
    assert pkt[ESP].spi == SPI and pkt[ESP].seq == seq & 0xFFFFFFFF
    plain = sa.decrypt(pkt)
    assert plain.proto == nh, plain.proto  # the next header
    return raw(plain.payload)


SEQS = [1, 2, 3, 0xFFFF_FFFE, 0xFFFF_FFFF, K32, K32 + 1, K32 + 2, 7 * K32 + 0x1234_5678]


def payloads():
    """(next header, payload): short ones as 253 (RFC 3692, experimental),
    which scapy leaves raw; tunnel datagrams as UDP."""
    out = [(253, bytes(range(0x40, 0x40 + n))) for n in range(8)]
    out += [(17, vxlan_datagram(100 + i, n, i))
            for i, n in enumerate((0, 1, 2, 3, 50, 200, 1350))]
    return out


class ScapyOpensOurs(unittest.TestCase):
    def test_decrypt_and_same_bytes(self):
        cases = [(seq, nh, payload) for nh, payload in payloads() for seq in SEQS]
        lines = [sa_line()] + ["seal %d %d %d %s" % (SPI, seq, nh, p.hex())
                               for seq, nh, p in cases]
        sealed = [bytes.fromhex(h) for h in run_tool(lines)]
        sa = scapy_sa()
        for (seq, nh, payload), esp in zip(cases, sealed):
            with self.subTest(seq=hex(seq), length=len(payload)):
                self.assertEqual(scapy_decrypt(sa, seq, esp, nh), payload)
                # scapy sealing with our IV (the 64-bit sequence number) and its
                # own padding gives our bytes exactly.
                iv = struct.pack("!Q", seq)
                self.assertEqual(scapy_encrypt(sa, seq, payload, iv=iv, nh=nh), esp)
        self.assertEqual(len(sealed), len(payloads()) * len(SEQS))

    def test_wrong_high_bits_fail_in_scapy(self):
        """The high 32 bits are in the AAD: scapy with another ESN refuses."""
        esp = bytes.fromhex(run_tool([sa_line(), "seal %d %d 253 4041" % (SPI, K32 + 5)])[0])
        sa = scapy_sa()
        self.assertEqual(scapy_decrypt(sa, K32 + 5, esp, 253), b"\x40\x41")
        with self.assertRaises(IPSecIntegrityError):
            scapy_decrypt(sa, 5, esp, 253)


class WeOpenScapys(unittest.TestCase):
    def open_all(self, esps, window=1024, top=None, key=KEY):
        lines = [sa_line(key=key, window=window)]
        if top is not None:
            lines.append("top %d" % top)
        return run_tool(lines + ["open " + e.hex() for e in esps])

    def test_open_across_the_boundary(self):
        sa = scapy_sa()
        # In order, out of order inside the window, both ways over 2^32.
        seqs = [K32 - 5, K32 - 3, K32 - 4, K32, K32 - 1, K32 + 2, K32 + 1, K32 - 2, K32 + 3]
        datagrams = [vxlan_datagram(200 + i, [0, 1, 2, 3, 64, 500, 1400, 7, 33][i], 50 + i)
                     for i in range(len(seqs))]
        esps = [scapy_encrypt(sa, s, d) for s, d in zip(seqs, datagrams)]
        answers = self.open_all(esps, top=K32 - 6)
        for s, d, a in zip(seqs, datagrams, answers):
            self.assertEqual(a, "none %d 17 %s" % (s, d.hex()))

    def test_open_nat_t(self):
        sa = scapy_sa(nat_t=True)
        d = vxlan_datagram(300, 120, 9)
        esp = scapy_encrypt(sa, 77, d)
        self.assertEqual(self.open_all([esp]), ["none 77 17 " + d.hex()])

    def test_refusals(self):
        sa = scapy_sa()
        d = vxlan_datagram(400, 100, 11)
        good = scapy_encrypt(sa, K32 + 300, d)
        flipped = []
        for at in (0, 5, 12, 20, len(good) - 20, len(good) - 1):  # SPI, seq, IV, text, ICV
            b = bytearray(good)
            b[at] ^= 0x10
            flipped.append(bytes(b))
        other_key = scapy_encrypt(scapy_sa(key=bytes(32)), K32 + 301, d)
        old = scapy_encrypt(sa, K32 + 300 - 64, d)  # out of a 64-wide window
        inside = scapy_encrypt(sa, K32 + 300 - 63, d)
        # The flipped ones first: after the good one they would be replays.
        answers = self.open_all(flipped + [good, good] + [other_key, old, inside, inside],
                                window=64, top=K32 + 299)
        flips = answers[:len(flipped)]
        self.assertNotIn("none", " ".join(flips))
        # SPI, IV, ciphertext and ICV are only caught by the tag.
        self.assertEqual([flips[i] for i in (0, 2, 3, 4, 5)], ["auth"] * 5)
        self.assertEqual(answers[len(flipped)], "none %d 17 %s" % (K32 + 300, d.hex()))
        self.assertEqual(answers[len(flipped) + 1], "replay")
        rest = answers[len(flipped) + 2:]
        self.assertEqual(rest[0], "auth")  # another key
        self.assertEqual(rest[1], "replay")  # too old
        self.assertEqual(rest[2], "none %d 17 %s" % (K32 + 300 - 63, d.hex()))
        self.assertEqual(rest[3], "replay")


def main():
    global TOOL, TOOL_ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", required=True, help="path of esp_tool")
    ap.add_argument("--engine", choices=("openssl", "cryptodev"), default="openssl",
                    help="crypto::Gcm's engine in esp_tool (cryptodev: the tool fails, "
                         "exit status 3, when it cannot start)")
    args, rest = ap.parse_known_args()
    TOOL = args.tool
    TOOL_ARGS = ["--cryptodev"] if args.engine == "cryptodev" else []
    if not os.access(TOOL, os.X_OK):
        sys.exit("%s: not executable" % TOOL)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
