#!/bin/sh
# The measurements behind "Crypto engine: OpenSSL EVP in the workers or
# cryptodev" in docs/encryption.md: interleaved rounds (every engine once per
# round, ROUNDS rounds), AES-256-GCM at 64, 512 and 1400 bytes.
#   tests/tools/crypto_bench/rounds.sh BUILD_DIR [ROUNDS] > results.txt
# Needs openssl, dpdk (dpdk-test-crypto-perf, libdpdk-dev), libipsec-mb-dev,
# and esp_tool built (ninja -C BUILD_DIR esp_tool).  Uses lcores 0 and 1,
# no hugepages, no PCI, no shared DPDK config.
set -eu
build=$1
rounds=${2:-3}
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/imb_gcm_bench" "$here/imb_gcm_bench.c" -lIPSec_MB
cc -O2 -DALLOW_EXPERIMENTAL_API -o "$work/cpu_crypto_bench" "$here/cpu_crypto_bench.c" \
  $(pkg-config --cflags --libs libdpdk)
eal="--no-huge -m 1024 --no-shconf --file-prefix mcgw-cperf-$$ --no-pci"
cperf() {  # cperf VDEV
  dpdk-test-crypto-perf -l 0,1 $eal --vdev "$1" -- --ptest throughput --devtype "$1" \
    --optype aead --aead-algo aes-gcm --aead-op encrypt --aead-key-sz 32 --aead-iv-sz 12 \
    --aead-aad-sz 12 --digest-sz 16 --buffer-sz 64,512,1400 --total-ops 2000000 --burst-sz 32 \
    2>&1 | awk '$1 == 1 && NF == 10 { printf "  %s B: %s cycles/op (%s Mops)\n", $2, $10, $8 }'
}
for r in $(seq "$rounds"); do
  echo "== round $r"
  echo "openssl speed -aead -evp aes-256-gcm -seconds 2 -bytes N (bytes/s)"
  for n in 64 512 1400; do
    openssl speed -aead -evp aes-256-gcm -seconds 2 -bytes $n -mr 2>/dev/null |
      awk -F: -v n=$n '/^\+F:/ { printf "  %s B: %.0f bytes/s\n", n, $4 }'
  done
  echo "dpdk-test-crypto-perf crypto_aesni_gcm"
  cperf crypto_aesni_gcm
  echo "dpdk-test-crypto-perf crypto_openssl"
  cperf crypto_openssl
  echo "esp_tool --bench 1000000"
  "$build/tests/tools/esp_tool" --bench 1000000 | sed 's/^/  /'
  echo "cpu_crypto_bench crypto_aesni_gcm"
  "$work/cpu_crypto_bench" -l 0 $eal --vdev crypto_aesni_gcm -- crypto_aesni_gcm 2>/dev/null |
    sed -n 's/^/  /p' | grep -v EAL
  echo "imb_gcm_bench 1000000 auto"
  "$work/imb_gcm_bench" 1000000 auto | sed 's/^/  /'
done
