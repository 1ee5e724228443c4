#include "config/yaml_document.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "config/text.hpp"

namespace mcgw::config::detail {

const YamlNode* YamlNode::find(std::string_view k) const {
  for (size_t i = 0; kind == Kind::kMap && i < size(); ++i) {
    if (key(i).isScalar() && key(i).scalar == k) {
      return &value(i);
    }
  }
  return nullptr;
}

std::string yamlErrorMessage(const std::string& msg) {
  // yaml-cpp appends what it found to a few of its messages.
  auto starts = [&](const char* prefix) { return msg.rfind(prefix, 0) == 0; };
  if (starts(YAML::ErrorMsg::UNKNOWN_ANCHOR)) {
    std::string_view name =
        std::string_view(msg).substr(std::strlen(YAML::ErrorMsg::UNKNOWN_ANCHOR));
    return "an alias to an anchor that is not defined (an anchor comes before its aliases)" +
           (name.empty() ? "" : ": " + text::quote(name));
  }
  for (const char* prefix : {YAML::ErrorMsg::INVALID_ESCAPE, YAML::ErrorMsg::INVALID_UNICODE,
                             YAML::ErrorMsg::YAML_VERSION}) {
    if (starts(prefix)) {
      return std::string(prefix) + text::quote(std::string_view(msg).substr(std::strlen(prefix)));
    }
  }
  return text::escape(msg, 2 * text::kMaxQuoted);
}

namespace {

Location at(const YAML::Mark& m) {
  if (m.is_null()) {
    return {};
  }
  return {m.line + 1, m.column + 1, ""};
}

// Every line of text that holds bytes that are not text is reported (the
// first max_reported of them, then how many more); false if there is one.
bool checkText(std::string_view text, size_t max_reported, ErrorSink& sink) {
  size_t bad_lines = 0;
  Location first_unshown;
  size_t base = 0;  // the start of a line
  int base_line = 1;
  while (base < text.size()) {
    auto p = text::findProblem(text.substr(base), text::Breaks::kAllowed);
    if (!p) {
      break;
    }
    text::LineColumn lc = text::lineColumn(text.substr(base), p->offset);
    const Location loc{base_line + lc.line - 1, lc.column, ""};
    if (++bad_lines > max_reported) {
      first_unshown = bad_lines == max_reported + 1 ? loc : first_unshown;
    } else if (p->invalid_utf8) {
      sink.at(loc, "", p->message() + "; a config file is UTF-8 text");
    } else if (p->byte == 0) {
      sink.at(loc, "", p->message() + "; a config file is text");
    } else if (p->byte >= 0x2000) {
      sink.at(
          loc, "",
          p->message() + "; a config file may not hold characters that reorder how it is shown");
    } else {
      sink.at(loc, "",
              p->message() +
                  "; a config file is text without control characters other than tab and line "
                  "breaks");
    }
    size_t eol = text.find('\n', base + p->offset);
    if (eol == std::string_view::npos) {
      break;
    }
    base_line = loc.line + 1;
    base = eol + 1;
  }
  if (bad_lines > max_reported) {
    sink.at(first_unshown, "",
            "... and " + std::to_string(bad_lines - max_reported) +
                " more lines with bytes that are not text (not shown)");
  }
  return bad_lines == 0;
}

// The line where a second YAML document starts ("---" or "..." at the start
// of a line after content), or 0.  A scan rather than YAML::LoadAll, which in
// yaml-cpp 0.7 loops for ever on some malformed input (found by fuzzing).
int secondDocumentLine(std::string_view text) {
  bool content = false;
  bool ended = false;  // "..." closed the first document
  int line = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    std::string_view l = text.substr(start, end == std::string_view::npos ? end : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++line;
    bool marker_start = l.starts_with("---") && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    bool marker_end = l.starts_with("...") && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    if ((marker_start && content) ||
        (ended && !marker_end && l.find_first_not_of(" \t") != l.npos &&
         l[l.find_first_not_of(" \t")] != '#')) {
      return line;
    }
    if (marker_end) {
      ended = content;
      continue;
    }
    size_t first = l.find_first_not_of(" \t\r");
    if (!marker_start && first != std::string_view::npos && l[first] != '#' && l[first] != '%') {
      content = true;
    }
  }
  return 0;
}

// The innermost '[' or '{' still open at offset end of text, or {} if none.
Location unclosedBracket(std::string_view text, int end) {
  end = std::min(end, static_cast<int>(text.size()));  // yaml-cpp's mark may lie past the end
  // Whether a quote or bracket after c starts a flow value (strchr would also
  // match the terminating NUL).
  auto starts_value = [](char c) { return c != '\0' && std::strchr("\n:,[{-", c) != nullptr; };
  std::vector<Location> open;
  int line = 1;
  int column = 0;
  char quote = 0;
  char prev = '\n';  // the last character that is not a blank
  bool blank_before = true;
  for (int i = 0; i < end; ++i) {
    char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      prev = '\n';
      blank_before = true;
      continue;
    }
    if (quote) {
      if (c == '\\' && quote == '"') {
        ++i;
        ++column;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '#' && blank_before) {
      while (i + 1 < end && text[i + 1] != '\n') {
        ++i;
      }
    } else if ((c == '\'' || c == '"') && starts_value(prev)) {
      quote = c;
    } else if ((c == '[' || c == '{') && starts_value(prev)) {
      open.push_back({line, column, std::string(1, c)});
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    }
    blank_before = c == ' ' || c == '\t';
    if (!blank_before) {
      prev = c;
    }
  }
  return open.empty() ? Location{} : open.back();
}

// A YAML syntax error, with the hints yaml-cpp never gives.
void reportSyntaxError(std::string_view text, const YAML::Exception& e, ErrorSink& sink) {
  Location loc = at(e.mark);
  std::string msg = "invalid YAML: " + yamlErrorMessage(e.msg);
  if ((e.msg == YAML::ErrorMsg::END_OF_SEQ_FLOW || e.msg == YAML::ErrorMsg::END_OF_MAP_FLOW) &&
      !e.mark.is_null()) {
    // yaml-cpp notices where the list or mapping should have ended; the
    // mistake is the bracket that was never closed.
    if (Location open = unclosedBracket(text, e.mark.pos); open.line > 0) {
      msg += " (the '" + open.raw + "' here is never closed)";
      loc = open;
    }
  }
  if (loc.line > 0 && loc.raw.empty()) {
    // A tab in the indentation is the classic cause, and yaml-cpp never says so.
    size_t start = 0;
    for (int l = 1; l < loc.line && start != std::string_view::npos; ++l) {
      start = text.find('\n', start);
      start = start == std::string_view::npos ? start : start + 1;
    }
    if (start != std::string_view::npos) {
      std::string_view line = text.substr(start, text.find('\n', start) - start);
      std::string_view indent = line.substr(0, line.find_first_not_of(" \t"));
      if (indent.find('\t') != std::string_view::npos) {
        msg += " (this line is indented with a tab; YAML allows only spaces)";
      }
    }
  }
  sink.at(loc, "", msg);
}

std::string depthMessage(int depth, const YamlLimits& limits) {
  std::string msg = "nested deeper than " + std::to_string(depth) + " levels";
  if (limits.model_depth > 0) {
    msg += "; an mcgw config nests at most " + std::to_string(limits.model_depth);
  }
  return msg;
}

// Builds the tree from parser events.  A limit ends the parse by throwing Stop.
class TreeHandler : public YAML::EventHandler {
 public:
  struct Stop {
    Location loc;
    std::string message;
  };

  TreeHandler(std::deque<YamlNode>& nodes, const YamlLimits& limits, ErrorSink& sink)
      : nodes_(nodes), limits_(limits), sink_(sink) {}

  const YamlNode* root() const { return root_; }
  uint64_t expanded() const { return expanded_; }
  // Keys and values whose text was refused.
  size_t badValues() const { return bad_values_; }

  // Reports how many refused values were not shown.
  void finish() {
    if (bad_values_ > limits_.max_reported) {
      sink_.at(first_unshown_, "",
               "... and " + std::to_string(bad_values_ - limits_.max_reported) +
                   " more keys or values with control characters (not shown)");
    }
  }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    YamlNode& n = add(mark, YamlNode::Kind::kNull);
    anchored(anchor, &n, 1);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (anchor >= anchors_.size() || !anchors_[anchor].node) {
      throw Stop{at(mark), "an alias to an anchor that is not defined"};
    }
    const Anchor& a = anchors_[anchor];
    if (a.size == kOpen) {
      throw Stop{at(mark), "an alias inside the node its anchor names (a cycle)"};
    }
    count(a.size, mark, true);
    countBytes(a.bytes, mark, true);
    attach(a.node);
  }

  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    if (value.size() > limits_.max_value_bytes) {
      throw Stop{at(mark), "a key or value of " + std::to_string(value.size()) +
                               " bytes; one may be at most " +
                               std::to_string(limits_.max_value_bytes) + " bytes"};
    }
    if (auto p = text::findProblem(value)) {
      refuse(mark, value, *p);
    }
    countBytes(value.size(), mark, false);
    YamlNode& n = add(mark, YamlNode::Kind::kScalar);
    n.scalar = value;
    anchored(anchor, &n, 1, value.size());
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor, YamlNode::Kind::kSequence);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor, YamlNode::Kind::kMap);
  }
  void OnMapEnd() override { close(); }

 private:
  static constexpr uint64_t kOpen = std::numeric_limits<uint64_t>::max();

  struct Anchor {
    const YamlNode* node = nullptr;
    uint64_t size = 0;   // nodes it stands for, kOpen while it is being read
    uint64_t bytes = 0;  // bytes of the keys and values it stands for
  };
  struct Open {
    YamlNode* node;
    YAML::anchor_t anchor;
    uint64_t expanded_before;  // expanded_ before the node was counted
    uint64_t bytes_before;     // expanded_bytes_ likewise
  };

  YamlNode& add(const YAML::Mark& mark, YamlNode::Kind kind) {
    count(1, mark, false);
    YamlNode& n = nodes_.emplace_back();
    n.kind = kind;
    n.line = mark.line + 1;
    n.column = mark.column + 1;
    attach(&n);
    return n;
  }

  void attach(const YamlNode* n) {
    if (open_.empty()) {
      root_ = n;
    } else {
      open_.back().node->children.push_back(n);
    }
  }

  void count(uint64_t n, const YAML::Mark& mark, bool alias) {
    expanded_ = n > limits_.max_nodes ? limits_.max_nodes + 1 : expanded_ + n;
    if (expanded_ > limits_.max_nodes) {
      const std::string max = std::to_string(limits_.max_nodes);
      throw Stop{at(mark), alias ? "this alias brings the document to more than " + max +
                                       " nodes (an alias counts the nodes it names each time it "
                                       "is used); a config may have at most " +
                                       max
                                 : "more than " + max +
                                       " nodes (keys, values and list items); a config may have "
                                       "at most " +
                                       max};
    }
  }

  void countBytes(uint64_t n, const YAML::Mark& mark, bool alias) {
    expanded_bytes_ += n;
    if (expanded_bytes_ > limits_.max_expanded_bytes) {
      const std::string max = std::to_string(limits_.max_expanded_bytes);
      throw Stop{at(mark),
                 std::string(alias ? "this alias brings" : "this value brings") +
                     " the keys and values to more than " + max +
                     " bytes (an alias counts the bytes it names each time it is used); a "
                     "config may have at most " +
                     max};
    }
  }

  void anchored(YAML::anchor_t anchor, const YamlNode* n, uint64_t size, uint64_t bytes = 0) {
    if (anchor == YAML::NullAnchor) {
      return;
    }
    if (anchor >= anchors_.size()) {
      anchors_.resize(anchor + 1);
    }
    anchors_[anchor] = {n, size, bytes};
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor, YamlNode::Kind kind) {
    if (static_cast<int>(open_.size()) >= limits_.max_depth) {
      throw Stop{at(mark), depthMessage(limits_.max_depth, limits_)};
    }
    const uint64_t before = expanded_;
    YamlNode& n = add(mark, kind);
    anchored(anchor, &n, kOpen);
    open_.push_back({&n, anchor, before, expanded_bytes_});
  }

  void close() {
    Open o = open_.back();
    open_.pop_back();
    if (o.anchor != YAML::NullAnchor) {
      anchored(o.anchor, o.node, expanded_ - o.expanded_before, expanded_bytes_ - o.bytes_before);
    }
  }

  // A key or value whose text a config may not hold.
  void refuse(const YAML::Mark& mark, const std::string& value, const text::TextProblem& p) {
    if (++bad_values_ > limits_.max_reported) {
      first_unshown_ = bad_values_ == limits_.max_reported + 1 ? at(mark) : first_unshown_;
      return;
    }
    const bool is_key = !open_.empty() && open_.back().node->kind == YamlNode::Kind::kMap &&
                        open_.back().node->children.size() % 2 == 0;
    std::string msg = std::string(is_key ? "the key " : "the value ") + text::quote(value);
    if (p.invalid_utf8) {
      // The file is UTF-8: yaml-cpp 0.7 writes the escapes "\N" and "\_"
      // as the single bytes 0x85 and 0xA0.
      msg += " is " + p.message() +
             "; a value is UTF-8 text (yaml-cpp writes the escapes \\N and \\_ as one byte; write "
             "\\u00A0 for \\_)";
    } else if (p.byte == '\n' || p.byte == '\r') {
      msg +=
          " holds a line break; a value is one line of text (a '|' or '>' block keeps its line "
          "breaks: write it on one line, or fold it with '>-')";
    } else {
      msg += " holds " + (p.byte == '\t' ? std::string("a tab") : p.message()) +
             "; a value is one line of text without control characters (YAML escapes such as "
             "\\t, \\e or \\0 write them)";
    }
    sink_.at(at(mark), "", msg);
  }

  std::deque<YamlNode>& nodes_;
  const YamlLimits& limits_;
  ErrorSink& sink_;
  std::vector<Open> open_;
  std::vector<Anchor> anchors_;
  const YamlNode* root_ = nullptr;
  uint64_t expanded_ = 0;
  uint64_t expanded_bytes_ = 0;
  size_t bad_values_ = 0;
  Location first_unshown_;
};

}  // namespace

bool YamlDocument::read(std::string_view text, const YamlLimits& limits, ErrorSink& sink) {
  nodes_.clear();
  root_ = nullptr;
  expanded_ = 0;
  if (!checkText(text, limits.max_reported, sink)) {
    return false;
  }
  // Only the first document is read; the rest would be silently dropped.
  if (int line = secondDocumentLine(text); line > 0) {
    sink.at(Location{line, 1, ""}, "",
            "a second YAML document starts here; the config is one document");
    return false;
  }
  std::istringstream in{std::string(text)};
  TreeHandler handler(nodes_, limits, sink);
  bool ok = true;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(handler);
  } catch (const TreeHandler::Stop& stop) {
    sink.at(stop.loc, "", stop.message);
    ok = false;
  } catch (const YAML::DeepRecursion& e) {
    // Not reached while max_depth is below yaml-cpp's own limit (500), but
    // its "bad file" must never be the message.
    sink.at(at(e.mark), "", depthMessage(std::min(limits.max_depth, e.depth() - 1), limits));
    ok = false;
  } catch (const YAML::Exception& e) {
    reportSyntaxError(text, e, sink);
    ok = false;
  }
  handler.finish();
  if (!ok || handler.badValues() > 0) {
    nodes_.clear();
    return false;
  }
  root_ = handler.root();
  expanded_ = handler.expanded();
  return true;
}

}  // namespace mcgw::config::detail
