// The slow path between a worker and its node agent: messages over a unix stream socket.
//
// Every message is one frame, little-endian:
//   u32 magic 'WPAG' (0x47415057) | u16 version (kProtocolVersion) | u16 type (MessageType)
//   | u32 sequence | u32 body length (<= kMaxBodyBytes) | body
// Strings are u16 length + bytes (<= kMaxStringBytes, UTF-8 not checked); lists are u32 count +
// items (<= the list's limit); doubles are IEEE-754 binary64; enums are u8; a descriptor is a
// u8 flag (1: one file descriptor travels with the frame, SCM_RIGHTS on the sendmsg that carries
// the frame's first byte, in the order the flags appear; 0: none). Bodies, in order:
//   Register        str namespace_name, str job, str pod, u8 role, u32 gpu_index, i32 pid,
//                   f64 max_foreground_slowdown, u32 credit_limit, u32 batch_size,
//                   fd worker_segment (the worker's sealed segment, gate_layout.h)
//   Registered      u32 slot, str gate_path, u64 gate_epoch, u32 gate_generation,
//                   u8 stream_priority, u32 credit_limit, str mps_pipe_directory,
//                   u32 mps_client_priority, fd gate (the GPU's sealed control segment),
//                   u32 count (<= kMaxSlotsPerGpu), count x (u32 slot, u32 generation, fd segment)
//   Foregrounds     u32 count (<= kMaxSlotsPerGpu), count x (u32 slot, u32 generation, fd segment)
//   ReportOps       u32 count, count x (u32 op_group, u8 kind, u64 duration_ns)      13 B each
//   ReportMemory    u32 count, count x (i64 time_ns, u64 allocated, u64 reserved)    24 B each
//   ReportWaveMemory u32 count, count x (u8 wave, i64 time_ns, u64 allocated)       17 B each
//                   (version 3 on: what each wave of a task holds, tick-tock's tick and tock)
//   ReportIteration u64 iteration, f64 seconds, u64 samples
//   Goodbye         (empty)
//   Error           u16 code (absl::StatusCode, not OK), str message
//   Policy          u32 credit_limit, u8 stream_priority, u32 recommended_batch_size, str reason
// A frame whose magic, version, type, length, sequence (must grow by one per direction, starting
// at 1: NextSequence) or body does not decode, or whose body has bytes left over, or whose
// descriptors did not arrive with it (or arrived with another message than Register), is a
// protocol error: the agent answers kError and closes the connection. Nothing in a body is
// trusted: the agent takes the worker's pid from SO_PEERCRED, not from Register, and checks the
// seals and size of the worker's segment before it maps it (read-only).
//
// Versions: the agent accepts frames of kOldestProtocolVersion..kProtocolVersion and answers a
// connection in the version its Register came in (every frame after it must keep that version);
// a message type newer than a frame's version is malformed. A worker speaks kProtocolVersion and,
// when an agent refuses that version (Error Unimplemented), registers again in
// kOldestProtocolVersion and leaves out what that version lacks. So a worker and an agent of
// adjacent releases talk, whichever is upgraded first.
//
// Conversation: worker Register -> agent Registered (or Error); then any number of Report*
// messages (no reply unless they are malformed); the agent may send Policy at any time, and
// Foregrounds (to background workers: the segments of the GPU's foreground workers, whose hold
// they obey) whenever that set changes; the worker ends with Goodbye. A closed connection without
// Goodbye means the worker died.
#ifndef WAVEPOOL_AGENT_CLIENT_PROTOCOL_H_
#define WAVEPOOL_AGENT_CLIENT_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/agent/client/gate_memory.h"

namespace wavepool::agent {

inline constexpr std::uint32_t kFrameMagic = 0x47415057;  // "WPAG"
inline constexpr std::uint16_t kProtocolVersion = 3;
inline constexpr std::uint16_t kOldestProtocolVersion = 2;
inline constexpr std::size_t kFrameHeaderBytes = 16;
inline constexpr std::uint32_t kMaxBodyBytes = 1 << 20;
inline constexpr std::size_t kMaxStringBytes = 253;
inline constexpr std::uint32_t kMaxOpGroupsPerReport = 32768;
inline constexpr std::uint32_t kMaxMemorySamplesPerReport = 32768;
// Waves of one task (ReportWaveMemory.samples[].wave < kMaxWavesPerTask).
inline constexpr std::uint32_t kMaxWavesPerTask = 8;
// Op groups are numbered 0..kMaxOpGroups-1 within a job (the gate's sensitive set is a bitmap).
inline constexpr std::uint32_t kMaxOpGroups = 4096;
// ReportIteration.seconds: far beyond any training step (11.6 days), and small enough that the
// agent's sums of a task's iteration times stay finite for any number of reports.
inline constexpr double kMaxIterationSeconds = 1e6;

enum class Role : std::uint8_t { kForeground = 1, kBackground = 2 };

// What the agent asks a worker to give its CUDA streams (the worker maps it onto
// cudaDeviceGetStreamPriorityRange).
enum class StreamPriority : std::uint8_t { kDefault = 0, kHigh = 1, kLow = 2 };

enum class OpKind : std::uint8_t {
  kCompute = 0,    // kernels (a CUDA graph piece or an op group)
  kAllReduce = 1,  // a collective: always sensitive to collocation
  kReceive = 2,    // a blocking receive: background may run during a long one
  kCopy = 3,
};

enum class MessageType : std::uint16_t {
  kRegister = 1,
  kRegistered = 2,
  kReportOps = 3,
  kReportMemory = 4,
  kReportIteration = 5,
  kGoodbye = 6,
  kError = 7,
  kPolicy = 8,
  kForegrounds = 9,
  kReportWaveMemory = 10,  // version 3 on
};

// The protocol version that introduced `type`.
std::uint16_t VersionIntroducing(MessageType type);

struct RegisterRequest {
  std::string namespace_name;
  std::string job;
  std::string pod;
  Role role = Role::kForeground;
  std::uint32_t gpu_index = 0;
  std::int32_t pid = 0;                // informational; the agent uses SO_PEERCRED
  double max_foreground_slowdown = 0;  // foreground: the job's SLO (e.g. 1.10); 0: default
  std::uint32_t credit_limit = 0;      // requested launch credits; 0: the role's default
  std::uint32_t batch_size = 0;        // background: its per-GPU batch, for recommendations
  // The worker's own segment (gate_layout.h), sealed; AgentClient creates it (and fills this in)
  // on every (re)connection.
  SharedFd worker_segment;
};

// A foreground worker's segment as background workers receive it (its hold word).
struct ForegroundSegment {
  std::uint32_t slot = 0;  // < kMaxSlotsPerGpu
  std::uint32_t generation = 0;
  SharedFd segment;
};

struct Registered {
  std::uint32_t slot = 0;  // < kMaxSlotsPerGpu (gate_layout.h)
  std::string gate_path;   // the GPU's gate, by name (a memfd name for messages); not empty
  std::uint64_t gate_epoch = 0;
  std::uint32_t gate_generation = 0;  // of the slot: a reused slot gets a new generation
  StreamPriority stream_priority = StreamPriority::kDefault;
  std::uint32_t credit_limit = 0;
  std::string mps_pipe_directory;              // empty: no MPS on this GPU
  std::uint32_t mps_client_priority = 0;       // CUDA_MPS_CLIENT_PRIORITY for this client
  SharedFd gate;                               // the GPU's control segment, sealed (read-only)
  std::vector<ForegroundSegment> foregrounds;  // background: the GPU's foreground segments
  // Not sent: the worker's own segment, mapped writable before Register (LaunchGate::Attach).
  std::shared_ptr<Mapping> own_segment;
};

// The agent's current list of a GPU's foreground segments, for its background workers.
struct Foregrounds {
  std::vector<ForegroundSegment> segments;  // <= kMaxSlotsPerGpu
};

struct OpGroupReport {
  std::uint32_t op_group = 0;  // < kMaxOpGroups
  OpKind kind = OpKind::kCompute;
  std::uint64_t duration_ns = 0;  // from launch-group start to its completion event
};

struct ReportOps {
  std::vector<OpGroupReport> groups;  // <= kMaxOpGroupsPerReport
};

struct MemorySample {
  std::int64_t time_ns = 0;  // CLOCK_MONOTONIC, >= 0
  std::uint64_t allocated_bytes = 0;
  std::uint64_t reserved_bytes = 0;
};

struct ReportMemory {
  std::vector<MemorySample> samples;  // <= kMaxMemorySamplesPerReport; time_ns never decreases
};

// The memory one wave of a task holds (tick-tock's tick is wave 0, its tock wave 1), for the
// phase offset between the waves; ReportMemory still carries the task's total.
struct WaveMemorySample {
  std::uint8_t wave = 0;     // < kMaxWavesPerTask
  std::int64_t time_ns = 0;  // CLOCK_MONOTONIC, >= 0
  std::uint64_t allocated_bytes = 0;
};

struct ReportWaveMemory {
  // <= kMaxMemorySamplesPerReport; time_ns never decreases among one wave's samples
  std::vector<WaveMemorySample> samples;
};

struct ReportIteration {
  std::uint64_t iteration = 0;
  double seconds = 0;  // finite, in [0, kMaxIterationSeconds]
  std::uint64_t samples = 0;
};

struct Goodbye {};

struct ErrorReply {
  absl::StatusCode code = absl::StatusCode::kUnknown;  // never kOk
  std::string message;
};

// The agent's current instructions for a worker.
struct Policy {
  std::uint32_t credit_limit = 0;
  StreamPriority stream_priority = StreamPriority::kDefault;
  std::uint32_t recommended_batch_size = 0;  // background: 0 = keep the current one
  std::string reason;
};

// In MessageType order (TypeOf is the index + 1).
using Message = std::variant<RegisterRequest, Registered, ReportOps, ReportMemory, ReportIteration,
                             Goodbye, ErrorReply, Policy, Foregrounds, ReportWaveMemory>;

MessageType TypeOf(const Message& message);
std::string_view MessageTypeName(MessageType type);

// The sequence number that follows `sequence` in one direction: 1, 2, ..., 2^32-1, 1, ...
constexpr std::uint32_t NextSequence(std::uint32_t sequence) {
  return sequence == UINT32_MAX ? 1 : sequence + 1;
}

// `status` (not OK) as an Error message, its text cut to kMaxStringBytes; and back.
ErrorReply ToErrorReply(const absl::Status& status);
absl::Status ToStatus(const ErrorReply& error);

// Encodes `message` as one frame with `sequence` (>= 1) in protocol `version`. InvalidArgument,
// naming the field, when a field is out of the limits DecodeFrame enforces (a string too long,
// too many reports, an op group >= kMaxOpGroups, an enum out of range, a negative or non-finite
// double), the version is not one this side speaks, or the message is newer than it.
absl::StatusOr<std::string> EncodeFrame(const Message& message, std::uint32_t sequence,
                                        std::uint16_t version = kProtocolVersion);

struct Frame {
  std::uint16_t version = kProtocolVersion;
  std::uint32_t sequence = 0;
  Message message;
};

// Decodes exactly one complete frame. Unimplemented for a version outside
// kOldestProtocolVersion..kProtocolVersion,
// ResourceExhausted for a body over kMaxBodyBytes, InvalidArgument (naming the field, e.g.
// "ReportOps.groups[12].op_group: 5000 >= 4096") for anything else malformed, out of its limits
// or followed by extra bytes; never reads past `bytes`.
absl::StatusOr<Frame> DecodeFrame(std::string_view bytes);

// The descriptors that travel with `message`, in the order of its descriptor flags (at most
// kMaxDescriptorsPerFrame). InvalidArgument, naming the field, for a placeholder (a SharedFd
// holding no descriptor).
absl::StatusOr<std::vector<SharedFd>> DescriptorsOf(const Message& message);
// Replaces the placeholders of a decoded `message` with descriptors taken from the front of
// `received`, in order. InvalidArgument, naming the field, when fewer arrived.
absl::Status AdoptDescriptors(Message* message, std::deque<ScopedFd>* received);
inline constexpr std::size_t kMaxDescriptorsPerFrame = 33;  // a gate and 32 foreground segments

// Splits a byte stream into frames. Not thread-safe. After the first error it stays failed and
// keeps returning that error.
class FrameReader {
 public:
  // Appends received bytes.
  void Append(std::string_view bytes);
  // The next complete frame, nullopt when more bytes are needed, or the stream's error (a bad
  // magic, version, type or an oversized length is detected from the header alone, before the
  // body arrives). After an error, Append drops its bytes.
  absl::StatusOr<std::optional<Frame>> Next();
  // Bytes received and not yet returned as frames (at most one frame plus the last Append).
  std::size_t buffered_bytes() const { return buffer_.size() - consumed_; }

 private:
  absl::Status Fail(absl::Status error);

  std::string buffer_;
  std::size_t consumed_ = 0;
  absl::Status error_;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_PROTOCOL_H_
