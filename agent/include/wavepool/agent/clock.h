// The agent's clock is the shared one (wavepool/base/clock.h); these names keep the agent's code
// and its tests reading as before.
#ifndef WAVEPOOL_AGENT_CLOCK_H_
#define WAVEPOOL_AGENT_CLOCK_H_

#include "wavepool/base/clock.h"

namespace wavepool::agent {

using ::wavepool::Clock;
using ::wavepool::ClockPtr;
using ::wavepool::MakeRealClock;
using ::wavepool::MonotonicNanos;

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLOCK_H_
