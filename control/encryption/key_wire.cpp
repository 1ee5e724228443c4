#include "control/encryption/key_wire.hpp"

#include <algorithm>
#include <cstring>

namespace mcgw::encryption {

std::vector<uint8_t> encodeMessage(const Message& m) {
  size_t len = 0;
  switch (m.type) {
    case MsgType::kHello:
    case MsgType::kRekey:
      len = 12;
      break;
    case MsgType::kReady:
      len = 8;
      break;
    case MsgType::kRekeyRequest:
      break;
    case MsgType::kError:
      len = std::min(m.text.size(), kMaxErrorText);
      break;
  }
  std::vector<uint8_t> out(kFrameHeader + len);
  uint8_t* body = out.data() + kFrameHeader;
  out[0] = kProtocolVersion;
  out[1] = static_cast<uint8_t>(m.type);
  putBe(out.data() + 2, len, 2);
  if (m.type == MsgType::kHello || m.type == MsgType::kRekey || m.type == MsgType::kReady) {
    putBe(body, m.generation, 8);
  }
  if (m.type == MsgType::kHello || m.type == MsgType::kRekey) {
    putBe(body + 8, m.spi, 4);
  }
  if (m.type == MsgType::kError && len > 0) {
    std::memcpy(body, m.text.data(), len);
  }
  return out;
}

std::optional<Result<Message, std::string>> decodeMessage(std::span<const uint8_t> bytes,
                                                          size_t* used) {
  using R = Result<Message, std::string>;
  if (bytes.empty()) {
    return std::nullopt;
  }
  if (bytes[0] != kProtocolVersion) {
    return R(unexpected("unsupported protocol version " + std::to_string(bytes[0])));
  }
  if (bytes.size() < kFrameHeader) {
    return std::nullopt;
  }
  const uint8_t type = bytes[1];
  const size_t len = getBe(bytes.data() + 2, 2);
  if (len > kMaxBody) {
    return R(unexpected("a frame of " + std::to_string(kFrameHeader + len) +
                        " bytes (the limit is " + std::to_string(kMaxFrame) + ")"));
  }
  size_t want = 0;
  Message m;
  switch (type) {
    case static_cast<uint8_t>(MsgType::kHello):
    case static_cast<uint8_t>(MsgType::kRekey):
      want = 12;
      break;
    case static_cast<uint8_t>(MsgType::kReady):
      want = 8;
      break;
    case static_cast<uint8_t>(MsgType::kRekeyRequest):
      want = 0;
      break;
    case static_cast<uint8_t>(MsgType::kError):
      want = len;
      if (len > kMaxErrorText) {
        return R(unexpected("an ERROR of " + std::to_string(len) + " bytes (the limit is " +
                            std::to_string(kMaxErrorText) + ")"));
      }
      break;
    default:
      return R(unexpected("unknown message type " + std::to_string(type)));
  }
  if (len != want) {
    return R(unexpected("message type " + std::to_string(type) + " with a body of " +
                        std::to_string(len) + " bytes (it has " + std::to_string(want) + ")"));
  }
  if (bytes.size() < kFrameHeader + len) {
    return std::nullopt;
  }
  m.type = static_cast<MsgType>(type);
  const uint8_t* body = bytes.data() + kFrameHeader;
  if (m.type == MsgType::kHello || m.type == MsgType::kRekey || m.type == MsgType::kReady) {
    m.generation = getBe(body, 8);
  }
  if (m.type == MsgType::kHello || m.type == MsgType::kRekey) {
    m.spi = static_cast<uint32_t>(getBe(body + 8, 4));
  }
  if (m.type == MsgType::kError) {
    m.text.assign(reinterpret_cast<const char*>(body), len);
  }
  *used = kFrameHeader + len;
  return R(std::move(m));
}

}  // namespace mcgw::encryption
