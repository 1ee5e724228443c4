#include "control/kernel/netlink.hpp"

#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace mcgw::kernel {

namespace {

std::string errnoText(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

config::IpAddress fromBytes(int family, const void* data) {
  config::IpAddress a;
  a.family = family == AF_INET6 ? config::Family::V6 : config::Family::V4;
  std::memcpy(a.bytes.data(), data, family == AF_INET6 ? 16 : 4);
  return a;
}

int familyOf(const config::IpAddress& a) {
  return a.family == config::Family::V6 ? AF_INET6 : AF_INET;
}

size_t lengthOf(const config::IpAddress& a) {
  return a.family == config::Family::V6 ? 16 : 4;
}

// Sends one request and waits for its acknowledgement.  Returns the
// kernel's errno (0 on success).
Result<int, std::string> request(nlmsghdr* nlh) {
  mnl_socket* s = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (!s) {
    return unexpected(errnoText("netlink socket"));
  }
  struct Close {
    mnl_socket* s;
    ~Close() { mnl_socket_close(s); }
  } close_guard{s};
  if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
    return unexpected(errnoText("netlink bind"));
  }
  nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = static_cast<uint32_t>(time(nullptr));
  if (mnl_socket_sendto(s, nlh, nlh->nlmsg_len) < 0) {
    return unexpected(errnoText("netlink send"));
  }
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  const unsigned portid = mnl_socket_get_portid(s);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(s, buf.data(), buf.size());
    if (n < 0) {
      return unexpected(errnoText("netlink receive"));
    }
    int rc =
        mnl_cb_run(buf.data(), static_cast<size_t>(n), nlh->nlmsg_seq, portid, nullptr, nullptr);
    if (rc == MNL_CB_ERROR) {
      return errno;
    }
    if (rc <= MNL_CB_STOP) {
      return 0;
    }
  }
}

}  // namespace

bool Neighbor::usable() const {
  return (state &
          (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP)) != 0 &&
         (mac[0] & 1) == 0 && mac != std::array<uint8_t, 6>{};
}

Result<std::unique_ptr<NeighborMonitor>, std::string> NeighborMonitor::open() {
  std::unique_ptr<NeighborMonitor> m(new NeighborMonitor());
  m->buf_.resize(MNL_SOCKET_BUFFER_SIZE * 4);
  m->sock_ = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (!m->sock_) {
    return unexpected(errnoText("netlink socket"));
  }
  if (mnl_socket_bind(m->sock_, RTMGRP_NEIGH, MNL_SOCKET_AUTOPID) < 0) {
    return unexpected(errnoText("netlink bind to neighbour notifications"));
  }
  int big = 4 << 20;
  if (setsockopt(mnl_socket_get_fd(m->sock_), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) != 0) {
    setsockopt(mnl_socket_get_fd(m->sock_), SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  }
  if (!m->dump()) {
    return unexpected(errnoText("netlink neighbour dump"));
  }
  return m;
}

NeighborMonitor::~NeighborMonitor() {
  if (sock_) {
    mnl_socket_close(sock_);
  }
}

int NeighborMonitor::fd() const {
  return mnl_socket_get_fd(sock_);
}

// The dump goes over its own blocking socket, so that notifications on the
// monitor socket are not mixed into it.
bool NeighborMonitor::dump() {
  mnl_socket* s = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (!s || mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
    if (s) {
      mnl_socket_close(s);
    }
    return false;
  }
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  auto* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_GETNEIGH;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = static_cast<uint32_t>(time(nullptr));
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = AF_UNSPEC;
  bool ok = mnl_socket_sendto(s, nlh, nlh->nlmsg_len) >= 0;
  std::map<Key, Neighbor> previous;
  entries_.swap(previous);  // apply() fills entries_; restored if the dump fails
  const unsigned portid = mnl_socket_get_portid(s);
  while (ok) {
    ssize_t n = mnl_socket_recvfrom(s, buf.data(), buf.size());
    if (n < 0) {
      ok = false;
      break;
    }
    int rc = mnl_cb_run(
        buf.data(), static_cast<size_t>(n), nlh->nlmsg_seq, portid,
        [](const nlmsghdr* h, void* self) {
          static_cast<NeighborMonitor*>(self)->apply(h);
          return MNL_CB_OK;
        },
        this);
    if (rc <= MNL_CB_STOP) {
      ok = rc == MNL_CB_STOP;
      break;
    }
  }
  mnl_socket_close(s);
  if (!ok) {
    entries_.swap(previous);
  }
  return ok;
}

bool NeighborMonitor::apply(const nlmsghdr* nlh) {
  if (nlh->nlmsg_type != RTM_NEWNEIGH && nlh->nlmsg_type != RTM_DELNEIGH) {
    return false;
  }
  if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(ndmsg))) {
    return false;
  }
  const auto* ndm = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(nlh));
  if ((ndm->ndm_family != AF_INET && ndm->ndm_family != AF_INET6) || (ndm->ndm_flags & NTF_PROXY)) {
    return false;
  }
  const nlattr* dst = nullptr;
  const nlattr* lladdr = nullptr;
  uint32_t ext_flags = 0;
  const auto* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(nlh));
  for (auto* attr = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, sizeof(ndmsg)));
       mnl_attr_ok(attr, static_cast<int>(tail - reinterpret_cast<const char*>(attr)));
       attr = mnl_attr_next(attr)) {
    switch (mnl_attr_get_type(attr)) {
      case NDA_DST:
        dst = attr;
        break;
      case NDA_LLADDR:
        lladdr = attr;
        break;
      case NDA_FLAGS_EXT:
        if (mnl_attr_get_payload_len(attr) >= 4) {
          ext_flags = mnl_attr_get_u32(attr);
        }
        break;
      default:
        break;
    }
  }
  const size_t alen = ndm->ndm_family == AF_INET6 ? 16 : 4;
  if (!dst || mnl_attr_get_payload_len(dst) != alen) {
    return false;
  }
  Neighbor n;
  n.ifindex = ndm->ndm_ifindex;
  n.address = fromBytes(ndm->ndm_family, mnl_attr_get_payload(dst));
  n.state = ndm->ndm_state;
  n.managed = (ext_flags & NTF_EXT_MANAGED) != 0;
  if (lladdr && mnl_attr_get_payload_len(lladdr) == 6) {
    std::memcpy(n.mac.data(), mnl_attr_get_payload(lladdr), 6);
  }
  Key key{n.ifindex, n.address};
  auto it = entries_.find(key);
  if (nlh->nlmsg_type == RTM_DELNEIGH) {
    if (it == entries_.end()) {
      return false;
    }
    entries_.erase(it);
    return true;
  }
  const bool changed = it == entries_.end() || it->second.mac != n.mac ||
                       it->second.usable() != n.usable() || it->second.managed != n.managed;
  entries_[key] = n;
  return changed;
}

bool NeighborMonitor::receive() {
  bool changed = false;
  for (int rounds = 0; rounds < 64; ++rounds) {  // bounded: the control loop has other work
    ssize_t n = mnl_socket_recvfrom(sock_, buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == ENOBUFS) {
        // Notifications were lost: what is still queued is older than what
        // was lost, so discard it and start over from a dump.
        while (mnl_socket_recvfrom(sock_, buf_.data(), buf_.size()) > 0) {
        }
        changed = dump() || changed;
        continue;
      }
      break;  // EAGAIN: nothing more pending
    }
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(buf_.data()); mnl_nlmsg_ok(h, len);
         h = mnl_nlmsg_next(h, &len)) {
      changed = apply(h) || changed;
    }
  }
  return changed;
}

namespace rtnl {

Result<bool, std::string> addManagedNeighbor(int ifindex, const config::IpAddress& address) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  auto* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_NEWNEIGH;
  nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = static_cast<uint8_t>(familyOf(address));
  ndm->ndm_ifindex = ifindex;
  ndm->ndm_state = NUD_NONE;
  mnl_attr_put(nlh, NDA_DST, lengthOf(address), address.bytes.data());
  mnl_attr_put_u32(nlh, NDA_FLAGS_EXT, NTF_EXT_MANAGED);
  auto rc = request(nlh);
  if (!rc) {
    return unexpected(rc.error());
  }
  if (*rc != 0 && *rc != EEXIST) {
    return unexpected("cannot ask the kernel to resolve " + address.toString() + ": " +
                      std::strerror(*rc));
  }
  return *rc == 0;  // false: an entry existed (not ours to delete later)
}

Result<bool, std::string> deleteNeighbor(int ifindex, const config::IpAddress& address) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  auto* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_DELNEIGH;
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = static_cast<uint8_t>(familyOf(address));
  ndm->ndm_ifindex = ifindex;
  mnl_attr_put(nlh, NDA_DST, lengthOf(address), address.bytes.data());
  auto rc = request(nlh);
  if (!rc) {
    return unexpected(rc.error());
  }
  if (*rc != 0 && *rc != ENOENT) {
    return unexpected("cannot delete neighbour " + address.toString() + ": " + std::strerror(*rc));
  }
  return true;
}

Result<bool, std::string> addAddress(int ifindex, const config::InterfaceAddress& a) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  auto* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_NEWADDR;
  nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = static_cast<uint8_t>(familyOf(a.address));
  ifa->ifa_prefixlen = a.length;
  ifa->ifa_index = static_cast<uint32_t>(ifindex);
  if (a.address.family == config::Family::V6) {
    ifa->ifa_flags = IFA_F_NODAD;  // the address is ours by configuration
  }
  mnl_attr_put(nlh, IFA_LOCAL, lengthOf(a.address), a.address.bytes.data());
  mnl_attr_put(nlh, IFA_ADDRESS, lengthOf(a.address), a.address.bytes.data());
  auto rc = request(nlh);
  if (!rc) {
    return unexpected(rc.error());
  }
  if (*rc != 0 && *rc != EEXIST) {
    return unexpected("cannot add address " + a.toString() + ": " + std::strerror(*rc));
  }
  return true;
}

Result<bool, std::string> deleteAddress(int ifindex, const config::InterfaceAddress& a) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  auto* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_DELADDR;
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = static_cast<uint8_t>(familyOf(a.address));
  ifa->ifa_prefixlen = a.length;
  ifa->ifa_index = static_cast<uint32_t>(ifindex);
  mnl_attr_put(nlh, IFA_LOCAL, lengthOf(a.address), a.address.bytes.data());
  mnl_attr_put(nlh, IFA_ADDRESS, lengthOf(a.address), a.address.bytes.data());
  auto rc = request(nlh);
  if (!rc) {
    return unexpected(rc.error());
  }
  if (*rc != 0 && *rc != EADDRNOTAVAIL && *rc != ENOENT && *rc != ENODEV) {
    return unexpected("cannot remove address " + a.toString() + ": " + std::strerror(*rc));
  }
  return true;
}

Result<bool, std::string> setLinkUp(int ifindex, uint32_t mtu) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  auto* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_NEWLINK;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  if (mtu > 0) {
    mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
  }
  auto rc = request(nlh);
  if (!rc) {
    return unexpected(rc.error());
  }
  if (*rc != 0) {
    return unexpected(std::string("cannot set the link up: ") + std::strerror(*rc));
  }
  return true;
}

namespace {

// An RTM_NEWNEIGH / RTM_DELNEIGH for the device itself (family AF_BRIDGE,
// NTF_SELF) with a MAC: the kernel's default handler edits the device's
// unicast list, and accepts static (permanent) entries only.
Result<int, std::string> unicastRequest(uint16_t type, int ifindex,
                                        const std::array<uint8_t, 6>& mac) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  auto* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = type;
  if (type == RTM_NEWNEIGH) {
    nlh->nlmsg_flags = NLM_F_CREATE;  // not EXCL: an address already there is fine
  }
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = AF_BRIDGE;
  ndm->ndm_ifindex = ifindex;
  ndm->ndm_state = NUD_PERMANENT;
  ndm->ndm_flags = NTF_SELF;
  mnl_attr_put(nlh, NDA_LLADDR, mac.size(), mac.data());
  return request(nlh);
}

std::string macText(const std::array<uint8_t, 6>& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

}  // namespace

Result<bool, std::string> addUnicastAddress(int ifindex, const std::array<uint8_t, 6>& mac) {
  auto rc = unicastRequest(RTM_NEWNEIGH, ifindex, mac);
  if (!rc) {
    return unexpected(rc.error());
  }
  if (*rc != 0) {
    return unexpected("cannot add " + macText(mac) +
                      " to the unicast filter: " + std::strerror(*rc));
  }
  return true;
}

Result<bool, std::string> deleteUnicastAddress(int ifindex, const std::array<uint8_t, 6>& mac) {
  auto rc = unicastRequest(RTM_DELNEIGH, ifindex, mac);
  if (!rc) {
    return unexpected(rc.error());
  }
  if (*rc != 0 && *rc != ENOENT) {
    return unexpected("cannot remove " + macText(mac) +
                      " from the unicast filter: " + std::strerror(*rc));
  }
  return true;
}

}  // namespace rtnl

}  // namespace mcgw::kernel
