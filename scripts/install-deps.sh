#!/usr/bin/env bash
# Install everything mcgw needs to build, test and run its lab on Debian 12.
# Idempotent: safe to run again; it only installs what is missing.
#   scripts/install-deps.sh               build deps + runtime peers
#   scripts/install-deps.sh --hugepages N also reserve N 2 MiB hugepages and mount hugetlbfs
set -euo pipefail

hugepages=0
while [ $# -gt 0 ]; do
  case "$1" in
    --hugepages) hugepages="${2:?--hugepages needs a count}"; shift 2 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: must run as root (apt-get, hugepages)" >&2
  exit 1
fi

packages=(
  # toolchain
  build-essential g++-12 cmake ninja-build pkg-config git clang llvm clang-format libclang-rt-14-dev
  # the man pages (docs/man/*.scd) are rendered by scdoc at build time
  scdoc
  # libraries fixed by the design card, and the ones we chose
  libdpdk-dev dpdk libyang2-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  # ESP's AES-GCM engine: DPDK's intel-ipsec-mb PMD (crypto_aesni_gcm) and its library
  librte-crypto-ipsec-mb23 libipsec-mb1
  libgtest-dev libgmock-dev libsystemd-dev nlohmann-json3-dev libcli11-dev libutfcpp-dev
  libbpf-dev bpftool libssl-dev libmnl-dev libpcap-dev libelf-dev zlib1g-dev libcurl4-openssl-dev
  prometheus-cpp-dev libfixbuf-dev
  # the controller API over HTTPS (control/api/https_api.cpp): header-only, with OpenSSL
  libcpp-httplib-dev
  # runtime peers and tools used by tests and the lab
  systemd iproute2 frr frr-pythontools bird2 keepalived tshark iperf3 curl etcd-server etcd-client
  python3 python3-scapy nftables iptables tcpdump iputils-ping ethtool procps psmisc socat jq
  prometheus nfdump
  # the Debian package (scripts/package.sh) and its checks in containers (packaging/)
  dpkg-dev file lintian mmdebstrap systemd-container
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer once, non-interactively.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  # Packages such as frr, bird2, keepalived and etcd-server start their daemons on install;
  # the lab starts them per network namespace instead, so keep them stopped
  # (policy-rc.d exit 101: "action forbidden").
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod +x "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps.sh: all packages present"
fi

# FRR is started per network namespace by the lab and etcd on loopback by the
# tests, never as the machine's services; so is nfdump's nfcapd (lab.flow_audit).
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now frr bird keepalived etcd nfdump >/dev/null 2>&1 || true
fi

if [ "$hugepages" -gt 0 ]; then
  echo "$hugepages" > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
  mkdir -p /dev/hugepages
  mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
  echo "install-deps.sh: $(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages) hugepages of 2 MiB reserved"
fi
