// The encryption subsystem (docs/encryption.md): the ESP SAs of every
// encrypted line, from the TLS key agreement (key_agreement.hpp) or a
// static key file (static_keys.hpp), handed to the forwarding tables
// (TablesInput::sas) whenever they change; lifetimes watched, rekeys
// started before an SA is used up; `mcgwctl sa rekey`; the status.
//
// Threads: the control loop's.  A reload runs off the loop while the gateway
// is paused: setPaused(true) pauses the key agreement and the lifetime timer
// first, so nothing changes the SAs meanwhile; prepare() only checks the
// agreement's files, and the agreement takes the applied config's files and
// lines when resumed (setPaused(false), on the loop).  sas() and status()
// are also read off the loop (ForwardingState::prepare, metrics), so the SA
// map is behind a mutex.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/encryption/key_agreement.hpp"
#include "dataplane/engine/esp_sa.hpp"

namespace mcgw::encryption {

// A rekey starts when an SA has lived this share of its lifetime (seconds
// or bytes); at the whole of it the SA is no longer used.
inline constexpr double kRekeyAt = 0.85;
inline constexpr std::chrono::milliseconds kLifetimeCheck{250};

// One SA as status and show tunnels print it: SPI, generation, age,
// packets, bytes, and the replay window (inbound) or last sequence number.
nlohmann::json espSaView(const engine::EspSa& sa);

class EncryptionService : public daemon::Subsystem {
 public:
  // republish: new tables with sas() (ForwardingState::publish); false when
  // that failed (tried again later).  workers: the fast path's.
  EncryptionService(config::ConfigPtr config, unsigned workers, std::string state_dir,
                    std::function<bool()> republish);
  ~EncryptionService() override;
  EncryptionService(const EncryptionService&) = delete;
  EncryptionService& operator=(const EncryptionService&) = delete;

  // The SAs of the config's static keys (its sequence numbers reserved);
  // before the first tables are built.  An error names the file or line.
  Result<bool, std::string> start();
  // Starts the key agreement (if any peer uses it) and the lifetime timer.
  // Once, on the loop's thread.  A key agreement that cannot start (files
  // missing) leaves its lines without SAs; status says why.
  void attach(core::EventLoop& loop);
  void setPaused(bool paused);

  std::string_view name() const override { return "encryption"; }
  std::vector<std::string> validate(const config::Config& next) const override;
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override;

  // The SAs the tables are built with: those of the reload being prepared,
  // else those in force.
  std::map<std::string, engine::LineSas> sas() const;

  // `mcgwctl sa rekey PEER LINE`.
  Result<std::string, std::string> rekey(const std::string& peer, const std::string& line);

  // Per encrypted line: keys (tls, static), the key agreement's state and
  // last error, the SAs.
  nlohmann::json status() const;
  // Lines that are encrypted but have no outbound SA (degraded), with why.
  std::vector<std::string> problems() const;

  // Tests: the key agreement (null when no peer uses it).
  KeyAgreement* keyAgreement() { return agreement_.get(); }

 private:
  struct Line {
    std::string peer, name;
    config::EncryptionConfig enc;
    bool static_keys = false;
    std::shared_ptr<engine::EspSa> out;
    std::vector<std::shared_ptr<engine::EspSa>> in;
    std::string problem;  // why there is no outbound SA (or "")
    std::chrono::steady_clock::time_point rekey_asked{};
    uint64_t rekeys = 0;
    uint64_t expired = 0;  // outbound SAs dropped at their hard lifetime
    // Static keys: what the SAs were made from (SHA-256, to tell a changed
    // file on reload) and the sequence numbers reserved (reserveSeq).
    std::array<uint8_t, 32> digest_out{}, digest_in{};
    uint64_t seq_reserved = 0;
    std::string seq_path;  // the reservation file of the outbound key
  };
  using Lines = std::map<std::string, Line>;  // by "peer/line"

  Result<Lines, std::string> linesFor(const config::Config& c) const;
  std::vector<KeyLine> keyLines(const config::Config& c) const;
  KeyAgreementSettings settings(const config::Config& c) const;
  void changed();  // the SAs changed: publish now, or when resumed
  void checkLifetimes();
  bool onInstall(const std::string& line, const SaMaterial& m, bool inbound);
  void syncAgreement();  // the agreement takes config_'s files and lines
  void onRetire(const std::string& line, uint32_t spi);
  void onLost(const std::string& line, const std::string& why);
  std::shared_ptr<engine::EspSa> makeSa(bool inbound, const std::string& line,
                                        const engine::SaMaterial& m, uint32_t window) const;
  void startAgreement(const config::Config& c);

  config::ConfigPtr config_;
  unsigned workers_;
  std::string state_dir_;
  std::function<bool()> republish_;
  core::EventLoop* loop_ = nullptr;
  core::Source timer_;
  bool paused_ = false;
  bool dirty_ = false;
  mutable std::mutex mu_;  // lines_ and pending_ (read by a reload off the loop)
  Lines lines_;
  std::optional<Lines> pending_;
  config::ConfigPtr pending_config_;
  std::unique_ptr<KeyAgreement> agreement_;
  bool agreement_sync_ = false;  // a reload applied; syncAgreement() when resumed
  std::string agreement_error_;  // why the key agreement does not run ("" when it does)
};

}  // namespace mcgw::encryption
