// The CPU backend's public knobs. The backend itself registers as target
// "cpu" from a static initializer and is reached through
// runtime::get_backend("cpu"); nothing here is needed to use it.
//
// A CPU launch runs the blocks of the grid on a persistent pool of worker
// threads plus the calling thread. A block runs on one thread; which thread
// runs which block is unspecified, and blocks of one launch may run in any
// order and concurrently.
#pragma once

namespace tilejit::cpu {

/// Sets how many threads run the blocks of a launch, counting the calling
/// thread: 1 runs every launch inline on the caller, n > 1 keeps n - 1
/// workers. Takes effect for launches that start after it returns; launches
/// already running finish on the old workers. Throws ValueError for n < 1 and
/// when called from inside a launch (a kernel body).
void set_num_threads(int n);

/// The current thread count: the last set_num_threads(), else the
/// TILEJIT_NUM_THREADS environment variable (read once), else
/// std::thread::hardware_concurrency(). Throws ValueError when
/// TILEJIT_NUM_THREADS is set but is not a positive integer.
int num_threads();

}  // namespace tilejit::cpu
