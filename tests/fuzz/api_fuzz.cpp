// libFuzzer target: API requests and every JSON view of a running Gateway
// (EAL --no-huge, net_null ports), against configs with arbitrary bytes in
// every string.  Whatever the input:
//  - every request line gets exactly one response line, which is JSON of
//    valid UTF-8: an object with "version": 1 and a boolean "ok", and an
//    error message when not ok;
//  - nothing throws out of the API boundary and the process lives on.
// An input is one of: a config (its strings taken from the input: raw bytes,
// YAML escapes of any code point, long runs) reloaded and then read through
// every view; a raw request line; a well-formed request with arbitrary
// command and arguments.  Runs in a private network namespace (ctest:
// unshare --net), since an accepted config makes mcgwd probe its lines.
//
// Built by clang with coverage (-fsanitize=fuzzer-no-link) together with the
// loader, the text library and the API server; the Gateway itself (DPDK) is
// GCC-built (tests/fuzz/fuzz_gateway.cpp).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "config/text.hpp"
#include "control/api/json_text.hpp"
#include "control/api/server.hpp"
#include "tests/fuzz/fuzz_gateway.hpp"

namespace {

using mcgw::fuzz::FuzzGateway;
using nlohmann::json;

[[noreturn]] void fail(const std::string& why, const std::string& line) {
  std::fprintf(stderr, "api_fuzz: %s\n  response: %s\n", why.c_str(),
               mcgw::text::escape(line, 2000).c_str());
  std::abort();
}

// The properties of one response line.
void check(const std::string& line) {
  if (line.empty() || line.back() != '\n' || line.find('\n') != line.size() - 1) {
    fail("not exactly one line", line);
  }
  if (auto p = mcgw::text::findProblem(line.substr(0, line.size() - 1))) {
    fail("not valid text: " + p->message(), line);
  }
  json r = json::parse(line, nullptr, false);
  if (r.is_discarded() || !r.is_object()) {
    fail("not a JSON object", line);
  }
  if (!r.contains("version") || r["version"] != 1) {
    fail("no \"version\": 1", line);
  }
  if (!r.contains("ok") || !r["ok"].is_boolean()) {
    fail("no boolean \"ok\"", line);
  }
  if (!r["ok"].get<bool>() &&
      !(r.contains("error") && r["error"].is_object() && r["error"].contains("message") &&
        r["error"]["message"].is_string())) {
    fail("an error without a message", line);
  }
  if (r["ok"].get<bool>() && !r.contains("result")) {
    fail("ok without a result", line);
  }
  // The gateway's config path holds the byte 0xE9 (fuzz_gateway.cpp): where a
  // response names it, it is escaped, never dropped or raw.
  if (line.find("mcgw-api-fuzz-caf") != std::string::npos &&
      line.find("mcgw-api-fuzz-caf\\\\xE9") == std::string::npos) {
    fail("the config path is not written escaped", line);
  }
}

std::string answer(const std::string& request) {
  std::string line = mcgw::api::answer(
      request, [](const std::string& c, const json& a) { return FuzzGateway::get().handle(c, a); });
  check(line);
  return line;
}

// One string of a config: mostly the usual value (also when the input is
// used up), else bytes from the input.
std::string value(FuzzedDataProvider& in, const std::string& usual) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 12:  // raw bytes: not UTF-8, control characters, YAML syntax
      return in.ConsumeRandomLengthString(80);
    case 13: {  // a double-quoted YAML scalar of arbitrary code points
      std::string s = "\"";
      for (int n = in.ConsumeIntegralInRange<int>(0, 12); n > 0; --n) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "\\U%08X", in.ConsumeIntegralInRange<uint32_t>(0, 0x10FFFF));
        s += buf;
      }
      return s + "\"";
    }
    case 14:  // the usual value, much longer
      return usual + std::string(in.ConsumeIntegralInRange<size_t>(0, 5000), usual.back());
    case 15:  // the usual value with bytes appended
      return usual + in.ConsumeRandomLengthString(8);
    default:
      return usual;
  }
}

// How the fuzzed reloads went, printed at exit: a run in which no fuzzed
// config is ever applied would test the views with the start config only.
struct Tally {
  unsigned long reloads = 0, applied = 0;
  ~Tally() {
    std::fprintf(stderr, "api_fuzz: %lu of %lu fuzzed configs applied\n", applied, reloads);
  }
} tally;

std::string fuzzedConfig(FuzzedDataProvider& in, const FuzzGateway& gw) {
  auto v = [&](const char* usual) { return value(in, usual); };
  std::string c = "node:\n  name: " + v("gw-fuzz") + "\n  site: " + v("fuzz") +
                  "\n  description: " + v("a gateway") + "\n";
  // eal and api need a restart: the start config's, so that reloads apply.
  std::string start = mcgw::fuzz::startConfig(gw.filePrefix(), gw.socket());
  c += start.substr(start.find("eal:"), start.find("ports:") - start.find("eal:"));
  c += "ports:\n  - name: " + v("lan0") + "\n    role: lan\n    vdev: net_null0\n" +
       "    addresses: [" + v("10.1.0.1/24") + "]\n" + "  - name: " + v("wan0") +
       "\n    role: wan\n    vdev: net_null1\n    addresses: [" + v("192.0.2.9/30") + "]\n";
  if (in.ConsumeBool()) {
    c += "tenants:\n  - name: " + v("blue") + "\n    vni: " + v("1001") +
         "\n    routes:\n      - prefix: " + v("10.2.0.0/16") + "\n        peer: " + v("site-b") +
         "\n";
    c += "peers:\n  - name: " + v("site-b") + "\n    encapsulation: " + v("vxlan") +
         "\n    mss-clamp: " + v("auto") + "\n    lines:\n      - name: " + v("line1") +
         "\n        port: " + v("wan0") + "\n        local-vtep: " + v("192.0.2.9") +
         "\n        remote-vtep: " + v("192.0.2.10") + "\n";
  }
  if (in.ConsumeBool()) {
    c += v("logging") + ":\n  " + v("level") + ": " + v("info") + "\n";
  }
  c += start.substr(start.find("api:"));
  return c;
}

const char* const kViews[] = {"status",      "show-config",   "show-tunnels",
                              "show-routes", "show-counters", "show-neighbors"};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FuzzGateway::get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  FuzzGateway& gw = FuzzGateway::get();
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: {  // a config with odd strings, reloaded, then every view
      std::ofstream(gw.configPath(), std::ios::trunc) << fuzzedConfig(in, gw);
      std::string r = answer(R"({"version":1,"command":"reload"})");
      ++tally.reloads;
      tally.applied += json::parse(r).value("ok", false) ? 1 : 0;
      for (const char* view : kViews) {
        answer(std::string(R"({"version":1,"command":")") + view + "\"}");
      }
      break;
    }
    case 1:  // a raw request line
      answer(in.ConsumeRemainingBytesAsString());
      break;
    default: {  // a request of the right shape: odd command and arguments
      static const char* const kCommands[] = {
          "status", "show-config", "show-tunnels", "show-counters", "set-line", "reload", "x"};
      json req = {{"version", 1}};
      req["command"] = in.ConsumeBool() ? std::string(in.PickValueInArray(kCommands))
                                        : in.ConsumeRandomLengthString(40);
      json args = json::object();
      for (int n = in.ConsumeIntegralInRange<int>(0, 4); n > 0; --n) {
        std::string key =
            in.ConsumeBool()
                ? std::string(in.PickValueInArray({"peer", "line", "state", "verbose"}))
                : in.ConsumeRandomLengthString(16);
        switch (in.ConsumeIntegralInRange<int>(0, 3)) {
          case 0:
            args[key] = in.ConsumeRandomLengthString(40);
            break;
          case 1:
            args[key] = in.ConsumeIntegral<int64_t>();
            break;
          case 2:
            args[key] = json::array({in.ConsumeRandomLengthString(8)});
            break;
          default:
            args[key] = in.PickValueInArray({"up", "down", "site-b", "line1"});
        }
      }
      if (in.ConsumeBool()) {
        req["args"] = args;
      }
      // Bytes that are not UTF-8 reach the server as JSON text would carry
      // them: escaped by api::dump (raw ones are case 1's).
      answer(mcgw::api::dump(req));
    }
  }
  return 0;
}
