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
# A container without init: its own /proc, /sys and /dev, nothing mounted on
# the host, and its own network namespace (only lo), so no maintainer script
# can touch the host's network.  Only the download of the dependencies
# (in_root_net) shares the host's network: apt needs the archive.
nspawn() { # --private-network or nothing, command...
  local net=$1; shift
  systemd-nspawn -q -D "$root" --register=no --keep-unit --pipe $net \
    env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@" </dev/null \
    2> >(grep -v 'Attempted to remove disk file system under' >&2)
}
in_root() { nspawn --private-network "$@"; }
in_root_net() { nspawn "" "$@"; }

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
in_root_net apt-get update -q
in_root_net apt-get satisfy -y -q --no-install-recommends --download-only "$depends"
# Installed (maintainer scripts run) without the host's network.
in_root apt-get satisfy -y -q --no-install-recommends --no-download "$depends"
in_root sh -c 'test "$(ls /sys/class/net)" = lo' \
  || { echo "check-install.sh: FAIL: maintainer scripts would see the host's network"; fail=1; }
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

# An upgrade: the same package with a higher version (dpkg-deb -R, the
# control file's Version bumped, dpkg-deb -b) over the edited, enabled
# install.  The edited conffile is kept without a prompt or a .dpkg-* file
# beside it, the enable symlink stays (and is now in deb-systemd-helper's
# state), and nothing else changes on disk.
version=$(dpkg-deb -f "$deb" Version)
mkdir "$work/unpacked"
dpkg-deb -R "$deb" "$work/unpacked"
sed -i "s/^Version: .*/Version: $version+upgrade1/" "$work/unpacked/DEBIAN/control"
dpkg-deb -b "$work/unpacked" "$root/var/cache/mcgw-upgrade.deb" >/dev/null
snapshot before-upgrade
in_root dpkg -i --force-confdef --force-confold /var/cache/mcgw-upgrade.deb
rm -f "$root/var/cache/mcgw-upgrade.deb"
snapshot upgraded
# postinst's `deb-systemd-helper update-state` records the enable symlink the
# operator made (so a later purge removes it): those two paths may appear.
printf '%s\n' ./var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants \
  ./var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/mcgw.service \
  | sort -m - "$work/before-upgrade" | sort -u > "$work/expected-upgraded"
check "upgrade changes no path (no .dpkg-dist/.dpkg-old, symlinks and state kept)" \
  "$work/expected-upgraded" "$work/upgraded"
cmp -s "$root/etc/mcgw/mcgw.yaml" "$root/etc/mcgw/mcgw.yaml.bak" \
  || { echo "check-install.sh: FAIL: the upgrade changed the edited config"; fail=1; }
[ -L "$root/etc/systemd/system/multi-user.target.wants/mcgw.service" ] \
  || { echo "check-install.sh: FAIL: the upgrade lost the enable symlink"; fail=1; }
upgraded=$(in_root dpkg-query -W -f='${Version} ${Status}' mcgw)
[ "$upgraded" = "$version+upgrade1 install ok installed" ] \
  || { echo "check-install.sh: FAIL: after the upgrade: $upgraded"; fail=1; }
echo "check-install.sh: upgrade $version -> $upgraded: config edit and enable symlink kept"

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
