// The compiled YANG model (config/yang/mcgw.yang, built into the library).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct ly_ctx;
struct lys_module;

namespace mcgw::config {

extern const char* const kYangModuleText;

// The libyang context holding the mcgw module.  Created on first use; not
// thread-safe (the control plane loads configs from one thread).
class Schema {
 public:
  static const Schema& instance();
  ly_ctx* context() const { return ctx_; }
  const lys_module* module() const { return module_; }

  // The YAML key paths of every leaf and leaf-list, e.g. "ports[].mtu"
  // ("[]" marks a list).  Used to check the documentation.
  std::vector<std::string> leafKeyPaths() const;

  // Every list and leaf-list by its YAML key path ("tenants[].routes") with
  // its max-elements (0: unbounded), in model order.
  struct ListLimit {
    std::string path;
    uint32_t max = 0;
  };
  std::vector<ListLimit> listLimits() const;

  // How many YAML sequences and mappings a valid config nests at most (the
  // top-level mapping is level 1).
  int yamlDepth() const { return yaml_depth_; }

 private:
  Schema();
  ly_ctx* ctx_ = nullptr;
  const lys_module* module_ = nullptr;
  int yaml_depth_ = 0;
};

}  // namespace mcgw::config
