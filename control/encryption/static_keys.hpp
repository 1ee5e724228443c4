// Static ESP keys for a peer that cannot run the TLS key agreement
// (peers[].encryption.static-keys, docs/encryption.md "Static keys").
//
// The file: one SA per line, `#` comments and blank lines ignored:
//
//   # LINE  DIRECTION  SPI         KEY AND SALT (36 bytes in hex: key 32, salt 4)
//   line1   out        0x00001001  0x<72 hex digits>
//   line1   in         0x00002001  0x<72 hex digits>
//
// (the key-and-salt form `ip xfrm state ... aead 'rfc4106(gcm(aes))'` and
// Wireshark take).  Each encrypted line of the peer needs exactly one `out`
// and one `in`; SPIs are at least 256; an SA's key differs from every
// other's.  The file must be a regular file of at most kMaxFileBytes, owned by
// the user mcgwd runs as, with no group or other permission bits (0600 or
// 0400).  Errors name the file and line and never show key material.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "config/result.hpp"
#include "dataplane/engine/esp_sa.hpp"

namespace mcgw::encryption {

inline constexpr size_t kMaxKeyFileBytes = 65536;

struct StaticLineKeys {
  engine::SaMaterial out, in;
};

// By line name.  `text` is the file's content, `where` its name for errors.
Result<std::map<std::string, StaticLineKeys>, std::string> parseStaticKeys(
    std::string_view text, const std::string& where);

// Reads and parses the file after checking its type, owner, mode and size.
Result<std::map<std::string, StaticLineKeys>, std::string> readStaticKeys(const std::string& path);

}  // namespace mcgw::encryption
