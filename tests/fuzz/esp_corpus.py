#!/usr/bin/python3
# Writes the seed corpus of esp_fuzz (tests/fuzz/corpus/esp):
#   /usr/bin/python3 tests/fuzz/esp_corpus.py tests/fuzz/corpus/esp
# Each file is the fuzz input (esp_fuzz.cpp): a control byte and its bytes.
# raw-*: the ESP byte tables of tests/tools/esp_vectors.py (same SA) with the
# window placed so that they open; mutate-*: seq, next header, payload and
# edits of a packet esp_fuzz seals itself.
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import esp_vectors as v  # noqa: E402

d = sys.argv[1]
os.makedirs(d, exist_ok=True)


def w(name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# Control byte for raw packets: bit 0 clear, bits 1-2 window top (0: 0,
# 1: 1000, 2: 2^32 - 3, 3: 2^32 + 5), bits 3-4 window size.
w("raw-payload0", bytes([0]) + v.esp(1, b""))
w("raw-payload3", bytes([0 | 1 << 3]) + v.esp(4, b"@AB"))
w("raw-payload7", bytes([0 | 2 << 3]) + v.esp(8, b"@ABCDEF"))
w("raw-vxlan", bytes([0 | 3 << 3]) + v.esp(0x2A, v.vxlan_datagram()))
w("raw-ahead", bytes([1 << 1]) + v.esp(1001, v.vxlan_datagram()))
w("raw-wrap", bytes([2 << 1]) + v.esp(1 << 32, b"@ABCD"))
w("raw-late", bytes([3 << 1]) + v.esp((1 << 32) - 1, b"@A"))
w("raw-bad-padding", bytes([0]) + v.esp(9, b"\x40", pad=1, pad_bytes=b"\x02"))
w("raw-long-padding", bytes([0]) + v.esp(14, b"@AB", pad=7))
w("raw-short", bytes([0]) + v.esp(2, b"@")[:35])


def mutate(seq, nh, payload, edits=()):
    out = bytes([1]) + struct.pack("!QBB", seq, nh, len(payload)) + payload
    for op, pos, val in edits:
        out += struct.pack("!BHB", op, pos, val)
    return out


w("mutate-none", mutate(5, 17, b"@ABCD"))
w("mutate-vxlan", mutate((1 << 32) + 7, 17, v.vxlan_datagram()[:255]))
w("mutate-xor-icv", mutate(9, 17, b"@ABC", [(0, 39, 1)]))
w("mutate-xor-seq", mutate(9, 17, b"@ABC", [(0, 7, 0x80)]))
w("mutate-truncate", mutate(9, 17, b"@ABCDEFG", [(1, 40, 0)]))
w("mutate-append", mutate(9, 17, b"@ABCDEFG", [(2, 0, 0)] * 4))
w("mutate-set-same", mutate(9, 17, b"@ABC", [(3, 0, 0x0A)]))
