#!/usr/bin/env bash
# Issue 20 in CI (docs/packaging.md): build the .deb with scripts/package.sh
# (its own Release build dir, lintian without errors), install/remove/purge it
# in a throwaway Debian 12 root (packaging/check-install.sh), and boot that
# root with systemd as PID 1 to check the unit (packaging/boot-test.sh:
# READY=1, reload, a broken file refused, structured journal entries, the
# watchdog, exit 78 not retried, systemd-analyze security).  Everything runs
# in its own build dir and mmdebstrap roots under /tmp; the containers have a
# private network namespace.  Needs root and Debian's archive.
#   lab_package_test.sh BUILD_DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: lab_package_test.sh BUILD_DIR}
pkg="$build/pkg"
out=$(mktemp -d /tmp/mcgw-pkgtest.XXXXXX)
trap 'rm -rf "$out"' EXIT
t0=$(date +%s)
"$top/scripts/package.sh" --build-dir "$pkg" --out "$out"
deb=$(ls "$out"/mcgw_*.deb)
t1=$(date +%s)
"$top/packaging/check-install.sh" "$deb"
t2=$(date +%s)
"$top/packaging/boot-test.sh" "$deb"
t3=$(date +%s)
echo "lab_package_test: package $((t1 - t0)) s, install/remove/purge $((t2 - t1)) s, boot test $((t3 - t2)) s"
