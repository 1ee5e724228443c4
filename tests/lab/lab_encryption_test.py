#!/usr/bin/python3
"""Lab test: encrypted lines (issue 18, docs/encryption.md).

The two-site lab (af_xdp, VXLAN over IPv4, static routes) with
`encryption: {mode: esp-aes-256-gcm}` on the peers of gateways A and B and
certificates from one CA (mcgwlab.Lab.make_tls): keys are agreed over TLS
1.3 between the gateways, per line.

Part "encrypted":
- Both lines of A and B get an outbound and an inbound SA (status).
- Ping A -> B and B -> A on line 1, then on line 2 (line 1 taken down).
- 10 MiB TCP A -> B and B -> A.
- The SYN that reaches host B carries the MSS docs/encryption.md computes
  for an encrypted VXLAN/IPv4 line over a 1500-byte underlay: 1376.
- On the wire (the router's side of line 1): ESP only, no VXLAN; tshark
  with the SA keys (exported for tests only: MCGW_TEST_EXPORT_ESP_KEYS)
  decrypts it into VXLAN carrying exactly the ICMP packets host A sent and
  received (addresses, id, sequence, payload).
- A rekey every 5 s (`mcgwctl sa rekey site-b line1`, each followed at once
  by `mcgwctl reload` on gateway B) during a 30 s UDP
  transfer at 20 Mbit/s loses nothing: iperf3 counts no lost datagram, no
  ESP drop is counted, and the generation went up.
- Replayed ESP packets (captured, sent again from the router) are dropped
  and counted as esp-replay.

Part "static": static key files (mode 0600) instead of the key agreement:
ping both ways; after gateway A restarts, its sequence numbers go on above
what the first run reserved (never a GCM IV twice under one key), and B
accepts them.

Part "wrong-ca": gateway B's certificate from another CA: no SA on either
side, status says why (certificate verification), hosts cannot reach each
other, and the line carries no VXLAN in clear text and no ESP (while the
same capture sees the key agreement's retries on TCP 4794).

Run as root with /usr/bin/python3; MCGW_BUILD_DIR names the build.
"""

import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import mcgwlab  # noqa: E402
from labtest import check, ok, run_parts  # noqa: E402

BUILD = os.environ.get("MCGW_BUILD_DIR", str(HERE.parent.parent / "build"))
ENC = {"mode": "esp-aes-256-gcm"}
ESP_DROPS = ("esp-unknown-spi", "esp-auth", "esp-replay", "esp-malformed", "clear-text")


def enc_lines(lab, gw: str) -> dict:
    st = lab.status(gw) or {}
    return {f"{ln['peer']}/{ln['line']}": ln for ln in st.get("encryption", {}).get("lines", [])}


def wait_sas(lab, gws, want_lines: int, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        views = {gw: enc_lines(lab, gw) for gw in gws}
        if all(len(v) == want_lines and all(ln.get("outbound") and ln.get("inbound")
                                            for ln in v.values()) for v in views.values()):
            return views
        check(time.monotonic() < deadline, "every encrypted line has an outbound and an inbound SA",
              json.dumps(views)[:2000])
        time.sleep(0.2)


def drops(lab, gw: str) -> dict:
    c = json.loads(lab.ctl(gw, "show", "counters", "--json", check=True).stdout)
    return {k: v for k, v in c.get("drops", {}).items() if k in ESP_DROPS}


def esp_sa_uat(keys_file: Path) -> list[str]:
    """tshark -o options that load the exported SAs (Wireshark's esp_sa table)."""
    rows = sorted(set(keys_file.read_text().splitlines())) if keys_file.exists() else []
    opts = ["-o", "esp.enable_encryption_decode:TRUE"]
    for r in rows:
        opts += ["-o", f"uat:esp_sa:{r}"]
    return opts


def part_encrypted(tmp: Path) -> None:
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    keys = tmp / "esp-keys.csv"
    os.environ["MCGW_TEST_EXPORT_ESP_KEYS"] = str(keys)
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"),
                      options=mcgwlab.Options(encryption=dict(ENC)), build_dir=BUILD)
    try:
        with lab.up(start_gateways=True):
            views = wait_sas(lab, ["gwa", "gwb"], 2)
            a = views["gwa"]["site-b/line1"]
            ok(f"keys agreed over TLS on both lines of A and B (A's line 1: out SPI "
               f"{a['outbound']['spi']:#x}, in SPI {a['inbound'][0]['spi']:#x}, "
               f"peer {a.get('agreement', {}).get('peer_subject')})")
            check(views["gwa"]["site-b/line1"]["outbound"]["spi"] ==
                  views["gwb"]["site-a/line1"]["inbound"][0]["spi"],
                  "A's outbound SPI is B's inbound SPI", views)
            text = lab.ctl("gwa", "status", check=True).stdout
            # The engine docs/encryption.md chose, not the EVP fallback.
            check("Encryption (ESP AES-256-GCM, engine cryptodev-ipsec-mb)" in text and
                  "site-b/line1: keys tls (established" in text and "out SPI 0x" in text,
                  "mcgwctl status shows the lines' SAs", text[-1500:])

            # Ping both ways on line 1, then on line 2.
            cap = lab.capture("rtr", "a1", "wire-line1", ["ip", "proto", "50", "or", "udp"])
            # What host A sent and received: the frames tshark must find inside the ESP.
            host_cap = lab.capture("hosta", "eth0", "hosta-icmp", ["icmp"])
            check(lab.ping("hosta", "10.2.0.10", count=5, timeout=2) == 5, "ping A -> B over ESP")
            check(lab.ping("hostb", "10.1.0.10", count=5, timeout=2) == 5, "ping B -> A over ESP")
            cap.stop()
            host_cap.stop()
            for gw, peer in (("gwa", "site-b"), ("gwb", "site-a")):
                lab.ctl(gw, "line", peer, "line1", "down", check=True)
            check(lab.ping("hosta", "10.2.0.10", count=3, timeout=2) == 3, "ping A -> B on line 2")
            check(lab.ping("hostb", "10.1.0.10", count=3, timeout=2) == 3, "ping B -> A on line 2")
            line2 = enc_lines(lab, "gwa")["site-b/line2"]
            check(line2["outbound"]["packets"] >= 3 and line2["inbound"][0]["packets"] >= 3,
                  "line 2's SAs carried the pings", line2)
            for gw, peer in (("gwa", "site-b"), ("gwb", "site-a")):
                lab.ctl(gw, "line", peer, "line1", "up", check=True)
            ok("ping both ways on line 1 and on line 2, through their SAs")

            # The wire: ESP only; decrypted by tshark with the exported keys.
            rows = cap.fields("ip.proto", "udp.dstport", "esp.spi", "vxlan.vni", "icmp.type",
                              display_filter="ip.proto == 50 or udp.port == 4789")
            check(rows and all(r[0].split(",")[0] == "50" for r in rows),
                  "only ESP on line 1 for the tunnel (no VXLAN in clear text)", rows[:5])
            icmp = ["ip.src", "ip.dst", "icmp.type", "icmp.ident", "icmp.seq", "data.data"]
            r = mcgwlab.sh("tshark", "-n", "-r", cap.path, *esp_sa_uat(keys), "-T", "fields",
                           "-e", "esp.spi", "-e", "vxlan.vni", *[x for f in icmp for x in ("-e", f)],
                           "-Y", "esp")
            dec = [ln.split("\t") for ln in r.stdout.splitlines() if ln.strip()]
            inner = [d for d in dec if len(d) >= 8 and d[1] == "1000" and d[4] in ("0", "8")]
            check(len(dec) >= 20 and len(inner) == len(dec),
                  "tshark decrypts every ESP packet into VXLAN 1000 with ICMP inside", dec[:6])
            # The inner frames are host A's (addresses, ICMP id, sequence, payload):
            # the last IP layer of a decrypted packet is the inner one.
            wire = sorted((d[2].split(",")[-1], d[3].split(",")[-1], *d[4:8]) for d in inner)
            sent = sorted(tuple(f) for f in host_cap.fields(*icmp) if len(f) == 6)
            check(len(sent) == 20 and wire == sent,
                  "the decrypted inner ICMP packets are exactly those host A sent and received",
                  (wire[:3], sent[:3], len(wire), len(sent)))
            ok(f"on the wire: {len(rows)} ESP packets, no VXLAN in clear; tshark decrypted "
               f"{len(inner)} into VXLAN VNI 1000 / ICMP")

            # 10 MiB both ways; the MSS of host A's SYN at host B.
            syn = lab.capture("hostb", "eth0", "syn-b", ["tcp[tcpflags] & tcp-syn != 0"])
            t1 = lab.iperf("hosta", "hostb")
            t2 = lab.iperf("hostb", "hosta")
            syn.stop()
            check(t1.bytes >= 10 << 20 and t2.bytes >= 10 << 20, "10 MiB each way", (str(t1), str(t2)))
            # What arrives at host B from host A: the SYN-ACK of the first
            # transfer (host B connects), the SYN of the second.
            mss = {r[0] for r in syn.fields("tcp.options.mss_val",
                                            display_filter="tcp.flags.syn == 1 && ip.src == 10.1.0.10")}
            tun = json.loads(lab.ctl("gwa", "show", "tunnels", "--json", check=True).stdout)
            mss4 = {t["mss4"] for t in tun["tunnels"] if t["peer"] == "site-b"}
            check(mss == {"1376"} and len(syn.fields("frame.number")) >= 4 and mss4 == {1376},
                  "MSS 1376 on the SYNs at host B and in show tunnels (docs/encryption.md)",
                  (mss, mss4))
            ok(f"10 MiB TCP each way ({t1}; {t2}); SYNs clamped to MSS 1376")

            # Rekeys every 5 s during a 30 s paced UDP transfer.
            before = {gw: drops(lab, gw) for gw in ("gwa", "gwb")}
            gen0 = enc_lines(lab, "gwa")["site-b/line1"]["outbound"]["generation"]
            result = {}

            def udp() -> None:
                name = "iperf3-udp"
                lab.start(name, "hostb", "iperf3", "-s", "-1", "-p", 5300, "-B", "10.2.0.10", listen=5300)
                try:
                    rr = lab.run("hosta", "iperf3", "-c", "10.2.0.10", "-p", 5300, "-u", "-b", "20M",
                                 "-t", 30, "-l", 1200, "--json", check=False, timeout=60)
                    result["doc"] = json.loads(rr.stdout)
                finally:
                    lab.stop(name, 2)

            th = threading.Thread(target=udp)
            th.start()
            rekeys = 0
            for _ in range(5):
                time.sleep(5)
                rr = lab.ctl("gwa", "sa", "rekey", "site-b", "line1")
                check(rr.returncode == 0, "mcgwctl sa rekey site-b line1", rr.stdout + rr.stderr)
                rekeys += 1
                # B reloads while the exchange is under way: its key agreement
                # pauses with the gateway and goes on after (nothing lost).
                rr = lab.ctl("gwb", "reload")
                check(rr.returncode == 0, "mcgwctl reload on gateway B", rr.stdout + rr.stderr)
            th.join(timeout=60)
            doc = result.get("doc", {})
            s = doc.get("end", {}).get("sum", {})
            gen1 = enc_lines(lab, "gwa")["site-b/line1"]["outbound"]["generation"]
            after = {gw: drops(lab, gw) for gw in ("gwa", "gwb")}
            check(s.get("packets", 0) > 50000 and s.get("lost_packets") == 0,
                  "the UDP transfer lost no datagram", s)
            check(after == before, "no ESP drop during the rekeys", (before, after))
            check(gen1 >= gen0 + rekeys, "each rekey made a new generation", (gen0, gen1))
            ok(f"{rekeys} rekeys (and reloads of B) during 30 s of UDP at 20 Mbit/s: "
               f"{s.get('packets')} datagrams, "
               f"0 lost; generation {gen0} -> {gen1}")

            # Replays: the captured ESP packets sent again into gateway B.
            replay = lab.capture("rtr", "b1", "replay-src", ["ip", "proto", "50"])
            check(lab.ping("hosta", "10.2.0.10", count=5, timeout=2) == 5, "ping A -> B")
            replay.stop()
            n0 = drops(lab, "gwb").get("esp-replay", 0)
            lab.run("rtr", "/usr/bin/python3", "-c",
                    "import sys; from scapy.all import rdpcap, sendp; "
                    "p = [x for x in rdpcap(sys.argv[1]) if x.haslayer('IP') and x['IP'].proto == 50 "
                    "and x['IP'].dst == sys.argv[2]]; sendp(p, iface='b1', verbose=False); print(len(p))",
                    replay.path, _b_vtep(lab), check=True)
            time.sleep(0.5)
            n1 = drops(lab, "gwb").get("esp-replay", 0)
            check(n1 - n0 >= 5, "the replayed ESP packets are dropped as esp-replay", (n0, n1))
            ok(f"{n1 - n0} replayed ESP packets dropped and counted (esp-replay)")
    finally:
        os.environ.pop("MCGW_TEST_EXPORT_ESP_KEYS", None)


def _b_vtep(lab) -> str:
    cfg = lab.gateway_config("gwa")
    return next(ln["remote-vtep"] for p in cfg["peers"] if p["name"] == "site-b" for ln in p["lines"]
                if ln["name"] == "line1")


def part_wrong_ca(tmp: Path) -> None:
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"),
                      options=mcgwlab.Options(encryption=dict(ENC)), build_dir=BUILD)
    with lab.up(start_gateways=False):
        lab.make_tls("gwb", ca="other-ca")  # B's certificate and trust from another CA
        for gw in lab.topo.gateways:
            lab.start_gateway(gw)
        time.sleep(4)
        for gw in ("gwa", "gwb"):
            lines = enc_lines(lab, gw)
            check(len(lines) == 2 and all(ln["outbound"] is None and not ln["inbound"]
                                          for ln in lines.values()), f"{gw}: no SA", lines)
            st = lab.status(gw)
            reasons = " ".join(st.get("health", {}).get("reasons", []) + [
                ln.get("agreement", {}).get("last_error", "") for ln in lines.values()])
            check("certificate" in reasons or "verify" in reasons or "unknown ca" in reasons.lower(),
                  f"{gw}: status says the certificate was refused", reasons[:600])
        cap = lab.capture("rtr", "a1", "wire-wrong-ca",
                          ["udp", "or", "ip", "proto", "50", "or", "tcp", "port", "4794"])
        check(lab.ping("hosta", "10.2.0.10", count=3, timeout=1) == 0, "no ping A -> B without keys")
        # Long enough for a retry of the key agreement (1, 2, 4, 8 s after
        # the first attempt): the capture sees the line, so an empty result
        # below means nothing was sent, not that nothing was captured.
        time.sleep(5)
        cap.stop()
        rows = cap.fields("udp.dstport", display_filter="udp.port == 4789 or esp")
        check(not rows, "nothing of the tunnel on the wire: no VXLAN in clear, no ESP", rows[:5])
        syns = cap.fields("ip.src", display_filter="tcp.dstport == 4794 && tcp.flags.syn == 1 "
                                                   "&& tcp.flags.ack == 0")
        check(len(syns) >= 1, "the capture saw the key agreement retry on line 1 (TCP 4794)", syns)
        a = drops(lab, "gwa")
        ok(f"wrong CA: no SA on either side, status says why, no clear text on the wire (A: {a})")


def part_static(tmp: Path) -> None:
    prefix = f"mcgwlab-{secrets.token_hex(3)}-"
    lab = mcgwlab.Lab(prefix=prefix, workdir=tmp / prefix.rstrip("-"),
                      options=mcgwlab.Options(encryption=dict(ENC, **{"static-keys": "auto"})),
                      build_dir=BUILD)
    with lab.up(start_gateways=True):
        views = wait_sas(lab, ["gwa", "gwb"], 2, timeout=5)
        check(all(ln["keys"] == "static" for v in views.values() for ln in v.values()),
              "the SAs come from the static key files", views)
        check(lab.ping("hosta", "10.2.0.10", count=3, timeout=2) == 3, "ping A -> B, static keys")
        check(lab.ping("hostb", "10.1.0.10", count=3, timeout=2) == 3, "ping B -> A, static keys")
        seq0 = enc_lines(lab, "gwa")["site-b/line1"]["outbound"]["last_seq"]
        # A restart must not use a sequence number (the GCM IV) again under
        # the same key: it goes on above what the last run reserved.
        lab.stop_gateway("gwa")
        lab.start_gateway("gwa")
        wait_sas(lab, ["gwa"], 2, timeout=5)
        check(lab.ping("hosta", "10.2.0.10", count=3, timeout=2) == 3,
              "ping A -> B after gateway A restarted (B's window takes the higher numbers)")
        seq1 = enc_lines(lab, "gwa")["site-b/line1"]["outbound"]["last_seq"]
        # Reserved in blocks of 2^24 (docs/encryption.md, "Static keys").
        check((1 << 24) < seq1 < (1 << 24) + 100 and seq0 < 100,
              "the restarted gateway's sequence numbers are above the reservation of the first run",
              (seq0, seq1))
        ok(f"static keys: ping both ways; after a restart of A its sequence numbers go on at "
           f"{seq1} (first run: {seq0}), B accepts them")


def main() -> int:
    return run_parts("encryption", [("encrypted", part_encrypted), ("wrong-ca", part_wrong_ca),
                                    ("static", part_static)],
                     logs="gw*.log", log_lines=30)


if __name__ == "__main__":
    sys.exit(main())
