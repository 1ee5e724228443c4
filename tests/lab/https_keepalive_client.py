#!/usr/bin/python3
"""A controller's client for lab.bandwidth's `latency` part: N policy-set
requests over ONE HTTPS connection with a client certificate (keep-alive),
rates alternating between two values; prints one JSON line: the round
trips in ms, the first (with the TLS handshake) apart, and the last rate
set.  Any answer other than 200 ends it with exit 1.

usage: https_keepalive_client.py CA CERT KEY HOST PORT TENANT LINE N RATE_A RATE_B"""

import http.client
import json
import ssl
import sys
import time


def main() -> int:
    ca, cert, key, host, port, tenant, line, n, rate_a, rate_b = sys.argv[1:11]
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=5)
    took, rate = [], None
    for i in range(int(n)):
        rate = rate_a if i % 2 == 0 else rate_b
        body = json.dumps({"tenant": tenant, "line": line, "rate": rate})
        t0 = time.perf_counter()
        conn.request("POST", "/api/v1/policy-set", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        took.append((time.perf_counter() - t0) * 1000)
        if r.status != 200:
            print(json.dumps({"error": f"HTTP {r.status}: {data[:200]!r}"}))
            return 1
    print(json.dumps({"first_ms": took[0], "ms": took[1:], "last_rate": rate}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
