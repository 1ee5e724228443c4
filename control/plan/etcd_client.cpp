#include "control/plan/etcd_client.hpp"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "config/text.hpp"

namespace mcgw::plan::etcd {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using Kind = StoreError::Kind;

// How long an idle transfer waits in curl_multi_poll() before looking at
// the stop flag and the deadline again.
constexpr std::chrono::milliseconds kPollSlice{100};

void globalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

StoreError error(Kind kind, std::string message) {
  return StoreError{kind, std::move(message)};
}

// ---- JSON fields of the gateway's answers ----------------------------------

const json* member(const json& obj, const char* name) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

// A 64-bit number: the gateway writes them as strings ("42"); an absent
// field is 0 (proto3 omits zeros).
std::optional<int64_t> int64Field(const json& obj, const char* name) {
  const json* v = member(obj, name);
  if (!v || v->is_null()) {
    return 0;
  }
  if (v->is_number_integer()) {
    return v->get<int64_t>();
  }
  if (!v->is_string()) {
    return std::nullopt;
  }
  const auto& s = v->get_ref<const std::string&>();
  const bool negative = !s.empty() && s[0] == '-';
  const size_t digits = s.size() - (negative ? 1 : 0);
  if (digits == 0 || digits > 19) {
    return std::nullopt;
  }
  uint64_t n = 0;
  for (size_t i = negative ? 1 : 0; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return std::nullopt;
    }
    n = n * 10 + static_cast<uint64_t>(s[i] - '0');  // 19 digits fit in 64 bits
  }
  if (n > static_cast<uint64_t>(INT64_MAX)) {
    return std::nullopt;
  }
  return negative ? -static_cast<int64_t>(n) : static_cast<int64_t>(n);
}

bool boolField(const json& obj, const char* name) {
  const json* v = member(obj, name);
  return v && v->is_boolean() && v->get<bool>();
}

std::string stringField(const json& obj, const char* name) {
  const json* v = member(obj, name);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// Bytes carried as base64; absent = empty.
std::optional<std::string> bytesField(const json& obj, const char* name) {
  const json* v = member(obj, name);
  if (!v || v->is_null()) {
    return std::string();
  }
  if (!v->is_string()) {
    return std::nullopt;
  }
  return base64Decode(v->get_ref<const std::string&>());
}

std::optional<KeyValue> parseKeyValue(const json& obj) {
  KeyValue kv;
  auto key = bytesField(obj, "key");
  auto value = bytesField(obj, "value");
  auto create = int64Field(obj, "create_revision");
  auto mod = int64Field(obj, "mod_revision");
  auto version = int64Field(obj, "version");
  if (!obj.is_object() || !key || !value || !create || !mod || !version) {
    return std::nullopt;
  }
  kv.key = std::move(*key);
  kv.value = std::move(*value);
  kv.create_revision = *create;
  kv.mod_revision = *mod;
  kv.version = *version;
  return kv;
}

std::optional<int64_t> headerRevision(const json& obj) {
  const json* header = member(obj, "header");
  if (!header || !header->is_object()) {
    return std::nullopt;
  }
  return int64Field(*header, "revision");
}

// etcd's error in an answer: {"error": "...", "message": "...", "code": 3}
// (unary) or {"error": {"grpc_code": 3, "message": "..."}} (a stream).
struct ServerError {
  int code = 0;  // gRPC status code
  std::string message;
};

std::optional<ServerError> serverError(const json& obj) {
  const json* e = member(obj, "error");
  if (!e) {
    return std::nullopt;
  }
  ServerError se;
  const json& detail = e->is_object() ? *e : obj;
  se.message = stringField(detail, "message");
  if (se.message.empty() && e->is_string()) {
    se.message = e->get<std::string>();
  }
  auto code = int64Field(detail, e->is_object() ? "grpc_code" : "code");
  se.code = code ? static_cast<int>(*code) : 0;
  return se;
}

// gRPC codes after which another try (another endpoint, later) can work:
// CANCELLED, DEADLINE_EXCEEDED, ABORTED, UNAVAILABLE.
bool transient(int grpc_code) {
  return grpc_code == 1 || grpc_code == 4 || grpc_code == 10 || grpc_code == 14;
}

StoreError fromServer(const std::string& endpoint, const ServerError& se, long http_status) {
  std::string msg = "etcd " + endpoint + ": " + text::escape(se.message, 256) + " (gRPC code " +
                    std::to_string(se.code);
  if (http_status != 0) {
    msg += ", HTTP " + std::to_string(http_status);
  }
  msg += ")";
  return error(transient(se.code) ? Kind::kUnreachable : Kind::kRefused, std::move(msg));
}

// ---- one transfer ----------------------------------------------------------

struct Exchange {
  CURL* easy = nullptr;
  std::string url;
  std::string body;
  std::string received;  // the whole body, or the unparsed tail of a stream
  size_t scanned = 0;    // where the search for the next newline starts (streams)
  // A stream: called for each line (one JSON message); false ends the transfer.
  std::function<bool(std::string_view)> on_line;
  int streaming = -1;  // -1: not known yet; 1: a 200 stream; 0: an error's body
  bool overflow = false;
  bool callback_done = false;
  char errbuf[CURL_ERROR_SIZE] = {};
};

size_t onData(char* data, size_t size, size_t count, void* user) {
  auto& ex = *static_cast<Exchange*>(user);
  const size_t len = size * count;
  if (ex.received.size() + len > kMaxStoreBytes) {
    ex.overflow = true;
    return 0;  // CURLE_WRITE_ERROR ends the transfer
  }
  ex.received.append(data, len);
  if (ex.on_line && ex.streaming < 0) {
    long status = 0;
    curl_easy_getinfo(ex.easy, CURLINFO_RESPONSE_CODE, &status);
    ex.streaming = status == 200 ? 1 : 0;
  }
  if (ex.streaming != 1) {
    return len;
  }
  size_t start = 0;
  for (size_t nl; (nl = ex.received.find('\n', ex.scanned)) != std::string::npos;) {
    std::string_view line(ex.received.data() + start, nl - start);
    start = ex.scanned = nl + 1;
    if (line.find_first_not_of(" \r\t") != std::string_view::npos && !ex.on_line(line)) {
      ex.callback_done = true;
      return 0;
    }
  }
  ex.received.erase(0, start);
  ex.scanned = ex.received.size();
  return len;
}

enum class Ending { kComplete, kTimeout, kStopped };

struct Attempt {
  Ending ending = Ending::kComplete;
  CURLcode code = CURLE_OK;
  long http_status = 0;
  long new_connections = 0;
  curl_off_t header_bytes = 0;
  std::string reason;  // curl's words for a failure
};

}  // namespace

struct Client::Connection {
  CURLM* multi = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  Connection() {
    globalInit();
    multi = curl_multi_init();
    easy = curl_easy_init();
    headers = curl_slist_append(nullptr, "Content-Type: application/json");
    // No "Expect: 100-continue" wait before large bodies (a big txn).
    if (headers && !curl_slist_append(headers, "Expect:")) {
      curl_slist_free_all(headers);
      headers = nullptr;
    }
  }
  ~Connection() {
    curl_easy_cleanup(easy);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  bool ok() const { return multi && easy && headers; }
};

namespace {

// Runs one POST on easy (in multi, whose connection cache keeps the
// connection for the next request) until it completes, deadline passes or
// *stop becomes true.
Attempt perform(CURLM* multi, CURL* easy, curl_slist* headers, Exchange& ex, const ClientOptions& o,
                Clock::time_point deadline, const std::atomic<bool>* stop) {
  ex.easy = easy;
  curl_easy_reset(easy);
  curl_easy_setopt(easy, CURLOPT_URL, ex.url.c_str());
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(easy, CURLOPT_POST, 1L);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, ex.body.c_str());
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(ex.body.size()));
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout.count()));
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, onData);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, ex.errbuf);
  if (!o.ca_file.empty()) {
    curl_easy_setopt(easy, CURLOPT_CAINFO, o.ca_file.c_str());
  }
  if (!o.cert_file.empty()) {
    curl_easy_setopt(easy, CURLOPT_SSLCERT, o.cert_file.c_str());
    curl_easy_setopt(easy, CURLOPT_SSLKEY,
                     o.key_file.empty() ? o.cert_file.c_str() : o.key_file.c_str());
  }

  Attempt a;
  curl_multi_add_handle(multi, easy);
  while (true) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
      a.code = CURLE_FAILED_INIT;
      a.reason = curl_multi_strerror(mc);
      break;
    }
    bool finished = false;
    int queued = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &queued)) {
      if (m->msg == CURLMSG_DONE) {
        a.code = m->data.result;
        finished = true;
      }
    }
    if (finished) {
      break;
    }
    if (stop && stop->load()) {
      a.ending = Ending::kStopped;
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      a.ending = Ending::kTimeout;
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    curl_multi_poll(multi, nullptr, 0, static_cast<int>(std::min(left, kPollSlice).count()) + 1,
                    nullptr);
  }
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &a.http_status);
  curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &a.new_connections);
  long header_bytes = 0;
  curl_easy_getinfo(easy, CURLINFO_HEADER_SIZE, &header_bytes);
  a.header_bytes = header_bytes;
  curl_multi_remove_handle(multi, easy);
  // ex ends with this call; the handle lives on with its connection.
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, nullptr);
  if (a.code != CURLE_OK && a.reason.empty()) {
    a.reason = ex.errbuf[0] ? ex.errbuf : curl_easy_strerror(a.code);
    while (!a.reason.empty() && a.reason.back() == '\n') {
      a.reason.pop_back();
    }
  }
  return a;
}

// A failure to reach this endpoint at all: the next one may answer.
bool connectionFailure(const Attempt& a) {
  return a.ending == Ending::kTimeout || a.code == CURLE_COULDNT_RESOLVE_HOST ||
         a.code == CURLE_COULDNT_CONNECT ||
         (a.code == CURLE_OPERATION_TIMEDOUT && a.header_bytes == 0) ||
         (a.code == CURLE_GOT_NOTHING && a.new_connections == 0);
}

bool contains(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

// TLS failures say what the operator should look at.  etcd checks the
// client certificate after its side of a TLS 1.3 handshake, so a refused
// certificate reaches curl either as the server's alert on the first read
// ("sslv3 alert bad certificate", CURLE_RECV_ERROR) or, when the server
// has already closed the connection, as a failed first write
// (CURLE_SEND_ERROR) on a connection that never received a byte; under
// TLS 1.2 it is the handshake's own error (CURLE_SSL_CONNECT_ERROR).
std::optional<StoreError> tlsFailure(const Attempt& a, const std::string& endpoint,
                                     const ClientOptions& o) {
  const bool https = endpoint.rfind("https://", 0) == 0;
  const bool alert = contains(a.reason, "alert");
  const bool refused_cert =
      alert &&
      (contains(a.reason, "bad certificate") || contains(a.reason, "unknown ca") ||
       contains(a.reason, "certificate required") || contains(a.reason, "certificate unknown") ||
       contains(a.reason, "certificate expired") || contains(a.reason, "certificate revoked") ||
       contains(a.reason, "unsupported certificate") || contains(a.reason, "access denied"));
  const bool closed_after_handshake = https &&
                                      (a.code == CURLE_SEND_ERROR || a.code == CURLE_RECV_ERROR) &&
                                      a.new_connections > 0 && a.header_bytes == 0;
  const std::string where = "etcd " + endpoint + ": ";
  const std::string curl = " (curl: " + text::escape(a.reason, 160) + ")";
  const std::string cert_hint =
      o.cert_file.empty()
          ? "the server asks for a client certificate (set address-plan.store.cert-file and "
            "key-file)"
          : "the server did not accept the client certificate (check "
            "address-plan.store.cert-file)";
  if (refused_cert) {
    return error(Kind::kRefused, where + "TLS handshake refused: " + cert_hint + curl);
  }
  if (closed_after_handshake && !alert) {
    return error(Kind::kRefused, where + "TLS handshake refused: " + cert_hint +
                                     "; the server closed the connection right after the "
                                     "handshake, as etcd does when it refuses a client "
                                     "certificate" +
                                     curl);
  }
  switch (a.code) {
    case CURLE_PEER_FAILED_VERIFICATION:
      return error(Kind::kRefused, where +
                                       "the server's TLS certificate is not trusted (check "
                                       "address-plan.store.ca-file)" +
                                       curl);
    case CURLE_SSL_CERTPROBLEM:
      return error(Kind::kRefused, where +
                                       "the client certificate or its key cannot be used (check "
                                       "address-plan.store.cert-file and key-file)" +
                                       curl);
    case CURLE_SSL_CACERT_BADFILE:
      return error(Kind::kRefused,
                   where + "the CA file cannot be used (check address-plan.store.ca-file)" + curl);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
      return error(Kind::kRefused, where + "TLS handshake failed" + curl);
    default:
      return std::nullopt;
  }
}

// What an attempt that did not end in a 200 means, as the error to report.
StoreError failure(const Attempt& a, const Exchange& ex, const std::string& endpoint,
                   const ClientOptions& o) {
  if (ex.overflow) {
    return error(Kind::kCorrupt, "etcd " + endpoint + ": the answer is larger than " +
                                     std::to_string(kMaxStoreBytes >> 20) + " MiB");
  }
  if (a.ending == Ending::kTimeout) {
    return error(Kind::kUnreachable, "etcd " + endpoint + ": no answer in time");
  }
  if (a.code != CURLE_OK) {
    if (auto tls = tlsFailure(a, endpoint, o)) {
      return *tls;
    }
    return error(Kind::kUnreachable, "etcd " + endpoint + ": " + text::escape(a.reason, 160));
  }
  // An HTTP error: etcd's own error in JSON, or something that is not etcd.
  json body = json::parse(ex.received, nullptr, false);
  if (auto se = serverError(body)) {
    return fromServer(endpoint, *se, a.http_status);
  }
  return error(a.http_status >= 500 ? Kind::kUnreachable : Kind::kRefused,
               "etcd " + endpoint + ": HTTP " + std::to_string(a.http_status) +
                   (a.http_status == 404 ? " (no etcd v3 JSON gateway at this address)" : "") +
                   ": " + text::quote(ex.received, 160));
}

bool validEndpoint(const std::string& e) {
  return e.rfind("http://", 0) == 0 || e.rfind("https://", 0) == 0;
}

json writeJson(const Write& w) {
  if (w.kind == Write::Kind::kPut) {
    return {{"request_put", {{"key", base64Encode(w.key)}, {"value", base64Encode(w.value)}}}};
  }
  json del = {{"key", base64Encode(w.key)}};
  if (!w.range_end.empty()) {
    del["range_end"] = base64Encode(w.range_end);
  }
  return {{"request_delete_range", del}};
}

json compareJson(const Compare& c) {
  static const char* const kTargets[] = {"VERSION", "CREATE", "MOD", "VALUE"};
  static const char* const kResults[] = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};
  json j = {{"key", base64Encode(c.key)},
            {"target", kTargets[static_cast<int>(c.target)]},
            {"result", kResults[static_cast<int>(c.result)]}};
  switch (c.target) {
    case Compare::Target::kVersion:
      j["version"] = std::to_string(c.number);
      break;
    case Compare::Target::kCreate:
      j["create_revision"] = std::to_string(c.number);
      break;
    case Compare::Target::kMod:
      j["mod_revision"] = std::to_string(c.number);
      break;
    case Compare::Target::kValue:
      j["value"] = base64Encode(c.value);
      break;
  }
  return j;
}

StoreError malformed(const std::string& what, const std::string& why) {
  return error(Kind::kCorrupt, "etcd's answer to " + what + " is malformed: " + why);
}

std::optional<WatchResponse> parseWatchResponse(const json& msg) {
  const json* result = member(msg, "result");
  if (!result || !result->is_object()) {
    return std::nullopt;
  }
  WatchResponse r;
  auto rev = headerRevision(*result);
  auto compact = int64Field(*result, "compact_revision");
  if (!compact) {
    return std::nullopt;
  }
  r.revision = rev.value_or(0);
  r.created = boolField(*result, "created");
  r.canceled = boolField(*result, "canceled");
  r.compact_revision = *compact;
  r.cancel_reason = stringField(*result, "cancel_reason");
  if (const json* events = member(*result, "events")) {
    if (!events->is_array()) {
      return std::nullopt;
    }
    for (const json& e : *events) {
      const json* kvj = member(e, "kv");
      auto kv = kvj ? parseKeyValue(*kvj) : std::nullopt;
      if (!kv) {
        return std::nullopt;
      }
      WatchEvent ev;
      ev.type =
          stringField(e, "type") == "DELETE" ? WatchEvent::Type::kDelete : WatchEvent::Type::kPut;
      ev.kv = std::move(*kv);
      r.events.push_back(std::move(ev));
    }
  }
  return r;
}

}  // namespace

std::string prefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key: etcd's "\0" range_end
}

std::string base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

std::optional<std::string> base64Decode(std::string_view text) {
  if (text.size() % 4 != 0 || text.size() > kMaxStoreBytes) {
    return std::nullopt;
  }
  // Only the alphabet, and '=' only as the last one or two characters
  // (EVP_DecodeBlock skips blanks; the gateway writes none).
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool padding =
        c == '=' && i + 2 >= text.size() && (i + 1 == text.size() || text[i + 1] == '=');
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/' && !padding) {
      return std::nullopt;
    }
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) {
    return std::nullopt;
  }
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') {
    pad = text.size() >= 2 && text[text.size() - 2] == '=' ? 2 : 1;
  }
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

StoreResult<RangeResult> parseRangeAnswer(std::string_view body) {
  json ans = json::parse(body, nullptr, false);
  auto rev = headerRevision(ans);
  if (ans.is_discarded() || !rev) {
    return unexpected(malformed("range", "no header revision"));
  }
  RangeResult r;
  r.revision = *rev;
  if (const json* kvs = member(ans, "kvs")) {
    if (!kvs->is_array()) {
      return unexpected(malformed("range", "kvs is not an array"));
    }
    for (const json& j : *kvs) {
      auto kv = parseKeyValue(j);
      if (!kv) {
        return unexpected(malformed("range", "a key-value does not parse"));
      }
      r.kvs.push_back(std::move(*kv));
    }
  }
  return r;
}

std::optional<WatchResponse> parseWatchMessage(std::string_view line) {
  json msg = json::parse(line, nullptr, false);
  return msg.is_discarded() ? std::nullopt : parseWatchResponse(msg);
}

Client::Client(ClientOptions options) : options_(std::move(options)) {}
Client::~Client() = default;

std::string Client::describe() const {
  std::string s;
  for (const auto& e : options_.endpoints) {
    s += (s.empty() ? "" : ",") + e;
  }
  return s;
}

StoreResult<std::string> Client::call(const std::string& path, const std::string& body) {
  if (options_.endpoints.empty()) {
    return unexpected(error(Kind::kUnreachable, "etcd: no endpoint configured"));
  }
  std::lock_guard lock(mu_);
  if (!conn_) {
    conn_ = std::make_unique<Connection>();
  }
  if (!conn_->ok()) {
    return unexpected(error(Kind::kUnreachable, "etcd: libcurl could not be initialised"));
  }
  const size_t n = options_.endpoints.size();
  const size_t first = preferred_.load() % n;
  std::string tried;
  StoreError last;
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (first + i) % n;
    const std::string& endpoint = options_.endpoints[index];
    if (!validEndpoint(endpoint)) {
      return unexpected(error(Kind::kRefused, "etcd endpoint " + text::quote(endpoint) +
                                                  " is not an http:// or https:// URL"));
    }
    Exchange ex;
    ex.url = endpoint + path;
    ex.body = body;
    Attempt a = perform(conn_->multi, conn_->easy, conn_->headers, ex, options_,
                        Clock::now() + options_.request_timeout, nullptr);
    if (a.code == CURLE_OK && a.ending == Ending::kComplete && a.http_status == 200) {
      preferred_ = index;
      return std::move(ex.received);
    }
    last = failure(a, ex, endpoint, options_);
    const bool next = connectionFailure(a) || (last.kind == Kind::kUnreachable && !ex.overflow);
    if (!next) {
      return unexpected(last);
    }
    tried += (tried.empty() ? "" : "; ") + last.message;
  }
  return unexpected(error(Kind::kUnreachable, tried));
}

StoreResult<RangeResult> Client::range(const std::string& key, const std::string& range_end) {
  json req = {{"key", base64Encode(key)}};
  if (!range_end.empty()) {
    req["range_end"] = base64Encode(range_end);
  }
  auto body = call("/v3/kv/range", req.dump());
  if (!body) {
    return unexpected(body.error());
  }
  return parseRangeAnswer(*body);
}

StoreResult<TxnResult> Client::txn(const std::vector<Compare>& compares,
                                   const std::vector<Write>& success,
                                   const std::vector<Write>& failure) {
  json req = {{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const auto& c : compares) {
    req["compare"].push_back(compareJson(c));
  }
  for (const auto& w : success) {
    req["success"].push_back(writeJson(w));
  }
  for (const auto& w : failure) {
    req["failure"].push_back(writeJson(w));
  }
  auto body = call("/v3/kv/txn", req.dump());
  if (!body) {
    return unexpected(body.error());
  }
  json ans = json::parse(*body, nullptr, false);
  auto rev = headerRevision(ans);
  if (ans.is_discarded() || !rev) {
    return unexpected(malformed("txn", "no header revision"));
  }
  return TxnResult{boolField(ans, "succeeded"), *rev};
}

StoreResult<int64_t> Client::put(const std::string& key, const std::string& value) {
  json req = {{"key", base64Encode(key)}, {"value", base64Encode(value)}};
  auto body = call("/v3/kv/put", req.dump());
  if (!body) {
    return unexpected(body.error());
  }
  auto rev = headerRevision(json::parse(*body, nullptr, false));
  if (!rev) {
    return unexpected(malformed("put", "no header revision"));
  }
  return *rev;
}

StoreResult<int64_t> Client::deleteRange(const std::string& key, const std::string& range_end) {
  json req = {{"key", base64Encode(key)}};
  if (!range_end.empty()) {
    req["range_end"] = base64Encode(range_end);
  }
  auto body = call("/v3/kv/deleterange", req.dump());
  if (!body) {
    return unexpected(body.error());
  }
  auto rev = headerRevision(json::parse(*body, nullptr, false));
  if (!rev) {
    return unexpected(malformed("deleterange", "no header revision"));
  }
  return *rev;
}

StoreResult<WatchOutcome> Client::watch(const std::string& key, const std::string& range_end,
                                        int64_t start_revision, const OnWatch& on_response,
                                        std::chrono::milliseconds timeout,
                                        const std::atomic<bool>& stop) {
  if (options_.endpoints.empty()) {
    return unexpected(error(Kind::kUnreachable, "etcd: no endpoint configured"));
  }
  json create = {{"key", base64Encode(key)}};
  if (!range_end.empty()) {
    create["range_end"] = base64Encode(range_end);
  }
  if (start_revision > 0) {
    create["start_revision"] = std::to_string(start_revision);
  }
  const std::string body = json{{"create_request", create}}.dump();
  const auto deadline = Clock::now() + timeout;
  // A connection of its own: a watch holds it for as long as it waits.
  Connection conn;
  if (!conn.ok()) {
    return unexpected(error(Kind::kUnreachable, "etcd: libcurl could not be initialised"));
  }
  const size_t n = options_.endpoints.size();
  const size_t first = preferred_.load() % n;
  std::string tried;
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (first + i) % n;
    const std::string& endpoint = options_.endpoints[index];
    if (!validEndpoint(endpoint)) {
      return unexpected(error(Kind::kRefused, "etcd endpoint " + text::quote(endpoint) +
                                                  " is not an http:// or https:// URL"));
    }
    WatchOutcome outcome;
    std::optional<StoreError> stream_error;
    bool ended = false;
    Exchange ex;
    ex.url = endpoint + "/v3/watch";
    ex.body = body;
    ex.on_line = [&](std::string_view line) {
      json msg = json::parse(line, nullptr, false);
      if (msg.is_discarded()) {
        stream_error = malformed("watch", "a message is not JSON: " + text::quote(line, 80));
        return false;
      }
      if (auto se = serverError(msg)) {
        stream_error = fromServer(endpoint, *se, 0);
        return false;
      }
      auto r = parseWatchResponse(msg);
      if (!r) {
        stream_error = malformed("watch", "a message does not parse: " + text::quote(line, 80));
        return false;
      }
      outcome.last = std::move(*r);
      if (outcome.last.canceled) {
        outcome.end =
            outcome.last.compact_revision > 0 ? WatchEnd::kCompacted : WatchEnd::kCanceled;
        ended = true;
        return false;
      }
      if (!on_response(outcome.last)) {
        outcome.end = WatchEnd::kDone;
        ended = true;
        return false;
      }
      return true;
    };
    Attempt a = perform(conn.multi, conn.easy, conn.headers, ex, options_, deadline, &stop);
    // What is left without a newline at the end of a stream is one more message.
    if (ex.streaming == 1 && !ended && !stream_error && a.ending == Ending::kComplete &&
        !ex.received.empty() && !ex.overflow) {
      ex.on_line(ex.received);
    }
    if (stream_error) {
      return unexpected(*stream_error);
    }
    if (ended) {
      preferred_ = index;
      return outcome;
    }
    if (a.ending == Ending::kStopped) {
      outcome.end = WatchEnd::kStopped;
      return outcome;
    }
    if (a.ending == Ending::kTimeout && a.header_bytes > 0) {
      outcome.end = WatchEnd::kTimeout;
      return outcome;
    }
    if (a.code == CURLE_OK && a.ending == Ending::kComplete && a.http_status == 200) {
      return unexpected(error(Kind::kUnreachable, "etcd " + endpoint + ": the watch stream ended"));
    }
    StoreError e = failure(a, ex, endpoint, options_);
    const bool next = connectionFailure(a) || (e.kind == Kind::kUnreachable && !ex.overflow);
    if (!next || Clock::now() >= deadline) {
      if (a.ending == Ending::kTimeout && tried.empty()) {
        return unexpected(error(Kind::kUnreachable, "etcd " + endpoint + ": no answer in time"));
      }
      return unexpected(tried.empty() ? e : error(Kind::kUnreachable, tried + "; " + e.message));
    }
    tried += (tried.empty() ? "" : "; ") + e.message;
  }
  return unexpected(error(Kind::kUnreachable, tried));
}

}  // namespace mcgw::plan::etcd
