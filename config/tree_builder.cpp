// YAML → libyang data tree: the loader walks the YAML document alongside
// the compiled schema, so that every node it creates has its YAML line and
// column (SourceMap) and every mismatch is said in the model's words.
#include <libyang/libyang.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config/loader_detail.hpp"
#include "config/schema.hpp"
#include "config/text.hpp"
#include "config/yaml_document.hpp"

namespace mcgw::config::detail {

// A container whose only child is a list is written in YAML as that list.
const lysc_node* listWrapped(const lysc_node* container) {
  const lysc_node* child = lysc_node_child(container);
  if (container->nodetype == LYS_CONTAINER && !(container->flags & LYS_PRESENCE) && child &&
      child->nodetype == LYS_LIST && !child->next) {
    return child;
  }
  return nullptr;
}

namespace {

Location locationOf(const YamlNode& n) {
  return {n.line, n.column, n.isScalar() ? n.scalar : std::string()};
}

std::string found(const YamlNode& n) {
  switch (n.kind) {
    case YamlNode::Kind::kNull:
      return "nothing";
    case YamlNode::Kind::kScalar:
      return text::quote(n.scalar);
    case YamlNode::Kind::kSequence:
      return "a list";
    case YamlNode::Kind::kMap:
      return "a mapping";
  }
  return "an undefined node";
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) {
      out += sep;
    }
    out += s;
  }
  return out;
}

// ---------------------------------------------------------------------------
// What a YANG type accepts, in words.

std::string describeType(const lysc_type* t);

std::string describeRange(const lysc_range* r, const char* fallback) {
  if (!r) {
    return fallback;
  }
  std::vector<std::string> parts;
  for (LY_ARRAY_COUNT_TYPE i = 0; i < LY_ARRAY_COUNT(r->parts); ++i) {
    const auto& p = r->parts[i];
    parts.push_back(p.min_u64 == p.max_u64
                        ? std::to_string(p.min_u64)
                        : std::to_string(p.min_u64) + ".." + std::to_string(p.max_u64));
  }
  return join(parts, " or ");
}
// The mcgw:expected text of a type.  A typedef that adds no restriction to its
// base type (ip-address, ip-prefix, ...) shares the base's compiled type, which
// then lacks the extension: look for it in the typedefs as parsed.
const char* expectedText(const lysc_type* t) {
  for (LY_ARRAY_COUNT_TYPE i = 0; i < LY_ARRAY_COUNT(t->exts); ++i) {
    if (std::strcmp(t->exts[i].def->name, "expected") == 0 && t->exts[i].argument) {
      return t->exts[i].argument;
    }
  }
  const lysp_module* pmod = Schema::instance().module()->parsed;
  for (LY_ARRAY_COUNT_TYPE i = 0; pmod && i < LY_ARRAY_COUNT(pmod->typedefs); ++i) {
    const lysp_type& type = pmod->typedefs[i].type;
    if (type.compiled != t) {
      continue;
    }
    for (LY_ARRAY_COUNT_TYPE j = 0; j < LY_ARRAY_COUNT(type.exts); ++j) {
      std::string_view name = type.exts[j].name;
      if ((name == "expected" || name.ends_with(":expected")) && type.exts[j].argument) {
        return type.exts[j].argument;
      }
    }
  }
  return nullptr;
}

std::string describeType(const lysc_type* t) {
  if (const char* text = expectedText(t)) {
    return text;
  }
  switch (t->basetype) {
    case LY_TYPE_UINT8:
      return "an integer in " +
             describeRange(reinterpret_cast<const lysc_type_num*>(t)->range, "0..255");
    case LY_TYPE_UINT16:
      return "an integer in " +
             describeRange(reinterpret_cast<const lysc_type_num*>(t)->range, "0..65535");
    case LY_TYPE_UINT32:
      return "an integer in " +
             describeRange(reinterpret_cast<const lysc_type_num*>(t)->range, "0..4294967295");
    case LY_TYPE_BOOL:
      return "true or false";
    case LY_TYPE_ENUM: {
      const auto* e = reinterpret_cast<const lysc_type_enum*>(t);
      std::vector<std::string> names;
      for (LY_ARRAY_COUNT_TYPE i = 0; i < LY_ARRAY_COUNT(e->enums); ++i) {
        names.push_back(e->enums[i].name);
      }
      return "one of " + join(names);
    }
    case LY_TYPE_UNION: {
      const auto* u = reinterpret_cast<const lysc_type_union*>(t);
      std::vector<std::string> alts;
      for (LY_ARRAY_COUNT_TYPE i = 0; i < LY_ARRAY_COUNT(u->types); ++i) {
        alts.push_back(describeType(u->types[i]));
      }
      return join(alts, ", or ");
    }
    case LY_TYPE_LEAFREF: {
      // "/mcgw:ports/mcgw:port/mcgw:name" → "a port name"
      const auto* l = reinterpret_cast<const lysc_type_leafref*>(t);
      std::vector<std::string> steps;
      std::istringstream in(lyxp_get_expr(l->path));
      for (std::string step; std::getline(in, step, '/');) {
        if (!step.empty()) {
          steps.push_back(step.substr(step.find(':') + 1));
        }
      }
      if (steps.size() < 2) {
        return std::string("a value of ") + lyxp_get_expr(l->path);
      }
      return "a " + steps[steps.size() - 2] + " " + steps.back();
    }
    case LY_TYPE_STRING: {
      // "a string of at most 255 characters" when the model bounds it.
      const lysc_range* len = reinterpret_cast<const lysc_type_str*>(t)->length;
      if (len && LY_ARRAY_COUNT(len->parts) == 1) {
        const auto& p = len->parts[0];
        if (p.min_u64 == 0) {
          return "a string of at most " + std::to_string(p.max_u64) + " characters";
        }
        return "a string of " + std::to_string(p.min_u64) + ".." + std::to_string(p.max_u64) +
               " characters";
      }
      return "a string";
    }
    default:
      return "a value of the type the model gives";
  }
}

// The user-facing words of a libyang message, when we have none better.
std::string libyangMessage(const ly_ctx* ctx) {
  const ly_err_item* e = ly_err_last(ctx);
  return boundLibyangMessage(e ? e->msg : nullptr);
}

// ---------------------------------------------------------------------------
// YAML → libyang data tree.

class TreeBuilder {
 public:
  TreeBuilder(const Schema& schema, ErrorSink& sink, SourceMap& map)
      : ctx_(schema.context()), mod_(schema.module()), sink_(sink), map_(map) {}

  ~TreeBuilder() { lyd_free_all(tree_); }
  lyd_node* release() {
    lyd_node* t = tree_;
    tree_ = nullptr;
    return t;
  }

  void buildTop(const YamlNode& root) {
    std::set<const lysc_node*> present;
    // A file that is not an mcgw config (a script, /etc/passwd, another
    // program's YAML or JSON): one error that quotes none of it.
    const std::vector<std::string> top = childNames(nullptr);
    if (root.isScalar() || root.isSequence()) {
      sink_.at(Location{}, "",
               std::string("not an mcgw config: the top level is ") +
                   (root.isScalar() ? "a plain text value" : "a list") +
                   ", not a mapping of keys (" + join(top) + ")");
      return;
    }
    if (root.isMap()) {
      bool known = false;
      for (size_t i = 0; i < root.size() && !known; ++i) {
        known = root.key(i).isScalar() && findChild(nullptr, root.key(i).scalar);
      }
      if (!known && root.size() > 0) {
        sink_.at(Location{}, "",
                 "not an mcgw config: " +
                     (root.size() == 1
                          ? std::string("its only top-level key is not")
                          : "none of its " + std::to_string(root.size()) + " top-level keys is") +
                     " one of " + join(top));
        return;
      }
      walkMap(root, nullptr, nullptr, "", present);
    }
    checkMissing(nullptr, present, Location{1, 1, ""}, "");
  }

  // Leafref values are checked here, all at once, rather than by libyang's
  // validation which stops at the first.  The targets of a path are looked up
  // once (an xpath per leafref made a big config quadratic).
  void checkLeafrefs() {
    struct Targets {
      std::vector<std::string> values;  // in file order, for the message
      std::unordered_set<std::string> set;
    };
    std::unordered_map<std::string, Targets> cache;
    for (const auto& [path, node] : leafrefs_) {
      const auto* leaf = reinterpret_cast<const lysc_node_leaf*>(node->schema);
      const auto* lr = reinterpret_cast<const lysc_type_leafref*>(leaf->type);
      const std::string target = lyxp_get_expr(lr->path);
      // Only an absolute path without predicates has the same targets from
      // every node (all of the model's do).
      const bool absolute = target.starts_with("/") && target.find('[') == std::string::npos;
      auto [it, fresh] = cache.try_emplace(absolute ? target : path + " " + target);
      Targets& t = it->second;
      if (fresh) {
        ly_set* set = nullptr;
        if (lyd_find_xpath(absolute ? tree_ : node, target.c_str(), &set) == LY_SUCCESS) {
          for (uint32_t i = 0; i < set->count; ++i) {
            if (t.set.insert(lyd_get_value(set->dnodes[i])).second) {
              t.values.push_back(lyd_get_value(set->dnodes[i]));
            }
          }
          ly_set_free(set, nullptr);
        }
      }
      const std::string value = lyd_get_value(node);
      if (t.set.count(value)) {
        continue;
      }
      if (sink_.full()) {
        sink_.at(map_, path, "");  // counted only
        continue;
      }
      // "/mcgw:ports/mcgw:port/mcgw:name" → "port"
      std::string what = target;
      if (auto slash = what.rfind('/'); slash != std::string::npos) {
        what.resize(slash);
        what = what.substr(what.rfind('/') + 1);
        if (auto colon = what.find(':'); colon != std::string::npos) {
          what = what.substr(colon + 1);
        }
      }
      std::string msg = "refers to " + what + " " + text::quote(value) + ", which is not defined";
      msg += t.values.empty() ? " (none is)" : "; defined: " + detail::joinBounded(t.values);
      msg += detail::didYouMean(value, t.values);
      sink_.at(map_, path, msg);
    }
  }

 private:
  // Children of a container / list entry / the top level.
  void walkMap(const YamlNode& map, const lysc_node* sparent, lyd_node* dparent,
               const std::string& path, std::set<const lysc_node*>& present,
               std::string_view skip = {}) {
    std::unordered_map<std::string_view, int> seen;  // key → line
    std::unordered_map<const lysc_node*, std::pair<const lysc_node*, std::string_view>> case_used;
    const std::string prefix = sparent ? "" : std::string(mod_->name) + ":";
    for (size_t i = 0; i < map.size(); ++i) {
      const YamlNode& k = map.key(i);
      const YamlNode& v = map.value(i);
      const Location kloc{k.line, k.column, ""};
      if (!k.isScalar()) {
        sink_.at(kloc, path.empty() ? "/" : path, "expected a key name, found " + found(k));
        continue;
      }
      const std::string& key = k.scalar;
      const lysc_node* snode = findChild(sparent, key);
      if (auto [s, fresh] = seen.emplace(key, kloc.line); !fresh) {
        sink_.at(kloc, snode ? path + "/" + prefix + key : (path.empty() ? "/" : path),
                 "duplicate key " + quoteName(key) + " (first given at line " +
                     std::to_string(s->second) + ")");
        continue;
      }
      if (!skip.empty() && key == skip) {
        continue;
      }
      if (!snode) {
        std::vector<std::string> names = childNames(sparent);
        std::string where = sparent ? "'" + std::string(sparent->name) + "'" : "the top level";
        sink_.at(kloc, path.empty() ? "/" : path,
                 "unknown key " + quoteName(key) + detail::didYouMean(key, names) + "; " + where +
                     " accepts: " + join(names));
        continue;
      }
      // Alternatives of one choice (e.g. pci and vdev) are exclusive.
      if (snode->parent && snode->parent->nodetype == LYS_CASE) {
        const lysc_node* cas = snode->parent;
        const lysc_node* choice = cas->parent;
        auto [c, fresh] = case_used.emplace(choice, std::make_pair(cas, std::string_view(key)));
        if (!fresh && c->second.first != cas) {
          sink_.at(kloc, path + "/" + key,
                   "'" + key + "' and '" + std::string(c->second.second) +
                       "' exclude each other (choice '" + choice->name + "'); give only one");
          continue;
        }
      }
      present.insert(snode);
      std::string cpath = path + "/" + prefix + key;
      map_.add(cpath, locationOf(v));
      walkNode(v, snode, dparent, cpath);
    }
  }

  void walkNode(const YamlNode& v, const lysc_node* snode, lyd_node* dparent,
                const std::string& path) {
    const Location vloc{v.line, v.column, ""};
    switch (snode->nodetype) {
      case LYS_CONTAINER: {
        if (const lysc_node* list = listWrapped(snode)) {
          // "ports: [...]" stands for the container ports holding the list port.
          if (!v.isSequence() && !v.isNull()) {
            sink_.at(vloc, path,
                     "expected a list of '" + std::string(list->name) +
                         "' entries ('- name: ...' per entry), found " + found(v));
            return;
          }
          lyd_node* node = nullptr;
          if (lyd_new_inner(dparent, mod_, snode->name, 0, &node) != LY_SUCCESS) {
            sink_.at(vloc, path, libyangMessage(ctx_));
            return;
          }
          adopt(dparent, node);
          walkNode(v, list, node, path + "/" + list->name);
          return;
        }
        if (!v.isMap() && !v.isNull()) {
          sink_.at(vloc, path,
                   "expected a mapping of '" + std::string(snode->name) + "' settings, found " +
                       found(v));
          return;
        }
        lyd_node* node = nullptr;
        if (lyd_new_inner(dparent, mod_, snode->name, 0, &node) != LY_SUCCESS) {
          sink_.at(vloc, path, libyangMessage(ctx_));
          return;
        }
        adopt(dparent, node);
        std::set<const lysc_node*> present;
        if (v.isMap()) {
          walkMap(v, snode, node, path, present);
        }
        checkMissing(snode, present, vloc, path);
        return;
      }
      case LYS_LEAF:
        if (!v.isScalar()) {
          sink_.at(vloc, path,
                   "expected " +
                       describeType(reinterpret_cast<const lysc_node_leaf*>(snode)->type) +
                       ", found " + found(v));
          return;
        }
        newTerm(snode, dparent, v.scalar, path, vloc);
        return;
      case LYS_LEAFLIST: {
        const auto* ll = reinterpret_cast<const lysc_node_leaflist*>(snode);
        if (v.isNull()) {
          return;
        }
        if (!v.isSequence()) {
          sink_.at(vloc, path,
                   "expected a list (each item " + describeType(ll->type) + "), found " + found(v) +
                       " (write [a, b] or one '- item' per line)");
          return;
        }
        if (!checkMax(snode, v.size(), vloc, path)) {
          return;
        }
        std::unordered_set<std::string_view> values;
        for (size_t i = 0; i < v.size(); ++i) {
          const YamlNode& item = v.item(i);
          const Location iloc = locationOf(item);
          if (!item.isScalar()) {
            sink_.at(iloc, path, "expected " + describeType(ll->type) + ", found " + found(item));
            continue;
          }
          std::string ipath = path + detail::keyPredicate(".", item.scalar);
          if (!values.insert(item.scalar).second) {
            sink_.at(iloc, ipath, "duplicate value " + text::quote(item.scalar));
            continue;
          }
          map_.addItem(path, ipath, iloc);
          newTerm(snode, dparent, item.scalar, ipath, iloc);
        }
        checkCount(snode, v.size(), vloc, path);
        return;
      }
      case LYS_LIST: {
        if (v.isNull()) {
          return;
        }
        if (!v.isSequence()) {
          sink_.at(vloc, path,
                   "expected a list of '" + std::string(snode->name) +
                       "' entries ('- name: ...' per entry), found " + found(v));
          return;
        }
        if (!checkMax(snode, v.size(), vloc, path)) {
          return;
        }
        std::unordered_map<std::string, int> keys_seen;
        for (size_t i = 0; i < v.size(); ++i) {
          walkListEntry(v.item(i), snode, dparent, path, keys_seen);
        }
        checkCount(snode, v.size(), vloc, path);
        return;
      }
      default:
        sink_.at(vloc, path, "unsupported schema node");
    }
  }

  void walkListEntry(const YamlNode& entry, const lysc_node* snode, lyd_node* dparent,
                     const std::string& path, std::unordered_map<std::string, int>& keys_seen) {
    const Location eloc{entry.line, entry.column, ""};
    if (!entry.isMap()) {
      sink_.at(
          eloc, path,
          "expected a '" + std::string(snode->name) + "' entry (a mapping), found " + found(entry));
      return;
    }
    // Our lists have exactly one key leaf (unit.ConfigSchema checks the
    // model); anything else is refused here rather than read wrongly.
    const lysc_node* key_schema = nullptr;
    int keys = 0;
    for (const lysc_node* c = lysc_node_child(snode); c; c = c->next) {
      if (lysc_is_key(c)) {
        key_schema = key_schema ? key_schema : c;
        ++keys;
      }
    }
    if (keys != 1) {
      sink_.at(eloc, path,
               "internal error: list '" + std::string(snode->name) + "' has " +
                   std::to_string(keys) + " keys in the model (one is supported)");
      return;
    }
    const std::string key_name = key_schema->name;
    const YamlNode* key_node = entry.find(key_name);
    if (!key_node || key_node->isNull()) {
      sink_.at(eloc, path,
               "this '" + std::string(snode->name) + "' entry has no '" + key_name +
                   "' (its key; every entry needs one)");
      return;
    }
    const Location kloc = locationOf(*key_node);
    const auto* key_type = reinterpret_cast<const lysc_node_leaf*>(key_schema)->type;
    if (!key_node->isScalar()) {
      sink_.at(kloc, path + "/" + key_name,
               "expected " + describeType(key_type) + ", found " + found(*key_node));
      return;
    }
    const std::string& key = key_node->scalar;
    std::string epath = path + detail::keyPredicate(key_name, key);
    lyd_node* node = nullptr;
    if (lyd_new_list(dparent, mod_, snode->name, 0, &node, key.c_str()) != LY_SUCCESS) {
      sink_.at(kloc, epath + "/" + key_name,
               "expected " + describeType(key_type) + ", found " + text::quote(key));
      return;
    }
    // Later stages spell the entry with the key's canonical value (libyang
    // writes 10.2.0.1/16 as 10.2.0.0/16); the location keeps the raw text.
    const std::string canonical = lyd_get_value(lyd_child(node));
    if (auto [k, fresh] = keys_seen.emplace(canonical, kloc.line); !fresh) {
      lyd_free_tree(node);
      sink_.at(kloc, epath,
               "duplicate " + std::string(snode->name) + " " + text::quote(key) +
                   (canonical != key ? " (that is " + text::quote(canonical) + ")" : "") +
                   " (first defined at line " + std::to_string(k->second) + ")");
      return;
    }
    adopt(dparent, node);
    epath = path + detail::keyPredicate(key_name, canonical);
    map_.add(epath, eloc);
    map_.add(epath + "/" + key_name, kloc);
    noteLeafref(key_schema, lyd_child(node), epath + "/" + key_name);
    std::set<const lysc_node*> present{key_schema};
    walkMap(entry, snode, node, epath, present, key_name);
    checkMissing(snode, present, eloc, epath);
  }

  void newTerm(const lysc_node* snode, lyd_node* dparent, const std::string& value,
               const std::string& path, const Location& loc) {
    lyd_node* node = nullptr;
    ly_err_clean(ctx_, nullptr);
    if (lyd_new_term(dparent, mod_, snode->name, value.c_str(), 0, &node) != LY_SUCCESS) {
      const auto* type = reinterpret_cast<const lysc_node_leaf*>(snode)->type;
      sink_.at(loc, path, "expected " + describeType(type) + ", found " + text::quote(value));
      return;
    }
    adopt(dparent, node);
    noteLeafref(snode, node, path);
  }
  void noteLeafref(const lysc_node* snode, lyd_node* node, const std::string& path) {
    const auto* type = reinterpret_cast<const lysc_node_leaf*>(snode)->type;
    if (type->basetype == LY_TYPE_LEAFREF) {
      leafrefs_.emplace_back(path, node);
    }
  }

  void adopt(lyd_node* dparent, lyd_node* node) {
    if (!dparent) {
      if (tree_) {
        lyd_insert_sibling(tree_, node, &tree_);
      } else {
        tree_ = node;
      }
    }
  }

  // Mandatory leaves and choices, minimum list sizes, and the same inside
  // non-presence containers that the file left out.
  void checkMissing(const lysc_node* sparent, const std::set<const lysc_node*>& present,
                    const Location& loc, const std::string& path) {
    const lysc_node* n = nullptr;
    const lysc_module* cmod = sparent ? nullptr : mod_->compiled;
    while ((n = lys_getnext(n, sparent, cmod, LYS_GETNEXT_WITHCHOICE))) {
      std::string cpath = path + "/" + (sparent ? "" : std::string(mod_->name) + ":") + n->name;
      bool here = present.count(n) > 0;
      if (n->nodetype == LYS_CHOICE) {
        if (!(n->flags & LYS_MAND_TRUE)) {
          continue;
        }
        std::vector<std::string> alts;
        bool any = false;
        const lysc_node* c = nullptr;
        while ((c = lys_getnext(c, n, nullptr, 0))) {
          alts.push_back(c->name);
          any = any || present.count(c);
        }
        if (!any) {
          sink_.at(loc, path, "missing one of: " + join(alts) + " (choice '" + n->name + "')");
        }
      } else if (n->nodetype == LYS_LEAF && (n->flags & LYS_MAND_TRUE) && !here) {
        sink_.at(loc, path.empty() ? cpath : path,
                 "missing mandatory key '" + std::string(n->name) + "' (" +
                     describeType(reinterpret_cast<const lysc_node_leaf*>(n)->type) + ")");
      } else if (n->nodetype & (LYS_LIST | LYS_LEAFLIST) && !here) {
        checkCount(n, 0, loc, cpath);
      } else if (n->nodetype == LYS_CONTAINER && !here && !(n->flags & LYS_PRESENCE)) {
        if (const lysc_node* list = listWrapped(n)) {
          checkCount(list, 0, loc, cpath);
        } else {
          checkMissing(n, {}, loc, cpath);
        }
      }
    }
  }

  void checkCount(const lysc_node* snode, size_t count, const Location& loc,
                  const std::string& path) {
    uint32_t min = snode->nodetype == LYS_LIST
                       ? reinterpret_cast<const lysc_node_list*>(snode)->min
                       : reinterpret_cast<const lysc_node_leaflist*>(snode)->min;
    if (count < min) {
      sink_.at(loc, path,
               "needs at least " + std::to_string(min) + " '" + snode->name + "' " +
                   (min == 1 ? "entry" : "entries") + ", found " + std::to_string(count));
    }
  }

  // A list longer than its max-elements is refused before any of its
  // entries is walked.
  bool checkMax(const lysc_node* snode, size_t count, const Location& loc,
                const std::string& path) {
    uint32_t max = snode->nodetype == LYS_LIST
                       ? reinterpret_cast<const lysc_node_list*>(snode)->max
                       : reinterpret_cast<const lysc_node_leaflist*>(snode)->max;
    if (max == 0 || count <= max) {
      return true;
    }
    sink_.at(loc, path,
             std::to_string(count) + " '" + snode->name + "' " +
                 (snode->nodetype == LYS_LIST ? "entries" : "items") + ", more than the " +
                 std::to_string(max) + " allowed");
    return false;
  }

  const lysc_node* findChild(const lysc_node* sparent, std::string_view name) const {
    const lysc_node* n = nullptr;
    while ((n = lys_getnext(n, sparent, sparent ? nullptr : mod_->compiled, 0))) {
      if (name == n->name) {
        return n;
      }
    }
    return nullptr;
  }

  std::vector<std::string> childNames(const lysc_node* sparent) const {
    std::vector<std::string> names;
    const lysc_node* n = nullptr;
    while ((n = lys_getnext(n, sparent, sparent ? nullptr : mod_->compiled, 0))) {
      names.push_back(n->name);
    }
    return names;
  }

  ly_ctx* ctx_;
  const lys_module* mod_;
  ErrorSink& sink_;
  SourceMap& map_;
  lyd_node* tree_ = nullptr;
  std::vector<std::pair<std::string, lyd_node*>> leafrefs_;
};

}  // namespace

lyd_node* buildTree(const YamlNode& root, const Schema& schema, ErrorSink& sink, SourceMap& map) {
  TreeBuilder builder(schema, sink, map);
  builder.buildTop(root);
  if (!sink.empty()) {
    return nullptr;
  }
  builder.checkLeafrefs();
  if (!sink.empty()) {
    return nullptr;
  }
  return builder.release();
}

}  // namespace mcgw::config::detail
