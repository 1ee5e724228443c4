#!/usr/bin/env bash
# Set up, build (warnings are errors) and run the whole test suite with ctest.
#   scripts/test.sh [ctest arguments...]      e.g. scripts/test.sh -L unit
# Environment: MCGW_BUILD_DIR (default build/), MCGW_SKIP_INSTALL=1 to skip apt.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${MCGW_BUILD_DIR:-$top/build}
[ "$(id -u)" -eq 0 ] || { echo "test.sh: run as root (network namespaces, DPDK)" >&2; exit 1; }

if [ "${MCGW_SKIP_INSTALL:-0}" != 1 ]; then
  "$top/scripts/install-deps.sh"
fi
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCGW_WERROR=ON
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
