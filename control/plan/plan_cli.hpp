// `mcgwctl plan ...`: the address plan from the operator's shell.  These
// commands work on the config file and its store directly (a file, or
// etcd), not through mcgwd: allocation must work before any gateway runs,
// and many gateways' operators share one store.  Gateways follow the store
// and apply what changes (docs/address-plan.md).
//
// Exit codes: 0 done; 1 refused (invalid config, conflicts, a pool full);
// 2 the store is unreachable; 64 a bad command line (CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace mcgw::plan {

class PlanCommands {
 public:
  // Adds `plan` and its subcommands to app.
  explicit PlanCommands(CLI::App& app);
  // True when the command line chose `plan`.
  bool chosen() const;
  // Where text goes: stdout or stderr, through the CLI's escaping of
  // what a terminal must not interpret.
  using Print = std::function<void(const std::string& text)>;
  // Runs what the command line chose; returns the exit code.
  int run(const Print& out, const Print& err);

 private:
  int runChosen(const Print& out, const Print& err);
  CLI::App* plan_ = nullptr;
  CLI::App* check_ = nullptr;
  CLI::App* allocate_ = nullptr;
  CLI::App* release_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* import_ = nullptr;
  std::string config_path_ = "/etc/mcgw/mcgw.yaml";
  bool json_ = false;
  std::string check_file_;
  std::string cloud_, region_, vpc_, family_ = "ipv4", tenant_, site_, pool_;
  int length_ = 0;
  std::string release_name_;
  std::string from_, import_file_;
  bool apply_ = false;
};

}  // namespace mcgw::plan
