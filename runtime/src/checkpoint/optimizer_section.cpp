// The optimizer section (docs/runtime.md, "Checkpoints", has the layout):
//   u32 kind length | kind | u32 group count | per group: u32 parameter count | signatures |
//   u64 archive length | LibTorch OutputArchive bytes
// LibTorch's own load matches saved state to parameters by position and checks only the group
// sizes, deep inside; the kind and signatures let a mismatch be reported, precisely, before any
// state changes.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "absl/strings/str_cat.h"
#include "state_sections.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime::checkpoint_internal {
namespace {

// "torch::optim::Adam": the dynamic type, demangled.
std::string KindOf(const torch::optim::Optimizer& optimizer) {
  const char* mangled = typeid(optimizer).name();
  int result = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &result), std::free);
  return result == 0 && demangled != nullptr ? std::string(demangled.get()) : std::string(mangled);
}

std::string ParameterName(std::size_t group, std::size_t index) {
  return absl::StrCat("parameter ", index, " of group ", group);
}

torch::Device DeviceOf(const torch::optim::Optimizer& optimizer) {
  for (const torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    for (const torch::Tensor& parameter : group.params()) {
      if (parameter.defined()) return parameter.device();
    }
  }
  return torch::kCPU;
}

// Checks the stored parameter groups against the optimizer's.
absl::Status CheckGroups(ByteReader& reader, const torch::optim::Optimizer& optimizer) {
  const std::vector<torch::optim::OptimizerParamGroup>& groups = optimizer.param_groups();
  const std::uint32_t group_count = reader.U32("parameter group count");
  if (reader.ok() && group_count != groups.size()) {
    return absl::FailedPreconditionError(absl::StrCat(group_count, " parameter groups in the ",
                                                      "checkpoint, ", groups.size(),
                                                      " in the optimizer"));
  }
  for (std::size_t g = 0; g < groups.size() && reader.ok(); ++g) {
    const std::vector<torch::Tensor>& parameters = groups[g].params();
    const std::uint32_t count = reader.U32("parameter count");
    if (reader.ok() && count != parameters.size()) {
      return absl::FailedPreconditionError(absl::StrCat("parameter group ", g, " has ", count,
                                                        " parameters in the checkpoint, ",
                                                        parameters.size(), " in the optimizer"));
    }
    for (std::size_t i = 0; i < parameters.size() && reader.ok(); ++i) {
      const TensorSignature stored = ReadSignature(reader);
      if (!reader.ok()) break;
      WAVEPOOL_ASSIGN_OR_RETURN(TensorSignature actual,
                                SignatureOf(ParameterName(g, i), parameters[i]));
      if (actual != stored) {
        return absl::FailedPreconditionError(absl::StrCat(ParameterName(g, i), " has shape ",
                                                          Describe(stored), " in the checkpoint, ",
                                                          Describe(actual), " in the optimizer"));
      }
    }
  }
  return reader.ok() ? absl::OkStatus() : reader.status();
}

}  // namespace

absl::StatusOr<CheckedOptimizer> CheckOptimizer(std::string_view section,
                                                const torch::optim::Optimizer& optimizer) {
  ByteReader reader(section);
  const std::string_view kind = reader.String32("optimizer kind");
  WAVEPOOL_RETURN_IF_ERROR(reader.status());
  if (const std::string expected = KindOf(optimizer); kind != expected) {
    return absl::FailedPreconditionError(absl::StrCat("optimizer state of ", QuoteBytes(kind),
                                                      " in the checkpoint, but the optimizer is ",
                                                      expected));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckGroups(reader, optimizer));
  const std::uint64_t archive_bytes = reader.U64("archive length");
  const std::size_t archive_offset = reader.offset();
  const std::string_view archive = reader.Bytes(archive_bytes, "archive");
  WAVEPOOL_RETURN_IF_ERROR(reader.status());
  if (!reader.AtEnd()) {
    return absl::DataLossError(absl::StrCat(reader.remaining(), " unexpected bytes after the ",
                                            "archive, at offset ", reader.offset()));
  }
  CheckedOptimizer checked;
  try {
    checked.archive = std::make_unique<torch::serialize::InputArchive>();
    checked.archive->load_from(archive.data(), archive.size(), DeviceOf(optimizer));
  } catch (const std::exception& error) {
    return absl::DataLossError(absl::StrCat("LibTorch archive at offset ", archive_offset, ": ",
                                            TorchErrorMessage(error)));
  }
  return checked;
}

absl::Status ApplyOptimizer(CheckedOptimizer& checked, torch::optim::Optimizer& optimizer) {
  try {
    optimizer.load(*checked.archive);
  } catch (const std::exception& error) {
    return absl::DataLossError(
        absl::StrCat("LibTorch rejected the optimizer state (the ",
                     "optimizer's state is now unspecified): ", TorchErrorMessage(error)));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime::checkpoint_internal

namespace wavepool::runtime {

absl::StatusOr<std::string> EncodeOptimizer(const torch::optim::Optimizer& optimizer) {
  using checkpoint_internal::ParameterName;
  checkpoint_internal::ByteWriter writer;
  writer.String32(checkpoint_internal::KindOf(optimizer));
  const std::vector<torch::optim::OptimizerParamGroup>& groups = optimizer.param_groups();
  writer.U32(static_cast<std::uint32_t>(groups.size()));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::vector<torch::Tensor>& parameters = groups[g].params();
    writer.U32(static_cast<std::uint32_t>(parameters.size()));
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      WAVEPOOL_ASSIGN_OR_RETURN(
          checkpoint_internal::TensorSignature signature,
          checkpoint_internal::SignatureOf(ParameterName(g, i), parameters[i]));
      checkpoint_internal::WriteSignature(writer, signature);
    }
  }
  std::string archive_bytes;
  try {
    torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    archive.save_to([&archive_bytes](const void* data, std::size_t size) {
      archive_bytes.append(static_cast<const char*>(data), size);
      return size;
    });
  } catch (const std::exception& error) {
    return absl::InternalError(
        absl::StrCat("save optimizer state: ", checkpoint_internal::TorchErrorMessage(error)));
  }
  writer.U64(archive_bytes.size());
  writer.Bytes(archive_bytes);
  return writer.Take();
}

}  // namespace wavepool::runtime
