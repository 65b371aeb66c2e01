// `wavepool codec encode|decode --in FILE --out FILE`: the runtime's 3:1 lossy weight codec
// (wavepool/runtime/weight_codec.h) on files. `encode` reads raw little-endian float32 values and
// writes the packed stream, then reports the round trip's error; `decode` turns a stream back
// into raw float32. The output file is written whole or not at all.
#ifndef WAVEPOOL_CLI_CODEC_COMMAND_H_
#define WAVEPOOL_CLI_CODEC_COMMAND_H_

#include <ostream>
#include <string>

#include "CLI/CLI.hpp"

namespace wavepool::cli {

enum class CodecMode { kNone, kEncode, kDecode };

struct CodecFlags {
  CodecMode mode = CodecMode::kNone;  // set by the subcommand the command line names
  std::string in;
  std::string out;
};

// Registers `codec` with its `encode` and `decode` subcommands on `app` (exactly one is required),
// storing their flags in `flags`, which must outlive `app`.
CLI::App* AddCodecCommand(CLI::App* app, CodecFlags* flags);

// Runs the command: the report goes to `out` ("key: value" lines: values, bytes in, bytes out,
// and for encode the round trip's errors), errors to `err` as one line starting
// `wavepool codec <mode>: ` and naming the file. Returns 0, or 1 on any error (missing or
// unreadable input, an input that is not whole float32 values, a value the codec rejects, a
// corrupt stream, an output that cannot be written); the output file is then left untouched.
int RunCodec(const CodecFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_CODEC_COMMAND_H_
