# CPack DEB packaging of mcgw (docs/packaging.md).
#
# Not included by CMakeLists.txt: scripts/package.sh configures its own build
# directory with -DCMAKE_PROJECT_INCLUDE=<this file>, which CMake includes at
# the end of project(), so the developer and CI build trees are unaffected.
# The package is then made with `cpack -G DEB` in that build directory.
include(GNUInstallDirs)

set(MCGW_PACKAGING_DIR ${CMAKE_CURRENT_LIST_DIR})

# /etc/mcgw/mcgw.yaml is installed to an absolute path: CPack must stage with
# DESTDIR (and the real /usr prefix) or it would write into this host's /etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_ERROR_ON_ABSOLUTE_INSTALL_DESTINATION OFF)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mcgw)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "multi-cloud interconnect gateway")
set(CPACK_PACKAGE_CONTACT "mcgw maintainers <maintainers@users.noreply.a-seed-c4b212e5.example>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${CPACK_PACKAGE_CONTACT})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.org/mcgw")
# Extended description (the synopsis is CPACK_PACKAGE_DESCRIPTION_SUMMARY;
# CPack indents every line and turns empty lines into " .").
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "mcgw joins the private networks of an own data centre and cloud VPCs
over dedicated lines and the internet: a DPDK fast path with VXLAN and
Geneve overlays, BGP and BFD through FRR, VRRP failover between two
gateways per site, ESP encryption of lines and one global address plan.

This package contains the daemon mcgwd (run as mcgw.service), the CLI
mcgwctl, the benchmark mcgw-bench, the XDP and tc eBPF objects, the YANG
model and an example /etc/mcgw/mcgw.yaml. The service is not enabled on
installation: edit the config, then run systemctl enable --now mcgw.")

# Depends: computed by dpkg-shlibdeps from the ELF files, never by hand.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# ... except DPDK's drivers: EAL dlopen()s them from its plugin directory
# (pmds-23.0/), so dpkg-shlibdeps cannot see them. These are the buses,
# mempool and vdev drivers mcgw's own port kinds and ESP engine use; CPack
# merges this list with the computed one. NIC drivers for PCI ports come with
# the dpdk package (Recommends, with dpdk-devbind.py).
# procps: the unit's ExecReload is /bin/kill, which a minimal Debian 12 lacks
# (found by packaging/boot-test.sh: `systemctl reload mcgw` failed).
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "procps, librte-bus-pci23, librte-bus-vdev23, librte-mempool-ring23, librte-net-null23, librte-net-ring23, librte-net-af-xdp23, librte-net-af-packet23, librte-net-tap23, librte-net-pcap23, librte-crypto-ipsec-mb23")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dpdk")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "frr, frr-pythontools")

# Maintainer scripts and the conffiles list; modes as lintian expects them.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${MCGW_PACKAGING_DIR}/conffiles
    ${MCGW_PACKAGING_DIR}/postinst
    ${MCGW_PACKAGING_DIR}/prerm
    ${MCGW_PACKAGING_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# Strip mcgwd, mcgwctl and mcgw-bench (install(TARGETS) only: the eBPF
# objects keep their BTF, which libbpf needs).
set(CPACK_STRIP_FILES ON)

# What Debian policy wants in /usr/share/doc/mcgw: the copyright file and a
# changelog (native package: changelog.gz), compressed reproducibly.
set(MCGW_PKG_CHANGELOG ${PROJECT_BINARY_DIR}/packaging/changelog)
string(TIMESTAMP MCGW_PKG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${MCGW_PKG_CHANGELOG}
"mcgw (${PROJECT_VERSION}) unstable; urgency=medium

  * Package built from the source tree by scripts/package.sh.

 -- ${CPACK_PACKAGE_CONTACT}  ${MCGW_PKG_DATE}
")
execute_process(COMMAND gzip -9nf ${MCGW_PKG_CHANGELOG} COMMAND_ERROR_IS_FATAL ANY)
install(FILES ${MCGW_PKG_CHANGELOG}.gz DESTINATION ${CMAKE_INSTALL_DOCDIR}
        RENAME changelog.gz PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(FILES ${MCGW_PACKAGING_DIR}/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR}
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

# lintian: the eBPF objects are BPF, not amd64 ELF, on purpose.
install(FILES ${MCGW_PACKAGING_DIR}/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME mcgw PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# After staging, before packing: compress man pages (Debian policy 12.1) and
# drop empty directories left by install(DIRECTORY ... FILES_MATCHING).
set(CPACK_PRE_BUILD_SCRIPTS ${MCGW_PACKAGING_DIR}/cpack-pre-build.cmake)

include(CPack)
