#include "wavepool/runtime/checkpoint_fingerprint.h"

#include <openssl/evp.h>

#include <cstddef>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "wavepool/api/enums.h"
#include "wavepool/planner/layer_table.h"

namespace wavepool::runtime {
namespace {

// Bump when the text below changes meaning: old checkpoints then stop matching, loudly.
constexpr absl::string_view kFingerprintVersion = "wavepool checkpoint fingerprint v1";
// Measured costs say how fast a layer runs, not what state it holds.
constexpr absl::string_view kMeasuredTimeColumn = "time_us_per_sample";

// FormatLayerTable's text without the measured-time column (whose fields hold no comma).
std::string StructureOf(const planner::ModelGraph& model) {
  std::string out;
  std::ptrdiff_t dropped = -1;  // column index, once the header line is seen
  bool header_seen = false;
  for (absl::string_view line : absl::StrSplit(planner::FormatLayerTable(model), '\n')) {
    if (line.empty() || line.front() == '#') {
      absl::StrAppend(&out, line, "\n");
      continue;
    }
    std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (!header_seen) {
      header_seen = true;
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (fields[i] == kMeasuredTimeColumn) dropped = static_cast<std::ptrdiff_t>(i);
      }
    }
    if (dropped >= 0 && static_cast<std::size_t>(dropped) < fields.size()) {
      fields.erase(fields.begin() + dropped);
    }
    absl::StrAppend(&out, absl::StrJoin(fields, ","), "\n");
  }
  return out;
}

}  // namespace

std::string CheckpointFingerprintText(const planner::ModelGraph& model, const api::Plan& plan) {
  std::string text = absl::StrCat(kFingerprintVersion, "\n");
  absl::StrAppend(&text, "strategy ", std::string(api::ToString(plan.strategy)), "\n");
  absl::StrAppend(&text, "global_batch_size ", plan.global_batch_size, "\n");
  absl::StrAppend(&text, "gpus ", plan.gpus, "\n");
  absl::StrAppend(&text, "waves ", plan.waves, "\n");
  absl::StrAppend(&text, "wave_placement ", std::string(api::ToString(plan.wave_placement)), "\n");
  absl::StrAppend(&text, "optimizer ", std::string(api::ToString(plan.training.optimizer)), "\n");
  for (const api::PlanStage& stage : plan.stages) {
    absl::StrAppend(&text, "stage ", stage.index, " layers ", absl::StrJoin(stage.layers, ";"),
                    " ranks ", absl::StrJoin(stage.ranks, ";"), " per_gpu_batch ",
                    stage.per_gpu_batch, "\n");
  }
  for (const api::SyncGroup& group : plan.sync_groups) {
    absl::StrAppend(&text, "sync_group stage ", group.stage, " ranks ",
                    absl::StrJoin(group.ranks, ";"), "\n");
  }
  absl::StrAppend(&text, "model\n", StructureOf(model));
  return text;
}

absl::StatusOr<std::string> CheckpointFingerprint(const planner::ModelGraph& model,
                                                  const api::Plan& plan) {
  const std::string text = CheckpointFingerprintText(model, plan);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_bytes = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &digest_bytes, EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("checkpoint fingerprint: OpenSSL EVP_Digest(SHA-256) failed");
  }
  std::string hex;
  for (unsigned int i = 0; i < digest_bytes; ++i) absl::StrAppendFormat(&hex, "%02x", digest[i]);
  return hex;
}

}  // namespace wavepool::runtime
