#include "wavepool/base/truncate.h"

#include <string>
#include <string_view>

namespace wavepool {

std::string_view Utf8Prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

std::string Truncate(std::string_view text, std::size_t max_bytes) {
  constexpr std::string_view kEllipsis = "...";
  if (text.size() <= max_bytes) return std::string(text);
  const std::size_t room = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  std::string cut(Utf8Prefix(text, room));
  cut += kEllipsis;
  return cut;
}

}  // namespace wavepool
