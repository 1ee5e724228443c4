// Config texts for tests: a base text with one edit.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace mcgw::test {

// `text` with `from` (which must occur exactly once: a test failure
// otherwise) replaced by `to`.
inline std::string replacedOnce(std::string_view text, std::string_view from, std::string_view to) {
  std::string out(text);
  const size_t at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(out.find(from, at + 1), std::string::npos) << from;
  if (at != std::string::npos) {
    out.replace(at, from.size(), to);
  }
  return out;
}

}  // namespace mcgw::test
