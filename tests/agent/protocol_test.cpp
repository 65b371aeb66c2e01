#include "wavepool/agent/client/protocol.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/client/gate_layout.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

const std::string kLongest(kMaxStringBytes, 'x');
const std::string kTooLong(kMaxStringBytes + 1, 'x');

// Little-endian bytes of `v`, `n` bytes wide.
std::string Le(std::uint64_t v, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

// A frame with a hand-made header and body.
std::string RawFrame(MessageType type, const std::string& body, std::uint32_t sequence = 1,
                     std::uint32_t magic = kFrameMagic, std::uint16_t version = kProtocolVersion) {
  return Le(magic, 4) + Le(version, 2) + Le(static_cast<std::uint16_t>(type), 2) + Le(sequence, 4) +
         Le(body.size(), 4) + body;
}

std::string Encode(const Message& message, std::uint32_t sequence = 1) {
  absl::StatusOr<std::string> frame = EncodeFrame(message, sequence);
  EXPECT_TRUE(frame.ok()) << frame.status();
  return frame.ok() ? *frame : std::string();
}

// Decodes `frame` and checks that re-encoding gives the same bytes: the encoding is canonical,
// so this compares every field of every message.
Message RoundTrip(const Message& message, std::uint32_t sequence = 7) {
  const std::string frame = Encode(message, sequence);
  absl::StatusOr<Frame> decoded = DecodeFrame(frame);
  EXPECT_TRUE(decoded.ok()) << decoded.status();
  if (!decoded.ok()) return Goodbye{};
  EXPECT_EQ(decoded->sequence, sequence);
  EXPECT_EQ(TypeOf(decoded->message), TypeOf(message));
  EXPECT_EQ(Encode(decoded->message, sequence), frame);
  return decoded->message;
}

RegisterRequest LongestRegister() {
  RegisterRequest r;
  r.namespace_name = kLongest;
  r.job = kLongest;
  r.pod = kLongest;
  r.role = Role::kBackground;
  r.gpu_index = UINT32_MAX;
  r.pid = -1;
  r.max_foreground_slowdown = 1.0;  // the smallest non-default SLO
  r.credit_limit = UINT32_MAX;
  r.batch_size = UINT32_MAX;
  return r;
}

TEST(Protocol, GoodbyeFrameHasTheDocumentedBytes) {
  // magic "WPAG" | version 3 | type 6 | sequence 0x01020304 | length 0.
  EXPECT_EQ(Encode(Goodbye{}, 0x01020304),
            std::string("WPAG\x03\x00\x06\x00\x04\x03\x02\x01\x00\x00\x00\x00", 16));
}

TEST(Protocol, ReportIterationFrameHasTheDocumentedBytes) {
  ReportIteration it{5, 0.5, 64};
  // 0.5 = 0x3FE0000000000000.
  EXPECT_EQ(Encode(it, 1), RawFrame(MessageType::kReportIteration,
                                    Le(5, 8) + Le(0x3FE0000000000000, 8) + Le(64, 8)));
}

TEST(Protocol, RegisterRoundTripsAtItsLimits) {
  const Message decoded = RoundTrip(LongestRegister(), UINT32_MAX);
  const auto& r = std::get<RegisterRequest>(decoded);
  EXPECT_EQ(r.job, kLongest);
  EXPECT_EQ(r.role, Role::kBackground);
  EXPECT_EQ(r.pid, -1);
  EXPECT_EQ(r.max_foreground_slowdown, 1.0);
  RegisterRequest defaults;  // empty strings, SLO 0 (the default)
  RoundTrip(defaults);
  defaults.max_foreground_slowdown = 1e300;
  RoundTrip(defaults);
}

TEST(Protocol, RegisteredRoundTripsAtItsLimits) {
  Registered r;
  r.slot = kMaxSlotsPerGpu - 1;
  r.gate_path = kLongest;
  r.gate_epoch = UINT64_MAX;
  r.gate_generation = UINT32_MAX;
  r.stream_priority = StreamPriority::kLow;
  r.credit_limit = 2;
  r.mps_pipe_directory = kLongest;
  r.mps_client_priority = 1;
  const Message decoded = RoundTrip(r);
  EXPECT_EQ(std::get<Registered>(decoded).gate_epoch, UINT64_MAX);
  r.gate_path = "/g";
  r.mps_pipe_directory.clear();
  r.stream_priority = StreamPriority::kDefault;
  RoundTrip(r);
}

TEST(Protocol, ReportOpsRoundTripsAtItsLimits) {
  ReportOps ops;
  RoundTrip(ops);  // empty
  for (std::uint32_t i = 0; i < kMaxOpGroupsPerReport; ++i) {
    ops.groups.push_back({i % kMaxOpGroups, static_cast<OpKind>(i % 4), UINT64_MAX - i});
  }
  ops.groups.back().op_group = kMaxOpGroups - 1;
  const Message decoded = RoundTrip(ops);
  const auto& groups = std::get<ReportOps>(decoded).groups;
  ASSERT_EQ(groups.size(), kMaxOpGroupsPerReport);
  EXPECT_EQ(groups[5].kind, OpKind::kAllReduce);
  EXPECT_EQ(groups.back().op_group, kMaxOpGroups - 1);
  // 16 header + 4 count + 32768 x 13 = 426,004 bytes.
  EXPECT_EQ(Encode(ops).size(), 426'004u);
}

TEST(Protocol, ReportMemoryRoundTripsAtItsLimits) {
  ReportMemory memory;
  for (std::uint32_t i = 0; i < kMaxMemorySamplesPerReport; ++i) {
    memory.samples.push_back({static_cast<std::int64_t>(i / 2), UINT64_MAX, i});  // ties allowed
  }
  memory.samples.back().time_ns = std::numeric_limits<std::int64_t>::max();
  const Message decoded = RoundTrip(memory);
  EXPECT_EQ(std::get<ReportMemory>(decoded).samples.size(), kMaxMemorySamplesPerReport);
}

TEST(Protocol, ReportWaveMemoryRoundTripsAtItsLimits) {
  ReportWaveMemory waves;
  for (std::uint32_t i = 0; i < kMaxMemorySamplesPerReport; ++i) {
    // The waves interleave; each one's times never decrease (ties allowed).
    waves.samples.push_back({static_cast<std::uint8_t>(i % kMaxWavesPerTask),
                             static_cast<std::int64_t>(i / 16), UINT64_MAX - i});
  }
  waves.samples.back().time_ns = std::numeric_limits<std::int64_t>::max();
  const Message decoded = RoundTrip(waves);
  EXPECT_EQ(std::get<ReportWaveMemory>(decoded).samples.size(), kMaxMemorySamplesPerReport);
}

TEST(Protocol, ReportWaveMemoryFrameHasTheDocumentedBytes) {
  // count 1 | wave 1 | time_ns 5 | allocated 7: 17 bytes a sample.
  EXPECT_EQ(Encode(ReportWaveMemory{{{1, 5, 7}}}),
            RawFrame(MessageType::kReportWaveMemory, Le(1, 4) + Le(1, 1) + Le(5, 8) + Le(7, 8)));
}

TEST(Protocol, IterationGoodbyeErrorAndPolicyRoundTrip) {
  RoundTrip(ReportIteration{UINT64_MAX, 0.0, UINT64_MAX});
  RoundTrip(ReportIteration{1, kMaxIterationSeconds, 0});
  RoundTrip(Goodbye{});
  for (int code = 1; code <= 16; ++code) {
    const Message decoded = RoundTrip(ErrorReply{static_cast<absl::StatusCode>(code), kLongest});
    EXPECT_EQ(static_cast<int>(std::get<ErrorReply>(decoded).code), code);
  }
  RoundTrip(Policy{UINT32_MAX, StreamPriority::kHigh, UINT32_MAX, kLongest});
  RoundTrip(Policy{});
}

TEST(Protocol, NextSequenceWrapsPastZero) {
  EXPECT_EQ(NextSequence(1), 2u);
  EXPECT_EQ(NextSequence(UINT32_MAX), 1u);
}

TEST(Protocol, ErrorReplyCutsLongMessagesAtACharacterBoundary) {
  // 249 ASCII bytes then a 3-byte character across the cut at 250: it may not be split.
  const std::string message = std::string(249, 'a') + "\xE2\x82\xAC" + std::string(10, 'b');
  const ErrorReply reply = ToErrorReply(absl::InternalError(message));
  EXPECT_EQ(reply.code, absl::StatusCode::kInternal);
  EXPECT_LE(reply.message.size(), kMaxStringBytes);
  EXPECT_EQ(reply.message, std::string(249, 'a') + "...");
  EXPECT_THAT(ToStatus(reply), StatusIs(absl::StatusCode::kInternal, HasSubstr("aaa...")));
  Encode(reply);  // and it encodes
}

// --- Encoder errors: the same limits as the decoder, the same field names --------------------

TEST(Protocol, EncodeRejectsOutOfLimitFields) {
  RegisterRequest r;
  r.pod = kTooLong;
  EXPECT_THAT(EncodeFrame(r, 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("Register.pod: length 254 > 253")));
  ReportOps ops;
  ops.groups.resize(13);
  ops.groups[12].op_group = 5000;
  EXPECT_THAT(EncodeFrame(ops, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ReportOps.groups[12].op_group: 5000 >= 4096")));
  ops.groups.assign(kMaxOpGroupsPerReport + 1, OpGroupReport{});
  EXPECT_THAT(EncodeFrame(ops, 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("ReportOps.groups: count 32769 > 32768")));
  EXPECT_THAT(EncodeFrame(Goodbye{}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("frame.sequence")));
  EXPECT_THAT(EncodeFrame(ErrorReply{absl::StatusCode::kOk, ""}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Error.code: 0")));
  EXPECT_THAT(EncodeFrame(Policy{1, static_cast<StreamPriority>(3), 0, ""}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Policy.stream_priority: 3")));
}

// --- Decoder errors ------------------------------------------------------------------------------

void ExpectDecodeError(const std::string& frame, const std::string& message,
                       absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  EXPECT_THAT(DecodeFrame(frame), StatusIs(code, HasSubstr(message))) << "expected: " << message;
}

TEST(Protocol, DecodeRejectsBadHeaders) {
  const std::string body = Le(0, 4);  // an empty ReportOps
  ExpectDecodeError("WPAG", "frame.header: truncated (needs 16 bytes, 4 given)");
  ExpectDecodeError(RawFrame(MessageType::kReportOps, body, 1, 0x12345678),
                    "frame.magic: 0x12345678, expected 0x47415057");
  // Another protocol version is Unimplemented, an oversized body ResourceExhausted (the agent
  // counts them apart); everything else is InvalidArgument.
  ExpectDecodeError(RawFrame(MessageType::kReportOps, body, 1, kFrameMagic, 1),
                    "frame.version: 1, expected 2..3", absl::StatusCode::kUnimplemented);
  ExpectDecodeError(RawFrame(MessageType::kReportOps, body, 1, kFrameMagic, 4),
                    "frame.version: 4, expected 2..3", absl::StatusCode::kUnimplemented);
  ExpectDecodeError(RawFrame(static_cast<MessageType>(0), body), "frame.type: 0 is not");
  ExpectDecodeError(RawFrame(static_cast<MessageType>(11), body), "frame.type: 11 is not");
  ExpectDecodeError(RawFrame(MessageType::kReportOps, body, 0), "frame.sequence: must be >= 1");
  std::string oversized = RawFrame(MessageType::kReportOps, body);
  oversized.replace(12, 4, Le(kMaxBodyBytes + 1, 4));
  ExpectDecodeError(oversized, "frame.length: 1048577 > 1048576",
                    absl::StatusCode::kResourceExhausted);
  ExpectDecodeError(RawFrame(MessageType::kReportOps, body).substr(0, 19),
                    "frame.length: 4, but the frame has 3 body bytes");
  ExpectDecodeError(RawFrame(MessageType::kReportOps, body) + "z",
                    "frame.length: 4, but the frame has 5 body bytes");
}

TEST(Protocol, DecodeRejectsBadRegisterFields) {
  const std::string good = Encode(LongestRegister()).substr(kFrameHeaderBytes);
  const auto with = [&](std::size_t offset, const std::string& bytes) {
    std::string body = good;
    body.replace(offset, bytes.size(), bytes);
    return RawFrame(MessageType::kRegister, body);
  };
  // Layout: 3 strings of 2 + 253 bytes (0..764), role at 765, gpu 766, pid 770, SLO 774,
  // credit_limit 782, batch_size 786, the worker segment's descriptor flag 790; 791 bytes in all.
  ASSERT_EQ(good.size(), 791u);
  ExpectDecodeError(with(790, Le(2, 1)), "Register.worker_segment: 2 is not a descriptor flag");
  ExpectDecodeError(with(0, Le(254, 2)), "Register.namespace_name: length 254 > 253");
  ExpectDecodeError(with(255, Le(254, 2)), "Register.job: length 254 > 253");
  ExpectDecodeError(with(765, Le(0, 1)), "Register.role: 0 is not a Role");
  ExpectDecodeError(with(765, Le(3, 1)), "Register.role: 3 is not a Role");
  for (double bad : {0.5, -1.0, std::nan(""), HUGE_VAL}) {
    std::uint64_t bits;
    std::memcpy(&bits, &bad, sizeof bits);
    ExpectDecodeError(with(774, Le(bits, 8)), "Register.max_foreground_slowdown: must be 0");
  }
  ExpectDecodeError(RawFrame(MessageType::kRegister, good.substr(0, 789)),
                    "Register.batch_size: truncated (needs 4 bytes, 3 left)");
  ExpectDecodeError(RawFrame(MessageType::kRegister, good.substr(0, 600)),
                    "Register.pod: truncated (needs 253 bytes, 88 left)");
  ExpectDecodeError(RawFrame(MessageType::kRegister, good + "!"),
                    "Register: 1 unexpected bytes after the last field");
}

TEST(Protocol, DecodeRejectsBadRegisteredFields) {
  Registered r;
  r.gate_path = "/g";
  const std::string good = Encode(r).substr(kFrameHeaderBytes);
  // slot 0..3, gate_path 4..7 (2 + 2 bytes), epoch 8, generation 16, priority 20.
  std::string body = good;
  body.replace(0, 4, Le(kMaxSlotsPerGpu, 4));
  ExpectDecodeError(RawFrame(MessageType::kRegistered, body), "Registered.slot: 32 >= 32");
  body = good;
  body.replace(20, 1, Le(3, 1));
  ExpectDecodeError(RawFrame(MessageType::kRegistered, body), "Registered.stream_priority: 3");
  r.gate_path.clear();
  EXPECT_THAT(EncodeFrame(r, 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("Registered.gate_path: must not be empty")));
}

TEST(Protocol, DecodeRejectsBadReportOps) {
  ExpectDecodeError(RawFrame(MessageType::kReportOps, Le(kMaxOpGroupsPerReport + 1, 4)),
                    "ReportOps.groups: count 32769 > 32768");
  // A count that promises more than the body holds is caught before anything is allocated.
  ExpectDecodeError(RawFrame(MessageType::kReportOps, Le(100, 4) + std::string(20, '\0')),
                    "ReportOps.groups: count 100 needs 1300 bytes, 20 left");
  ExpectDecodeError(RawFrame(MessageType::kReportOps, Le(1, 4)), "ReportOps.groups: count 1");
  ReportOps ops;
  ops.groups.resize(13);
  std::string frame = Encode(ops);
  frame.replace(kFrameHeaderBytes + 4 + 12 * 13, 4, Le(5000, 4));
  ExpectDecodeError(frame, "ReportOps.groups[12].op_group: 5000 >= 4096");
  frame = Encode(ops);
  frame.replace(kFrameHeaderBytes + 4 + 3 * 13 + 4, 1, Le(4, 1));
  ExpectDecodeError(frame, "ReportOps.groups[3].kind: 4 is not an OpKind");
  ExpectDecodeError(RawFrame(MessageType::kReportOps, Le(0, 4) + "x"),
                    "ReportOps: 1 unexpected bytes after the last field");
}

TEST(Protocol, DecodeRejectsBadReportMemory) {
  ExpectDecodeError(RawFrame(MessageType::kReportMemory, Le(kMaxMemorySamplesPerReport + 1, 4)),
                    "ReportMemory.samples: count 32769 > 32768");
  const auto sample = [](std::int64_t t) {
    return Le(static_cast<std::uint64_t>(t), 8) + Le(1, 8) + Le(2, 8);
  };
  ExpectDecodeError(RawFrame(MessageType::kReportMemory, Le(1, 4) + sample(-1)),
                    "ReportMemory.samples[0].time_ns: must be >= 0");
  ExpectDecodeError(
      RawFrame(MessageType::kReportMemory, Le(3, 4) + sample(5) + sample(7) + sample(6)),
      "ReportMemory.samples[2].time_ns: 6 < samples[1].time_ns 7");
}

TEST(Protocol, DecodeRejectsBadReportWaveMemory) {
  ExpectDecodeError(RawFrame(MessageType::kReportWaveMemory, Le(kMaxMemorySamplesPerReport + 1, 4)),
                    "ReportWaveMemory.samples: count 32769 > 32768");
  const auto sample = [](int wave, std::int64_t t) {
    return Le(wave, 1) + Le(static_cast<std::uint64_t>(t), 8) + Le(1, 8);
  };
  ExpectDecodeError(RawFrame(MessageType::kReportWaveMemory, Le(1, 4) + sample(8, 1)),
                    "ReportWaveMemory.samples[0].wave: 8 >= 8");
  ExpectDecodeError(RawFrame(MessageType::kReportWaveMemory, Le(1, 4) + sample(0, -1)),
                    "ReportWaveMemory.samples[0].time_ns: must be >= 0");
  // Waves keep their own order: wave 1 may be behind wave 0, not behind itself.
  const std::string body = sample(0, 9) + sample(1, 5) + sample(1, 6);
  EXPECT_TRUE(DecodeFrame(RawFrame(MessageType::kReportWaveMemory, Le(3, 4) + body)).ok());
  ExpectDecodeError(RawFrame(MessageType::kReportWaveMemory, Le(4, 4) + body + sample(1, 4)),
                    "ReportWaveMemory.samples[3].time_ns: 4 < samples[2].time_ns 6 of wave 1");
}

TEST(Protocol, FramesOfThePreviousVersionDecodeAndEncode) {
  // A worker of the previous release: its frames decode, and the agent answers in its version.
  const std::string old = Encode(ReportMemory{{{1, 2, 3}}});
  std::string v2 = old;
  v2[4] = 2;
  absl::StatusOr<Frame> decoded = DecodeFrame(v2);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->version, 2);
  EXPECT_EQ(EncodeFrame(decoded->message, 1, 2).value(), v2);
  // What the previous version lacks is refused both ways, naming the version.
  ExpectDecodeError(RawFrame(MessageType::kReportWaveMemory, Le(0, 4), 1, kFrameMagic, 2),
                    "frame.type: 10 (ReportWaveMemory) is not in protocol version 2");
  EXPECT_THAT(EncodeFrame(ReportWaveMemory{}, 1, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ReportWaveMemory is not in protocol version 2")));
  EXPECT_THAT(EncodeFrame(Goodbye{}, 1, 4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("frame.version: 4")));
}

TEST(Protocol, DecodeRejectsBadIterationErrorAndPolicy) {
  // Finite values past kMaxIterationSeconds too: two of 1e308 would sum to infinity.
  for (double bad : {-0.001, std::nan(""), HUGE_VAL, 1e308, kMaxIterationSeconds * 1.000001}) {
    std::uint64_t bits;
    std::memcpy(&bits, &bad, sizeof bits);
    ExpectDecodeError(RawFrame(MessageType::kReportIteration, Le(1, 8) + Le(bits, 8) + Le(1, 8)),
                      "ReportIteration.seconds: must be a finite value >= 0 and <= 1e+06");
    EXPECT_THAT(EncodeFrame(ReportIteration{1, bad, 1}, 1),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ReportIteration.seconds")));
  }
  ASSERT_OK(EncodeFrame(ReportIteration{1, kMaxIterationSeconds, 1}, 1).status());
  ExpectDecodeError(RawFrame(MessageType::kError, Le(0, 2) + Le(0, 2)), "Error.code: 0 is not");
  ExpectDecodeError(RawFrame(MessageType::kError, Le(17, 2) + Le(0, 2)), "Error.code: 17 is not");
  ExpectDecodeError(RawFrame(MessageType::kError, Le(2, 2) + Le(254, 2) + kTooLong),
                    "Error.message: length 254 > 253");
  ExpectDecodeError(RawFrame(MessageType::kPolicy, Le(1, 4) + Le(9, 1) + Le(0, 4) + Le(0, 2)),
                    "Policy.stream_priority: 9 is not");
  ExpectDecodeError(RawFrame(MessageType::kPolicy, Le(1, 4) + Le(0, 1) + Le(0, 4)),
                    "Policy.reason: truncated");
  ExpectDecodeError(RawFrame(MessageType::kGoodbye, "?"),
                    "Goodbye: 1 unexpected bytes after the last field");
}

// --- FrameReader
// ----------------------------------------------------------------------------------

std::vector<Message> SampleConversation() {
  ReportOps ops;
  ops.groups = {{1, OpKind::kCompute, 100}, {4095, OpKind::kAllReduce, 2}};
  return {LongestRegister(),
          ops,
          ReportMemory{{{1, 2, 3}, {4, 5, 6}}},
          ReportIteration{3, 0.25, 32},
          Policy{2, StreamPriority::kHigh, 0, "fg"},
          Goodbye{}};
}

TEST(FrameReader, ReassemblesFramesFedOneByteAtATime) {
  const std::vector<Message> messages = SampleConversation();
  std::string stream;
  for (std::size_t i = 0; i < messages.size(); ++i) stream += Encode(messages[i], i + 1);
  FrameReader reader;
  std::vector<Frame> frames;
  for (char byte : stream) {
    reader.Append(std::string_view(&byte, 1));
    absl::StatusOr<std::optional<Frame>> next = reader.Next();
    ASSERT_TRUE(next.ok()) << next.status();
    if (next->has_value()) frames.push_back(std::move(**next));
  }
  ASSERT_EQ(frames.size(), messages.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].sequence, i + 1);
    EXPECT_EQ(Encode(frames[i].message, i + 1), Encode(messages[i], i + 1));
  }
  EXPECT_EQ(reader.buffered_bytes(), 0u);
}

TEST(FrameReader, ReturnsEveryFrameOfOneLargeAppend) {
  std::string stream;
  for (std::uint32_t i = 1; i <= 1000; ++i) stream += Encode(ReportIteration{i, 1.0, i}, i);
  FrameReader reader;
  reader.Append(stream);
  for (std::uint32_t i = 1; i <= 1000; ++i) {
    absl::StatusOr<std::optional<Frame>> next = reader.Next();
    ASSERT_TRUE(next.ok() && next->has_value()) << i;
    EXPECT_EQ(std::get<ReportIteration>((*next)->message).iteration, i);
  }
  absl::StatusOr<std::optional<Frame>> end = reader.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(FrameReader, RejectsAnOversizedLengthFromTheHeaderAlone) {
  std::string header = RawFrame(MessageType::kReportOps, "");
  header.replace(12, 4, Le(UINT32_MAX, 4));
  FrameReader reader;
  reader.Append(header.substr(0, 15));
  absl::StatusOr<std::optional<Frame>> next = reader.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());  // 15 bytes: not a header yet
  reader.Append(header.substr(15));
  EXPECT_THAT(reader.Next(), StatusIs(absl::StatusCode::kResourceExhausted,
                                      HasSubstr("frame.length: 4294967295 > 1048576")));
  // Sticky, and a failed reader keeps nothing.
  reader.Append(Encode(Goodbye{}));
  EXPECT_THAT(reader.Next(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("frame.length")));
  EXPECT_EQ(reader.buffered_bytes(), 0u);
}

TEST(FrameReader, WaitsForABodyOfExactlyTheLimit) {
  // kMaxBodyBytes is allowed (inclusive); no message is that long, so the body then fails.
  FrameReader reader;
  reader.Append(RawFrame(MessageType::kGoodbye, "").replace(12, 4, Le(kMaxBodyBytes, 4)));
  absl::StatusOr<std::optional<Frame>> next = reader.Next();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value());
  reader.Append(std::string(kMaxBodyBytes, '\0'));
  EXPECT_THAT(reader.Next(), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("Goodbye: 1048576 unexpected bytes")));
}

TEST(FrameReader, StopsAtAMalformedFrameAfterTheGoodOnes) {
  FrameReader reader;
  reader.Append(Encode(Goodbye{}, 1) + RawFrame(MessageType::kReportOps, Le(1, 4), 2));
  absl::StatusOr<std::optional<Frame>> first = reader.Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_THAT(reader.Next(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ReportOps.groups")));
}

TEST(FrameReader, KeepsItsBufferNearOneFrame) {
  ReportOps ops;
  ops.groups.assign(1000, OpGroupReport{7, OpKind::kCompute, 1});
  const std::string frame = Encode(ops);  // 13,020 bytes
  std::string stream;
  for (int i = 0; i < 200; ++i) stream += frame;  // 2.6 MB
  FrameReader reader;
  std::size_t frames = 0;
  std::size_t most_buffered = 0;
  for (std::size_t at = 0; at < stream.size(); at += 4093) {
    reader.Append(std::string_view(stream).substr(at, 4093));
    most_buffered = std::max(most_buffered, reader.buffered_bytes());
    for (;;) {
      absl::StatusOr<std::optional<Frame>> next = reader.Next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      ++frames;
    }
  }
  EXPECT_EQ(frames, 200u);
  EXPECT_LT(most_buffered, frame.size() + 4093);
}

}  // namespace
}  // namespace wavepool::agent
