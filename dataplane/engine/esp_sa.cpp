#include "dataplane/engine/esp_sa.hpp"

namespace mcgw::engine {

EspSa::EspSa(Direction d, const std::string& line, const SaMaterial& m, unsigned workers,
             uint32_t replay_window)
    : direction_(d),
      line_(line),
      spi_(m.spi),
      generation_(m.generation),
      salt_(m.salt),
      created_(std::chrono::steady_clock::now()) {
  gcm_.reserve(workers + 1);
  for (unsigned i = 0; i <= workers; ++i) {
    gcm_.push_back(std::make_unique<crypto::Gcm>(m.key));
  }
  if (d == Direction::kInbound) {
    window_ = std::make_unique<crypto::ReplayWindow>(replay_window);
  }
}

}  // namespace mcgw::engine
