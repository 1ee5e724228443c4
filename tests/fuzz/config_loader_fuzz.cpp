// libFuzzer target: any bytes as a config file.  The loader must return a
// Config or errors, never crash, hang or leak; every error must be one line
// of valid text of bounded size, and every string of an accepted Config
// valid single-line text (UTF-8 without control characters).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "config/loader_detail.hpp"
#include "config/text.hpp"

namespace {

using mcgw::config::Config;

// An error's printed form: the file name, a position, the path and the
// message, each bounded (escaping may make a bounded part 4 times longer).
constexpr size_t kMaxErrorBytes =
    64 + 4 * (mcgw::config::detail::kMaxPath + mcgw::config::detail::ErrorSink::kMaxMessage) + 64;

[[noreturn]] void fail(const char* what, std::string_view s) {
  std::fprintf(stderr, "%s: %s\n", what, mcgw::text::escape(s, 512).c_str());
  std::abort();
}

void text(std::string_view s, const char* what) {
  if (mcgw::text::findProblem(s)) {
    fail(what, s);
  }
}

void texts(const std::vector<std::string>& v, const char* what) {
  for (const auto& s : v) {
    text(s, what);
  }
}

void checkConfig(const Config& c) {
  text(c.source, "source");
  text(c.checksum, "checksum");
  text(c.node.name, "node.name");
  text(c.node.site, "node.site");
  text(c.node.description, "node.description");
  text(c.eal.file_prefix, "eal.file-prefix");
  texts(c.eal.extra_args, "eal.extra-args");
  for (const auto& p : c.ports) {
    text(p.name, "ports[].name");
    text(p.pci, "ports[].pci");
    text(p.vdev, "ports[].vdev");
    text(p.tenant, "ports[].tenant");
  }
  for (const auto& t : c.tenants) {
    text(t.name, "tenants[].name");
    for (const auto& r : t.routes) {
      text(r.peer, "tenants[].routes[].peer");
    }
  }
  for (const auto& p : c.peers) {
    text(p.name, "peers[].name");
    texts(p.tenants, "peers[].tenants");
    for (const auto& l : p.lines) {
      text(l.name, "peers[].lines[].name");
      text(l.port, "peers[].lines[].port");
    }
  }
  for (const auto& n : c.bgp.neighbors) {
    text(n.port, "bgp.neighbors[].port");
  }
  for (const auto& g : c.vrrp_groups) {
    text(g.port, "vrrp[].port");
    for (const auto& t : g.track) {
      text(t.object, "vrrp[].track[].object");
    }
    text(g.active_command, "vrrp[].active-command");
    text(g.notify, "vrrp[].notify");
  }
  const auto& plan = c.address_plan;
  text(plan.store_path, "address-plan.store.path");
  texts(plan.etcd_endpoints, "address-plan.store.endpoints");
  for (const auto& p : plan.pools) {
    text(p.name, "address-plan.pools[].name");
  }
  for (const auto& v : plan.vpcs) {
    text(v.cloud, "vpc cloud");
    text(v.region, "vpc region");
    text(v.name, "vpc name");
    text(v.tenant, "vpc tenant");
    text(v.site, "vpc site");
  }
  for (const auto& m : plan.mapped_ranges) {
    text(m.name, "address-plan.mapped-ranges[].name");
    text(m.site, "address-plan.mapped-ranges[].site");
  }
  text(c.api.socket, "api.socket");
  text(c.api.group, "api.group");
  text(c.logging.level, "logging.level");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = mcgw::config::loadConfigText(std::string_view(reinterpret_cast<const char*>(data), size),
                                        "fuzz.yaml");
  if (r.ok()) {
    checkConfig(**r);
    return 0;
  }
  if (r.error().empty() || r.error().size() > mcgw::config::detail::ErrorSink::kMaxErrors + 1) {
    fail("error count", std::to_string(r.error().size()));
  }
  for (const auto& e : r.error()) {
    const std::string s = e.toString();
    text(s, "error");
    if (s.size() > kMaxErrorBytes) {
      fail("error too long", s);
    }
  }
  return 0;
}
