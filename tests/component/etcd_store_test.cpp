// The etcd store against a real etcd (Debian's etcd-server) on loopback:
// the client's range/txn/watch, TLS with right and wrong client
// certificates, an absent etcd, concurrent writers in four processes,
// waitChange, and stored data that does not parse.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <set>
#include <thread>

#include "control/plan/etcd_client.hpp"
#include "control/plan/etcd_store.hpp"
#include "tests/support/etcd.hpp"

namespace mcgw::plan {
namespace {

using namespace std::chrono_literals;
using etcd::Client;
using etcd::ClientOptions;
using test::EtcdServer;
using Kind = StoreError::Kind;

ClientOptions plainOptions(const EtcdServer& server) {
  ClientOptions o;
  o.endpoints = {server.endpoint()};
  return o;
}

ClientOptions tlsOptions(const EtcdServer& server, bool right_cert = true) {
  ClientOptions o = plainOptions(server);
  o.ca_file = server.tls().ca;
  o.cert_file = right_cert ? server.tls().client_cert : server.tls().wrong_cert;
  o.key_file = right_cert ? server.tls().client_key : server.tls().wrong_key;
  return o;
}

EtcdStoreOptions storeOptions(ClientOptions client) {
  EtcdStoreOptions o;
  o.client = std::move(client);
  return o;
}

IpPrefix prefix(const char* text) {
  return *IpPrefix::parse(text);
}

StoredVpc vpc(const std::string& name, const char* range) {
  return StoredVpc{name, "aws", "eu-west-1", {prefix(range)}, "pool-a", "", "", "allocate"};
}

// Store::Change that adds v.
Store::Change add(StoredVpc v) {
  return [v](Snapshot& s) -> Result<bool, std::string> {
    s.vpcs.push_back(v);
    return true;
  };
}

#define START_OR_FAIL(server) ASSERT_TRUE((server).start()) << (server).log()

TEST(EtcdClient, RangeTxnPutDeleteRoundTrip) {
  EtcdServer server;
  START_OR_FAIL(server);
  Client client(plainOptions(server));

  // Keys and values are bytes: NUL, 0xFF, and text that is not UTF-8.
  const std::string key("/t/a\0\xff", 6);
  const std::string value("\xe9\0v", 3);
  auto put = client.put(key, value);
  ASSERT_TRUE(put) << put.error().message;
  ASSERT_TRUE(client.put("/t/b", "2"));
  ASSERT_TRUE(client.put("/u/c", "3"));

  auto one = client.range(key);
  ASSERT_TRUE(one) << one.error().message;
  ASSERT_EQ(one->kvs.size(), 1u);
  EXPECT_EQ(one->kvs[0].key, key);
  EXPECT_EQ(one->kvs[0].value, value);
  EXPECT_EQ(one->kvs[0].version, 1);
  EXPECT_EQ(one->kvs[0].mod_revision, *put);
  EXPECT_EQ(one->kvs[0].create_revision, *put);

  auto prefixed = client.range("/t/", etcd::prefixEnd("/t/"));
  ASSERT_TRUE(prefixed);
  ASSERT_EQ(prefixed->kvs.size(), 2u);
  EXPECT_EQ(prefixed->kvs[0].key, key);
  EXPECT_EQ(prefixed->kvs[1].key, "/t/b");
  EXPECT_EQ(prefixed->revision, *put + 2);

  auto absent = client.range("/none");
  ASSERT_TRUE(absent);
  EXPECT_TRUE(absent->kvs.empty());

  // A txn whose compare holds applies success; one whose compare fails, failure.
  using C = etcd::Compare;
  using W = etcd::Write;
  auto ok = client.txn({{C::Target::kMod, C::Result::kEqual, "/t/b", *put + 1, ""}},
                       {{W::Kind::kPut, "/t/b", "22", ""}, {W::Kind::kDelete, "/u/c", "", ""}},
                       {{W::Kind::kPut, "/t/failed", "x", ""}});
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_TRUE(ok->succeeded);
  EXPECT_EQ(ok->revision, *put + 3);
  auto lost =
      client.txn({{C::Target::kMod, C::Result::kEqual, "/t/b", *put + 1, ""},
                  {C::Target::kValue, C::Result::kEqual, "/t/b", 0, "22"}},
                 {{W::Kind::kPut, "/t/b", "wrong", ""}}, {{W::Kind::kPut, "/t/failed", "x", ""}});
  ASSERT_TRUE(lost);
  EXPECT_FALSE(lost->succeeded);
  // An absent key compares as mod_revision 0 and version 0.
  auto absent_guard = client.txn({{C::Target::kVersion, C::Result::kEqual, "/none", 0, ""}},
                                 {{W::Kind::kPut, "/none", "now", ""}});
  ASSERT_TRUE(absent_guard);
  EXPECT_TRUE(absent_guard->succeeded);

  auto after = client.range("/", etcd::prefixEnd("/"));
  ASSERT_TRUE(after);
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& kv : after->kvs) {
    got.emplace_back(kv.key, kv.value);
  }
  EXPECT_EQ(got, (std::vector<std::pair<std::string, std::string>>{
                     {"/none", "now"}, {key, value}, {"/t/b", "22"}, {"/t/failed", "x"}}));

  auto deleted = client.deleteRange("/t/", etcd::prefixEnd("/t/"));
  ASSERT_TRUE(deleted);
  auto empty = client.range("/t/", etcd::prefixEnd("/t/"));
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->kvs.empty());
}

TEST(EtcdClient, WatchStreamsEventsFromARevision) {
  EtcdServer server;
  START_OR_FAIL(server);
  Client client(plainOptions(server));
  auto first = client.put("/w/a", "1");
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(client.put("/other", "x"));
  ASSERT_TRUE(client.put("/w/b", "2"));
  ASSERT_TRUE(client.deleteRange("/w/a"));

  // From the first put: the history, in order, then nothing more (timeout).
  std::vector<std::string> seen;
  bool created = false;
  std::atomic<bool> stop{false};
  auto outcome = client.watch(
      "/w/", etcd::prefixEnd("/w/"), *first,
      [&](const etcd::WatchResponse& r) {
        created = created || r.created;
        for (const auto& e : r.events) {
          seen.push_back((e.type == etcd::WatchEvent::Type::kPut ? "put " : "delete ") + e.kv.key +
                         "@" + std::to_string(e.kv.mod_revision - *first));
        }
        return true;
      },
      1500ms, stop);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->end, etcd::WatchEnd::kTimeout);
  EXPECT_TRUE(created);
  EXPECT_EQ(seen, (std::vector<std::string>{"put /w/a@0", "put /w/b@2", "delete /w/a@3"}));

  // A change made while watching ends the watch when the callback says so.
  std::thread writer([&] {
    std::this_thread::sleep_for(300ms);
    Client other(plainOptions(server));
    (void)other.put("/w/c", "3");
  });
  std::string got;
  auto live = client.watch(
      "/w/", etcd::prefixEnd("/w/"), 0,
      [&](const etcd::WatchResponse& r) {
        for (const auto& e : r.events) {
          got = e.kv.key + "=" + e.kv.value;
        }
        return got.empty();
      },
      10s, stop);
  writer.join();
  ASSERT_TRUE(live) << live.error().message;
  EXPECT_EQ(live->end, etcd::WatchEnd::kDone);
  EXPECT_EQ(got, "/w/c=3");

  // The stop flag ends a watch from another thread.
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop = true;
  });
  auto stopped = client.watch(
      "/w/", etcd::prefixEnd("/w/"), 0, [](const etcd::WatchResponse&) { return true; }, 60s, stop);
  stopper.join();
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->end, etcd::WatchEnd::kStopped);
}

TEST(EtcdClient, WatchFromACompactedRevisionSaysSo) {
  EtcdServer server;
  START_OR_FAIL(server);
  Client client(plainOptions(server));
  auto first = client.put("/w/a", "1");
  ASSERT_TRUE(first);
  auto last = client.put("/w/a", "2");
  ASSERT_TRUE(last);
  auto compact =
      test::run("etcdctl --endpoints=" + server.endpoint() + " compact " + std::to_string(*last));
  ASSERT_EQ(compact.code, 0) << compact.err;
  std::atomic<bool> stop{false};
  auto outcome = client.watch(
      "/w/", etcd::prefixEnd("/w/"), *first, [](const etcd::WatchResponse&) { return true; }, 5s,
      stop);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->end, etcd::WatchEnd::kCompacted);
  EXPECT_EQ(outcome->last.compact_revision, *last);
}

TEST(EtcdStore, UpdateLoadAndRelease) {
  EtcdServer server;
  START_OR_FAIL(server);
  EtcdStore store(storeOptions(plainOptions(server)));
  auto empty = store.load();
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->revision, 0u);
  EXPECT_TRUE(empty->vpcs.empty());

  StoredVpc b = vpc("vpc-b", "10.1.0.0/16");
  b.prefixes.push_back(prefix("2001:db8:1::/48"));
  b.tenant = "blue";
  b.site = "fra1";
  auto one = store.update(add(b));
  ASSERT_TRUE(one) << one.error().message;
  auto two = store.update(add(vpc("vpc-a", "10.2.0.0/16")));
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_GT(two->revision, one->revision);

  auto loaded = store.load();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(*loaded, *two);
  ASSERT_EQ(loaded->vpcs.size(), 2u);
  EXPECT_EQ(loaded->vpcs[0], vpc("vpc-a", "10.2.0.0/16"));
  EXPECT_EQ(loaded->vpcs[1], b);

  // What is in etcd: one readable JSON object per VPC, and the serial key.
  Client client(plainOptions(server));
  auto raw = client.range("/mcgw/plan/", etcd::prefixEnd("/mcgw/plan/"));
  ASSERT_TRUE(raw);
  ASSERT_EQ(raw->kvs.size(), 3u);
  EXPECT_EQ(raw->kvs[0].key, "/mcgw/plan/serial");
  EXPECT_EQ(raw->kvs[0].version, 2);
  EXPECT_EQ(raw->kvs[2].key, "/mcgw/plan/vpcs/vpc-b");
  EXPECT_EQ(raw->kvs[2].value,
            R"({"cloud":"aws","name":"vpc-b","pool":"pool-a","prefixes":["10.1.0.0/16",)"
            R"("2001:db8:1::/48"],"region":"eu-west-1","site":"fra1","source":"allocate",)"
            R"("tenant":"blue"})");

  // A change that says "no" writes nothing; one that fails is kAborted.
  auto same = store.update([](Snapshot&) -> Result<bool, std::string> { return false; });
  ASSERT_TRUE(same);
  EXPECT_EQ(same->revision, two->revision);
  auto refused = store.update(
      [](Snapshot&) -> Result<bool, std::string> { return unexpected(std::string("no room")); });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, Kind::kAborted);
  EXPECT_EQ(refused.error().message, "no room");
  auto bad_name = store.update(add(vpc("9lives", "10.3.0.0/16")));
  ASSERT_FALSE(bad_name);
  EXPECT_EQ(bad_name.error().kind, Kind::kAborted);
  EXPECT_EQ(
      bad_name.error().message,
      R"(VPC "9lives": the name is not valid (1..63 letters, digits, '_', '.', '-' starting with a letter))");

  // Release: the key goes, the serial moves on.
  auto released = store.update([](Snapshot& s) -> Result<bool, std::string> {
    std::erase_if(s.vpcs, [](const StoredVpc& v) { return v.name == "vpc-b"; });
    return true;
  });
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_GT(released->revision, two->revision);
  auto final = store.load();
  ASSERT_TRUE(final);
  EXPECT_EQ(final->revision, released->revision);
  ASSERT_EQ(final->vpcs.size(), 1u);
  EXPECT_EQ(final->vpcs[0].name, "vpc-a");
}

TEST(EtcdStore, AChangeAboveEtcdsTransactionLimitIsRefusedAndSaysSo) {
  EtcdServer server;
  START_OR_FAIL(server);
  EtcdStore store(storeOptions(plainOptions(server)));
  auto many = [](int n) {
    return [n](Snapshot& s) -> Result<bool, std::string> {
      for (int i = 0; i < n; ++i) {
        const std::string range = "10.0." + std::to_string(i) + ".0/24";
        s.vpcs.push_back(vpc("v" + std::to_string(i), range.c_str()));
      }
      return true;
    };
  };
  // 127 VPC keys and the serial key: etcd's default --max-txn-ops (128).
  auto fits = store.update(many(127));
  ASSERT_TRUE(fits) << fits.error().message;
  EXPECT_EQ(fits->vpcs.size(), 127u);
  ASSERT_TRUE(
      Client(plainOptions(server)).deleteRange("/mcgw/plan/", etcd::prefixEnd("/mcgw/plan/")));
  auto too_many = store.update(many(128));
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().kind, Kind::kRefused);
  EXPECT_EQ(too_many.error().message,
            "etcd " + server.endpoint() +
                ": etcdserver: too many operations in txn request (gRPC code 3, HTTP 400); this "
                "change writes 128 VPC keys and the serial key, etcd allows --max-txn-ops (128 by "
                "default)");
}

TEST(EtcdStore, TlsWithTheRightClientCertificate) {
  EtcdServer server(/*tls=*/true);
  START_OR_FAIL(server);
  EtcdStore store(storeOptions(tlsOptions(server)));
  auto written = store.update(add(vpc("vpc-a", "10.2.0.0/16")));
  ASSERT_TRUE(written) << written.error().message;
  auto loaded = store.load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->vpcs.size(), 1u);
  EXPECT_EQ(loaded->vpcs[0].prefixes[0].toString(), "10.2.0.0/16");
  EXPECT_EQ(store.describe(), "etcd " + server.endpoint());
}

TEST(EtcdStore, TlsWithAWrongClientCertificateIsRefusedClearly) {
  EtcdServer server(/*tls=*/true);
  START_OR_FAIL(server);
  // Often enough to meet both ways a refused certificate reaches curl
  // under TLS 1.3 (the server's alert on the first read, or a reset first write).
  int alerts = 0, resets = 0;
  for (int i = 0; i < 12; ++i) {
    EtcdStore store(storeOptions(tlsOptions(server, /*right_cert=*/false)));
    auto loaded = store.load();
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().kind, Kind::kRefused) << loaded.error().message;
    EXPECT_EQ(
        loaded.error().message.rfind("etcd " + server.endpoint() + ": TLS handshake refused: ", 0),
        0u)
        << loaded.error().message;
    EXPECT_NE(loaded.error().message.find("the server did not accept the client certificate (check "
                                          "address-plan.store.cert-file)"),
              std::string::npos)
        << loaded.error().message;
    const bool alert = loaded.error().message.find("alert") != std::string::npos;
    if ((alert ? alerts : resets)++ == 0) {
      std::printf("wrong client certificate: %s\n", loaded.error().message.c_str());
    }
  }
  std::printf("12 refusals: %d by the server's alert, %d by a reset connection\n", alerts, resets);
  // No client certificate at all, and a server certificate the CA file
  // does not vouch for.
  ClientOptions none = tlsOptions(server);
  none.cert_file.clear();
  none.key_file.clear();
  auto anonymous = EtcdStore(storeOptions(none)).load();
  ASSERT_FALSE(anonymous);
  EXPECT_EQ(anonymous.error().kind, Kind::kRefused);
  EXPECT_NE(anonymous.error().message.find("the server asks for a client certificate (set "
                                           "address-plan.store.cert-file and key-file)"),
            std::string::npos)
      << anonymous.error().message;
  ClientOptions untrusted = tlsOptions(server);
  untrusted.ca_file = server.tls().wrong_ca;
  auto spoofed = EtcdStore(storeOptions(untrusted)).load();
  ASSERT_FALSE(spoofed);
  EXPECT_EQ(spoofed.error().kind, Kind::kRefused);
  EXPECT_NE(spoofed.error().message.find("the server's TLS certificate is not trusted (check "
                                         "address-plan.store.ca-file)"),
            std::string::npos)
      << spoofed.error().message;
}

TEST(EtcdStore, NoEtcdIsUnreachableAndTheNextEndpointIsTried) {
  const std::string nobody = "http://127.0.0.1:" + std::to_string(test::freeLoopbackPort());
  ClientOptions o;
  o.endpoints = {nobody};
  o.connect_timeout = 1000ms;
  o.request_timeout = 2000ms;
  EtcdStore store(storeOptions(o));
  const auto t0 = std::chrono::steady_clock::now();
  auto loaded = store.load();
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().kind, Kind::kUnreachable);
  EXPECT_EQ(loaded.error().message.rfind("etcd " + nobody + ": ", 0), 0u) << loaded.error().message;
  EXPECT_NE(loaded.error().message.find("Couldn't connect to server"), std::string::npos)
      << loaded.error().message;
  // Bounded by the timeouts, not a hang (a generous bound, not a speed figure).
  EXPECT_LT(took, 10s);
  std::printf(
      "no etcd: %s after %lld ms\n", loaded.error().message.c_str(),
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));

  std::atomic<bool> stop{false};
  auto waited = store.waitChange(0, 5s, stop);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().kind, Kind::kUnreachable);

  // A dead endpoint first, a live one second: the live one answers.
  EtcdServer server;
  START_OR_FAIL(server);
  o.endpoints = {nobody, server.endpoint()};
  EtcdStore failover(storeOptions(o));
  auto written = failover.update(add(vpc("vpc-a", "10.2.0.0/16")));
  ASSERT_TRUE(written) << written.error().message;
  auto back = failover.waitChange(written->revision - 1, 5s, stop);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->revision, written->revision);
}

TEST(EtcdStore, StoppedAndRestartedEtcd) {
  EtcdServer server;
  START_OR_FAIL(server);
  ClientOptions o = plainOptions(server);
  o.connect_timeout = 1000ms;
  o.request_timeout = 2000ms;
  EtcdStore store(storeOptions(o));
  auto written = store.update(add(vpc("vpc-a", "10.2.0.0/16")));
  ASSERT_TRUE(written) << written.error().message;
  server.stop();
  auto down = store.load();
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().kind, Kind::kUnreachable) << down.error().message;
  START_OR_FAIL(server);
  auto up = store.load();
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(*up, *written);

  // A gateway following the plan when etcd stops: an error, not a wait
  // for the timeout.
  std::atomic<bool> stop{false};
  std::optional<StoreResult<Snapshot>> waited;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread follower([&] { waited.emplace(store.waitChange(up->revision, 60s, stop)); });
  std::this_thread::sleep_for(500ms);
  server.stop();
  follower.join();
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(*waited);
  EXPECT_EQ(waited->error().kind, Kind::kUnreachable) << waited->error().message;
  EXPECT_LT(took, 30s);
  std::printf("watch when etcd stops: %s\n", waited->error().message.c_str());
}

// One process's 50 allocations: each takes the lowest /24 of 10.0.0.0/8
// that the snapshot does not use.  Returns the exit code for the parent.
int allocateFifty(const std::string& endpoint, int process) {
  ClientOptions o;
  o.endpoints = {endpoint};
  EtcdStore store(storeOptions(o));
  for (int i = 0; i < 50; ++i) {
    const std::string name = "p" + std::to_string(process) + "-" + std::to_string(i);
    auto done = store.update([&](Snapshot& s) -> Result<bool, std::string> {
      if (s.find(name)) {
        return false;
      }
      std::set<uint32_t> used;  // /24 block numbers inside 10.0.0.0/8
      for (const auto& v : s.vpcs) {
        for (const auto& p : v.prefixes) {
          if (p.address.family == config::Family::V4 && p.address.bytes[0] == 10) {
            used.insert(uint32_t{p.address.bytes[1]} << 8 | p.address.bytes[2]);
          }
        }
      }
      uint32_t block = 0;
      while (used.count(block)) {
        ++block;
      }
      const std::string range =
          "10." + std::to_string(block >> 8) + "." + std::to_string(block & 0xff) + ".0/24";
      s.vpcs.push_back(vpc(name, range.c_str()));
      return true;
    });
    if (!done) {
      std::fprintf(stderr, "process %d, allocation %d: %s\n", process, i,
                   done.error().message.c_str());
      return 1;
    }
  }
  std::printf("process %d: 50 allocations, %llu rounds lost to another writer\n", process,
              static_cast<unsigned long long>(store.lostRounds()));
  std::fflush(stdout);
  return 0;
}

TEST(EtcdStore, FourProcessesNeverAllocateTheSameBlock) {
  EtcdServer server;
  START_OR_FAIL(server);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::_exit(allocateFifty(server.endpoint(), p));
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  const auto took = std::chrono::steady_clock::now() - t0;

  EtcdStore store(storeOptions(plainOptions(server)));
  auto final = store.load();
  ASSERT_TRUE(final) << final.error().message;
  ASSERT_EQ(final->vpcs.size(), 200u);
  // Every block once, and together exactly 10.0.0.0/24 .. 10.0.199.0/24.
  std::set<std::string> blocks;
  for (const auto& v : final->vpcs) {
    ASSERT_EQ(v.prefixes.size(), 1u);
    blocks.insert(v.prefixes[0].toString());
  }
  EXPECT_EQ(blocks.size(), 200u);
  std::set<std::string> expected;
  for (int b = 0; b < 200; ++b) {
    expected.insert("10.0." + std::to_string(b) + ".0/24");
  }
  EXPECT_EQ(blocks, expected);
  for (size_t i = 0; i < final->vpcs.size(); ++i) {
    for (size_t j = i + 1; j < final->vpcs.size(); ++j) {
      EXPECT_FALSE(final->vpcs[i].prefixes[0].overlaps(final->vpcs[j].prefixes[0]))
          << final->vpcs[i].name << " and " << final->vpcs[j].name;
    }
  }
  // Every write went through the serial key: 200 successful transactions.
  Client client(plainOptions(server));
  auto serial = client.range("/mcgw/plan/serial");
  ASSERT_TRUE(serial);
  ASSERT_EQ(serial->kvs.size(), 1u);
  EXPECT_EQ(serial->kvs[0].version, 200);
  std::printf(
      "4 processes x 50 allocations: %lld ms\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
}

TEST(EtcdStore, WaitChangeWakesOnAnotherWritersChangeAndTimesOut) {
  EtcdServer server;
  START_OR_FAIL(server);
  EtcdStore watcher(storeOptions(plainOptions(server)));
  EtcdStore writer(storeOptions(plainOptions(server)));
  auto first = writer.update(add(vpc("vpc-a", "10.2.0.0/16")));
  ASSERT_TRUE(first) << first.error().message;
  std::atomic<bool> stop{false};

  // Nothing changes: the content at `after` once the timeout passes.
  auto quiet = watcher.waitChange(first->revision, 500ms, stop);
  ASSERT_TRUE(quiet) << quiet.error().message;
  EXPECT_EQ(*quiet, *first);

  // A write elsewhere in etcd is no change of the plan.
  Client other(plainOptions(server));
  ASSERT_TRUE(other.put("/elsewhere", "x"));
  auto still = watcher.waitChange(first->revision, 500ms, stop);
  ASSERT_TRUE(still);
  EXPECT_EQ(still->revision, first->revision);

  // Another client's change wakes it with the new content.
  std::thread later([&] {
    std::this_thread::sleep_for(300ms);
    (void)writer.update(add(vpc("vpc-b", "10.3.0.0/16")));
  });
  auto woken = watcher.waitChange(first->revision, 30s, stop);
  later.join();
  ASSERT_TRUE(woken) << woken.error().message;
  ASSERT_EQ(woken->vpcs.size(), 2u);
  EXPECT_EQ(woken->vpcs[1].name, "vpc-b");
  EXPECT_GT(woken->revision, first->revision);

  // An old revision: returns at once with the content now.
  auto behind = watcher.waitChange(first->revision - 1, 30s, stop);
  ASSERT_TRUE(behind);
  EXPECT_EQ(*behind, *woken);

  // The stop flag.
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop = true;
  });
  auto stopped = watcher.waitChange(woken->revision, 60s, stop);
  stopper.join();
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->revision, woken->revision);
}

TEST(EtcdStore, WaitChangeAfterCompaction) {
  EtcdServer server;
  START_OR_FAIL(server);
  EtcdStore store(storeOptions(plainOptions(server)));
  auto first = store.update(add(vpc("vpc-a", "10.2.0.0/16")));
  ASSERT_TRUE(first);
  auto second = store.update(add(vpc("vpc-b", "10.3.0.0/16")));
  ASSERT_TRUE(second);
  auto compact = test::run("etcdctl --endpoints=" + server.endpoint() + " compact " +
                           std::to_string(second->revision));
  ASSERT_EQ(compact.code, 0) << compact.err;
  std::atomic<bool> stop{false};
  auto got = store.waitChange(first->revision, 10s, stop);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, *second);
}

TEST(EtcdStore, StoredDataThatDoesNotParseIsCorrupt) {
  EtcdServer server;
  START_OR_FAIL(server);
  Client client(plainOptions(server));
  EtcdStore store(storeOptions(plainOptions(server)));
  struct Case {
    std::string key, value, message;
  };
  const std::vector<Case> cases = {
      {"/mcgw/plan/vpcs/a", "not json",
       R"(etcd key "/mcgw/plan/vpcs/a": the value is not a JSON object: "not json")"},
      {"/mcgw/plan/vpcs/a", R"({"name":"a","cloud":"aws","region":"r","prefixes":["10.0.0.0/33"]})",
       R"(etcd key "/mcgw/plan/vpcs/a": prefix "10.0.0.0/33" does not parse)"},
      {"/mcgw/plan/vpcs/a", R"({"name":"b","cloud":"aws","region":"r","prefixes":["10.0.0.0/8"]})",
       R"(etcd key "/mcgw/plan/vpcs/a": holds VPC "b")"},
      {"/mcgw/plan/vpcs/a", R"({"name":"a","cloud":"aws","region":"r","prefixes":["10.0.0.1/8"]})",
       R"(etcd key "/mcgw/plan/vpcs/a": VPC "a": 10.0.0.1/8 has host bits set)"},
      {"/mcgw/plan/vpcs/a", R"({"name":"a","region":"r","prefixes":["10.0.0.0/8"]})",
       R"(etcd key "/mcgw/plan/vpcs/a": VPC "a": cloud or region "" is not a valid name)"},
      {"/mcgw/plan/vpcs/a", R"({"name":"a","cloud":1,"region":"r","prefixes":[]})",
       R"(etcd key "/mcgw/plan/vpcs/a": field cloud is not a string)"},
      {"/mcgw/plan/vpcs/a\x1b[2J\xe9", "{}",
       R"(etcd key "/mcgw/plan/vpcs/a\u001B[2J\xE9": the VPC name is not a name)"},
      {"/mcgw/plan/other", "{}",
       R"(etcd key "/mcgw/plan/other": not a key of the plan (only /mcgw/plan/vpcs/<name> and )"
       R"(/mcgw/plan/serial may be under /mcgw/plan/))"},
  };
  for (const auto& c : cases) {
    ASSERT_TRUE(client.deleteRange("/mcgw/plan/", etcd::prefixEnd("/mcgw/plan/")));
    ASSERT_TRUE(client.put(c.key, c.value));
    auto loaded = store.load();
    ASSERT_FALSE(loaded) << c.message;
    EXPECT_EQ(loaded.error().kind, Kind::kCorrupt);
    EXPECT_EQ(loaded.error().message, c.message);
    auto updated = store.update(add(vpc("vpc-z", "10.9.0.0/16")));
    ASSERT_FALSE(updated);
    EXPECT_EQ(updated.error().kind, Kind::kCorrupt);
  }
}

// A server that answers every request with the same bytes, for answers
// etcd would not give.
class FakeServer {
 public:
  explicit FakeServer(std::string answer, size_t repeat_body_bytes = 0)
      : answer_(std::move(answer)), repeat_(repeat_body_bytes) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 4);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (true) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0 || stop_) {
          if (c >= 0) {
            ::close(c);
          }
          return;
        }
        char buf[4096];
        (void)!::recv(c, buf, sizeof buf, 0);
        (void)!::send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
        // A chunked body that never ends: chunks of 64 KiB of 'x'.
        std::string chunk = "10000\r\n" + std::string(0x10000, 'x') + "\r\n";
        for (size_t sent = 0; sent < repeat_ && !stop_; sent += 0x10000) {
          if (::send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) {
            break;
          }
        }
        ::close(c);
      }
    });
  }
  ~FakeServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    // Wake accept() with a connection of our own.
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port_));
    (void)::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::close(c);
    thread_.join();
    ::close(fd_);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string answer_;
  size_t repeat_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(EtcdClient, MalformedAndOversizedAnswersAreErrors) {
  struct Case {
    std::string answer;
    Kind kind;
    std::string message;
  };
  auto http = [](const std::string& status, const std::string& body) {
    return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };
  const std::vector<Case> cases = {
      {http("200 OK", "hello"), Kind::kCorrupt,
       "etcd's answer to range is malformed: no header revision"},
      {http("200 OK", R"({"header":{"revision":"7"},"kvs":[{"key":"!!"}]})"), Kind::kCorrupt,
       "etcd's answer to range is malformed: a key-value does not parse"},
      {http("200 OK", R"({"header":{"revision":"9999999999999999999"}})"), Kind::kCorrupt,
       "etcd's answer to range is malformed: no header revision"},
      {http("200 OK", std::string(100000, '[')), Kind::kCorrupt,
       "etcd's answer to range is malformed: no header revision"},
      {http("200 OK", R"({"header":{"revision":"x7"}})"), Kind::kCorrupt,
       "etcd's answer to range is malformed: no header revision"},
      {http("200 OK", R"({"header":{"revision":"7"},"kvs":7})"), Kind::kCorrupt,
       "etcd's answer to range is malformed: kvs is not an array"},
      {http("400 Bad Request", R"({"error":"bad \u001b[31m","message":"bad \u001b[31m","code":3})"),
       Kind::kRefused, R"(: bad \u001B[31m (gRPC code 3, HTTP 400))"},
      {http("503 Service Unavailable", R"({"error":"no leader","message":"no leader","code":14})"),
       Kind::kUnreachable, R"(: no leader (gRPC code 14, HTTP 503))"},
      {http("404 Not Found", "not found"), Kind::kRefused,
       R"(: HTTP 404 (no etcd v3 JSON gateway at this address): "not found")"},
  };
  for (const auto& c : cases) {
    FakeServer fake(c.answer);
    ClientOptions o;
    o.endpoints = {fake.endpoint()};
    Client client(o);
    auto r = client.range("/k");
    ASSERT_FALSE(r) << c.message;
    EXPECT_EQ(r.error().kind, c.kind) << r.error().message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
  // An answer that never ends is cut at the bound.
  FakeServer endless("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", kMaxStoreBytes * 2);
  ClientOptions o;
  o.endpoints = {endless.endpoint()};
  o.request_timeout = 60s;
  Client client(o);
  auto r = client.range("/k");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, Kind::kCorrupt);
  EXPECT_EQ(r.error().message, "etcd " + endless.endpoint() + ": the answer is larger than 64 MiB");
}

}  // namespace
}  // namespace mcgw::plan
