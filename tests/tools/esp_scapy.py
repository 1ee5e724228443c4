#!/usr/bin/python3
"""ESP (AES-256-GCM, 64-bit ESN) with scapy, the independent side of the
fast path's ESP tests (docs/encryption.md).

  esp_scapy.py decrypt KEYSALT SPI [FRAME_HEX ...]
      Each Ethernet frame (IPv4/IPv6 with ESP, or ESP in UDP 4500) is
      decrypted with scapy's SecurityAssociation; prints per frame
      "ok SEQ NEXT_HEADER PAYLOAD_HEX" or "fail WHY".
  esp_scapy.py encrypt KEYSALT SPI SEQ SRC DST SRC_MAC DST_MAC PAYLOAD_HEX [natt]
      Prints the Ethernet frame scapy makes: IP(SRC, DST) / [UDP 4500] /
      ESP(SPI, SEQ) around PAYLOAD (a UDP datagram, next header 17).

KEYSALT is the 36 bytes of key and salt in hex (RFC 4106: the salt is the
last 4), as `ip xfrm` and Wireshark take them.
"""
import sys

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP, SecurityAssociation
from scapy.layers.l2 import Ether
from scapy.packet import Raw


def sa_for(keysalt, spi, seq=0):
    return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM",
                               crypt_key=bytes.fromhex(keysalt), auth_algo="NULL",
                               esn_en=True, esn=seq >> 32)


def decrypt(keysalt, spi, frames):
    for h in frames:
        eth = Ether(bytes.fromhex(h))
        ip = eth.payload
        if not isinstance(ip, (IP, IPv6)):
            print("fail not-ip")
            continue
        # RFC 3948: scapy's ESP layer sits under UDP 4500 too; lift it up.
        if ip.haslayer(UDP) and ip[UDP].dport == 4500:
            esp = ESP(bytes(ip[UDP].payload))
            ip = ip.copy()
            if isinstance(ip, IP):
                ip.proto = 50
                ip.remove_payload()
                ip = IP(bytes(ip)[:ip.ihl * 4]) / esp
                ip.len = None
                ip = IP(bytes(ip))
            else:
                ip.nh = 50
                ip.remove_payload()
                ip = IPv6(bytes(ip)[:40]) / esp
                ip.plen = None
                ip = IPv6(bytes(ip))
        if not ip.haslayer(ESP):
            print("fail not-esp")
            continue
        seq_low = ip[ESP].seq
        try:
            # The high 32 bits are not on the wire: the tests stay below 2^32.
            out = sa_for(keysalt, spi).decrypt(ip)
        except Exception as e:  # scapy raises on a bad ICV or padding
            print("fail", type(e).__name__)
            continue
        nh = out.proto if isinstance(out, IP) else out.nh
        print("ok", seq_low, nh, bytes(out.payload).hex())


def encrypt(keysalt, spi, seq, src, dst, src_mac, dst_mac, payload_hex, natt=False):
    payload = Raw(bytes.fromhex(payload_hex))
    if ":" in src:
        ip = IPv6(src=src, dst=dst, nh=17) / payload
    else:
        ip = IP(src=src, dst=dst, proto=17, ttl=64, id=0, flags="DF") / payload
    sa = sa_for(keysalt, spi, seq)
    enc = sa.encrypt(ip, seq_num=seq & 0xffffffff, iv=seq.to_bytes(8, "big"))
    if natt:
        esp = bytes(enc[ESP])
        if isinstance(enc, IP):
            enc = IP(src=src, dst=dst, ttl=64, id=0, flags="DF") / UDP(sport=4500, dport=4500, chksum=0) / Raw(esp)
        else:
            enc = IPv6(src=src, dst=dst) / UDP(sport=4500, dport=4500) / Raw(esp)
    frame = Ether(src=src_mac, dst=dst_mac) / enc
    print(bytes(frame).hex())


def main(argv):
    if len(argv) >= 3 and argv[0] == "decrypt":
        decrypt(argv[1], int(argv[2], 0), argv[3:])
        return 0
    if len(argv) in (9, 10) and argv[0] == "encrypt":
        encrypt(argv[1], int(argv[2], 0), int(argv[3], 0), argv[4], argv[5], argv[6], argv[7],
                argv[8], len(argv) == 10 and argv[9] == "natt")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
