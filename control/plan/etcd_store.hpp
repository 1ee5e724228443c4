// The plan's store in etcd v3, shared by every gateway of every site
// (docs/address-plan.md, "The etcd store").
//
// Layout under the prefix (default "/mcgw/plan/"):
//   <prefix>vpcs/<name>  one JSON object per VPC (StoredVpc, prefixes as text)
//   <prefix>serial       rewritten by every change: the transaction's guard
// Nothing else may live under the prefix.
//
// A snapshot's revision is the highest mod_revision under the prefix, that
// is the revision of the last change written through update() (which always
// rewrites the serial key), not etcd's header revision, which also moves
// with writes elsewhere in the cluster.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "control/plan/etcd_client.hpp"
#include "control/plan/plan.hpp"

namespace mcgw::plan {

struct EtcdStoreOptions {
  etcd::ClientOptions client;
  std::string prefix = "/mcgw/plan/";  // ends in '/'
  // update(): how many read-change-write rounds before kContended.
  int max_attempts = 100;
};

class EtcdStore : public Store {
 public:
  explicit EtcdStore(EtcdStoreOptions options);

  StoreResult<Snapshot> load() override;
  // One round: range the prefix, call change on a copy, then one txn that
  // writes the changed and removed VPC keys and the serial key if the
  // serial key's mod_revision is still the one read (0: absent).  A lost
  // race starts a new round after a short random pause.
  StoreResult<Snapshot> update(const Change& change) override;
  // Watches the prefix from after + 1.  Returns kUnreachable as soon as
  // etcd cannot be reached (the caller waits before asking again).  If the
  // store's revision is below after (etcd restored or replaced), returns
  // the content at once.
  StoreResult<Snapshot> waitChange(uint64_t after, std::chrono::milliseconds timeout,
                                   const std::atomic<bool>& stop) override;
  std::string describe() const override;

  // Rounds of update() lost to another writer since this store was made.
  uint64_t lostRounds() const { return lost_rounds_.load(); }

  const std::string& prefix() const { return options_.prefix; }
  std::string vpcKey(const std::string& name) const { return options_.prefix + "vpcs/" + name; }
  std::string serialKey() const { return options_.prefix + "serial"; }

 private:
  struct Read {
    Snapshot snapshot;
    int64_t serial_mod = 0;       // the serial key's mod_revision, 0 when absent
    int64_t header_revision = 0;  // etcd's revision the range was read at
  };
  StoreResult<Read> read();
  void remember(const Snapshot& s);

  EtcdStoreOptions options_;
  etcd::Client client_;
  std::mutex mu_;  // guards rng_ and last_
  std::minstd_rand rng_;
  std::optional<Snapshot> last_;  // the latest content seen, for waitChange()'s stop
  std::atomic<uint64_t> lost_rounds_{0};
};

// The JSON a VPC key holds, and back.  vpcFromJson checks what the store
// promises (validVpc) and says what is wrong.
std::string vpcToJson(const StoredVpc& vpc);
Result<StoredVpc, std::string> vpcFromJson(std::string_view text);

}  // namespace mcgw::plan
