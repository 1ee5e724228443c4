// What the TLS front-ends (the key agreement, control/encryption, and the
// HTTPS API, control/api) share about OpenSSL: its error queue as text, the
// private key file read only when no one but its owner may read it, and a
// certificate's subject and names as errors and status write them.
#pragma once

#include <openssl/types.h>

#include <string>

#include "config/result.hpp"

namespace mcgw::core {

// OpenSSL's error queue as "reason; reason" (reasons only: the library and
// function names say nothing to an operator), or "unknown OpenSSL error".
// Empties the queue.
std::string sslErrors();

// The PEM private key at path, read only when it is a regular file of at
// most 64 KiB that group and others may not access (mode 0600 or 0400).  The
// caller owns the key (EVP_PKEY_free).  The file's bytes are cleansed after
// parsing.  Errors name the file, quoted.
Result<EVP_PKEY*, std::string> readPrivateKey(const std::string& path);

// How subjectOf() writes the subject: escaped (status fields, where the
// JSON string delimits it) or quoted (a log line or an error message).
enum class SubjectText { kEscaped, kQuoted };

// The certificate's subject in RFC 2253 form, at most 256 characters
// before escaping (text::escape or text::quote); "" when out of memory.
std::string subjectOf(X509* cert, SubjectText how);

// The names X509_check_host looks at: the certificate's DNS SANs, or the
// subject CN ("CN \"...\"") when it has none; quoted, at most four (then
// ", ... (N names)"), or "no name".
std::string namesOf(X509* cert);

}  // namespace mcgw::core
