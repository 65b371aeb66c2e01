// Matching names a person typed against the names the planner knows (models, devices, network
// presets, layer types; the command line's subcommands and flags), and suggesting the closest
// ones when a name is unknown. Pure functions, safe for concurrent use.
#ifndef WAVEPOOL_PLANNER_NAMES_H_
#define WAVEPOOL_PLANNER_NAMES_H_

#include <string>
#include <string_view>
#include <vector>

namespace wavepool::planner {

// The form two names are compared in: lower case, without '-', '_' and spaces, so that "VGG-16",
// "vgg_16" and "vgg16" are the same name, as are "A100-40GB" and "a100_40gb".
std::string NameKey(std::string_view name);

// Whether `a` and `b` are the same name once both are NameKey'd.
bool SameName(std::string_view a, std::string_view b);

// The candidates closest to `word`, at most `limit`, in the candidates' order: those whose
// NameKey is at the smallest edit distance from word's (insertions, deletions, substitutions and
// swaps of two neighbouring characters each count 1), when that distance is small for the word's
// length (at most 1 for up to 4 characters, 2 up to 8, 3 beyond); when none is, those that
// contain the word or that the word starts with ("--global-batch" for "--batch", "vgg16" for
// "vgg16bn"). Only the best of these ranks is kept, so that a typo gets one or two suggestions
// ("--gpus" for "--gpu", not also "--gpu-counts"). Empty when nothing is close.
std::vector<std::string> ClosestNames(std::string_view word,
                                      const std::vector<std::string>& candidates, size_t limit = 3);

// "; did you mean 'plan'?" or "; did you mean 'a100-40gb' or 'h100'?" for ClosestNames (each name
// wrapped in `quote`), or "" when nothing is close.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates,
                       std::string_view quote = "'");

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_NAMES_H_
