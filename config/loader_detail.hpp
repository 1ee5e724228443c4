// Internals shared by the loader's stages (not part of the library's API).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "config/loader.hpp"

struct lysc_node;
struct lyd_node;

namespace mcgw::config {
class Schema;
}

namespace mcgw::config::detail {

// Where a data node came from in the YAML file, and the text it had there.
struct Location {
  int line = 0;
  int column = 0;
  std::string raw;
};

// Data path → YAML location, for every node the loader created.  Paths are
// spelled as libyang spells them: /mcgw:ports/port[name='wan0']/mtu (exact:
// they are looked up; ErrorSink bounds what it stores).
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
  std::unordered_map<std::string, Location> at_;
  std::unordered_map<std::string, std::vector<Item>> items_;
};

// Collects errors for one file.  What it stores is safe to print anywhere:
// paths go through boundPath(), a message that is not valid one-line text or
// is longer than kMaxMessage is escaped and cut (callers quote the values in
// their messages with text::quote or quoteName).  After kMaxErrors errors it
// only counts them; take() then ends with "... and N more errors".
class ErrorSink {
 public:
  static constexpr size_t kMaxErrors = 100;
  static constexpr size_t kMaxMessage = 1024;

  // kind names what it collects in the "... and N more" line: "errors" or
  // "warnings".
  explicit ErrorSink(std::string file, std::string kind = "errors")
      : file_(std::move(file)), kind_(std::move(kind)) {}
  // The file as messages name it ("file:line" of an object an error is not
  // placed at): escaped like every name from outside.
  std::string fileForMessage() const;
  void at(const Location& loc, std::string_view path, std::string message);
  void at(const SourceMap& map, const std::string& path, std::string message) {
    at(map.find(path), path, std::move(message));
  }
  bool empty() const { return errors_.empty(); }
  // True once kMaxErrors are kept: a caller may skip working out more.
  bool full() const { return errors_.size() >= kMaxErrors; }
  // The errors sorted by line.
  ConfigErrors take();

 private:
  std::string file_;
  std::string kind_;
  ConfigErrors errors_;
  size_t dropped_ = 0;
};

// How long a path in an error may be; longer ones are cut.
inline constexpr size_t kMaxPath = 512;

// A data path as an error shows it: every key value in a predicate escaped
// and cut at text::kMaxQuoted bytes, [name='aaaa...(1048576 bytes)'], and the
// whole cut at kMaxPath.
std::string boundPath(std::string_view path);

// A name or key between single quotes, escaped and cut: 'wan0'.
std::string quoteName(std::string_view name);

// "a, b, c" for at most max items, then ", ... (N in all)".
std::string joinBounded(const std::vector<std::string>& items, size_t max = 10,
                        std::string_view sep = ", ");

// "[name='x']" as libyang writes a key predicate.
std::string keyPredicate(std::string_view key, std::string_view value);

struct YamlNode;

// The YAML document as a libyang data tree (tree_builder.cpp), each node's
// YAML location in map.  With errors (in sink) the tree is freed and the
// result is nullptr; an empty document is a null tree without errors.
lyd_node* buildTree(const YamlNode& root, const Schema& schema, ErrorSink& sink, SourceMap& map);

// The validated tree (defaults filled in) as the typed Config (config_reader.cpp).
Config buildConfig(lyd_node* tree);

// A libyang message as an error may show it: each quoted part escaped and cut.
std::string boundLibyangMessage(const char* msg);

// The checks YANG cannot express; adds errors to sink and what is doubtful
// but not wrong to warnings.
void checkSemantics(const Config& config, const SourceMap& map, ErrorSink& sink,
                    ErrorSink& warnings);

// The list a wrapper container holds, or nullptr.
const lysc_node* listWrapped(const lysc_node* container);

// Levenshtein distance, for did-you-mean suggestions.
size_t editDistance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" when one candidate is close to word, else "".
std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace mcgw::config::detail
