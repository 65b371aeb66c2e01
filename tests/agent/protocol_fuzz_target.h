// The protocol fuzz target's check, callable from the libFuzzer entry point
// (protocol_fuzz_target.cpp, built into `protocol_fuzzer` with -DWAVEPOOL_LIBFUZZER=ON) and from
// the bounded driver in the normal test run (protocol_fuzz_test.cpp).
#ifndef WAVEPOOL_TESTS_AGENT_PROTOCOL_FUZZ_TARGET_H_
#define WAVEPOOL_TESTS_AGENT_PROTOCOL_FUZZ_TARGET_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace wavepool::agent::testing {

struct FuzzOutcome {
  bool ok = true;          // false: a decoded frame did not re-encode to its own bytes
  std::string failure;     // what went wrong, when !ok
  std::size_t frames = 0;  // frames that decoded (whole input and stream)
};

// Feeds `data` to DecodeFrame as one frame and to a FrameReader as a stream (in chunks whose size
// the first byte picks); every frame that decodes must re-encode to exactly the bytes it came
// from. Never crashes, whatever the bytes.
FuzzOutcome CheckProtocolInput(const std::uint8_t* data, std::size_t size);

}  // namespace wavepool::agent::testing

#endif  // WAVEPOOL_TESTS_AGENT_PROTOCOL_FUZZ_TARGET_H_
