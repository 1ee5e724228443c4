// libFuzzer target: any bytes as a config file.  The loader must return a
// Config or errors, never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = mcgw::config::loadConfigText(std::string_view(reinterpret_cast<const char*>(data), size),
                                        "fuzz.yaml");
  if (!r.ok()) {
    for (const auto& e : r.error()) {
      (void)e.toString();
    }
  }
  return 0;
}
