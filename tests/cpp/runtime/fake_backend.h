// Test helpers for the runtime tests: a Backend whose memory, events and
// compiler are fakes the test can observe and steer, and a temporary
// directory per test.
//
// FakeAllocator: malloc-backed, counts live blocks and can be told to fail
// the next N allocations. FakeBackend events: heap objects the test marks
// complete or not; the backend counts the live ones so tests can check the
// pool destroys every event it takes. compile() returns "BIN:" + source;
// load() rejects anything else with RuntimeError.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::testing {


using runtime::Event;
using runtime::Stream;

class FakeAllocator : public runtime::Allocator {
 public:
  ~FakeAllocator() override {
    for (auto& [ptr, bytes] : live_) std::free(ptr);
  }

  void* allocate(size_t bytes, Device, Stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++calls_;
    if (fail_next_ > 0) {
      --fail_next_;
      ++failures_;
      return nullptr;
    }
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    live_[p] = bytes;
    live_bytes_ += bytes;
    return p;
  }

  void deallocate(void* ptr, size_t bytes, Device, Stream) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    // A foreign pointer or a size mismatch is a pool bug: counted, and
    // checked by the tests through bad_frees().
    if (it == live_.end() || it->second != bytes) {
      ++bad_frees_;
      return;
    }
    live_bytes_ -= bytes;
    live_.erase(it);
    std::free(ptr);
  }

  /// The next `n` allocate() calls return nullptr.
  void fail_next(int n) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_next_ = n;
  }
  size_t live_blocks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }
  size_t live_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_bytes_;
  }
  int calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }
  int failures() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failures_;
  }
  int bad_frees() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bad_frees_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<void*, size_t> live_;
  size_t live_bytes_ = 0;
  int fail_next_ = 0;
  int calls_ = 0;
  int failures_ = 0;
  int bad_frees_ = 0;
};

class FakeTensorAllocator : public runtime::TensorAllocator {
 public:
  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               Stream) override {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    ++calls;
    void* p = std::malloc(size_t(n * dtype.bytes()) + 1);
    return Tensor::from_blob(p, shape, dtype, device, [](void* c) noexcept { std::free(c); }, p);
  }
  std::atomic<int> calls{0};
};

class FakeModule : public runtime::Module {
 public:
  FakeModule(std::string bytes, runtime::KernelAbi a) : binary(std::move(bytes)), abi(std::move(a)) {}
  void launch(const runtime::LaunchParams&) override { ++launches; }
  std::string binary;
  runtime::KernelAbi abi;  // what load() was given
  std::atomic<int> launches{0};
};

/// The KernelAbi the fake backends generate: a pointer per tensor
/// parameter, a symbol per symbol, one launch "fake_entry" at the request's
/// result indices (0 where the request gives none).
inline runtime::KernelAbi fake_abi(const runtime::SourceRequest& request) {
  runtime::KernelAbi abi;
  if (request.func != nullptr) {
    for (size_t k = 0; k < request.func->params.size(); ++k) {
      abi.add(runtime::AbiArgKind::kPointer, request.func->params[k].name, int(k), 8, 8);
    }
  }
  for (size_t s = 0; s < request.symbols.size(); ++s) {
    abi.add(runtime::AbiArgKind::kSymbol, request.symbols[s], int(s), 8, 8);
  }
  runtime::AbiLaunch launch;
  launch.entry = "fake_entry";
  const runtime::LaunchResults r = request.launches.empty() ? runtime::LaunchResults{{0, 0, 0}, 0}
                                                            : request.launches[0];
  for (int d = 0; d < 3; ++d) launch.grid[d] = r.grid[d];
  launch.smem = r.smem;
  abi.launches.push_back(launch);
  return abi;
}

class FakeBackend : public runtime::Backend {
 public:
  explicit FakeBackend(std::string target = "fake", DeviceType type = DeviceType::kCPU)
      : target_(std::move(target)), type_(type) {}
  ~FakeBackend() override {
    for (FakeEvent* e : events_) delete e;
  }

  const std::string& target() const override { return target_; }
  DeviceType device_type() const override { return type_; }
  bool available() const override { return is_available.load(); }

  Device default_device() const override { return Device{type_, default_device_id}; }
  void validate(const ir::PrimFunc& func) const override {
    TILEJIT_CHECK(func.launch.threads <= max_threads, kValueError)
        << func.name << ": " << func.launch.threads << " threads; " << target_ << " allows "
        << max_threads;
  }
  /// `rank` when the PrimFunc has a body for this target, else -1, as the
  /// real backends rank.
  int auto_rank(const ir::PrimFunc& func) const override {
    return func.sources().count(target_) ? rank.load() : -1;
  }

  runtime::GeneratedSource generate(const runtime::SourceRequest& request) const override {
    return {"// fake source\n", fake_abi(request), diagnostics, report};
  }
  /// What generate() reports with every source.
  std::vector<runtime::Diagnostic> diagnostics;
  runtime::LoweringReport report;
  std::string toolchain_key(const runtime::CompileOptions& options, Device) override {
    std::string k = "fakecc-1";
    for (const auto& f : options.flags) k += " " + f;
    for (const auto& f : options.extra_flags) k += " " + f;
    return k;
  }
  std::string compile(const std::string& source, const std::string& kernel_name,
                      const runtime::CompileOptions&, Device) override {
    ++compile_calls;
    if (compile_delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(compile_delay_ms));
    }
    if (source.find("#error") != std::string::npos) {
      TILEJIT_THROW(kCompileError) << "fakecc: " << kernel_name << ": #error in source";
    }
    return "BIN:" + source;
  }
  std::unique_ptr<runtime::Module> load(const std::string& binary, const runtime::KernelAbi& abi,
                                        Device) override {
    ++load_calls;
    if (binary.rfind("BIN:", 0) != 0) {
      TILEJIT_THROW(kRuntimeError) << "fake: cannot load a binary of " << binary.size()
                                   << " bytes: bad header";
    }
    return std::make_unique<FakeModule>(binary, abi);
  }

  runtime::Allocator& allocator() override { return allocator_; }
  runtime::TensorAllocator& tensor_allocator() override { return tensor_allocator_; }
  void memset_async(void* ptr, int value, size_t bytes, Device, Stream) override {
    std::memset(ptr, value, bytes);
  }

  // ---- events ----
  Event record_event(Device, Stream) override {
    if (!use_events) return nullptr;
    if (fail_record) TILEJIT_THROW(kRuntimeError) << "fake: record_event failed";
    auto* e = new FakeEvent{complete_on_record.load()};
    std::lock_guard<std::mutex> lock(mutex_);
    events_.insert(e);
    return e;
  }
  bool event_completed(Event event) override {
    ++event_queries;
    return static_cast<FakeEvent*>(event)->complete.load();
  }
  void destroy_event(Event event) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto* e = static_cast<FakeEvent*>(event);
    if (events_.erase(e) == 1) {
      delete e;
    } else {
      ++bad_event_destroys;
    }
  }
  // Graph capture: `capturing_stream` is capturing; releases registered on
  // it wait in `graph_releases` until destroy_graph().
  bool is_capturing(Device, Stream stream) override {
    return stream != nullptr && stream == capturing_stream.load();
  }
  bool on_graph_destroyed(Device, Stream stream, void (*release)(void*) noexcept,
                          void* context) override {
    if (!is_capturing(Device::cpu(), stream)) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    graph_releases.emplace_back(release, context);
    return true;
  }
  /// Ends the capture and destroys the graph: runs the registered releases.
  void destroy_graph() {
    capturing_stream = nullptr;
    std::vector<std::pair<void (*)(void*) noexcept, void*>> releases;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      releases.swap(graph_releases);
    }
    for (auto& [fn, ctx] : releases) fn(ctx);
  }
  std::atomic<Stream> capturing_stream{nullptr};
  std::vector<std::pair<void (*)(void*) noexcept, void*>> graph_releases;

  /// Marks every event recorded so far complete.
  void complete_all_events() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (FakeEvent* e : events_) e->complete = true;
  }
  size_t live_events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_.size();
  }

  FakeAllocator& fake_allocator() { return allocator_; }
  FakeTensorAllocator& fake_tensor_allocator() { return tensor_allocator_; }

  // Steering and counters, read and written by the tests.
  std::atomic<bool> is_available{true};
  std::atomic<int> rank{0};        // auto_rank() for a PrimFunc with a body for us
  int32_t default_device_id = 0;  // default_device() is {the device type, this}
  int max_threads = 1 << 30;      // validate() rejects more threads
  std::atomic<bool> use_events{false};          // record_event returns nullptr when false
  std::atomic<bool> complete_on_record{false};  // new events start complete
  std::atomic<bool> fail_record{false};         // record_event throws
  std::atomic<int> event_queries{0};
  std::atomic<int> bad_event_destroys{0};
  std::atomic<int> compile_calls{0};
  std::atomic<int> load_calls{0};
  int compile_delay_ms = 0;

 private:
  struct FakeEvent {
    std::atomic<bool> complete;
  };
  std::string target_;
  DeviceType type_;
  FakeAllocator allocator_;
  FakeTensorAllocator tensor_allocator_;
  mutable std::mutex mutex_;
  std::set<FakeEvent*> events_;
};


}  // namespace tilejit::testing
