// The C++ side of drop_reason.h: an enum and its names from the one list.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "dataplane/engine/drop_reason.h"

namespace mcgw::engine {

enum class DropReason : uint8_t {
#define MCGW_X(name, cli, text) k##name,
  MCGW_DROP_REASONS(MCGW_X)
#undef MCGW_X
      kCount
};

inline constexpr size_t kDropReasonCount = static_cast<size_t>(DropReason::kCount);

struct DropReasonInfo {
  std::string_view name;         // as in the CLI and JSON: "unknown-vni"
  std::string_view description;  // for humans
};

inline constexpr std::array<DropReasonInfo, kDropReasonCount> kDropReasons = {{
#define MCGW_X(name, cli, text) {cli, text},
    MCGW_DROP_REASONS(MCGW_X)
#undef MCGW_X
}};

constexpr std::string_view toString(DropReason r) {
  return r < DropReason::kCount ? kDropReasons[static_cast<size_t>(r)].name : "unknown";
}

}  // namespace mcgw::engine
