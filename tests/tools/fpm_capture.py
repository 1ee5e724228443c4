#!/usr/bin/python3
"""Records what an FPM client (FRR zebra's dplane_fpm_nl) sends.

Listens on a TCP address, accepts one connection, writes every byte received to
a file (the raw stream: 4-byte FPM headers and their netlink payloads) and stops
after --silence seconds without data, when the peer closes, or at --max-seconds.
With --split DIR it also writes each frame to DIR/NNN.bin (split on the FPM
header's length field; a stream that does not parse as frames is an error).

Python standard library only, so it runs with /usr/bin/python3 anywhere.
"""

import argparse
import os
import select
import socket
import struct
import sys
import time


def split_frames(data):
    frames = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 4:
            raise ValueError(f"{len(data) - pos} trailing bytes at offset {pos}")
        version, kind, length = struct.unpack_from("!BBH", data, pos)
        if version != 1 or kind != 1 or length < 4 or pos + length > len(data):
            raise ValueError(f"bad FPM header at offset {pos}: {version} {kind} {length}")
        frames.append(data[pos:pos + length])
        pos += length
    return frames


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default="127.0.0.1:2620", help="address:port to listen on")
    ap.add_argument("--out", required=True, help="file receiving the raw stream")
    ap.add_argument("--silence", type=float, default=5.0,
                    help="stop after this many seconds without data once connected")
    ap.add_argument("--accept-timeout", type=float, default=60.0,
                    help="give up if no client connects within this many seconds")
    ap.add_argument("--max-seconds", type=float, default=600.0, help="stop after this long anyway")
    ap.add_argument("--split", help="also write one file per frame into this directory")
    ap.add_argument("--ready", help="create this file once listening (for scripts to wait on)")
    args = ap.parse_args()

    host, _, port = args.listen.rpartition(":")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host.strip("[]"), int(port)))
    server.listen(1)
    if args.ready:
        open(args.ready, "w").close()

    start = time.monotonic()
    server.settimeout(args.accept_timeout)
    try:
        conn, peer = server.accept()
    except socket.timeout:
        print("fpm_capture: no client connected", file=sys.stderr)
        return 1
    server.close()
    print(f"fpm_capture: client {peer[0]}:{peer[1]}", file=sys.stderr)

    data = bytearray()
    with open(args.out, "wb") as out:
        last = time.monotonic()
        while True:
            now = time.monotonic()
            if now - last >= args.silence or now - start >= args.max_seconds:
                break
            ready, _, _ = select.select([conn], [], [], min(0.2, args.silence))
            if not ready:
                continue
            chunk = conn.recv(65536)
            if not chunk:
                break
            out.write(chunk)
            out.flush()
            data += chunk
            last = time.monotonic()
    conn.close()

    frames = split_frames(bytes(data))
    print(f"fpm_capture: {len(data)} bytes, {len(frames)} frames", file=sys.stderr)
    if args.split:
        os.makedirs(args.split, exist_ok=True)
        for i, frame in enumerate(frames):
            with open(os.path.join(args.split, f"{i:03d}.bin"), "wb") as f:
                f.write(frame)
    return 0


if __name__ == "__main__":
    sys.exit(main())
