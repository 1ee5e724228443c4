// Test support: a real etcd (Debian's etcd-server) on loopback for
// component tests, with a temporary data directory, optionally with TLS
// and client certificates made with the openssl CLI.  It binds 127.0.0.1
// only; it can be stopped and started again on the same data directory
// and ports.  Header-only.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "tests/support/process.hpp"

namespace mcgw::test {

inline const std::string kEtcd = "/usr/bin/etcd";

// A port nobody listens on right now (the kernel's pick for 127.0.0.1:0).
inline int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) {
    ::close(fd);
  }
  return port;
}

class EtcdServer {
 public:
  // PEM files in the server's directory.  The server trusts ca only;
  // wrong_* is a client certificate from another CA.
  struct Tls {
    std::string ca, server_cert, server_key, client_cert, client_key, wrong_ca, wrong_cert,
        wrong_key;
  };

  // tls: serve https with --client-cert-auth.  Does not start it: start().
  explicit EtcdServer(bool tls = false) : tls_on_(tls) {
    client_port_ = freeLoopbackPort();
    peer_port_ = freeLoopbackPort();
    while (peer_port_ == client_port_) {
      peer_port_ = freeLoopbackPort();
    }
    if (tls_on_) {
      tls_ok_ = makeCertificates();
    }
  }
  ~EtcdServer() { stop(); }
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  // Starts etcd (again, on the same data directory and ports) and waits
  // until it answers /health; false (see log()) if it does not within 20 s.
  bool start() {
    if (tls_on_ && !tls_ok_) {
      return false;
    }
    stop();
    const std::string scheme = tls_on_ ? "https" : "http";
    const std::string client = scheme + "://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    std::vector<std::string> argv = {kEtcd,
                                     "--name=mcgw-test",
                                     "--data-dir=" + dir_.file("data"),
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=mcgw-test=" + peer,
                                     "--initial-cluster-state=new"};
    if (tls_on_) {
      argv.insert(argv.end(), {"--cert-file=" + tls_.server_cert, "--key-file=" + tls_.server_key,
                               "--client-cert-auth", "--trusted-ca-file=" + tls_.ca});
    }
    proc_ = std::make_unique<Process>(argv, std::map<std::string, std::string>{},
                                      dir_.file("etcd-" + std::to_string(++starts_) + ".log"));
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      if (!proc_->running()) {
        return false;
      }
      if (healthy()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Stops etcd (SIGTERM, SIGKILL after 5 s); the data stays for start().
  void stop() {
    if (proc_ && proc_->running()) {
      proc_->signal(SIGTERM);
      if (proc_->wait(std::chrono::seconds(5)) < 0) {
        proc_->signal(SIGKILL);
        proc_->wait(std::chrono::seconds(5));
      }
    }
    proc_.reset();
  }

  bool running() { return proc_ && proc_->running(); }

  // "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT".
  std::string endpoint() const {
    return std::string(tls_on_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(client_port_);
  }
  const Tls& tls() const { return tls_; }
  const TempDir& dir() const { return dir_; }

  // The latest run's output, for a failing test's message.
  std::string log() const {
    return readFile(dir_.file("etcd-" + std::to_string(starts_) + ".log"));
  }

  bool healthy() {
    std::string cmd = "curl -sS --max-time 2 ";
    if (tls_on_) {
      cmd +=
          "--cacert " + tls_.ca + " --cert " + tls_.client_cert + " --key " + tls_.client_key + " ";
    }
    auto r = run(cmd + endpoint() + "/health");
    return r.code == 0 && r.out.find("\"true\"") != std::string::npos;
  }

 private:
  // A CA, a server certificate for IP 127.0.0.1 from it, a client
  // certificate from it, and a client certificate from a second CA.
  // etcd's JSON gateway dials etcd's own gRPC port with the server
  // certificate as its client certificate, so with --client-cert-auth the
  // server certificate needs clientAuth too.
  bool makeCertificates() {
    const std::string d = dir_.path().string() + "/";
    auto ca = [&](const std::string& name) {
      return run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                 "-days 2 -subj /CN=" +
                 name + " -keyout " + d + name + ".key -out " + d + name + ".crt")
                 .code == 0;
    };
    auto cert = [&](const std::string& name, const std::string& issuer, const std::string& ext) {
      writeFile(d + name + ".ext", ext);
      return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" +
                 name + " -keyout " + d + name + ".key -out " + d + name + ".csr")
                     .code == 0 &&
             run("openssl x509 -req -days 2 -in " + d + name + ".csr -CA " + d + issuer +
                 ".crt -CAkey " + d + issuer + ".key -CAcreateserial -extfile " + d + name +
                 ".ext -out " + d + name + ".crt")
                     .code == 0;
    };
    bool ok = ca("ca") && ca("wrong-ca") &&
              cert("server", "ca",
                   "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n") &&
              cert("client", "ca", "extendedKeyUsage=clientAuth\n") &&
              cert("wrong", "wrong-ca", "extendedKeyUsage=clientAuth\n");
    tls_ = {d + "ca.crt",     d + "server.crt",   d + "server.key", d + "client.crt",
            d + "client.key", d + "wrong-ca.crt", d + "wrong.crt",  d + "wrong.key"};
    return ok;
  }

  TempDir dir_;
  bool tls_on_ = false;
  bool tls_ok_ = false;
  Tls tls_;
  int client_port_ = -1;
  int peer_port_ = -1;
  int starts_ = 0;
  std::unique_ptr<Process> proc_;
};

}  // namespace mcgw::test
