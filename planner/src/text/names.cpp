#include "wavepool/planner/names.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace wavepool::planner {
namespace {

// Optimal string alignment distance: Levenshtein plus swaps of two neighbouring characters,
// the commonest typing slip ("plna" for "plan").
size_t EditDistance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

// How many edits still read as a typo of a word of this length.
size_t Tolerance(size_t length) { return length <= 4 ? 1 : length <= 8 ? 2 : 3; }

}  // namespace

std::string NameKey(std::string_view name) {
  std::string key;
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ') continue;
    key.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

bool SameName(std::string_view a, std::string_view b) { return NameKey(a) == NameKey(b); }

std::vector<std::string> ClosestNames(std::string_view word,
                                      const std::vector<std::string>& candidates, size_t limit) {
  const std::string key = NameKey(word);
  if (key.empty()) return {};
  const size_t tolerance = Tolerance(key.size());
  // (rank, index): an edit distance within the tolerance, or tolerance + 1 for a name that
  // extends the word or that the word extends ("batch" in "global-batch", "vgg16bn").
  std::vector<std::pair<size_t, size_t>> close;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string other = NameKey(candidates[i]);
    if (other.empty() || other == key) continue;
    const size_t distance = EditDistance(key, other);
    if (distance <= tolerance) {
      close.emplace_back(distance, i);
    } else if (key.size() >= 3 && (absl::StrContains(other, key) || absl::StartsWith(key, other))) {
      close.emplace_back(tolerance + 1, i);
    }
  }
  std::stable_sort(close.begin(), close.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // Only the closest: "--gpus" for "--gpu", not also "--gpu-counts", which merely extends it.
  std::vector<std::string> names;
  for (const auto& [rank, index] : close) {
    if (names.size() == limit || rank > close.front().first) break;
    if (std::find(names.begin(), names.end(), candidates[index]) == names.end()) {
      names.push_back(candidates[index]);
    }
  }
  return names;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates,
                       std::string_view quote) {
  const std::vector<std::string> names = ClosestNames(word, candidates);
  if (names.empty()) return "";
  const std::string q(quote);
  std::string text = "; did you mean ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) absl::StrAppend(&text, i + 1 == names.size() ? " or " : ", ");
    absl::StrAppend(&text, q, names[i], q);
  }
  return text + "?";
}

}  // namespace wavepool::planner
