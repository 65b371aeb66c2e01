// BERT-base (uncased) fine-tuned for a 2-class sequence classification, sequence length 128.
#include <string>

#include "absl/strings/str_cat.h"
#include "wavepool/planner/model_builder.h"
#include "zoo/zoo_internal.h"

namespace wavepool::planner::internal {
namespace {

constexpr std::int64_t kSeqLen = 128;
constexpr std::int64_t kVocab = 30522;
constexpr std::int64_t kMaxPositions = 512;
constexpr std::int64_t kTypeVocab = 2;
constexpr std::int64_t kHidden = 768;
constexpr int kHeads = 12;
constexpr std::int64_t kIntermediate = 3072;
constexpr int kLayers = 12;
constexpr std::int64_t kClasses = 2;

}  // namespace

// Hugging Face BertForSequenceClassification: BertModel (109,482,240 parameters with its pooler)
// plus a 768->2 classifier (1,538) and the loss. Each encoder layer is two layers here
// (attention, feed-forward); dropouts are not modelled.
absl::StatusOr<ModelGraph> BuildBertBase() {
  ModelBuilder builder("bert_base", TensorShape{{kSeqLen}});
  LayerId x = builder.Embedding("embeddings", ModelBuilder::kInput, kVocab, kMaxPositions,
                                kTypeVocab, kHidden);
  for (int i = 0; i < kLayers; ++i) {
    const std::string prefix = absl::StrCat("encoder.layer.", i);
    x = builder.TransformerAttention(prefix + ".attention", x, kHeads);
    x = builder.TransformerFeedForward(prefix + ".ffn", x, kIntermediate);
  }
  x = builder.TransformerPooler("pooler", x);  // BertPooler: tanh(dense(h[:, 0]))
  x = builder.Linear("classifier", x, kClasses);
  builder.SoftmaxCrossEntropy("loss", x);
  return std::move(builder).Build();
}

}  // namespace wavepool::planner::internal
