// ThreadPool: the persistent workers that run the blocks of CPU launches.
//
// Note [CPU launch threading]
// A launch is one Job: [0, total) cut into about four contiguous chunks per
// thread, handed out by an atomic counter. The launching thread queues the
// job, wakes the workers and then claims chunks itself like any worker, so a
// job finishes even when every worker is busy elsewhere (or, after fork(),
// gone). Several threads may launch at once: jobs wait in a FIFO queue and an
// idle worker joins the oldest one that still has chunks.
//
// Invariants:
//  - a Job lives on its launcher's stack; a worker may touch it only while
//    holding a reference (Job::refs), taken under the pool mutex while the
//    job is queued;
//  - the launcher dequeues its job (under the mutex) once the job has no
//    chunks left, so refs can then only fall; it returns when refs is 0,
//    which means every chunk has run and no worker will touch the job again;
//  - waiting spins briefly, then blocks on a condition variable: a hot loop
//    of small launches avoids futex round trips, and an idle pool costs no CPU;
//  - in the child of a fork() the pool starts over (a pthread_atfork handler):
//    the parent's workers do not exist there, so it neither waits for them
//    nor joins them at exit, and a mutex held by some parent thread at the
//    fork is made anew.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace tilejit::cpu {

/// The thread count that the TILEJIT_NUM_THREADS value `env` asks for;
/// `hardware` when env is null or empty. Throws ValueError unless env is a
/// positive integer.
int parse_num_threads(const char* env, int hardware);

class ThreadPool {
 public:
  /// Runs a contiguous range [begin, end) of the work.
  using ChunkFn = void (*)(void* context, int64_t begin, int64_t end);

  /// The process-wide pool; its workers start on the first parallel run.
  static ThreadPool& global();

  /// Runs fn over chunks covering [0, total) and returns when all have run.
  /// Inline on the calling thread when total <= 1 or num_threads() == 1.
  /// If chunks throw, the remaining chunks are skipped and the first
  /// exception is rethrown here.
  void run(int64_t total, ChunkFn fn, void* context);

  /// Threads per launch, counting the launcher (see backend/cpu.h).
  int num_threads();
  /// Stops the current workers (after the chunks they are running) and
  /// makes later runs use `n` threads. Throws ValueError for n < 1 or when
  /// called from inside a launch.
  void set_num_threads(int n);

  ~ThreadPool();

 private:
  struct Job;

  ThreadPool();
  void reset_after_fork() noexcept;
  void ensure_workers();
  void stop_workers();
  void worker_main();
  static void run_chunks(Job& job);
  void dequeue_locked(Job* job);

  std::mutex resize_mutex_;  // serialises starting and stopping workers
  std::atomic<int> num_threads_{0};  // 0: not yet read from the environment
  std::atomic<int> running_workers_{0};
  std::vector<std::thread> workers_;  // under resize_mutex_

  std::mutex mutex_;  // guards queue_, stop_ and every Job::refs change
  std::condition_variable work_cv_;  // a job was queued, or stop_
  std::condition_variable done_cv_;  // some job's refs fell to 0
  std::deque<Job*> queue_;
  std::atomic<int> queued_{0};  // queue_.size(), for spinning without the mutex
  bool stop_ = false;
};

}  // namespace tilejit::cpu
