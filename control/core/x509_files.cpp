#include "control/core/x509_files.hpp"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "config/text.hpp"
#include "control/core/fd.hpp"

namespace mcgw::core {

namespace {

constexpr size_t kMaxPath = 256;       // a file path in an error
constexpr size_t kMaxKeyFile = 65536;  // a PEM private key is a few KiB
constexpr size_t kMaxSubject = 256;    // a certificate subject
constexpr size_t kMaxNames = 4;        // names namesOf() lists

std::string sysError(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

std::string modeText(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

std::string_view asnText(const ASN1_STRING* s) {
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
          static_cast<size_t>(ASN1_STRING_length(s))};
}

}  // namespace

std::string sslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* r = ERR_reason_error_string(e);
    if (!out.empty()) {
      out += "; ";
    }
    out += r != nullptr ? r : "error " + std::to_string(ERR_GET_REASON(e));
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Result<EVP_PKEY*, std::string> readPrivateKey(const std::string& path) {
  // O_NONBLOCK: a FIFO in its place must not hang the open.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    return unexpected(
        sysError("cannot open the private key file " + text::quote(path, kMaxPath), errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return unexpected(
        sysError("cannot stat the private key file " + text::quote(path, kMaxPath), errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return unexpected("the private key file " + text::quote(path, kMaxPath) +
                      " is not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    return unexpected("the private key file " + text::quote(path, kMaxPath) + " has mode " +
                      modeText(st.st_mode) +
                      ": group or others may access it; it must be 0600 or 0400 (chmod 600)");
  }
  if (st.st_size <= 0 || static_cast<size_t>(st.st_size) > kMaxKeyFile) {
    return unexpected("the private key file " + text::quote(path, kMaxPath) + " is empty or over " +
                      std::to_string(kMaxKeyFile) + " bytes");
  }
  std::vector<uint8_t> buf(static_cast<size_t>(st.st_size));
  if (const int e = readFully(fd.get(), buf.data(), buf.size()); e != 0) {
    OPENSSL_cleanse(buf.data(), buf.size());
    return unexpected(
        sysError("cannot read the private key file " + text::quote(path, kMaxPath), e));
  }
  ERR_clear_error();
  BIO* bio = BIO_new_mem_buf(buf.data(), static_cast<int>(buf.size()));
  EVP_PKEY* key =
      bio != nullptr ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  OPENSSL_cleanse(buf.data(), buf.size());
  if (key == nullptr) {
    return unexpected("the private key file " + text::quote(path, kMaxPath) +
                      " holds no usable PEM private key: " + sslErrors());
  }
  return key;
}

std::string subjectOf(X509* cert, SubjectText how) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) {
    return "";
  }
  X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  const std::string_view subject(data, n > 0 ? static_cast<size_t>(n) : 0);
  std::string out = how == SubjectText::kQuoted ? text::quote(subject, kMaxSubject)
                                                : text::escape(subject, kMaxSubject);
  BIO_free(bio);
  return out;
}

std::string namesOf(X509* cert) {
  std::vector<std::string> names;
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type == GEN_DNS) {
        names.push_back(text::quote(asnText(g->d.dNSName)));
      }
    }
    GENERAL_NAMES_free(sans);
  }
  if (names.empty()) {
    X509_NAME* subject = X509_get_subject_name(cert);
    const int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (i >= 0) {
      names.push_back(
          "CN " + text::quote(asnText(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i)))));
    }
  }
  if (names.empty()) {
    return "no name";
  }
  std::string out;
  for (size_t i = 0; i < names.size() && i < kMaxNames; ++i) {
    out += (i ? ", " : "") + names[i];
  }
  if (names.size() > kMaxNames) {
    out += ", ... (" + std::to_string(names.size()) + " names)";
  }
  return out;
}

}  // namespace mcgw::core
