// The cryptodev engine behind Gcm (internal to mcgw_crypto): sessions on the
// device initEngine() chose, and one AEAD operation through DPDK's
// synchronous CPU-crypto API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dataplane/crypto/esp.hpp"

namespace mcgw::crypto::cryptodev {

// The device new Gcm objects use; -1: none (EVP).
int device();

struct Sessions {
  void* enc = nullptr;
  void* dec = nullptr;
};

// An encrypt and a decrypt session for `key` and an AAD of `aad_len` bytes
// on `dev`; both null when the pool is exhausted or the PMD refuses.
Sessions create(int dev, const Key& key, size_t aad_len);
void destroy(int dev, Sessions& s);

// One AEAD operation, in place: the tag is written (encrypt) or checked.
bool process(int dev, void* session, const uint8_t nonce[12], const uint8_t* aad, uint8_t* data,
             size_t len, uint8_t* tag);

}  // namespace mcgw::crypto::cryptodev
