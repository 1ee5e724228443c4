// Internals shared by the loader's stages (not part of the library's API).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/loader.hpp"

struct lysc_node;

namespace mcgw::config::detail {

// Where a data node came from in the YAML file, and the text it had there.
struct Location {
  int line = 0;
  int column = 0;
  std::string raw;
};

// Data path → YAML location, for every node the loader created.  Paths are
// spelled as libyang spells them: /mcgw:ports/port[name='wan0']/mtu.
class SourceMap {
 public:
  void add(const std::string& path, Location loc) { at_.emplace(path, std::move(loc)); }
  // The location of path, or of its nearest ancestor that has one.
  Location find(std::string path) const;

  // The items of a leaf-list, in file order, with their raw text.
  struct Item {
    std::string path;
    Location loc;
  };
  void addItem(const std::string& list_path, const std::string& item_path, const Location& loc) {
    add(item_path, loc);
    items_[list_path].push_back({item_path, loc});
  }
  const std::vector<Item>& items(const std::string& list_path) const {
    static const std::vector<Item> kNone;
    auto it = items_.find(list_path);
    return it == items_.end() ? kNone : it->second;
  }

 private:
  std::map<std::string, Location> at_;
  std::map<std::string, std::vector<Item>> items_;
};

// Collects errors for one file.
class ErrorSink {
 public:
  explicit ErrorSink(std::string file) : file_(std::move(file)) {}
  void at(const Location& loc, std::string path, std::string message) {
    errors_.push_back({file_, loc.line, loc.column, std::move(path), std::move(message)});
  }
  void at(const SourceMap& map, const std::string& path, std::string message) {
    at(map.find(path), path, std::move(message));
  }
  bool empty() const { return errors_.empty(); }
  ConfigErrors take();

 private:
  std::string file_;
  ConfigErrors errors_;
};

// "[name='x']" as libyang writes a key predicate.
std::string keyPredicate(std::string_view key, std::string_view value);

// The checks YANG cannot express; adds to sink.
void checkSemantics(const Config& config, const SourceMap& map, ErrorSink& sink);

// The list a wrapper container holds, or nullptr.
const lysc_node* listWrapped(const lysc_node* container);

// Levenshtein distance, for did-you-mean suggestions.
size_t editDistance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" when one candidate is close to word, else "".
std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace mcgw::config::detail
