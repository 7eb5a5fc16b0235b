// SmallArray: up to N elements constructed in place on the stack.
//
// A call holds one Tensor and one Arg per argument, at most kMaxParams (64)
// of each. A plain `Tensor tensors[64]` constructs and destroys all 64 on
// every call — 64 out-of-line Tensor::release() calls, a quarter of the
// whole call path in a profile — where a call has 3 to 8. This holds the
// storage and constructs only the elements pushed.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace tilejit::python {

template <typename T, size_t N>
class SmallArray {
 public:
  SmallArray() noexcept = default;
  SmallArray(const SmallArray&) = delete;
  SmallArray& operator=(const SmallArray&) = delete;
  ~SmallArray() { clear(); }

  /// Constructs one more element at the end; at most N in all.
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    T* p = new (data() + size_) T(std::forward<Args>(args)...);
    ++size_;
    return *p;
  }
  void clear() noexcept {
    while (size_ > 0) data()[--size_].~T();
  }

  T* data() noexcept { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* data() const noexcept { return std::launder(reinterpret_cast<const T*>(storage_)); }
  T& operator[](size_t i) noexcept { return data()[i]; }
  const T& operator[](size_t i) const noexcept { return data()[i]; }
  size_t size() const noexcept { return size_; }
  static constexpr size_t capacity() noexcept { return N; }

 private:
  alignas(T) unsigned char storage_[N * sizeof(T)];
  size_t size_ = 0;
};

}  // namespace tilejit::python
