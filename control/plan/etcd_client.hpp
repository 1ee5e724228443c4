// A small etcd v3 client over etcd's JSON gateway (HTTP/1.1 or HTTPS with
// libcurl and OpenSSL): range, txn, put, delete and watch, which is all the
// plan's store needs.  Why the gateway rather than gRPC, and what the
// errors look like, is in docs/address-plan.md ("The etcd store").
//
// Keys and values are bytes; the gateway carries them base64-encoded and
// 64-bit numbers as JSON strings, which this client hides.  Every answer
// is untrusted input: bounded (plan::kMaxStoreBytes), parsed without
// exceptions, and quoted escaped in error messages.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/plan/plan.hpp"

namespace mcgw::plan::etcd {

struct ClientOptions {
  // "http://127.0.0.1:2379", "https://10.0.0.1:2379": tried in order, the
  // next one when a connection cannot be made; the one that answered is
  // tried first next time.
  std::vector<std::string> endpoints;
  std::string ca_file;    // "" = the system's CAs
  std::string cert_file;  // client certificate (PEM), "" = none
  std::string key_file;   // its private key (PEM)
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{5000};  // a whole unary request
};

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
};

struct RangeResult {
  int64_t revision = 0;  // the store's revision the range was read at
  std::vector<KeyValue> kvs;
};

// One comparison of a transaction, on one key.
struct Compare {
  enum class Target { kVersion, kCreate, kMod, kValue } target = Target::kMod;
  enum class Result { kEqual, kGreater, kLess, kNotEqual } result = Result::kEqual;
  std::string key;
  int64_t number = 0;  // version, create or mod revision (0: the key is absent)
  std::string value;   // for kValue
};

// One write of a transaction: a put, or a delete of key (or of
// [key, range_end) when range_end is set).
struct Write {
  enum class Kind { kPut, kDelete } kind = Kind::kPut;
  std::string key;
  std::string value;
  std::string range_end;
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the transaction
};

struct WatchEvent {
  enum class Type { kPut, kDelete } type = Type::kPut;
  KeyValue kv;  // a delete has only key and mod_revision
};

// One message of a watch stream.
struct WatchResponse {
  int64_t revision = 0;  // header revision
  bool created = false;
  bool canceled = false;
  int64_t compact_revision = 0;  // > 0: the start revision was compacted away
  std::string cancel_reason;
  std::vector<WatchEvent> events;
};

// How a watch() call ended when it did not fail.
enum class WatchEnd {
  kDone,       // the callback said it had what it wanted
  kTimeout,    // the timeout passed
  kStopped,    // stop became true
  kCompacted,  // etcd canceled the watch: the start revision is compacted (see the response)
  kCanceled,   // etcd canceled the watch for another reason (see the response)
};

struct WatchOutcome {
  WatchEnd end = WatchEnd::kTimeout;
  WatchResponse last;  // the last response seen (the cancel, for kCompacted/kCanceled)
};

// The end of the range of all keys starting with prefix (etcd's "prefix"
// range_end: the prefix with its last byte incremented).
std::string prefixEnd(std::string_view prefix);

// Base64 as the gateway wants it (OpenSSL's EVP_EncodeBlock/DecodeBlock).
std::string base64Encode(std::string_view bytes);
std::optional<std::string> base64Decode(std::string_view text);

// The gateway's answer to /v3/kv/range; kCorrupt if it is malformed.
StoreResult<RangeResult> parseRangeAnswer(std::string_view body);
// One message ({"result": ...}) of a /v3/kv/watch stream; nullopt if it is
// not one (an error message included).
std::optional<WatchResponse> parseWatchMessage(std::string_view line);

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The keys in [key, range_end) (range_end "" = key alone), at one revision.
  StoreResult<RangeResult> range(const std::string& key, const std::string& range_end = "");
  // If every compare holds, applies success, else failure; atomically.
  StoreResult<TxnResult> txn(const std::vector<Compare>& compares,
                             const std::vector<Write>& success,
                             const std::vector<Write>& failure = {});
  // Returns the store's revision after the write.
  StoreResult<int64_t> put(const std::string& key, const std::string& value);
  StoreResult<int64_t> deleteRange(const std::string& key, const std::string& range_end = "");

  // Streams the changes of [key, range_end) from start_revision (0: from
  // now) to on_response, one response at a time, until on_response returns
  // false (kDone), timeout passes, stop becomes true (checked every 100 ms)
  // or etcd cancels the watch.  A lost connection is kUnreachable.
  using OnWatch = std::function<bool(const WatchResponse&)>;
  StoreResult<WatchOutcome> watch(const std::string& key, const std::string& range_end,
                                  int64_t start_revision, const OnWatch& on_response,
                                  std::chrono::milliseconds timeout, const std::atomic<bool>& stop);

  // "https://10.0.0.1:2379,https://10.0.0.2:2379".
  std::string describe() const;

 private:
  struct Connection;
  // A unary request: its answer's body (200), or the error.
  StoreResult<std::string> call(const std::string& path, const std::string& body);

  ClientOptions options_;
  std::atomic<size_t> preferred_{0};  // index of the endpoint that answered last
  std::mutex mu_;                     // serialises unary requests on conn_
  std::unique_ptr<Connection> conn_;  // kept between requests to reuse the connection
};

}  // namespace mcgw::plan::etcd
