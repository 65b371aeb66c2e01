// The model section: named tensors (docs/runtime.md, "Checkpoints", has the layout).
//   u32 count | per tensor: u32 name length | name | signature | u64 byte count | bytes
// Bytes are the contiguous tensor in host order, which is little-endian on every host this
// builds for.
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "state_sections.h"
#include "wavepool/base/status_macros.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint tensor sections store host-order bytes and are defined as little-endian"
#endif

namespace wavepool::runtime::checkpoint_internal {
namespace {

constexpr std::uint32_t kMaxTensorRank = 64;

// Stored dtype codes: the format's own numbering, independent of LibTorch's enum.
struct DtypeCode {
  std::uint8_t code;
  torch::ScalarType dtype;
  const char* name;
};
constexpr DtypeCode kDtypeCodes[] = {
    {1, torch::kFloat, "float32"},     {2, torch::kDouble, "float64"}, {3, torch::kHalf, "float16"},
    {4, torch::kBFloat16, "bfloat16"}, {5, torch::kLong, "int64"},     {6, torch::kInt, "int32"},
    {7, torch::kShort, "int16"},       {8, torch::kChar, "int8"},      {9, torch::kByte, "uint8"},
    {10, torch::kBool, "bool"},
};

const DtypeCode* FindDtype(torch::ScalarType dtype) {
  for (const DtypeCode& entry : kDtypeCodes) {
    if (entry.dtype == dtype) return &entry;
  }
  return nullptr;
}

const DtypeCode* FindCode(std::uint8_t code) {
  for (const DtypeCode& entry : kDtypeCodes) {
    if (entry.code == code) return &entry;
  }
  return nullptr;
}

std::string_view AsBytes(const torch::Tensor& contiguous) {
  return {static_cast<const char*>(contiguous.data_ptr()), contiguous.nbytes()};
}

}  // namespace

std::string TorchErrorMessage(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
    return c10_error->what_without_backtrace();
  }
  return error.what();
}

std::string Describe(const TensorSignature& signature) {
  const DtypeCode* entry = FindDtype(signature.dtype);
  return absl::StrCat("[", absl::StrJoin(signature.shape, ", "), "] ",
                      entry != nullptr ? entry->name : c10::toString(signature.dtype));
}

absl::StatusOr<TensorSignature> SignatureOf(std::string_view name, const torch::Tensor& tensor) {
  if (!tensor.defined()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", View(name), "' is undefined"));
  }
  if (tensor.layout() != torch::kStrided) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", View(name), "' is not dense (layout ",
                     c10::toString(tensor.layout()), "); only strided tensors are checkpointed"));
  }
  if (FindDtype(tensor.scalar_type()) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", View(name), "' has dtype ",
                                                   c10::toString(tensor.scalar_type()),
                                                   ", which checkpoints do not store"));
  }
  return TensorSignature{tensor.scalar_type(), tensor.sizes().vec()};
}

void WriteSignature(ByteWriter& writer, const TensorSignature& signature) {
  writer.U8(FindDtype(signature.dtype)->code);
  writer.U32(static_cast<std::uint32_t>(signature.shape.size()));
  for (std::int64_t dim : signature.shape) writer.I64(dim);
}

TensorSignature ReadSignature(ByteReader& reader) {
  TensorSignature signature;
  const std::size_t dtype_offset = reader.offset();
  const std::uint8_t code = reader.U8("dtype code");
  const std::uint32_t rank = reader.U32("tensor rank");
  if (!reader.ok()) return signature;
  const DtypeCode* entry = FindCode(code);
  if (entry == nullptr || rank > kMaxTensorRank) {
    reader.Fail(absl::StrCat("offset ", dtype_offset, ": dtype code ", code, " and rank ", rank,
                             " are not a valid tensor signature"));
    return signature;
  }
  signature.dtype = entry->dtype;
  for (std::uint32_t i = 0; i < rank && reader.ok(); ++i) {
    const std::int64_t dim = reader.I64("tensor dimension");
    if (dim < 0) reader.Fail(absl::StrCat("offset ", reader.offset() - 8, ": dimension ", dim));
    signature.shape.push_back(dim);
  }
  return signature;
}

std::uint64_t ByteSize(const TensorSignature& signature, ByteReader& reader) {
  std::uint64_t bytes = c10::elementSize(signature.dtype);
  for (std::int64_t dim : signature.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(dim), &bytes)) {
      reader.Fail(absl::StrCat("tensor of shape ", Describe(signature), " overflows 64 bits"));
      return 0;
    }
  }
  return bytes;
}

absl::StatusOr<std::vector<TensorRecord>> ParseTensors(std::string_view section) {
  ByteReader reader(section);
  const std::uint32_t count = reader.U32("tensor count");
  std::vector<TensorRecord> records;
  std::set<std::string_view> names;
  for (std::uint32_t i = 0; i < count && reader.ok(); ++i) {
    const std::size_t begin = reader.offset();
    TensorRecord record;
    record.name = std::string(reader.String32("tensor name"));
    record.signature = ReadSignature(reader);
    const std::uint64_t expected = ByteSize(record.signature, reader);
    const std::uint64_t stored = reader.U64("tensor byte count");
    if (reader.ok() && stored != expected) {
      reader.Fail(absl::StrCat("tensor '", record.name, "' (record at offset ", begin, ") holds ",
                               stored, " bytes, its shape ", Describe(record.signature), " needs ",
                               expected));
    }
    record.bytes = reader.Bytes(stored, "tensor bytes");
    if (!reader.ok()) {
      return absl::DataLossError(
          absl::StrCat("tensor record ", i, " at offset ", begin, ": ", reader.status().message()));
    }
    records.push_back(std::move(record));
    if (!names.insert(records.back().name).second) {
      return absl::DataLossError(absl::StrCat("tensor record ", i, " at offset ", begin,
                                              ": a second tensor named '", records.back().name,
                                              "'"));
    }
  }
  WAVEPOOL_RETURN_IF_ERROR(reader.status());
  if (!reader.AtEnd()) {
    return absl::DataLossError(absl::StrCat(reader.remaining(), " unexpected bytes after the ",
                                            count, " tensors, at offset ", reader.offset()));
  }
  return records;
}

absl::Status CheckTensors(const std::vector<TensorRecord>& records, const NamedTensors& targets) {
  std::map<std::string_view, const TensorRecord*> by_name;
  for (const TensorRecord& record : records) by_name.emplace(record.name, &record);
  std::set<std::string_view> target_names;
  for (const auto& [name, tensor] : targets) {
    if (!target_names.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("the model names two tensors '", name, "'"));
    }
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("tensor '", name, "' of the model is not in the checkpoint"));
    }
    WAVEPOOL_ASSIGN_OR_RETURN(TensorSignature signature, SignatureOf(name, tensor));
    if (signature != it->second->signature) {
      return absl::FailedPreconditionError(
          absl::StrCat("tensor '", name, "' has shape ", Describe(it->second->signature),
                       " in the checkpoint, ", Describe(signature), " in the model"));
    }
  }
  for (const TensorRecord& record : records) {
    if (target_names.count(record.name) == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint tensor '", record.name, "' is not in the model"));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyTensors(const std::vector<TensorRecord>& records, const NamedTensors& targets) {
  std::map<std::string_view, const TensorRecord*> by_name;
  for (const TensorRecord& record : records) by_name.emplace(record.name, &record);
  try {
    torch::NoGradGuard no_grad;
    for (const auto& [name, target] : targets) {
      const TensorRecord& record = *by_name.at(name);
      // Staged through an aligned CPU tensor: the section's bytes have no alignment guarantee.
      torch::Tensor staging =
          torch::empty(record.signature.shape, torch::dtype(record.signature.dtype));
      std::memcpy(staging.data_ptr(), record.bytes.data(), record.bytes.size());
      target.copy_(staging);
    }
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrCat("restore tensors: ", TorchErrorMessage(error)));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime::checkpoint_internal

namespace wavepool::runtime {

absl::StatusOr<std::string> EncodeTensors(const NamedTensors& tensors) {
  using checkpoint_internal::ByteWriter;
  ByteWriter writer;
  writer.U32(static_cast<std::uint32_t>(tensors.size()));
  std::set<std::string_view> names;
  try {
    for (const auto& [name, tensor] : tensors) {
      if (!names.insert(name).second) {
        return absl::InvalidArgumentError(absl::StrCat("two tensors are named '", name, "'"));
      }
      WAVEPOOL_ASSIGN_OR_RETURN(checkpoint_internal::TensorSignature signature,
                                checkpoint_internal::SignatureOf(name, tensor));
      const torch::Tensor contiguous = tensor.detach().to(torch::kCPU).contiguous();
      writer.String32(name);
      checkpoint_internal::WriteSignature(writer, signature);
      writer.U64(contiguous.nbytes());
      writer.Bytes(checkpoint_internal::AsBytes(contiguous));
    }
  } catch (const std::exception& error) {
    return absl::InternalError(
        absl::StrCat("encode tensors: ", checkpoint_internal::TorchErrorMessage(error)));
  }
  return writer.Take();
}

}  // namespace wavepool::runtime
