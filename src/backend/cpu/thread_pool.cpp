// The CPU launch thread pool; the design is Note [CPU launch threading] in
// thread_pool.h.
#include "backend/cpu/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "tilejit/backend/cpu.h"
#include "tilejit/core/error.h"

namespace tilejit::cpu {
namespace {

// About this many chunks per thread: enough that uneven blocks balance out,
// few enough that claiming a chunk stays a negligible cost.
constexpr int64_t kChunksPerThread = 4;
// Polls before blocking: a few tens of microseconds, about the cost of a
// futex wake-up, so back-to-back launches do not pay one.
constexpr int kSpinIterations = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Nonzero while this thread runs chunks: on workers always, on a launcher
// during its launch. Resizing the pool from there would join a worker from
// itself, or wait for the launch that is asking.
thread_local int t_launch_depth = 0;

struct LaunchScope {
  LaunchScope() { ++t_launch_depth; }
  ~LaunchScope() { --t_launch_depth; }
};

}  // namespace

int parse_num_threads(const char* env, int hardware) {
  if (env == nullptr || *env == '\0') return hardware;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  TILEJIT_CHECK(errno == 0 && *end == '\0' && v >= 1 && v <= INT_MAX, kValueError)
      << "TILEJIT_NUM_THREADS='" << env << "' is not a positive integer";
  return int(v);
}

struct ThreadPool::Job {
  ChunkFn fn = nullptr;
  void* context = nullptr;
  int64_t num_chunks = 0;
  int64_t chunk_base = 0;   // total / num_chunks
  int64_t chunk_extra = 0;  // total % num_chunks: the first ones get one more
  std::atomic<int64_t> next{0};
  std::atomic<int> refs{0};
  std::exception_ptr error;  // the first one; under mutex_
  std::mutex* error_mutex = nullptr;

  int64_t begin_of(int64_t c) const { return c * chunk_base + std::min(c, chunk_extra); }
};

ThreadPool& ThreadPool::global() {
  // Destroyed at exit, which stops and joins the workers (idle ones are
  // blocked on work_cv_ and wake at once).
  static ThreadPool pool;
  return pool;
}

ThreadPool::ThreadPool() {
  // Only global() makes a pool, once.
  ::pthread_atfork(nullptr, nullptr, [] { ThreadPool::global().reset_after_fork(); });
}

void ThreadPool::reset_after_fork() noexcept {
  // Only the forking thread exists here. The std::thread objects of the
  // parent's workers can be neither joined nor destroyed (a joinable
  // std::thread terminates the process when destroyed): they are leaked.
  // The mutexes and condition variables are made anew in place: another
  // parent thread may have held them at the fork, and will never unlock.
  new std::vector<std::thread>(std::move(workers_));
  workers_ = std::vector<std::thread>();
  new (&resize_mutex_) std::mutex;
  new (&mutex_) std::mutex;
  new (&work_cv_) std::condition_variable;
  new (&done_cv_) std::condition_variable;
  queue_.clear();
  queued_.store(0, std::memory_order_relaxed);
  running_workers_.store(0, std::memory_order_relaxed);
  stop_ = false;
}

ThreadPool::~ThreadPool() { stop_workers(); }

int ThreadPool::num_threads() {
  int n = num_threads_.load(std::memory_order_acquire);
  if (TILEJIT_LIKELY(n != 0)) return n;
  std::lock_guard<std::mutex> lock(resize_mutex_);
  n = num_threads_.load(std::memory_order_relaxed);
  if (n == 0) {
    const unsigned hw = std::thread::hardware_concurrency();
    n = parse_num_threads(std::getenv("TILEJIT_NUM_THREADS"), hw == 0 ? 1 : int(hw));
    num_threads_.store(n, std::memory_order_release);
  }
  return n;
}

void ThreadPool::set_num_threads(int n) {
  TILEJIT_CHECK(n >= 1, kValueError) << "set_num_threads: " << n << " threads; expected at least 1";
  TILEJIT_CHECK(t_launch_depth == 0, kValueError)
      << "set_num_threads: called from inside a CPU launch; call it between launches";
  std::lock_guard<std::mutex> lock(resize_mutex_);
  if (num_threads_.load(std::memory_order_relaxed) == n) return;
  num_threads_.store(n, std::memory_order_release);
  // Workers for the new count start with the next parallel run.
  stop_workers();
}

void ThreadPool::stop_workers() {
  // Callers hold resize_mutex_, except the destructor, which runs when no
  // other thread can use the pool any more.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) {
    // exit() called from a kernel body runs this destructor on a worker.
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
  workers_.clear();
  running_workers_.store(0, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mutex_);
  stop_ = false;
}

void ThreadPool::ensure_workers() {
  std::lock_guard<std::mutex> lock(resize_mutex_);
  // The count is read again here: set_num_threads() may have changed it
  // since the caller looked.
  const int threads = num_threads_.load(std::memory_order_relaxed);
  if (int(workers_.size()) == threads - 1) return;
  stop_workers();
  workers_.reserve(size_t(threads - 1));
  for (int i = 0; i < threads - 1; ++i) workers_.emplace_back([this] { worker_main(); });
  running_workers_.store(threads - 1, std::memory_order_release);
}

void ThreadPool::run_chunks(Job& job) {
  for (;;) {
    const int64_t c = job.next.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.num_chunks) return;
    try {
      job.fn(job.context, job.begin_of(c), job.begin_of(c + 1));
    } catch (...) {
      std::lock_guard<std::mutex> lock(*job.error_mutex);
      if (!job.error) job.error = std::current_exception();
      // Nobody starts another chunk of a failed job.
      job.next.store(job.num_chunks, std::memory_order_relaxed);
    }
  }
}

void ThreadPool::dequeue_locked(Job* job) {
  auto it = std::find(queue_.begin(), queue_.end(), job);
  if (it != queue_.end()) {
    queue_.erase(it);
    queued_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void ThreadPool::worker_main() {
  LaunchScope scope;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (stop_) return;
    if (queue_.empty()) {
      lock.unlock();
      for (int i = 0; i < kSpinIterations && queued_.load(std::memory_order_relaxed) == 0; ++i) {
        cpu_relax();
      }
      lock.lock();
      work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      continue;
    }
    Job* job = queue_.front();
    job->refs.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    run_chunks(*job);
    lock.lock();
    // Its chunks are all claimed: later workers need not look at it.
    dequeue_locked(job);
    // The release pairs with the launcher's acquire load: the chunks' writes
    // are visible to it once it sees refs reach 0. Nothing touches the job
    // after this line; it may be gone as soon as refs is 0.
    if (job->refs.fetch_sub(1, std::memory_order_release) == 1) done_cv_.notify_all();
  }
}

void ThreadPool::run(int64_t total, ChunkFn fn, void* context) {
  if (total <= 0) return;
  const int threads = num_threads();
  LaunchScope scope;
  if (total == 1 || threads == 1) {
    fn(context, 0, total);
    return;
  }
  if (TILEJIT_UNLIKELY(running_workers_.load(std::memory_order_acquire) != threads - 1)) {
    ensure_workers();
  }
  Job job;
  job.fn = fn;
  job.context = context;
  job.num_chunks = std::min<int64_t>(total, kChunksPerThread * threads);
  job.chunk_base = total / job.num_chunks;
  job.chunk_extra = total % job.num_chunks;
  job.error_mutex = &mutex_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(&job);
    queued_.fetch_add(1, std::memory_order_relaxed);
  }
  work_cv_.notify_all();
  run_chunks(job);
  {
    // No worker can take a new reference once the job is off the queue.
    std::unique_lock<std::mutex> lock(mutex_);
    dequeue_locked(&job);
    if (job.refs.load(std::memory_order_acquire) != 0) {
      lock.unlock();
      for (int i = 0; i < kSpinIterations && job.refs.load(std::memory_order_acquire) != 0; ++i) {
        cpu_relax();
      }
      lock.lock();
      done_cv_.wait(lock, [&] { return job.refs.load(std::memory_order_acquire) == 0; });
    }
  }
  if (TILEJIT_UNLIKELY(job.error)) std::rethrow_exception(job.error);
}

int num_threads() { return ThreadPool::global().num_threads(); }

void set_num_threads(int n) { ThreadPool::global().set_num_threads(n); }

}  // namespace tilejit::cpu
