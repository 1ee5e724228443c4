// The etcd store's parsers of untrusted bytes: the gateway's range answer
// and watch messages, base64, and a VPC's stored JSON (which, when it
// parses, must survive a round trip).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "control/plan/etcd_client.hpp"
#include "control/plan/etcd_store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcgw::plan;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)etcd::parseRangeAnswer(text);
  (void)etcd::parseWatchMessage(text);
  if (auto bytes = etcd::base64Decode(text)) {
    if (etcd::base64Decode(etcd::base64Encode(*bytes)) != bytes) {
      std::abort();
    }
  }
  if (auto vpc = vpcFromJson(text)) {
    auto again = vpcFromJson(vpcToJson(*vpc));
    if (!again || !(*again == *vpc)) {
      std::abort();
    }
  }
  return 0;
}
