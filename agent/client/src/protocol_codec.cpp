// The frame codec (protocol.h). Every message type has three functions: Validate (the limits,
// shared by the encoder and the decoder so that whatever encodes also decodes), Write and Read.
// Read parses the raw fields; DecodeFrame then rejects left-over bytes and runs Validate.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "byte_io.h"
#include "frame_header.h"
#include "wavepool/agent/client/gate_layout.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

using internal::ByteReader;
using internal::ByteWriter;
using internal::FieldPath;

constexpr const char* kRegister = "Register";
constexpr const char* kRegistered = "Registered";
constexpr const char* kReportOps = "ReportOps";
constexpr const char* kReportMemory = "ReportMemory";
constexpr const char* kReportWaveMemory = "ReportWaveMemory";
constexpr const char* kReportIteration = "ReportIteration";
constexpr const char* kError = "Error";
constexpr const char* kPolicy = "Policy";
constexpr const char* kForegrounds = "Foregrounds";
constexpr std::size_t kForegroundBytes = 4 + 4 + 1;
constexpr std::size_t kOpGroupBytes = 4 + 1 + 8;
constexpr std::size_t kMemorySampleBytes = 8 + 8 + 8;
constexpr std::size_t kWaveMemorySampleBytes = 1 + 8 + 8;

// --- Limits ------------------------------------------------------------------------------------

absl::Status CheckString(const FieldPath& f, const std::string& s) {
  if (s.size() <= kMaxStringBytes) return absl::OkStatus();
  return f.Error(absl::StrCat("length ", s.size(), " > ", kMaxStringBytes));
}

template <typename Enum>
absl::Status CheckEnum(const FieldPath& f, Enum value, int low, int high, const char* what) {
  const int v = static_cast<int>(value);
  if (v >= low && v <= high) return absl::OkStatus();
  return f.Error(absl::StrCat(v, " is not ", what));
}

absl::Status CheckRole(const FieldPath& f, Role role) {
  return CheckEnum(f, role, 1, 2, "a Role (1 foreground, 2 background)");
}

absl::Status CheckPriority(const FieldPath& f, StreamPriority priority) {
  return CheckEnum(f, priority, 0, 2, "a StreamPriority (0 default, 1 high, 2 low)");
}

absl::Status Validate(const RegisterRequest& m) {
  WAVEPOOL_RETURN_IF_ERROR(CheckString({kRegister, "namespace_name"}, m.namespace_name));
  WAVEPOOL_RETURN_IF_ERROR(CheckString({kRegister, "job"}, m.job));
  WAVEPOOL_RETURN_IF_ERROR(CheckString({kRegister, "pod"}, m.pod));
  WAVEPOOL_RETURN_IF_ERROR(CheckRole({kRegister, "role"}, m.role));
  const double slo = m.max_foreground_slowdown;
  // NaN fails both comparisons; an infinite SLO would disable the feedback loop silently.
  if (!(std::isfinite(slo) && (slo == 0 || slo >= 1))) {
    return FieldPath{kRegister, "max_foreground_slowdown"}.Error(
        absl::StrCat("must be 0 (the default) or a finite value >= 1, got ", slo));
  }
  return absl::OkStatus();
}

absl::Status CheckForegrounds(const char* message, const std::vector<ForegroundSegment>& list) {
  if (list.size() > kMaxSlotsPerGpu) {
    return FieldPath{message, "foregrounds"}.Error(
        absl::StrCat("count ", list.size(), " > ", kMaxSlotsPerGpu));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i].slot >= kMaxSlotsPerGpu) {
      return FieldPath{message, "slot", "foregrounds", i}.Error(
          absl::StrCat(list[i].slot, " >= ", kMaxSlotsPerGpu));
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const Foregrounds& m) { return CheckForegrounds(kForegrounds, m.segments); }

absl::Status Validate(const Registered& m) {
  WAVEPOOL_RETURN_IF_ERROR(CheckForegrounds(kRegistered, m.foregrounds));
  if (m.slot >= kMaxSlotsPerGpu) {
    return FieldPath{kRegistered, "slot"}.Error(absl::StrCat(m.slot, " >= ", kMaxSlotsPerGpu));
  }
  if (m.gate_path.empty()) return FieldPath{kRegistered, "gate_path"}.Error("must not be empty");
  WAVEPOOL_RETURN_IF_ERROR(CheckString({kRegistered, "gate_path"}, m.gate_path));
  WAVEPOOL_RETURN_IF_ERROR(CheckPriority({kRegistered, "stream_priority"}, m.stream_priority));
  return CheckString({kRegistered, "mps_pipe_directory"}, m.mps_pipe_directory);
}

absl::Status Validate(const ReportOps& m) {
  if (m.groups.size() > kMaxOpGroupsPerReport) {
    return FieldPath{kReportOps, "groups"}.Error(
        absl::StrCat("count ", m.groups.size(), " > ", kMaxOpGroupsPerReport));
  }
  for (std::size_t i = 0; i < m.groups.size(); ++i) {
    const OpGroupReport& g = m.groups[i];
    if (g.op_group >= kMaxOpGroups) {
      return FieldPath{kReportOps, "op_group", "groups", i}.Error(
          absl::StrCat(g.op_group, " >= ", kMaxOpGroups));
    }
    WAVEPOOL_RETURN_IF_ERROR(CheckEnum(FieldPath{kReportOps, "kind", "groups", i}, g.kind, 0, 3,
                                       "an OpKind (0 compute, 1 all-reduce, 2 receive, 3 copy)"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const ReportMemory& m) {
  if (m.samples.size() > kMaxMemorySamplesPerReport) {
    return FieldPath{kReportMemory, "samples"}.Error(
        absl::StrCat("count ", m.samples.size(), " > ", kMaxMemorySamplesPerReport));
  }
  for (std::size_t i = 0; i < m.samples.size(); ++i) {
    const std::int64_t t = m.samples[i].time_ns;
    const FieldPath f{kReportMemory, "time_ns", "samples", i};
    if (t < 0) return f.Error(absl::StrCat("must be >= 0 (CLOCK_MONOTONIC), got ", t));
    if (i > 0 && t < m.samples[i - 1].time_ns) {
      return f.Error(absl::StrCat(t, " < samples[", i - 1, "].time_ns ", m.samples[i - 1].time_ns,
                                  " (samples must be in time order)"));
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const ReportWaveMemory& m) {
  if (m.samples.size() > kMaxMemorySamplesPerReport) {
    return FieldPath{kReportWaveMemory, "samples"}.Error(
        absl::StrCat("count ", m.samples.size(), " > ", kMaxMemorySamplesPerReport));
  }
  std::int64_t last[kMaxWavesPerTask];
  std::size_t last_index[kMaxWavesPerTask];
  std::fill(std::begin(last), std::end(last), -1);
  for (std::size_t i = 0; i < m.samples.size(); ++i) {
    const WaveMemorySample& s = m.samples[i];
    if (s.wave >= kMaxWavesPerTask) {
      return FieldPath{kReportWaveMemory, "wave", "samples", i}.Error(
          absl::StrCat(s.wave, " >= ", kMaxWavesPerTask));
    }
    const FieldPath f{kReportWaveMemory, "time_ns", "samples", i};
    if (s.time_ns < 0)
      return f.Error(absl::StrCat("must be >= 0 (CLOCK_MONOTONIC), got ", s.time_ns));
    if (s.time_ns < last[s.wave]) {
      return f.Error(absl::StrCat(s.time_ns, " < samples[", last_index[s.wave], "].time_ns ",
                                  last[s.wave], " of wave ", s.wave,
                                  " (a wave's samples must be in time order)"));
    }
    last[s.wave] = s.time_ns;
    last_index[s.wave] = i;
  }
  return absl::OkStatus();
}

absl::Status Validate(const ReportIteration& m) {
  // NaN fails every comparison, so it fails this one.
  if (m.seconds >= 0 && m.seconds <= kMaxIterationSeconds) return absl::OkStatus();
  return FieldPath{kReportIteration, "seconds"}.Error(absl::StrCat(
      "must be a finite value >= 0 and <= ", kMaxIterationSeconds, ", got ", m.seconds));
}

absl::Status Validate(const Goodbye&) { return absl::OkStatus(); }

absl::Status Validate(const ErrorReply& m) {
  WAVEPOOL_RETURN_IF_ERROR(CheckEnum(FieldPath{kError, "code"}, m.code, 1, 16,
                                     "an error code (1 CANCELLED .. 16 UNAUTHENTICATED)"));
  return CheckString({kError, "message"}, m.message);
}

absl::Status Validate(const Policy& m) {
  WAVEPOOL_RETURN_IF_ERROR(CheckPriority({kPolicy, "stream_priority"}, m.stream_priority));
  return CheckString({kPolicy, "reason"}, m.reason);
}

// --- Writing -----------------------------------------------------------------------------------

void Write(ByteWriter& w, const RegisterRequest& m) {
  w.String(m.namespace_name);
  w.String(m.job);
  w.String(m.pod);
  w.U8(static_cast<std::uint8_t>(m.role));
  w.U32(m.gpu_index);
  w.I32(m.pid);
  w.F64(m.max_foreground_slowdown);
  w.U32(m.credit_limit);
  w.U32(m.batch_size);
  w.U8(m.worker_segment != nullptr ? 1 : 0);
}

void WriteForegrounds(ByteWriter& w, const std::vector<ForegroundSegment>& list) {
  w.U32(static_cast<std::uint32_t>(list.size()));
  for (const ForegroundSegment& f : list) {
    w.U32(f.slot);
    w.U32(f.generation);
    w.U8(f.segment != nullptr ? 1 : 0);
  }
}

void Write(ByteWriter& w, const Foregrounds& m) { WriteForegrounds(w, m.segments); }

void Write(ByteWriter& w, const Registered& m) {
  w.U32(m.slot);
  w.String(m.gate_path);
  w.U64(m.gate_epoch);
  w.U32(m.gate_generation);
  w.U8(static_cast<std::uint8_t>(m.stream_priority));
  w.U32(m.credit_limit);
  w.String(m.mps_pipe_directory);
  w.U32(m.mps_client_priority);
  w.U8(m.gate != nullptr ? 1 : 0);
  WriteForegrounds(w, m.foregrounds);
}

void Write(ByteWriter& w, const ReportOps& m) {
  w.U32(static_cast<std::uint32_t>(m.groups.size()));
  for (const OpGroupReport& g : m.groups) {
    w.U32(g.op_group);
    w.U8(static_cast<std::uint8_t>(g.kind));
    w.U64(g.duration_ns);
  }
}

void Write(ByteWriter& w, const ReportMemory& m) {
  w.U32(static_cast<std::uint32_t>(m.samples.size()));
  for (const MemorySample& s : m.samples) {
    w.I64(s.time_ns);
    w.U64(s.allocated_bytes);
    w.U64(s.reserved_bytes);
  }
}

void Write(ByteWriter& w, const ReportWaveMemory& m) {
  w.U32(static_cast<std::uint32_t>(m.samples.size()));
  for (const WaveMemorySample& s : m.samples) {
    w.U8(s.wave);
    w.I64(s.time_ns);
    w.U64(s.allocated_bytes);
  }
}

void Write(ByteWriter& w, const ReportIteration& m) {
  w.U64(m.iteration);
  w.F64(m.seconds);
  w.U64(m.samples);
}

void Write(ByteWriter&, const Goodbye&) {}

void Write(ByteWriter& w, const ErrorReply& m) {
  w.U16(static_cast<std::uint16_t>(m.code));
  w.String(m.message);
}

void Write(ByteWriter& w, const Policy& m) {
  w.U32(m.credit_limit);
  w.U8(static_cast<std::uint8_t>(m.stream_priority));
  w.U32(m.recommended_batch_size);
  w.String(m.reason);
}

// --- Reading -----------------------------------------------------------------------------------

// A descriptor flag: a placeholder SharedFd for 1 (AdoptDescriptors fills it in), null for 0.
absl::Status ReadDescriptor(ByteReader& r, const FieldPath& f, SharedFd* fd) {
  std::uint8_t flag = 0;
  WAVEPOOL_RETURN_IF_ERROR(r.U8(f, &flag));
  if (flag > 1) return f.Error(absl::StrCat(flag, " is not a descriptor flag (0 or 1)"));
  if (flag == 1) *fd = ShareFd(ScopedFd());
  return absl::OkStatus();
}

absl::Status ReadForegrounds(ByteReader& r, const char* message,
                             std::vector<ForegroundSegment>* list) {
  std::uint32_t count = 0;
  WAVEPOOL_RETURN_IF_ERROR(
      r.Count({message, "foregrounds"}, kMaxSlotsPerGpu, kForegroundBytes, &count));
  list->resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    ForegroundSegment& f = (*list)[i];
    f.slot = r.TakeU32();
    f.generation = r.TakeU32();
    WAVEPOOL_RETURN_IF_ERROR(
        ReadDescriptor(r, FieldPath{message, "segment", "foregrounds", i}, &f.segment));
  }
  return absl::OkStatus();
}

absl::Status Read(ByteReader& r, Foregrounds* m) {
  return ReadForegrounds(r, kForegrounds, &m->segments);
}

absl::Status Read(ByteReader& r, RegisterRequest* m) {
  std::uint8_t role = 0;
  WAVEPOOL_RETURN_IF_ERROR(
      r.String({kRegister, "namespace_name"}, kMaxStringBytes, &m->namespace_name));
  WAVEPOOL_RETURN_IF_ERROR(r.String({kRegister, "job"}, kMaxStringBytes, &m->job));
  WAVEPOOL_RETURN_IF_ERROR(r.String({kRegister, "pod"}, kMaxStringBytes, &m->pod));
  WAVEPOOL_RETURN_IF_ERROR(r.U8({kRegister, "role"}, &role));
  m->role = static_cast<Role>(role);
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kRegister, "gpu_index"}, &m->gpu_index));
  WAVEPOOL_RETURN_IF_ERROR(r.I32({kRegister, "pid"}, &m->pid));
  WAVEPOOL_RETURN_IF_ERROR(
      r.F64({kRegister, "max_foreground_slowdown"}, &m->max_foreground_slowdown));
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kRegister, "credit_limit"}, &m->credit_limit));
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kRegister, "batch_size"}, &m->batch_size));
  return ReadDescriptor(r, {kRegister, "worker_segment"}, &m->worker_segment);
}

absl::Status Read(ByteReader& r, Registered* m) {
  std::uint8_t priority = 0;
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kRegistered, "slot"}, &m->slot));
  WAVEPOOL_RETURN_IF_ERROR(r.String({kRegistered, "gate_path"}, kMaxStringBytes, &m->gate_path));
  WAVEPOOL_RETURN_IF_ERROR(r.U64({kRegistered, "gate_epoch"}, &m->gate_epoch));
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kRegistered, "gate_generation"}, &m->gate_generation));
  WAVEPOOL_RETURN_IF_ERROR(r.U8({kRegistered, "stream_priority"}, &priority));
  m->stream_priority = static_cast<StreamPriority>(priority);
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kRegistered, "credit_limit"}, &m->credit_limit));
  WAVEPOOL_RETURN_IF_ERROR(
      r.String({kRegistered, "mps_pipe_directory"}, kMaxStringBytes, &m->mps_pipe_directory));
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kRegistered, "mps_client_priority"}, &m->mps_client_priority));
  WAVEPOOL_RETURN_IF_ERROR(ReadDescriptor(r, {kRegistered, "gate"}, &m->gate));
  return ReadForegrounds(r, kRegistered, &m->foregrounds);
}

absl::Status Read(ByteReader& r, ReportOps* m) {
  std::uint32_t count = 0;
  WAVEPOOL_RETURN_IF_ERROR(
      r.Count({kReportOps, "groups"}, kMaxOpGroupsPerReport, kOpGroupBytes, &count));
  m->groups.resize(count);
  for (OpGroupReport& g : m->groups) {
    g.op_group = r.TakeU32();
    g.kind = static_cast<OpKind>(r.TakeU8());
    g.duration_ns = r.TakeU64();
  }
  return absl::OkStatus();
}

absl::Status Read(ByteReader& r, ReportMemory* m) {
  std::uint32_t count = 0;
  WAVEPOOL_RETURN_IF_ERROR(
      r.Count({kReportMemory, "samples"}, kMaxMemorySamplesPerReport, kMemorySampleBytes, &count));
  m->samples.resize(count);
  for (MemorySample& s : m->samples) {
    s.time_ns = r.TakeI64();
    s.allocated_bytes = r.TakeU64();
    s.reserved_bytes = r.TakeU64();
  }
  return absl::OkStatus();
}

absl::Status Read(ByteReader& r, ReportWaveMemory* m) {
  std::uint32_t count = 0;
  WAVEPOOL_RETURN_IF_ERROR(r.Count({kReportWaveMemory, "samples"}, kMaxMemorySamplesPerReport,
                                   kWaveMemorySampleBytes, &count));
  m->samples.resize(count);
  for (WaveMemorySample& s : m->samples) {
    s.wave = r.TakeU8();
    s.time_ns = r.TakeI64();
    s.allocated_bytes = r.TakeU64();
  }
  return absl::OkStatus();
}

absl::Status Read(ByteReader& r, ReportIteration* m) {
  WAVEPOOL_RETURN_IF_ERROR(r.U64({kReportIteration, "iteration"}, &m->iteration));
  WAVEPOOL_RETURN_IF_ERROR(r.F64({kReportIteration, "seconds"}, &m->seconds));
  return r.U64({kReportIteration, "samples"}, &m->samples);
}

absl::Status Read(ByteReader&, Goodbye*) { return absl::OkStatus(); }

absl::Status Read(ByteReader& r, ErrorReply* m) {
  std::uint16_t code = 0;
  WAVEPOOL_RETURN_IF_ERROR(r.U16({kError, "code"}, &code));
  m->code = static_cast<absl::StatusCode>(code);
  return r.String({kError, "message"}, kMaxStringBytes, &m->message);
}

absl::Status Read(ByteReader& r, Policy* m) {
  std::uint8_t priority = 0;
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kPolicy, "credit_limit"}, &m->credit_limit));
  WAVEPOOL_RETURN_IF_ERROR(r.U8({kPolicy, "stream_priority"}, &priority));
  m->stream_priority = static_cast<StreamPriority>(priority);
  WAVEPOOL_RETURN_IF_ERROR(r.U32({kPolicy, "recommended_batch_size"}, &m->recommended_batch_size));
  return r.String({kPolicy, "reason"}, kMaxStringBytes, &m->reason);
}

// Reads the body of message type T: all of its fields, nothing after them, within its limits.
template <typename T>
absl::StatusOr<Message> ReadBody(std::string_view body, MessageType type) {
  T message;
  ByteReader r(body);
  WAVEPOOL_RETURN_IF_ERROR(Read(r, &message));
  if (r.remaining() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(MessageTypeName(type)), ": ",
                                                   r.remaining(),
                                                   " unexpected bytes after the last field"));
  }
  WAVEPOOL_RETURN_IF_ERROR(Validate(message));
  return Message(std::move(message));
}

absl::StatusOr<Message> ReadMessage(MessageType type, std::string_view body) {
  switch (type) {
    case MessageType::kRegister:
      return ReadBody<RegisterRequest>(body, type);
    case MessageType::kRegistered:
      return ReadBody<Registered>(body, type);
    case MessageType::kReportOps:
      return ReadBody<ReportOps>(body, type);
    case MessageType::kReportMemory:
      return ReadBody<ReportMemory>(body, type);
    case MessageType::kReportIteration:
      return ReadBody<ReportIteration>(body, type);
    case MessageType::kGoodbye:
      return ReadBody<Goodbye>(body, type);
    case MessageType::kError:
      return ReadBody<ErrorReply>(body, type);
    case MessageType::kPolicy:
      return ReadBody<Policy>(body, type);
    case MessageType::kForegrounds:
      return ReadBody<Foregrounds>(body, type);
    case MessageType::kReportWaveMemory:
      return ReadBody<ReportWaveMemory>(body, type);
  }
  return absl::InvalidArgumentError("frame.type: unknown");  // DecodeFrameHeader checked it
}

}  // namespace

namespace internal {

absl::StatusOr<FrameHeader> DecodeFrameHeader(std::string_view bytes) {
  ByteReader r(bytes.substr(0, kFrameHeaderBytes));
  const std::uint32_t magic = r.TakeU32();
  const std::uint16_t version = r.TakeU16();
  const std::uint16_t type = r.TakeU16();
  FrameHeader header;
  header.sequence = r.TakeU32();
  header.body_bytes = r.TakeU32();
  if (magic != kFrameMagic) {
    return FieldPath{"frame", "magic"}.Error(
        absl::StrFormat("0x%08x, expected 0x%08x", magic, kFrameMagic));
  }
  if (version < kOldestProtocolVersion || version > kProtocolVersion) {
    // another protocol: Unimplemented, not malformed
    return absl::UnimplementedError(absl::StrCat("frame.version: ", version, ", expected ",
                                                 kOldestProtocolVersion, "..", kProtocolVersion));
  }
  header.version = version;
  if (type < static_cast<std::uint16_t>(MessageType::kRegister) ||
      type > static_cast<std::uint16_t>(MessageType::kReportWaveMemory)) {
    return FieldPath{"frame", "type"}.Error(
        absl::StrCat(type, " is not a message type (1 Register .. 10 ReportWaveMemory)"));
  }
  header.type = static_cast<MessageType>(type);
  if (VersionIntroducing(header.type) > version) {
    return FieldPath{"frame", "type"}.Error(absl::StrCat(type, " (",
                                                         std::string(MessageTypeName(header.type)),
                                                         ") is not in protocol version ", version));
  }
  if (header.sequence == 0) return FieldPath{"frame", "sequence"}.Error("must be >= 1, got 0");
  if (header.body_bytes > kMaxBodyBytes) {  // too big: ResourceExhausted, not malformed
    return absl::ResourceExhaustedError(
        absl::StrCat("frame.length: ", header.body_bytes, " > ", kMaxBodyBytes));
  }
  return header;
}

}  // namespace internal

namespace {

// Every descriptor slot of `message`, in the order of its flags.
std::vector<std::pair<SharedFd*, std::string>> DescriptorSlots(Message& message) {
  std::vector<std::pair<SharedFd*, std::string>> slots;
  auto add_list = [&slots](std::vector<ForegroundSegment>& list, const char* name) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i].segment != nullptr) {
        slots.emplace_back(&list[i].segment, absl::StrCat(name, ".foregrounds[", i, "].segment"));
      }
    }
  };
  if (auto* r = std::get_if<RegisterRequest>(&message)) {
    if (r->worker_segment != nullptr)
      slots.emplace_back(&r->worker_segment, "Register.worker_segment");
  } else if (auto* d = std::get_if<Registered>(&message)) {
    if (d->gate != nullptr) slots.emplace_back(&d->gate, "Registered.gate");
    add_list(d->foregrounds, kRegistered);
  } else if (auto* f = std::get_if<Foregrounds>(&message)) {
    add_list(f->segments, kForegrounds);
  }
  return slots;
}

}  // namespace

absl::StatusOr<std::vector<SharedFd>> DescriptorsOf(const Message& message) {
  std::vector<SharedFd> fds;
  // DescriptorSlots only points into the message; nothing is written through it here.
  for (auto& [fd, name] : DescriptorSlots(const_cast<Message&>(message))) {
    if (!(*fd)->valid()) return absl::InvalidArgumentError(absl::StrCat(name, ": no descriptor"));
    fds.push_back(*fd);
  }
  return fds;
}

absl::Status AdoptDescriptors(Message* message, std::deque<ScopedFd>* received) {
  for (auto& [fd, name] : DescriptorSlots(*message)) {
    if (received->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": the descriptor did not arrive with the frame"));
    }
    *fd = ShareFd(std::move(received->front()));
    received->pop_front();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeFrame(const Message& message, std::uint32_t sequence,
                                        std::uint16_t version) {
  if (sequence == 0) return FieldPath{"frame", "sequence"}.Error("must be >= 1, got 0");
  if (version < kOldestProtocolVersion || version > kProtocolVersion) {
    return FieldPath{"frame", "version"}.Error(
        absl::StrCat(version, " is not a version this side speaks (", kOldestProtocolVersion, "..",
                     kProtocolVersion, ")"));
  }
  if (VersionIntroducing(TypeOf(message)) > version) {
    return FieldPath{"frame", "type"}.Error(absl::StrCat(
        std::string(MessageTypeName(TypeOf(message))), " is not in protocol version ", version));
  }
  WAVEPOOL_RETURN_IF_ERROR(std::visit([](const auto& m) { return Validate(m); }, message));
  std::string frame;
  frame.reserve(64);
  ByteWriter w(&frame);
  w.U32(kFrameMagic);
  w.U16(version);
  w.U16(static_cast<std::uint16_t>(TypeOf(message)));
  w.U32(sequence);
  w.U32(0);  // the body length, patched below
  std::visit([&w](const auto& m) { Write(w, m); }, message);
  const std::size_t body = frame.size() - kFrameHeaderBytes;
  if (body > kMaxBodyBytes) {  // the list limits keep every valid message far below it
    return FieldPath{"frame", "length"}.Error(absl::StrCat(body, " > ", kMaxBodyBytes));
  }
  for (std::size_t i = 0; i < 4; ++i) frame[12 + i] = static_cast<char>(body >> (8 * i));
  return frame;
}

absl::StatusOr<Frame> DecodeFrame(std::string_view bytes) {
  if (bytes.size() < kFrameHeaderBytes) {
    return FieldPath{"frame", "header"}.Error(
        absl::StrCat("truncated (needs ", kFrameHeaderBytes, " bytes, ", bytes.size(), " given)"));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(internal::FrameHeader header, internal::DecodeFrameHeader(bytes));
  const std::size_t body = bytes.size() - kFrameHeaderBytes;
  if (body != header.body_bytes) {
    return FieldPath{"frame", "length"}.Error(
        absl::StrCat(header.body_bytes, ", but the frame has ", body, " body bytes"));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(Message message,
                            ReadMessage(header.type, bytes.substr(kFrameHeaderBytes)));
  return Frame{header.version, header.sequence, std::move(message)};
}

}  // namespace wavepool::agent
