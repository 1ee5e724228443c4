#!/usr/bin/env bash
# Install, remove and purge a mcgw .deb in a throwaway Debian 12 root and
# check that nothing stray is left (docs/packaging.md). Never touches the host's
# packages: everything happens under ROOT, which it creates with mmdebstrap
# (--variant=apt) unless it exists, and deletes at the end unless --keep.
#   packaging/check-install.sh [--root DIR] [--keep] mcgw_<version>_<arch>.deb
# Needs root, mmdebstrap, systemd-container and Debian's archive.
set -euo pipefail
root=
keep=0
while [ $# -gt 1 ]; do
  case "$1" in
    --root) root="${2:?--root needs a directory}"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "check-install.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
deb=$(readlink -f "${1:?usage: check-install.sh [--root DIR] [--keep] mcgw_*.deb}")
[ "$(id -u)" -eq 0 ] || { echo "check-install.sh: run as root (chroot)" >&2; exit 1; }
created=0  # only a root this script made is deleted
if [ -z "$root" ]; then
  root=$(mktemp -d /tmp/mcgw-pkgroot.XXXXXX)
  rmdir "$root"
  created=1
fi
work=$(mktemp -d /tmp/mcgw-pkgcheck.XXXXXX)
cleanup() {
  # Never rm -rf a tree with anything mounted in it (nothing is: every command
  # runs in systemd-nspawn's own mount namespace).
  if [ "$created" = 1 ] && [ "$keep" != 1 ] && ! grep -q " $root[/ ]" /proc/mounts; then
    rm -rf "$root"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ ! -d "$root/etc" ]; then
  t0=$(date +%s)
  # systemd for systemd-tmpfiles and deb-systemd-helper as on a real server (it does not run).
  mmdebstrap --variant=apt --include=systemd bookworm "$root"
  echo "check-install.sh: mmdebstrap took $(($(date +%s) - t0)) s"
fi
cp "$deb" "$root/var/cache/"   # nspawn mounts a tmpfs on /tmp
# A container without init and without network namespace of its own (apt
# needs the archive): its own /proc, /sys and /dev, nothing mounted on the host.
in_root() {
  systemd-nspawn -q -D "$root" --register=no --keep-unit --pipe \
    env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@" </dev/null \
    2> >(grep -v 'Attempted to remove disk file system under' >&2)
}

# Every file and directory of the root, but not what apt, dpkg's bookkeeping,
# logs and caches change anyway.
snapshot() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp \
     -o -path ./var/cache -o -path ./var/log -o -path ./var/lib/apt \
     -o -path ./var/lib/dpkg/triggers -o -path ./var/lib/dpkg/updates \) -prune -o -print \
     | grep -v -E '^\./var/lib/dpkg/(status|available|diversions|statoverride)(-old)?$|^\./etc/ld\.so\.cache$' \
     | sort) > "$work/$1"
}

fail=0
check() { # name, expected diff file
  if diff -u "$2" "$3" >"$work/diff"; then echo "check-install.sh: ok: $1"
  else echo "check-install.sh: FAIL: $1"; cat "$work/diff"; fail=1; fi
}

# The dependencies first, so the snapshots differ only by mcgw itself.
depends=$(dpkg-deb -f "$deb" Depends)
echo "check-install.sh: Depends: $depends"
in_root apt-get update -q
in_root apt-get satisfy -y -q --no-install-recommends "$depends"
snapshot before

in_root apt-get install -y -q --no-install-recommends "/var/cache/$(basename "$deb")"
snapshot installed
in_root dpkg -L mcgw | sed 's|^/|./|' | sort > "$work/dpkg-L"
# Installed = the package's files (dpkg -L, directories it shares included)
# plus what postinst makes: the tmpfiles.d directories and the
# deb-systemd-helper state that lets purge remove enable symlinks.
comm -13 "$work/before" "$work/installed" > "$work/added"
comm -23 "$work/added" "$work/dpkg-L" > "$work/added-not-in-package"
printf '%s\n' ./run/mcgw ./var/lib/mcgw ./var/lib/dpkg/info/mcgw.conffiles ./var/lib/dpkg/info/mcgw.list \
  ./var/lib/dpkg/info/mcgw.md5sums ./var/lib/dpkg/info/mcgw.postinst ./var/lib/dpkg/info/mcgw.postrm \
  ./var/lib/dpkg/info/mcgw.prerm ./var/lib/systemd/deb-systemd-helper-enabled \
  ./var/lib/systemd/deb-systemd-helper-enabled/mcgw.service.dsh-also \
  ./var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants \
  ./var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/mcgw.service \
  ./var/lib/systemd ./var/lib/systemd/deb-systemd-helper-masked | sort > "$work/expected-extra"
comm -23 "$work/added-not-in-package" "$work/expected-extra" > "$work/unexpected"
check "install adds only the package's files and its postinst directories" /dev/null "$work/unexpected"
echo "check-install.sh: installed $(wc -l < "$work/dpkg-L") paths; conffiles: $(in_root dpkg-query -W -f='${Conffiles}' mcgw | tr '\n' ' ')"
for f in /usr/sbin/mcgwd /usr/bin/mcgwctl /usr/bin/mcgw-bench /lib/systemd/system/mcgw.service \
         /etc/mcgw/mcgw.yaml /usr/share/yang/modules/mcgw/mcgw.yang; do
  [ -e "$root$f" ] || { echo "check-install.sh: FAIL: $f missing"; fail=1; }
done
for d in /var/lib/mcgw; do   # postinst ran systemd-tmpfiles (/run is a tmpfs of each nspawn run)
  [ -d "$root$d" ] || { echo "check-install.sh: FAIL: $d not created"; fail=1; }
done
ls "$root"/usr/lib/*/mcgw/mcgw_xdp.bpf.o >/dev/null || { echo "check-install.sh: FAIL: eBPF object missing"; fail=1; }
# The binaries run: every library they need is there (Depends: is complete).
in_root mcgwctl --help >/dev/null || { echo "check-install.sh: FAIL: mcgwctl --help"; fail=1; }
in_root mcgwd --help >/dev/null || { echo "check-install.sh: FAIL: mcgwd --help"; fail=1; }
for b in /usr/sbin/mcgwd /usr/bin/mcgwctl /usr/bin/mcgw-bench; do
  if in_root ldd "$b" | grep 'not found'; then echo "check-install.sh: FAIL: $b: library not found"; fail=1; fi
done
# An operator's edit and an operator's enable: remove keeps the first, purge drops both.
echo "# edited by check-install.sh" >> "$root/etc/mcgw/mcgw.yaml"
# `systemctl enable mcgw` (WantedBy=multi-user.target) makes this symlink.
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -s /lib/systemd/system/mcgw.service "$root/etc/systemd/system/multi-user.target.wants/mcgw.service"
cp "$root/etc/mcgw/mcgw.yaml" "$root/etc/mcgw/mcgw.yaml.bak"

in_root apt-get remove -y -q mcgw
snapshot removed
comm -13 "$work/before" "$work/removed" > "$work/left-after-remove"
printf '%s\n' ./etc/mcgw ./etc/mcgw/mcgw.yaml ./etc/mcgw/mcgw.yaml.bak ./var/lib/mcgw \
  ./etc/systemd/system/multi-user.target.wants ./etc/systemd/system/multi-user.target.wants/mcgw.service \
  ./var/lib/dpkg/info/mcgw.conffiles ./var/lib/dpkg/info/mcgw.list ./var/lib/dpkg/info/mcgw.postrm \
  ./var/lib/dpkg/info/mcgw.md5sums ./var/lib/systemd ./var/lib/systemd/deb-systemd-helper-enabled \
  ./var/lib/systemd/deb-systemd-helper-enabled/mcgw.service.dsh-also \
  ./var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants \
  ./var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/mcgw.service \
  ./var/lib/systemd/deb-systemd-helper-masked | sort > "$work/allowed-after-remove"
comm -23 "$work/left-after-remove" "$work/allowed-after-remove" > "$work/stray-after-remove"
check "remove leaves only configuration and state" /dev/null "$work/stray-after-remove"
echo "check-install.sh: after remove, kept:"; sed 's/^/  /' "$work/left-after-remove"
grep -q 'edited by check-install.sh' "$root/etc/mcgw/mcgw.yaml" \
  || { echo "check-install.sh: FAIL: remove lost the edited config"; fail=1; }

in_root apt-get purge -y -q mcgw
snapshot purged
check "purge leaves the root as before the install" "$work/before" "$work/purged"

[ "$fail" = 0 ] && echo "check-install.sh: PASS" || echo "check-install.sh: FAILED"
exit "$fail"
