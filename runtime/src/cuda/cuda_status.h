// CUDA runtime errors as absl::Status, naming the call that failed.
#ifndef WAVEPOOL_RUNTIME_CUDA_CUDA_STATUS_H_
#define WAVEPOOL_RUNTIME_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace wavepool::runtime {

// OK for cudaSuccess; Internal "<call>: <CUDA's error name>: <description>" otherwise.
inline absl::Status CudaStatus(cudaError_t error, std::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(std::string(call), ": ", cudaGetErrorName(error), ": ",
                                          cudaGetErrorString(error)));
}

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_CUDA_CUDA_STATUS_H_
