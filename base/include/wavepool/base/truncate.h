// Cutting text that a message, a status or a chart repeats to a bound, never inside a UTF-8
// character: a cut sequence would make the JSON or SVG it goes into invalid.
#ifndef WAVEPOOL_BASE_TRUNCATE_H_
#define WAVEPOOL_BASE_TRUNCATE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace wavepool {

// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary
// (before a byte that is not a UTF-8 continuation byte, 10xxxxxx). Bytes that are not valid UTF-8
// are kept as they are; only the cut is placed with care.
std::string_view Utf8Prefix(std::string_view text, std::size_t max_bytes);

// `text` when it has at most `max_bytes` bytes; otherwise its Utf8Prefix followed by "...", at
// most `max_bytes` bytes in all (a bound below 3 gives "..." alone).
std::string Truncate(std::string_view text, std::size_t max_bytes);

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_TRUNCATE_H_
