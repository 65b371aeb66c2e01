// What execve and posix_spawn take, built before a child process exists: a process with other
// threads may do nothing but async-signal-safe calls between fork and exec, so the environment
// and the pointer arrays must be ready beforehand.
#ifndef WAVEPOOL_BASE_EXEC_ARGS_H_
#define WAVEPOOL_BASE_EXEC_ARGS_H_

#include <map>
#include <string>
#include <vector>

namespace wavepool {

// A child's environment as "KEY=value" strings: this process's own (`environ`, read now) with
// `overrides` set over it, as setenv(key, value, 1) would; with `inherit` false, `overrides`
// alone.
std::vector<std::string> ChildEnvironment(const std::map<std::string, std::string>& overrides,
                                          bool inherit = true);

// Pointers to `strings`, null-terminated: an argv or envp. Valid while `strings` is neither
// changed nor destroyed.
std::vector<char*> ExecPointers(std::vector<std::string>& strings);

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_EXEC_ARGS_H_
