#include "config/loader.hpp"

#include <fcntl.h>
#include <libyang/libyang.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "config/loader_detail.hpp"
#include "config/schema.hpp"
#include "config/text.hpp"
#include "config/yaml_document.hpp"

namespace mcgw::config {

using detail::ErrorSink;
using detail::Location;
using detail::quoteName;
using detail::SourceMap;
using detail::YamlNode;

std::string ConfigError::toString() const {
  std::ostringstream s;
  // The file name comes from the caller (a command line, an API request).
  s << text::escape(file, 4096);
  if (line > 0) {
    s << ':' << line << ':' << column;
  }
  s << ": ";
  if (!path.empty()) {
    s << path << ": ";
  }
  s << message;
  return s.str();
}

namespace detail {

Location SourceMap::find(std::string path) const {
  while (true) {
    if (auto it = at_.find(path); it != at_.end()) {
      return it->second;
    }
    // Drop the last segment, minding '/' inside key predicates.
    int depth = 0;
    size_t cut = std::string::npos;
    for (size_t i = path.size(); i-- > 0;) {
      char c = path[i];
      if (c == ']') {
        ++depth;
      } else if (c == '[') {
        --depth;
      } else if (c == '/' && depth == 0) {
        cut = i;
        break;
      }
    }
    if (cut == std::string::npos || cut == 0) {
      return {};
    }
    path.resize(cut);
  }
}

void ErrorSink::at(const Location& loc, std::string_view path, std::string message) {
  if (full()) {
    ++dropped_;
    return;
  }
  if (text::findProblem(message)) {
    message = text::escape(message, kMaxMessage);  // a bug: a value was not quoted
  } else if (message.size() > kMaxMessage) {
    size_t cut = kMaxMessage;
    while (cut > 0 && (static_cast<uint8_t>(message[cut]) & 0xc0) == 0x80) {
      --cut;  // not inside a character
    }
    message = message.substr(0, cut) + "...(" + std::to_string(message.size()) + " bytes)";
  }
  errors_.push_back({file_, loc.line, loc.column, boundPath(path), std::move(message)});
}

ConfigErrors ErrorSink::take() {
  std::stable_sort(errors_.begin(), errors_.end(), [](const ConfigError& a, const ConfigError& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  if (dropped_ > 0) {
    errors_.push_back({file_, 0, 0, "",
                       "... and " + std::to_string(dropped_) + " more errors (the first " +
                           std::to_string(kMaxErrors) + " are shown)"});
    dropped_ = 0;
  }
  return std::move(errors_);
}

std::string keyPredicate(std::string_view key, std::string_view value) {
  char q = value.find('\'') == std::string_view::npos ? '\'' : '"';
  return "[" + std::string(key) + "=" + q + std::string(value) + q + "]";
}

std::string boundPath(std::string_view path) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    // A predicate as keyPredicate() writes it: [key='value'] or [key="value"].
    size_t open = path.find('[', i);
    size_t eq = open == std::string_view::npos ? open : path.find('=', open);
    char q = eq == std::string_view::npos || eq + 1 >= path.size() ? 0 : path[eq + 1];
    size_t close =
        q == '\'' || q == '"' ? path.find(std::string{q, ']'}, eq + 2) : std::string_view::npos;
    if (close == std::string_view::npos) {
      out += path.substr(i);
      break;
    }
    out += path.substr(i, eq + 2 - i);
    out += text::escape(path.substr(eq + 2, close - eq - 2));
    out += path.substr(close, 2);
    i = close + 2;
  }
  if (text::findProblem(out) || out.size() > kMaxPath) {
    return text::escape(out, kMaxPath);
  }
  return out;
}

std::string quoteName(std::string_view name) {
  return "'" + text::escape(name) + "'";
}

std::string joinBounded(const std::vector<std::string>& items, size_t max, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max; ++i) {
    out += (i ? std::string(sep) : "") + items[i];
  }
  if (items.size() > max) {
    out += std::string(sep) + "... (" + std::to_string(items.size()) + " in all)";
  }
  return out;
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    // The distance is at least the difference in length (and a long word
    // would make editDistance slow for nothing).
    if ((word.size() > c.size() ? word.size() - c.size() : c.size() - word.size()) >= best_d) {
      continue;
    }
    size_t d = editDistance(word, c);
    if (d < best_d) {
      best_d = d;
      best = &c;
    }
  }
  return best ? " (did you mean " + quoteName(*best) + "?)" : "";
}

// A container whose only child is a list is written in YAML as that list.
const lysc_node* listWrapped(const lysc_node* container) {
  const lysc_node* child = lysc_node_child(container);
  if (container->nodetype == LYS_CONTAINER && !(container->flags & LYS_PRESENCE) && child &&
      child->nodetype == LYS_LIST && !child->next) {
    return child;
  }
  return nullptr;
}

}  // namespace detail

using detail::listWrapped;

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

// A libyang message as an error may show it: libyang quotes values between
// double quotes; each quoted part is escaped and cut like any value.
std::string boundLibyangMessage(const char* msg) {
  if (!msg) {
    return "rejected by the YANG model";
  }
  std::string_view m = msg;
  std::string out;
  size_t i = 0;
  while (i < m.size()) {
    size_t open = m.find('"', i);
    size_t close = open == std::string_view::npos ? open : m.find('"', open + 1);
    if (close == std::string_view::npos) {
      out += text::escape(m.substr(i), ErrorSink::kMaxMessage);
      break;
    }
    out += text::escape(m.substr(i, open - i), ErrorSink::kMaxMessage);
    out += text::quote(m.substr(open + 1, close - open - 1));
    i = close + 1;
  }
  return out;
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
    // Our lists have exactly one key leaf.
    const lysc_node* key_schema = nullptr;
    for (const lysc_node* c = lysc_node_child(snode); c; c = c->next) {
      if (lysc_is_key(c)) {
        key_schema = c;
        break;
      }
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

// ---------------------------------------------------------------------------
// libyang data tree (validated, defaults filled in) → typed Config.

class TreeReader {
 public:
  explicit TreeReader(lyd_node* tree) : tree_(tree) {}

  // The top-level container named name, or nullptr.
  lyd_node* top(const char* name) const {
    for (lyd_node* n = tree_; n; n = n->next) {
      if (std::strcmp(n->schema->name, name) == 0) {
        return n;
      }
    }
    return nullptr;
  }
  static lyd_node* child(const lyd_node* parent, const char* name) {
    if (!parent) {
      return nullptr;
    }
    for (lyd_node* n = lyd_child(parent); n; n = n->next) {
      if (std::strcmp(n->schema->name, name) == 0) {
        return n;
      }
    }
    return nullptr;
  }
  static std::vector<lyd_node*> children(const lyd_node* parent, const char* name) {
    std::vector<lyd_node*> out;
    if (!parent) {
      return out;
    }
    for (lyd_node* n = lyd_child(parent); n; n = n->next) {
      if (std::strcmp(n->schema->name, name) == 0) {
        out.push_back(n);
      }
    }
    return out;
  }
  static std::string str(const lyd_node* parent, const char* name, std::string dflt = "") {
    lyd_node* n = child(parent, name);
    return n ? lyd_get_value(n) : dflt;
  }
  static std::vector<std::string> strs(const lyd_node* parent, const char* name) {
    std::vector<std::string> out;
    for (lyd_node* n : children(parent, name)) {
      out.push_back(lyd_get_value(n));
    }
    return out;
  }
  template <typename T>
  static T num(const lyd_node* parent, const char* name, T dflt = 0) {
    lyd_node* n = child(parent, name);
    return n ? static_cast<T>(std::stoull(lyd_get_value(n))) : dflt;
  }
  static bool flag(const lyd_node* parent, const char* name, bool dflt) {
    lyd_node* n = child(parent, name);
    return n ? std::strcmp(lyd_get_value(n), "true") == 0 : dflt;
  }
  // Values the model has already checked; a parse failure here is a bug.
  static IpAddress addr(const std::string& s) { return IpAddress::parse(s).value_or(IpAddress{}); }
  static IpPrefix prefix(const std::string& s) { return IpPrefix::parse(s).value_or(IpPrefix{}); }
  static MacAddress mac(const std::string& s) {
    return MacAddress::parse(s).value_or(MacAddress{});
  }

 private:
  lyd_node* tree_;
};

Config buildConfig(lyd_node* tree) {
  using R = TreeReader;
  R r(tree);
  Config c;
  lyd_node* node = r.top("node");
  c.node = {R::str(node, "name"), R::str(node, "site"), R::str(node, "description")};

  lyd_node* eal = r.top("eal");
  c.eal.main_lcore = R::num<uint16_t>(eal, "main-lcore");
  for (const auto& w : R::strs(eal, "workers")) {
    c.eal.workers.push_back(static_cast<uint16_t>(std::stoul(w)));
  }
  c.eal.hugepages = R::flag(eal, "hugepages", true);
  c.eal.memory_mb = R::num<uint32_t>(eal, "memory-mb");
  c.eal.file_prefix = R::str(eal, "file-prefix");
  c.eal.mbufs = R::num<uint32_t>(eal, "mbufs");
  c.eal.extra_args = R::strs(eal, "extra-args");

  for (lyd_node* p : R::children(r.top("ports"), "port")) {
    PortConfig pc;
    pc.name = R::str(p, "name");
    pc.role = R::str(p, "role") == "wan" ? PortRole::kWan : PortRole::kLan;
    pc.pci = R::str(p, "pci");
    pc.vdev = R::str(p, "vdev");
    pc.mtu = R::num<uint16_t>(p, "mtu");
    pc.rx_queues = R::num<uint16_t>(p, "rx-queues");
    pc.rx_descriptors = R::num<uint16_t>(p, "rx-descriptors");
    pc.tx_descriptors = R::num<uint16_t>(p, "tx-descriptors");
    for (const auto& a : R::strs(p, "addresses")) {
      pc.addresses.push_back(R::prefix(a));
    }
    pc.tenant = R::str(p, "tenant");
    for (lyd_node* n : R::children(R::child(p, "neighbors"), "neighbor")) {
      pc.neighbors.push_back({R::addr(R::str(n, "address")), R::mac(R::str(n, "mac"))});
    }
    c.ports.push_back(std::move(pc));
  }

  for (lyd_node* t : R::children(r.top("tenants"), "tenant")) {
    TenantConfig tc{R::str(t, "name"), R::num<uint32_t>(t, "vni"), {}};
    for (lyd_node* rt : R::children(R::child(t, "routes"), "route")) {
      StaticRoute sr;
      sr.prefix = R::prefix(R::str(rt, "prefix"));
      sr.peer = R::str(rt, "peer");
      if (auto nh = R::str(rt, "next-hop"); !nh.empty()) {
        sr.next_hop = R::addr(nh);
      }
      tc.routes.push_back(std::move(sr));
    }
    c.tenants.push_back(std::move(tc));
  }
  // A LAN port carries the only tenant there is unless it names one.
  if (c.tenants.size() == 1) {
    for (auto& p : c.ports) {
      if (p.role == PortRole::kLan && p.tenant.empty()) {
        p.tenant = c.tenants[0].name;
      }
    }
  }

  for (lyd_node* p : R::children(r.top("peers"), "peer")) {
    PeerConfig pc;
    pc.name = R::str(p, "name");
    if (R::child(p, "asn")) {
      pc.asn = R::num<uint32_t>(p, "asn");
    }
    pc.encapsulation =
        R::str(p, "encapsulation") == "geneve" ? Encapsulation::kGeneve : Encapsulation::kVxlan;
    std::string mss = R::str(p, "mss-clamp", "auto");
    if (mss == "auto") {
      pc.mss_clamp = {MssClamp::Mode::kAuto, 0};
    } else if (mss == "off") {
      pc.mss_clamp = {MssClamp::Mode::kOff, 0};
    } else {
      pc.mss_clamp = {MssClamp::Mode::kFixed, static_cast<uint16_t>(std::stoul(mss))};
    }
    pc.mss_insert = R::str(p, "mss-insert", "false") == "true";
    pc.line_mode = R::str(p, "line-mode") == "ecmp" ? LineMode::kEcmp : LineMode::kActiveBackup;
    pc.tenants = R::strs(p, "tenants");
    for (lyd_node* l : R::children(R::child(p, "lines"), "line")) {
      std::string port = R::str(l, "port");
      const PortConfig* pc_port = c.findPort(port);
      uint16_t port_mtu = pc_port ? pc_port->mtu : 1500;
      LineConfig lc{R::str(l, "name"),
                    port,
                    R::addr(R::str(l, "local-vtep")),
                    R::addr(R::str(l, "remote-vtep")),
                    R::num<uint16_t>(l, "mtu", port_mtu),
                    R::num<uint8_t>(l, "outer-ttl"),
                    std::nullopt};
      if (auto nh = R::str(l, "next-hop"); !nh.empty()) {
        lc.next_hop = R::addr(nh);
      }
      pc.lines.push_back(std::move(lc));
    }
    pc.inner_mac = R::mac(R::str(p, "inner-mac", "02:00:00:00:00:01"));
    c.peers.push_back(std::move(pc));
  }

  if (lyd_node* b = r.top("bgp")) {
    c.bgp.enabled = true;
    c.bgp.asn = R::num<uint32_t>(b, "asn");
    c.bgp.router_id = R::addr(R::str(b, "router-id"));
    lyd_node* timers = R::child(b, "timers");
    c.bgp.keepalive_s = R::num<uint16_t>(timers, "keepalive");
    c.bgp.hold_s = R::num<uint16_t>(timers, "hold");
    lyd_node* bfd = R::child(b, "bfd");
    c.bgp.bfd_enabled = R::flag(bfd, "enabled", true);
    c.bgp.bfd_interval_ms = R::num<uint16_t>(bfd, "interval-ms");
    c.bgp.bfd_multiplier = R::num<uint8_t>(bfd, "multiplier");
    for (lyd_node* n : R::children(R::child(b, "neighbors"), "neighbor")) {
      c.bgp.neighbors.push_back({R::addr(R::str(n, "address")), R::num<uint32_t>(n, "asn"),
                                 R::str(n, "port"), R::flag(n, "bfd", true)});
    }
    lyd_node* fpm = R::child(b, "fpm");
    c.bgp.fpm_address = R::addr(R::str(fpm, "address"));
    c.bgp.fpm_port = R::num<uint16_t>(fpm, "port");
  }

  for (lyd_node* g : R::children(r.top("vrrp"), "group")) {
    VrrpGroupConfig vg;
    vg.vrid = R::num<uint8_t>(g, "vrid");
    vg.port = R::str(g, "port");
    vg.priority = R::num<uint8_t>(g, "priority");
    vg.advert_interval_ms = R::num<uint16_t>(g, "advert-interval-ms");
    vg.preempt = R::flag(g, "preempt", true);
    for (const auto& a : R::strs(g, "virtual-addresses")) {
      vg.virtual_addresses.push_back(R::addr(a));
    }
    for (const auto& a : R::strs(g, "unicast-peers")) {
      vg.unicast_peers.push_back(R::addr(a));
    }
    vg.track_peers = R::strs(g, "track-peers");
    vg.track_penalty = R::num<uint8_t>(g, "track-penalty");
    vg.notify = R::str(g, "notify");
    c.vrrp_groups.push_back(std::move(vg));
  }

  lyd_node* plan = r.top("address-plan");
  lyd_node* store = R::child(plan, "store");
  c.address_plan.store = R::str(store, "type") == "etcd" ? AddressPlanConfig::Store::kEtcd
                                                         : AddressPlanConfig::Store::kFile;
  c.address_plan.store_path = R::str(store, "path");
  c.address_plan.etcd_endpoints = R::strs(store, "endpoints");
  for (lyd_node* p : R::children(R::child(plan, "pools"), "pool")) {
    PoolConfig pc{R::str(p, "name"), {}, R::num<uint8_t>(p, "allocation-length")};
    for (const auto& s : R::strs(p, "prefixes")) {
      pc.prefixes.push_back(R::prefix(s));
    }
    c.address_plan.pools.push_back(std::move(pc));
  }
  for (lyd_node* cl : R::children(R::child(plan, "clouds"), "cloud")) {
    for (lyd_node* rg : R::children(R::child(cl, "regions"), "region")) {
      for (lyd_node* v : R::children(R::child(rg, "vpcs"), "vpc")) {
        VpcConfig vc{R::str(cl, "name"),  R::str(rg, "name"), R::str(v, "name"), {},
                     R::str(v, "tenant"), R::str(v, "site")};
        for (const auto& s : R::strs(v, "prefixes")) {
          vc.prefixes.push_back(R::prefix(s));
        }
        c.address_plan.vpcs.push_back(std::move(vc));
      }
    }
  }
  for (lyd_node* m : R::children(R::child(plan, "mapped-ranges"), "mapped-range")) {
    c.address_plan.mapped_ranges.push_back({R::str(m, "name"), R::prefix(R::str(m, "real")),
                                            R::prefix(R::str(m, "mapped")), R::str(m, "site")});
  }

  c.fast_path.idle_sleep_max_us =
      R::num<uint32_t>(r.top("fast-path"), "idle-sleep-max-us", FastPathConfig{}.idle_sleep_max_us);

  {
    lyd_node* pm = r.top("path-mtu");
    const PathMtuConfig d;
    c.path_mtu.probe = R::str(pm, "probe", d.probe ? "true" : "false") == "true";
    c.path_mtu.probe_interval_s = R::num<uint32_t>(pm, "probe-interval", d.probe_interval_s);
    c.path_mtu.probe_timeout_ms = R::num<uint32_t>(pm, "probe-timeout-ms", d.probe_timeout_ms);
    c.path_mtu.aging_s = R::num<uint32_t>(pm, "aging", d.aging_s);
    c.path_mtu.probe_port = R::num<uint16_t>(pm, "probe-port", d.probe_port);
  }

  lyd_node* api = r.top("api");
  c.api = {R::str(api, "socket"), R::str(api, "group")};
  c.logging.level = R::str(r.top("logging"), "level");
  c.startup.use_last_good = R::flag(r.top("startup"), "use-last-good", true);
  return c;
}

// libyang 2.1 words an error's path as 'Data location "/a/b".' (or 'Schema
// location "...", data location "/a/b".'); the data path is the last quoted part.
std::string libyangDataPath(const char* text) {
  std::string s = text ? text : "";
  if (s.empty() || s.front() == '/') {
    return s;
  }
  size_t at = s.find("ata location \"");
  size_t end = s.rfind('"');
  if (at == std::string::npos || end == std::string::npos) {
    return "";
  }
  at += std::strlen("ata location \"");
  return end > at ? s.substr(at, end - at) : "";
}

// An error of libyang's own validation, placed at the YAML line it is about.
void reportValidationError(const ly_err_item* e, const lyd_node* tree, const SourceMap& map,
                           ErrorSink& sink) {
  std::string path = libyangDataPath(e->path);
  std::string msg = e->msg ? e->msg : "";
  if (e->apptag && std::strcmp(e->apptag, "data-not-unique") == 0) {
    // 'Unique data leaf(s) "vni" not satisfied in "/first" and "/second".': point
    // at the leaf of the second entry and say which entry has the value already.
    std::vector<std::string> parts;
    for (size_t i = msg.find('"'); i != std::string::npos; i = msg.find('"', i + 1)) {
      size_t j = msg.find('"', i + 1);
      if (j == std::string::npos) {
        break;
      }
      parts.push_back(msg.substr(i + 1, j - i - 1));
      i = j;
    }
    if (parts.size() == 3 && parts[0].find(' ') == std::string::npos) {
      const std::string& leaf = parts[0];
      path = parts[2] + "/" + leaf;
      std::string value;
      if (lyd_node* n = nullptr; lyd_find_path(tree, path.c_str(), 0, &n) == LY_SUCCESS && n) {
        value = " " + text::quote(lyd_get_value(n));
      }
      sink.at(map, path,
              "'" + leaf + "'" + value + " is already used by " + detail::boundPath(parts[1]) +
                  "; each entry needs its own '" + leaf + "'");
      return;
    }
  }
  sink.at(map, path, boundLibyangMessage(e->msg));
}

std::string sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string sizeMessage(uint64_t size, const char* what) {
  return std::string(what) + std::to_string(size) + " bytes; a config may be at most " +
         std::to_string(kMaxFileBytes) + " bytes (" + std::to_string(kMaxFileBytes >> 20) + " MiB)";
}

}  // namespace

LoadResult loadConfigText(std::string_view text, const std::string& file_name) {
  ErrorSink sink(file_name);
  if (text.size() > kMaxFileBytes) {
    sink.at(Location{}, "", sizeMessage(text.size(), ""));
    return unexpected(sink.take());
  }
  const Schema& schema = Schema::instance();
  detail::YamlDocument yaml;
  const detail::YamlLimits limits{kMaxDepth,          kMaxNodes,      kMaxReported,
                                  schema.yamlDepth(), kMaxValueBytes, kMaxExpandedBytes};
  if (!yaml.read(text, limits, sink)) {
    return unexpected(sink.take());
  }

  ly_err_clean(schema.context(), nullptr);
  SourceMap map;
  TreeBuilder builder(schema, sink, map);
  builder.buildTop(yaml.root());
  if (!sink.empty()) {
    return unexpected(sink.take());
  }
  builder.checkLeafrefs();
  if (!sink.empty()) {
    return unexpected(sink.take());
  }

  // The model's remaining rules (and its defaults) come from libyang itself.
  lyd_node* tree = builder.release();
  ly_err_clean(schema.context(), nullptr);
  if (lyd_validate_all(&tree, schema.context(), LYD_VALIDATE_PRESENT, nullptr) != LY_SUCCESS) {
    for (const ly_err_item* e = ly_err_first(schema.context()); e; e = e->next) {
      if (e->level == LY_LLERR) {
        reportValidationError(e, tree, map, sink);
      }
    }
    lyd_free_all(tree);
    return unexpected(sink.take());
  }
  if (!tree) {
    // An empty file: create the implicit defaults so that mandatory checks ran.
    lyd_validate_all(&tree, schema.context(), 0, nullptr);
  }

  auto config = std::make_shared<Config>(buildConfig(tree));
  lyd_free_all(tree);
  config->source = file_name;
  config->checksum = sha256Hex(text);

  detail::checkSemantics(*config, map, sink);
  if (!sink.empty()) {
    return unexpected(sink.take());
  }
  return ConfigPtr(std::move(config));
}

Result<std::string, ConfigErrors> readConfigFile(const std::string& path) {
  auto fail = [&](std::string message) {
    return unexpected(ConfigErrors{{path, 0, 0, "", std::move(message)}});
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(std::string("cannot read: ") + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return fail(std::string("cannot read: ") + std::strerror(errno));
  }
  // A directory opens but reads as nothing, which would look like an empty config.
  if (S_ISDIR(st.st_mode)) {
    return fail(std::string("cannot read: ") + std::strerror(EISDIR));
  }
  // The size is known before reading; a pipe or a device has none, so no
  // more than one byte beyond the limit is ever read.
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    return fail(sizeMessage(static_cast<uint64_t>(st.st_size), ""));
  }
  std::string text;
  char buf[65536];
  while (text.size() <= kMaxFileBytes) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return fail(std::string("cannot read: ") + std::strerror(errno));
    }
    if (n == 0) {
      return text;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return fail(sizeMessage(kMaxFileBytes, "more than "));
}

LoadResult loadConfigFile(const std::string& path) {
  auto text = readConfigFile(path);
  if (!text) {
    return unexpected(text.error());
  }
  return loadConfigText(*text, path);
}

}  // namespace mcgw::config
