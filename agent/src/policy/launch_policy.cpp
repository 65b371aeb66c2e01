#include "wavepool/agent/launch_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace wavepool::agent {

absl::Status Validate(const PacingConfig& config) {
  const std::pair<const char*, std::uint32_t> fields[] = {
      {"foreground_credits", config.foreground_credits},
      {"background_credits", config.background_credits},
      {"background_alone_credits", config.background_alone_credits}};
  for (const auto& [name, value] : fields) {
    if (value < 1 || value > kMaxCreditLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": must be in [1, ", kMaxCreditLimit, "], got ", value));
    }
  }
  return absl::OkStatus();
}

std::uint32_t CreditLimit(const PacingConfig& config, Role role, std::uint32_t requested,
                          bool foreground_present) {
  if (role == Role::kForeground) {
    return requested == 0 ? config.foreground_credits : std::min(requested, kMaxCreditLimit);
  }
  const std::uint32_t cap =
      foreground_present ? config.background_credits : config.background_alone_credits;
  return requested == 0 ? cap : std::min(requested, cap);
}

StreamPriority StreamPriorityFor(Role role) {
  return role == Role::kForeground ? StreamPriority::kHigh : StreamPriority::kLow;
}

std::uint32_t MpsClientPriority(Role role) { return role == Role::kForeground ? 0 : 1; }

}  // namespace wavepool::agent
