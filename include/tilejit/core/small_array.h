// SmallArray: up to N elements constructed in place, without the heap.
//
// A call holds one Tensor and one Arg per argument and one Tensor per
// output, at most kMaxParams (64) of each. A plain `Tensor tensors[64]`
// constructs and destroys all 64 on every call where a call has 3 to 8, and
// a std::vector allocates; this holds the storage and constructs only the
// elements pushed.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace tilejit {

template <typename T, size_t N>
class SmallArray {
 public:
  SmallArray() noexcept = default;
  SmallArray(const SmallArray& other) {
    for (const T& x : other) emplace_back(x);
  }
  SmallArray& operator=(const SmallArray& other) {
    if (this != &other) {
      clear();
      for (const T& x : other) emplace_back(x);
    }
    return *this;
  }
  SmallArray(SmallArray&& other) noexcept {
    for (size_t i = 0; i < other.size_; ++i) emplace_back(std::move(other[i]));
    other.clear();
  }
  SmallArray& operator=(SmallArray&& other) noexcept {
    if (this != &other) {
      clear();
      for (size_t i = 0; i < other.size_; ++i) emplace_back(std::move(other[i]));
      other.clear();
    }
    return *this;
  }
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
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  static constexpr size_t capacity() noexcept { return N; }

 private:
  alignas(T) unsigned char storage_[N * sizeof(T)];
  size_t size_ = 0;
};

}  // namespace tilejit
