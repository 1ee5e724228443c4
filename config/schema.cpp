#include "config/schema.hpp"

#include "config/loader_detail.hpp"

#include <libyang/libyang.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace mcgw::config {

Schema::Schema() {
  // Errors are collected from the context and reported by the loader; libyang
  // itself never prints.
  ly_log_options(LY_LOSTORE);
  if (ly_ctx_new(nullptr, LY_CTX_NO_YANGLIBRARY, &ctx_) != LY_SUCCESS) {
    throw std::runtime_error("libyang: cannot create a context");
  }
  struct lys_module* mod = nullptr;
  if (lys_parse_mem(ctx_, kYangModuleText, LYS_IN_YANG, &mod) != LY_SUCCESS) {
    const ly_err_item* e = ly_err_first(ctx_);
    throw std::runtime_error(std::string("libyang: the built-in mcgw model does not compile: ") +
                             (e && e->msg ? e->msg : "unknown error"));
  }
  module_ = mod;
  // A container is a mapping, a list a sequence of mappings (a container
  // wrapping one is written as the list), a leaf-list a sequence.
  std::function<int(const lysc_node*)> depth = [&](const lysc_node* parent) {
    int deepest = 0;
    const lysc_node* n = nullptr;
    while ((n = lys_getnext(n, parent, parent ? nullptr : module_->compiled, 0))) {
      if (n->nodetype == LYS_LEAFLIST) {
        deepest = std::max(deepest, 1);
      } else if (const lysc_node* list = detail::listWrapped(n)) {
        deepest = std::max(deepest, 2 + depth(list));
      } else if (n->nodetype == LYS_LIST) {
        deepest = std::max(deepest, 2 + depth(n));
      } else if (n->nodetype == LYS_CONTAINER) {
        deepest = std::max(deepest, 1 + depth(n));
      }
    }
    return deepest;
  };
  yaml_depth_ = 1 + depth(nullptr);
}

const Schema& Schema::instance() {
  static const Schema schema;
  return schema;
}

std::vector<std::string> Schema::leafKeyPaths() const {
  std::vector<std::string> out;
  std::function<void(const lysc_node*, const std::string&)> walk = [&](const lysc_node* parent,
                                                                       const std::string& prefix) {
    const lysc_node* n = nullptr;
    while ((n = lys_getnext(n, parent, parent ? nullptr : module_->compiled, 0))) {
      std::string p = prefix.empty() ? n->name : prefix + "." + n->name;
      if (n->nodetype & (LYS_LEAF | LYS_LEAFLIST)) {
        out.push_back(p);
      } else if (const lysc_node* list = detail::listWrapped(n)) {
        walk(list, p + "[]");
      } else {
        walk(n, n->nodetype == LYS_LIST ? p + "[]" : p);
      }
    }
  };
  walk(nullptr, "");
  return out;
}

std::vector<Schema::ListLimit> Schema::listLimits() const {
  std::vector<ListLimit> out;
  std::function<void(const lysc_node*, const std::string&)> walk = [&](const lysc_node* parent,
                                                                       const std::string& prefix) {
    const lysc_node* n = nullptr;
    while ((n = lys_getnext(n, parent, parent ? nullptr : module_->compiled, 0))) {
      std::string p = prefix.empty() ? n->name : prefix + "." + n->name;
      const lysc_node* list = detail::listWrapped(n);
      if (!list && n->nodetype == LYS_LIST) {
        list = n;
      }
      if (list) {
        uint32_t max = reinterpret_cast<const lysc_node_list*>(list)->max;
        out.push_back({p, max == UINT32_MAX ? 0 : max});
        walk(list, p + "[]");
      } else if (n->nodetype == LYS_LEAFLIST) {
        uint32_t max = reinterpret_cast<const lysc_node_leaflist*>(n)->max;
        out.push_back({p, max == UINT32_MAX ? 0 : max});
      } else if (n->nodetype == LYS_CONTAINER) {
        walk(n, p);
      }
    }
  };
  walk(nullptr, "");
  return out;
}

}  // namespace mcgw::config
