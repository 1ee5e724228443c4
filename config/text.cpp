#include "config/text.hpp"

#include <utf8cpp/utf8.h>

#include <cstdio>

namespace mcgw::text {

namespace {

bool isControl(uint32_t cp) {
  return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
}

// The embeddings, overrides and isolates of Unicode's bidirectional
// algorithm: they reorder what a terminal shows ("Trojan Source").
bool isBidiFormat(uint32_t cp) {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

bool isBreak(uint32_t cp) {
  return cp == '\t' || cp == '\n' || cp == '\r';
}

// Calls on_char(offset, code point, size) for every valid character and
// on_bad(offset, byte) for every byte that does not start one, from offset 0
// until a callback returns false.
template <typename Char, typename Bad>
void walk(std::string_view text, Char on_char, Bad on_bad) {
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  const char* it = begin;
  while (it != end) {
    const char* bad = utf8::find_invalid(it, end);
    while (it != bad) {
      const char* at = it;
      uint32_t cp = utf8::unchecked::next(it);
      if (!on_char(static_cast<size_t>(at - begin), cp, static_cast<size_t>(it - at))) {
        return;
      }
    }
    if (bad != end) {
      if (!on_bad(static_cast<size_t>(bad - begin), static_cast<uint8_t>(*bad))) {
        return;
      }
      it = bad + 1;
    }
  }
}

std::string hex(const char* fmt, uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, fmt, static_cast<unsigned>(v));
  return buf;
}

std::string escapeBody(std::string_view text, size_t max, bool quote_marks) {
  std::string out;
  size_t used = 0;  // input bytes taken
  // Only the first max bytes are written: look no further than the last
  // character that may start before the cut (a long value is not scanned).
  const size_t look = max >= text.size() ? text.size() : std::min(text.size(), max + 4);
  walk(
      text.substr(0, look),
      [&](size_t off, uint32_t cp, size_t len) {
        if (off + len > max) {
          return false;
        }
        used = off + len;
        if (cp == '\\') {
          out += "\\\\";
        } else if (cp == '"' && quote_marks) {
          out += "\\\"";
        } else if (cp == '\n') {
          out += "\\n";
        } else if (cp == '\r') {
          out += "\\r";
        } else if (cp == '\t') {
          out += "\\t";
        } else if (isControl(cp) || isBidiFormat(cp)) {
          out += hex("\\u%04X", cp);
        } else {
          out.append(text.substr(off, len));
        }
        return true;
      },
      [&](size_t off, uint8_t byte) {
        if (off + 1 > max) {
          return false;
        }
        used = off + 1;
        out += hex("\\x%02X", byte);
        return true;
      });
  if (used < text.size()) {
    out += quote_marks ? "\"" : "";
    out += "...(" + std::to_string(text.size()) + " bytes)";
    out.insert(0, quote_marks ? "\"" : "");
    return out;
  }
  return quote_marks ? "\"" + out + "\"" : out;
}

}  // namespace

std::string TextProblem::message() const {
  if (invalid_utf8) {
    return "not valid UTF-8 (byte " + hex("0x%02X", byte) + ")";
  }
  if (byte == 0) {
    return "a NUL byte";
  }
  if (byte >= 0x2000) {
    return "bidirectional formatting character " + hex("U+%04X", byte);
  }
  return "control character " + hex("U+%04X", byte);
}

std::optional<TextProblem> findProblem(std::string_view text, Breaks breaks) {
  std::optional<TextProblem> found;
  walk(
      text,
      [&](size_t off, uint32_t cp, size_t) {
        if ((isControl(cp) && !(breaks == Breaks::kAllowed && isBreak(cp))) || isBidiFormat(cp)) {
          found = TextProblem{off, cp, false};
          return false;
        }
        return true;
      },
      [&](size_t off, uint8_t byte) {
        found = TextProblem{off, byte, true};
        return false;
      });
  return found;
}

LineColumn lineColumn(std::string_view text, size_t offset) {
  LineColumn lc;
  walk(
      text.substr(0, std::min(offset, text.size())),
      [&](size_t, uint32_t cp, size_t) {
        if (cp == '\n') {
          ++lc.line;
          lc.column = 1;
        } else {
          ++lc.column;
        }
        return true;
      },
      [&](size_t, uint8_t) {
        ++lc.column;
        return true;
      });
  return lc;
}

std::string escape(std::string_view text, size_t max) {
  return escapeBody(text, max, false);
}

std::string quote(std::string_view text, size_t max) {
  return escapeBody(text, max, true);
}

std::string escapeInvalidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  walk(
      text,
      [&](size_t off, uint32_t cp, size_t len) {
        out += cp == '\\' ? std::string_view("\\\\") : text.substr(off, len);
        return true;
      },
      [&](size_t, uint8_t byte) {
        out += hex("\\x%02X", byte);
        return true;
      });
  return out;
}

}  // namespace mcgw::text
