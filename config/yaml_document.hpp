// A config file's YAML as the loader reads it: one pass over yaml-cpp's parser
// events builds a compact tree and enforces, before anything else looks at
// the file, what a config must respect whatever its content:
//
//  - the file is text: UTF-8 without control characters other than tab and
//    line breaks (every bad line is reported, up to a bound);
//  - one YAML document;
//  - nesting at most YamlLimits::max_depth levels (yaml-cpp alone recurses to
//    500 and then reports "bad file");
//  - at most YamlLimits::max_nodes nodes, an alias counting the nodes it stands
//    for each time it is used (a "billion laughs" file is refused before it
//    is walked); likewise at most max_expanded_bytes of keys and values, and
//    max_value_bytes in any one (an alias of a long value, used many times,
//    is refused rather than copied and checked each time);
//  - every key and value is one line of text: no control character at all,
//    however written (a YAML escape such as "\e" or "\0", a '|' block).
//
// Problems are reported into an ErrorSink with their line and column.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader_detail.hpp"

namespace mcgw::config::detail {

// One node.  Aliases are resolved: an alias is a second pointer to the node
// it names, so the tree is a DAG (never a cycle: those are refused).
struct YamlNode {
  enum class Kind : uint8_t { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  int line = 0;  // 1-based position of the node's first character
  int column = 0;
  std::string scalar;                     // kScalar
  std::vector<const YamlNode*> children;  // kSequence: items; kMap: key, value, key, value, ...

  bool isNull() const { return kind == Kind::kNull; }
  bool isScalar() const { return kind == Kind::kScalar; }
  bool isSequence() const { return kind == Kind::kSequence; }
  bool isMap() const { return kind == Kind::kMap; }
  // Items of a sequence, pairs of a map.
  size_t size() const { return kind == Kind::kMap ? children.size() / 2 : children.size(); }
  const YamlNode& item(size_t i) const { return *children[i]; }
  const YamlNode& key(size_t i) const { return *children[2 * i]; }
  const YamlNode& value(size_t i) const { return *children[2 * i + 1]; }
  // The value of the first scalar key spelled key in a map, or nullptr.
  const YamlNode* find(std::string_view key) const;
};

struct YamlLimits {
  int max_depth = 32;                                // nested sequences and mappings
  uint64_t max_nodes = 1000000;                      // keys, values and items, aliases expanded
  size_t max_reported = 20;                          // bad lines or values reported one by one
  int model_depth = 0;                               // how deep a valid config nests, for messages
  size_t max_value_bytes = 4096;                     // one key or value
  uint64_t max_expanded_bytes = uint64_t{32} << 20;  // all keys and values, aliases expanded
};

class YamlDocument {
 public:
  YamlDocument() = default;
  YamlDocument(const YamlDocument&) = delete;
  YamlDocument& operator=(const YamlDocument&) = delete;

  // Reads text.  False, with every problem found in sink, when a rule above
  // is broken or the YAML does not parse; the tree is then empty.
  bool read(std::string_view text, const YamlLimits& limits, ErrorSink& sink);

  // The document's top node (a null node for an empty file).
  const YamlNode& root() const { return root_ ? *root_ : empty_; }
  // Nodes counted with aliases expanded.
  uint64_t expandedNodes() const { return expanded_; }

 private:
  std::deque<YamlNode> nodes_;
  const YamlNode* root_ = nullptr;
  YamlNode empty_;
  uint64_t expanded_ = 0;
};

// The parts of a yaml-cpp error message that quote the file (an anchor's
// name, an escape character) escaped and cut; exposed for tests.
std::string yamlErrorMessage(const std::string& msg);

}  // namespace mcgw::config::detail
