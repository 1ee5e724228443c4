// The loader's errors: where they are (SourceMap), how they are stored and
// bounded (ErrorSink, boundPath, boundLibyangMessage), and the words that
// help (didYouMean).  Shared by the loader's stages and the semantic checks.
#include "config/loader.hpp"

#include <algorithm>
#include <sstream>

#include "config/loader_detail.hpp"
#include "config/text.hpp"

namespace mcgw::config {

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
                       "... and " + std::to_string(dropped_) + " more " + kind_ + " (the first " +
                           std::to_string(kMaxErrors) + " are shown)"});
    dropped_ = 0;
  }
  return std::move(errors_);
}

std::string ErrorSink::fileForMessage() const {
  return text::escape(file_, kMaxPath);
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

}  // namespace detail

}  // namespace mcgw::config
