// BatchLoader: reads one rank's blocks of each step's global batch, on the caller's thread or
// one step ahead on a pre-loading thread (scalednn-data-movement §IV-B).
#include "wavepool/runtime/batch_loader.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

// One step's blocks, and on a GPU the event their copies to it end at.
struct LoadedStep {
  std::vector<Batch> batches;
  std::shared_ptr<c10::Event> copied;
};
using Steps = absl::StatusOr<LoadedStep>;

absl::Status Validate(const SampleSourcePtr& source, const SampleOrder& order,
                      const std::vector<BatchBlock>& blocks, const BatchLoader::Options& options) {
  const auto invalid = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("batch loader: ", parts...));
  };
  if (source == nullptr) return invalid("no sample source");
  if (order.dataset_size() < 1 || order.samples_per_step() < 1) {
    return invalid("the sample order's dataset_size (", order.dataset_size(),
                   ") and samples_per_step (", order.samples_per_step(), ") must be >= 1");
  }
  if (order.dataset_size() > source->size()) {
    return invalid("the sample order covers ", order.dataset_size(), " samples, but ",
                   source->Describe(), " holds ", source->size());
  }
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const BatchBlock& block = blocks[b];
    if (block.first < 0 || block.count < 1 ||
        block.count > order.samples_per_step() - block.first) {
      return invalid("block ", b, " (positions [", block.first, ", ", block.first + block.count,
                     ")) must be non-empty and within the step's ", order.samples_per_step(),
                     " positions [0, ", order.samples_per_step(), ")");
    }
  }
  const auto cuda_index = static_cast<std::size_t>(std::max<int>(0, options.device.index()));
  if (options.device.is_cuda() &&
      !(torch::cuda::is_available() && cuda_index < torch::cuda::device_count())) {
    return absl::FailedPreconditionError(absl::StrCat("batch loader: device ", options.device.str(),
                                                      " is not a CUDA device LibTorch sees"));
  }
  if (options.first_step < 0 || options.step_stride < 1) {
    return invalid("options.first_step must be >= 0 and options.step_stride >= 1, got ",
                   options.first_step, " and ", options.step_stride);
  }
  return absl::OkStatus();
}

std::vector<std::int64_t> BatchShape(const SampleSpec& spec, std::int64_t rows) {
  std::vector<std::int64_t> shape{rows};
  shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
  return shape;
}

}  // namespace

class BatchLoader::Impl {
 public:
  Impl(SampleSourcePtr source, SampleOrder order, std::vector<BatchBlock> blocks, Options options)
      : source_(std::move(source)),
        order_(order),
        blocks_(std::move(blocks)),
        options_(options),
        next_step_(options.first_step) {
    if (options_.device.is_cuda()) {
      copy_stream_ = c10::impl::VirtualGuardImpl(options_.device.type())
                         .getStreamFromGlobalPool(options_.device);
    }
    if (options_.preload) preloader_ = std::thread([this] { PreloadLoop(); });
  }

  ~Impl() {
    {
      absl::MutexLock lock(&mu_);
      stopping_.store(true, std::memory_order_relaxed);
    }
    if (preloader_.joinable()) preloader_.join();
  }

  absl::StatusOr<std::vector<Batch>> Next() {
    WAVEPOOL_RETURN_IF_ERROR(error_);
    const auto start = std::chrono::steady_clock::now();
    Steps result = options_.preload ? TakeReady() : Load(next_step_);
    next_step_ += options_.step_stride;
    wait_nanos_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count(),
                          std::memory_order_relaxed);
    if (result.ok()) result = ReadyOnCurrentStream(*std::move(result));
    if (!result.ok()) {
      error_ = result.status();
      return error_;
    }
    return std::move(result->batches);
  }

  double wait_seconds() const {
    return static_cast<double>(wait_nanos_.load(std::memory_order_relaxed)) * 1e-9;
  }

 private:
  // Waits for the pre-loading thread's step and frees its slot for the next one.
  Steps TakeReady() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &Impl::HasReady));
    Steps result = std::move(*ready_);
    ready_.reset();
    return result;
  }

  void PreloadLoop() {
    for (std::int64_t step = options_.first_step;; step += options_.step_stride) {
      Steps result = Load(step);
      absl::MutexLock lock(&mu_);
      if (stopping_.load(std::memory_order_relaxed)) return;
      const bool failed = !result.ok();
      ready_ = std::move(result);
      // A failed step is the last: Next keeps returning its error.
      if (failed) return;
      mu_.Await(absl::Condition(this, &Impl::SlotFreeOrStopping));
      if (stopping_.load(std::memory_order_relaxed)) return;
    }
  }

  bool HasReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ready_.has_value(); }
  bool SlotFreeOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !ready_.has_value() || stopping_.load(std::memory_order_relaxed);
  }

  // Reads every block of `step` and, for a GPU, starts copying them to it; Cancelled as soon as
  // the loader is being destroyed.
  Steps Load(std::int64_t step) const {
    LoadedStep loaded;
    loaded.batches.reserve(blocks_.size());
    for (const BatchBlock& block : blocks_) {
      WAVEPOOL_ASSIGN_OR_RETURN(Batch batch, LoadBlock(step, block));
      loaded.batches.push_back(std::move(batch));
    }
    if (copy_stream_.has_value()) return StartCopy(step, std::move(loaded));
    return loaded;
  }

  // Pinned host memory copies without the CPU waiting (scalednn-data-movement §IV-B); the
  // caching host allocator keeps each pinned block until its copy is done.
  Steps StartCopy(std::int64_t step, LoadedStep loaded) const {
    try {
      const c10::StreamGuard on_copy_stream(*copy_stream_);
      for (Batch& batch : loaded.batches) {
        batch.inputs = batch.inputs.to(options_.device, /*non_blocking=*/true);
        batch.labels = batch.labels.to(options_.device, /*non_blocking=*/true);
      }
      loaded.copied = std::make_shared<c10::Event>(options_.device.type());
      loaded.copied->record(*copy_stream_);
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("batch loader: copying step ", step, " to ",
                                              options_.device.str(), ": ",
                                              e.what_without_backtrace()));
    }
    return loaded;
  }

  // The consumer's stream waits for the copy; its tensors, allocated on the copy stream, are
  // marked as used by the consumer's, so that the caching allocator does not hand their memory
  // to a later copy while the consumer's kernels still read it.
  Steps ReadyOnCurrentStream(LoadedStep loaded) const {
    if (loaded.copied == nullptr) return loaded;
    try {
      const c10::Stream consumer =
          c10::impl::VirtualGuardImpl(options_.device.type()).getStream(options_.device);
      loaded.copied->block(consumer);
      for (Batch& batch : loaded.batches) {
        batch.inputs.record_stream(consumer);
        batch.labels.record_stream(consumer);
      }
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("batch loader: waiting for the copy to ",
                                              options_.device.str(), ": ",
                                              e.what_without_backtrace()));
    }
    return loaded;
  }

  absl::StatusOr<Batch> LoadBlock(std::int64_t step, const BatchBlock& block) const {
    const SampleSpec& spec = source_->spec();
    const bool tokens = spec.kind == SampleSpec::Kind::kTokens;
    Batch batch;
    batch.step = step;
    batch.first_sample = block.first;
    try {
      const auto host = torch::TensorOptions().pinned_memory(copy_stream_.has_value());
      batch.inputs = torch::empty(BatchShape(spec, block.count),
                                  host.dtype(tokens ? torch::kInt64 : torch::kFloat32));
      batch.labels = torch::empty({block.count}, host.dtype(torch::kInt64));
    } catch (const c10::Error& e) {
      return absl::ResourceExhaustedError(
          absl::StrCat("batch loader: allocating step ", step, "'s block of ", block.count,
                       " samples of ", spec.ToString(), ": ", e.what_without_backtrace()));
    }
    auto* inputs = static_cast<char*>(batch.inputs.data_ptr());
    const std::int64_t sample_bytes =
        spec.Elements() * static_cast<std::int64_t>(batch.inputs.element_size());
    auto* labels = batch.labels.data_ptr<std::int64_t>();
    for (std::int64_t row = 0; row < block.count; ++row) {
      // Relaxed: a stale read only delays the stop by one sample; the join synchronises.
      if (stopping_.load(std::memory_order_relaxed)) {
        return absl::CancelledError("batch loader: stopped while loading");
      }
      const std::int64_t position = block.first + row;
      const std::int64_t index = order_.Index(step, position);
      absl::Status status = source_->Read(index, inputs + row * sample_bytes, &labels[row]);
      if (status.ok() && (labels[row] < 0 || labels[row] >= spec.classes)) {
        status = absl::InternalError(
            absl::StrCat("label ", labels[row], " is outside [0, ", spec.classes, ")"));
      }
      if (!status.ok()) {
        return absl::Status(
            status.code(),
            absl::StrCat("reading step ", step, " position ", position, " (sample ", index, ") of ",
                         source_->Describe(), ": ", status.message()));
      }
    }
    return batch;
  }

  // Constant after construction.
  const SampleSourcePtr source_;
  const SampleOrder order_;
  const std::vector<BatchBlock> blocks_;
  const Options options_;
  std::optional<c10::Stream> copy_stream_;  // on a GPU; set before the preloader starts

  // The caller's thread only.
  std::int64_t next_step_;
  absl::Status error_;  // the first error Next returned; sticky

  // Set once, under mu_ (so that Await re-evaluates its condition), by the destructor; read
  // without the lock between samples.
  std::atomic<bool> stopping_{false};
  // Relaxed: a statistic with one writer; readers need no ordering with anything else.
  std::atomic<std::int64_t> wait_nanos_{0};

  absl::Mutex mu_;
  std::optional<Steps> ready_ ABSL_GUARDED_BY(mu_);  // the step the preloader finished, if any
  std::thread preloader_;  // last member: started after everything it reads is constructed
};

absl::StatusOr<std::unique_ptr<BatchLoader>> BatchLoader::Create(SampleSourcePtr source,
                                                                 SampleOrder order,
                                                                 std::vector<BatchBlock> blocks,
                                                                 Options options) {
  WAVEPOOL_RETURN_IF_ERROR(Validate(source, order, blocks, options));
  return std::unique_ptr<BatchLoader>(new BatchLoader(
      std::make_unique<Impl>(std::move(source), order, std::move(blocks), options)));
}

BatchLoader::BatchLoader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchLoader::~BatchLoader() = default;

absl::StatusOr<std::vector<Batch>> BatchLoader::Next() { return impl_->Next(); }
double BatchLoader::wait_seconds() const { return impl_->wait_seconds(); }

}  // namespace wavepool::runtime
