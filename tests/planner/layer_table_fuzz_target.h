// The layer table parser's fuzz check, callable from a libFuzzer entry point
// (layer_table_fuzz_target.cpp) and from the bounded driver in the normal test run
// (layer_table_fuzz_test.cpp).
#ifndef WAVEPOOL_TESTS_PLANNER_LAYER_TABLE_FUZZ_TARGET_H_
#define WAVEPOOL_TESTS_PLANNER_LAYER_TABLE_FUZZ_TARGET_H_

#include <string>
#include <string_view>

namespace wavepool::planner::testing {

// Parses `text` as a layer table. Whatever the bytes, it must return, not crash, hang or throw,
// with InvalidArgument when it refuses them; a table it accepts must give layers whose parameter
// and activation bytes are non-negative (no overflow wrapped them) and whose FLOPs are finite,
// and must be written by FormatLayerTable as a table that parses back to the same graph. Returns
// "" when all of this holds, else what went wrong; sets *accepted when the table parsed.
std::string CheckLayerTableInput(std::string_view text, bool* accepted);

}  // namespace wavepool::planner::testing

#endif  // WAVEPOOL_TESTS_PLANNER_LAYER_TABLE_FUZZ_TARGET_H_
