#!/usr/bin/env bash
# Build the Debian package mcgw_<version>_<arch>.deb from this tree (docs/packaging.md).
#   scripts/package.sh [--build-dir DIR] [--out DIR] [--no-lintian]
# Uses its own build directory (default build-pkg/: Release, no tests, Debian's
# hardening flags), so build/ is untouched. CPack's DEB generator stages the
# install, computes Depends: with dpkg-shlibdeps and adds packaging/'s
# maintainer scripts and conffiles; lintian then checks the result and fails
# the script on any error (warnings are printed). Needs cmake, ninja,
# dpkg-dev (dpkg-shlibdeps, dpkg-buildflags), file and lintian
# (scripts/install-deps.sh). Runs as any user; installs nothing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build-pkg
out=
lintian=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="${2:?--build-dir needs a directory}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --no-lintian) lintian=0; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "package.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for tool in cmake ninja cpack dpkg-shlibdeps dpkg-buildflags file; do
  command -v "$tool" >/dev/null || { echo "package.sh: $tool missing (scripts/install-deps.sh)" >&2; exit 1; }
done

# Reproducible: file dates and the changelog date come from the last commit.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

# Debian's hardening flags (PIE, stack protector, fortify, relro, bindnow);
# CMake's Release flags (-O3 -DNDEBUG) come after them and win.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS=$(dpkg-buildflags --get CFLAGS) CXXFLAGS=$(dpkg-buildflags --get CXXFLAGS)
LDFLAGS=$(dpkg-buildflags --get LDFLAGS) CPPFLAGS=$(dpkg-buildflags --get CPPFLAGS)
export CFLAGS="$CFLAGS $CPPFLAGS" CXXFLAGS="$CXXFLAGS $CPPFLAGS" LDFLAGS

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

start=$(date +%s)
cmake -S "$top" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DMCGW_BUILD_TESTS=OFF -DMCGW_WERROR=OFF \
  -DCMAKE_PROJECT_INCLUDE="$top/packaging/cpack.cmake" "${launcher[@]}"
cmake --build "$build"
built=$(date +%s)
rm -f "$build"/mcgw_*.deb
(cd "$build" && cpack -G DEB)
deb=$(ls "$build"/mcgw_*.deb)
echo "package.sh: built $deb in $((built - start)) s, packaged in $(($(date +%s) - built)) s"
dpkg-deb --field "$deb" Package Version Installed-Size Depends Recommends Suggests

if [ "$lintian" = 1 ]; then
  command -v lintian >/dev/null || { echo "package.sh: lintian missing (scripts/install-deps.sh)" >&2; exit 1; }
  # Errors fail the build; warnings and info are printed (docs/packaging.md lists them).
  lintian --info --display-info --fail-on error "$deb"
  echo "package.sh: lintian: no errors"
fi
if [ -n "$out" ]; then
  mkdir -p "$out"
  cp "$deb" "$out/"
  echo "package.sh: copied to $out/$(basename "$deb")"
fi
