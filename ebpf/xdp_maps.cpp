#include "ebpf/xdp_maps.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

namespace mcgw::ebpf {
namespace {

std::string errorText(int ret) {
  return std::strerror(ret < 0 ? -ret : ret);
}

using RawKey = std::array<uint8_t, sizeof(mcgw_xdp_addr)>;

RawKey toKey(const config::IpAddress& a) {
  mcgw_xdp_addr k{};
  if (a.family == config::Family::V4) {
    k.family = MCGW_XDP_FAMILY_IPV4;
    std::memcpy(k.addr, a.bytes.data(), 4);
  } else {
    k.family = MCGW_XDP_FAMILY_IPV6;
    std::memcpy(k.addr, a.bytes.data(), 16);
  }
  RawKey raw;
  std::memcpy(raw.data(), &k, sizeof k);
  return raw;
}

std::optional<config::IpAddress> fromKey(const RawKey& raw) {
  mcgw_xdp_addr k;
  std::memcpy(&k, raw.data(), sizeof k);
  config::IpAddress a;
  if (k.family == MCGW_XDP_FAMILY_IPV4) {
    a.family = config::Family::V4;
    std::memcpy(a.bytes.data(), k.addr, 4);
  } else if (k.family == MCGW_XDP_FAMILY_IPV6) {
    a.family = config::Family::V6;
    std::memcpy(a.bytes.data(), k.addr, 16);
  } else {
    return std::nullopt;
  }
  return a;
}

Result<std::set<RawKey>, std::string> readKeys(int fd, const char* what) {
  std::set<RawKey> keys;
  RawKey key{};
  RawKey next{};
  const void* prev = nullptr;  // the first call asks for the first key
  // A key deleted under us restarts the walk from the first key: bound it.
  for (int steps = 0;; ++steps) {
    int ret = bpf_map_get_next_key(fd, prev, next.data());
    if (ret == -ENOENT) {
      break;
    }
    if (ret < 0) {
      return unexpected(std::string("reading ") + what + ": " + errorText(ret));
    }
    keys.insert(next);
    key = next;
    prev = key.data();
    if (steps > 65536) {
      return unexpected(std::string("reading ") + what + ": too many keys");
    }
  }
  return keys;
}

Result<std::vector<config::IpAddress>, std::string> readAddresses(int fd, const char* what) {
  auto keys = readKeys(fd, what);
  if (!keys) {
    return unexpected(keys.error());
  }
  std::vector<config::IpAddress> out;
  for (const RawKey& k : *keys) {
    if (auto a = fromKey(k)) {
      out.push_back(*a);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<bool, std::string> replaceAddresses(int fd, const char* what, size_t capacity,
                                           const std::vector<config::IpAddress>& addresses) {
  std::set<RawKey> want;
  for (const auto& a : addresses) {
    want.insert(toKey(a));
  }
  if (want.size() > capacity) {
    return unexpected(std::string(what) + ": " + std::to_string(want.size()) +
                      " addresses, the map holds " + std::to_string(capacity));
  }
  auto have = readKeys(fd, what);
  if (!have) {
    return unexpected(have.error());
  }
  std::vector<RawKey> add;
  std::vector<RawKey> stale;
  std::set_difference(want.begin(), want.end(), have->begin(), have->end(),
                      std::back_inserter(add));
  std::set_difference(have->begin(), have->end(), want.begin(), want.end(),
                      std::back_inserter(stale));

  auto deleteStale = [&]() -> Result<bool, std::string> {
    for (const RawKey& k : stale) {
      int ret = bpf_map_delete_elem(fd, k.data());
      if (ret < 0 && ret != -ENOENT) {
        return unexpected(std::string("deleting from ") + what + ": " + errorText(ret));
      }
    }
    return true;
  };
  // Add first unless the map would overflow in between.
  bool delete_first = have->size() + add.size() > capacity;
  if (delete_first) {
    if (auto r = deleteStale(); !r) {
      return r;
    }
  }
  const mcgw_xdp_addr_info info{};
  for (const RawKey& k : add) {
    int ret = bpf_map_update_elem(fd, k.data(), &info, BPF_ANY);
    if (ret < 0) {
      return unexpected(std::string("adding to ") + what + ": " + errorText(ret));
    }
  }
  if (!delete_first) {
    return deleteStale();
  }
  return true;
}

}  // namespace

std::string defaultXdpObjectPath() {
  std::error_code ec;
  if (const char* env = std::getenv("MCGW_XDP_OBJECT"); env && *env) {
    return env;
  }
  // A binary run from the build tree uses the build tree's object, so an
  // older installed copy never shadows a fresh build.
  const std::filesystem::path build_dir =
      std::filesystem::path(kXdpObjectBuildPath).parent_path().parent_path();
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (!ec && self.rfind(build_dir.string() + "/", 0) == 0 &&
      std::filesystem::exists(kXdpObjectBuildPath, ec)) {
    return kXdpObjectBuildPath;
  }
  if (std::filesystem::exists(kXdpObjectInstallPath, ec)) {
    return kXdpObjectInstallPath;
  }
  if (std::filesystem::exists(kXdpObjectBuildPath, ec)) {
    return kXdpObjectBuildPath;
  }
  return kXdpObjectInstallPath;
}

Result<XdpMaps, std::string> XdpMaps::attachToInterface(const std::string& ifname) {
  unsigned ifindex = if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    return unexpected("interface " + ifname + ": " + std::strerror(errno));
  }
  bpf_xdp_query_opts q{};
  q.sz = sizeof q;
  int ret = bpf_xdp_query(static_cast<int>(ifindex), 0, &q);
  if (ret < 0) {
    return unexpected("querying the XDP program of " + ifname + ": " + errorText(ret));
  }
  // prog_id is set when exactly one mode has a program; else prefer native.
  uint32_t prog_id = q.prog_id       ? q.prog_id
                     : q.drv_prog_id ? q.drv_prog_id
                     : q.skb_prog_id ? q.skb_prog_id
                                     : q.hw_prog_id;
  if (prog_id == 0) {
    return unexpected("no XDP program is attached to " + ifname);
  }
  int prog_fd = bpf_prog_get_fd_by_id(prog_id);
  if (prog_fd < 0) {
    return unexpected("opening XDP program " + std::to_string(prog_id) + " of " + ifname + ": " +
                      errorText(prog_fd));
  }
  auto maps = fromProgram(prog_fd);
  ::close(prog_fd);
  if (!maps) {
    return unexpected(ifname + ": " + maps.error());
  }
  return maps;
}

Result<bool, std::string> detachStaleProgram(const std::string& ifname) {
  const unsigned ifindex = if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    return false;  // the PMD reports a missing interface in its own words
  }
  bpf_xdp_query_opts q{};
  q.sz = sizeof q;
  int ret = bpf_xdp_query(static_cast<int>(ifindex), 0, &q);
  if (ret < 0) {
    return unexpected("querying the XDP program of " + ifname + ": " + errorText(ret));
  }
  bool removed = false;
  const std::pair<uint32_t, uint32_t> modes[] = {{q.drv_prog_id, XDP_FLAGS_DRV_MODE},
                                                 {q.skb_prog_id, XDP_FLAGS_SKB_MODE}};
  for (const auto& [id, mode] : modes) {
    if (id == 0) {
      continue;
    }
    const int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) {
      return unexpected("opening XDP program " + std::to_string(id) + " of " + ifname + ": " +
                        errorText(fd));
    }
    const bool ours = XdpMaps::fromProgram(fd).ok();
    if (ours) {
      // Only this very program: a concurrent replacement is left alone.
      bpf_xdp_attach_opts opts{};
      opts.sz = sizeof opts;
      opts.old_prog_fd = fd;
      ret = bpf_xdp_detach(static_cast<int>(ifindex), mode | XDP_FLAGS_REPLACE, &opts);
    }
    ::close(fd);
    if (!ours) {
      continue;
    }
    if (ret < 0) {
      return unexpected("detaching the XDP program left on " + ifname + ": " + errorText(ret));
    }
    removed = true;
  }
  return removed;
}

Result<XdpMaps, std::string> XdpMaps::fromProgram(int prog_fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  // libbpf 1.1 has no bpf_prog_get_info_by_fd yet.
  int ret = bpf_obj_get_info_by_fd(prog_fd, &info, &len);
  if (ret < 0) {
    return unexpected("reading the XDP program's info: " + errorText(ret));
  }
  std::vector<uint32_t> ids(info.nr_map_ids);
  const uint32_t prog_id = info.id;
  info = bpf_prog_info{};
  info.nr_map_ids = static_cast<uint32_t>(ids.size());
  info.map_ids = reinterpret_cast<uintptr_t>(ids.data());
  len = sizeof info;
  ret = bpf_obj_get_info_by_fd(prog_fd, &info, &len);
  if (ret < 0) {
    return unexpected("reading the XDP program's maps: " + errorText(ret));
  }
  ids.resize(std::min<size_t>(ids.size(), info.nr_map_ids));

  struct Want {
    const char* name;
    uint32_t type;
    uint32_t key_size;
    uint32_t value_size;
    int XdpMaps::*fd;
  };
  const Want wants[] = {
      {MCGW_XDP_MAP_PORT_CONFIG, BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), sizeof(mcgw_xdp_port_config),
       &XdpMaps::port_cfg_fd_},
      {MCGW_XDP_MAP_VTEPS, BPF_MAP_TYPE_HASH, sizeof(mcgw_xdp_addr), sizeof(mcgw_xdp_addr_info),
       &XdpMaps::vteps_fd_},
      {MCGW_XDP_MAP_LOCAL, BPF_MAP_TYPE_HASH, sizeof(mcgw_xdp_addr), sizeof(mcgw_xdp_addr_info),
       &XdpMaps::local_fd_},
      {MCGW_XDP_MAP_COUNTERS, BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(uint32_t), sizeof(mcgw_xdp_counter),
       &XdpMaps::counters_fd_},
  };

  XdpMaps maps;
  maps.prog_id_ = prog_id;
  for (uint32_t id : ids) {
    int fd = bpf_map_get_fd_by_id(id);
    if (fd < 0) {
      return unexpected("opening map " + std::to_string(id) + ": " + errorText(fd));
    }
    bpf_map_info m{};
    uint32_t mlen = sizeof m;
    ret = bpf_obj_get_info_by_fd(fd, &m, &mlen);
    if (ret < 0) {
      ::close(fd);
      return unexpected("reading map " + std::to_string(id) + ": " + errorText(ret));
    }
    const Want* w = nullptr;
    for (const Want& candidate : wants) {
      if (std::strncmp(m.name, candidate.name, sizeof m.name) == 0) {
        w = &candidate;
      }
    }
    if (w == nullptr || maps.*(w->fd) >= 0) {
      ::close(fd);  // xsks_map (the PMD's business) or a map we do not know
      continue;
    }
    if (m.type != w->type || m.key_size != w->key_size || m.value_size != w->value_size) {
      ::close(fd);
      return unexpected(std::string("map ") + w->name +
                        " has another shape than this mcgwd expects (an XDP object from another "
                        "mcgw version?)");
    }
    if (w->fd == &XdpMaps::counters_fd_ && m.max_entries < MCGW_XDP_VERDICT_COUNT) {
      ::close(fd);
      return unexpected(std::string("map ") + w->name + " has too few entries");
    }
    maps.*(w->fd) = fd;
  }
  for (const Want& w : wants) {
    if (maps.*(w.fd) < 0) {
      return unexpected("XDP program " + std::to_string(prog_id) + " has no map " + w.name +
                        ": it is not mcgw's XDP program (mcgw_xdp.bpf.o)");
    }
  }
  return maps;
}

XdpMaps::XdpMaps(XdpMaps&& other) noexcept {
  *this = std::move(other);
}

XdpMaps& XdpMaps::operator=(XdpMaps&& other) noexcept {
  if (this != &other) {
    close();
    prog_id_ = std::exchange(other.prog_id_, 0);
    port_cfg_fd_ = std::exchange(other.port_cfg_fd_, -1);
    vteps_fd_ = std::exchange(other.vteps_fd_, -1);
    local_fd_ = std::exchange(other.local_fd_, -1);
    counters_fd_ = std::exchange(other.counters_fd_, -1);
  }
  return *this;
}

XdpMaps::~XdpMaps() {
  close();
}

void XdpMaps::close() {
  for (int* fd : {&port_cfg_fd_, &vteps_fd_, &local_fd_, &counters_fd_}) {
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
  }
}

Result<mcgw_xdp_port_config, std::string> XdpMaps::portConfig() const {
  uint32_t key = 0;
  mcgw_xdp_port_config cfg{};
  int ret = bpf_map_lookup_elem(port_cfg_fd_, &key, &cfg);
  if (ret < 0) {
    return unexpected("reading " MCGW_XDP_MAP_PORT_CONFIG ": " + errorText(ret));
  }
  return cfg;
}

Result<bool, std::string> XdpMaps::setRole(XdpRole role) {
  auto cfg = portConfig();
  if (!cfg) {
    return unexpected(cfg.error());
  }
  cfg->role = static_cast<uint32_t>(role);
  uint32_t key = 0;
  int ret = bpf_map_update_elem(port_cfg_fd_, &key, &*cfg, BPF_ANY);
  if (ret < 0) {
    return unexpected("writing " MCGW_XDP_MAP_PORT_CONFIG ": " + errorText(ret));
  }
  return true;
}

Result<bool, std::string> XdpMaps::setFlags(uint32_t flags) {
  auto cfg = portConfig();
  if (!cfg) {
    return unexpected(cfg.error());
  }
  cfg->flags = flags;
  uint32_t key = 0;
  int ret = bpf_map_update_elem(port_cfg_fd_, &key, &*cfg, BPF_ANY);
  if (ret < 0) {
    return unexpected("writing " MCGW_XDP_MAP_PORT_CONFIG ": " + errorText(ret));
  }
  return true;
}

Result<bool, std::string> XdpMaps::setMac(const std::array<uint8_t, 6>& mac) {
  auto cfg = portConfig();
  if (!cfg) {
    return unexpected(cfg.error());
  }
  std::memcpy(cfg->mac, mac.data(), 6);
  uint32_t key = 0;
  int ret = bpf_map_update_elem(port_cfg_fd_, &key, &*cfg, BPF_ANY);
  if (ret < 0) {
    return unexpected("writing " MCGW_XDP_MAP_PORT_CONFIG ": " + errorText(ret));
  }
  return true;
}

Result<bool, std::string> XdpMaps::setVteps(const std::vector<config::IpAddress>& addresses) {
  return replaceAddresses(vteps_fd_, MCGW_XDP_MAP_VTEPS, MCGW_XDP_MAX_VTEPS, addresses);
}

Result<bool, std::string> XdpMaps::setLocalAddresses(
    const std::vector<config::IpAddress>& addresses) {
  return replaceAddresses(local_fd_, MCGW_XDP_MAP_LOCAL, MCGW_XDP_MAX_LOCAL, addresses);
}

Result<std::vector<config::IpAddress>, std::string> XdpMaps::vteps() const {
  return readAddresses(vteps_fd_, MCGW_XDP_MAP_VTEPS);
}

Result<std::vector<config::IpAddress>, std::string> XdpMaps::localAddresses() const {
  return readAddresses(local_fd_, MCGW_XDP_MAP_LOCAL);
}

Result<XdpCounters, std::string> XdpMaps::counters() const {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) {
    return unexpected("counting CPUs: " + errorText(cpus));
  }
  // Per-CPU values come back one per possible CPU, each rounded up to 8 bytes
  // (mcgw_xdp_counter already is a multiple of 8).
  static_assert(sizeof(mcgw_xdp_counter) % 8 == 0);
  std::vector<mcgw_xdp_counter> per_cpu(static_cast<size_t>(cpus));
  XdpCounters out{};
  for (uint32_t key = 0; key < kXdpVerdictCount; ++key) {
    int ret = bpf_map_lookup_elem(counters_fd_, &key, per_cpu.data());
    if (ret < 0) {
      return unexpected("reading " MCGW_XDP_MAP_COUNTERS ": " + errorText(ret));
    }
    for (const mcgw_xdp_counter& c : per_cpu) {
      out[key].packets += c.packets;
      out[key].bytes += c.bytes;
    }
  }
  return out;
}

}  // namespace mcgw::ebpf
