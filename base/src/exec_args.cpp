#include "wavepool/base/exec_args.h"

#include <string_view>

extern char** environ;

namespace wavepool {

std::vector<std::string> ChildEnvironment(const std::map<std::string, std::string>& overrides,
                                          bool inherit) {
  std::vector<std::string> entries;
  for (char** entry = environ; inherit && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (overrides.count(std::string(text.substr(0, text.find('=')))) == 0) {
      entries.emplace_back(text);
    }
  }
  for (const auto& [key, value] : overrides) entries.push_back(key + "=" + value);
  return entries;
}

std::vector<char*> ExecPointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace wavepool
