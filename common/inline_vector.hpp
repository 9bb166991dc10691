// A vector of a few trivially copyable elements that keeps up to N of them in itself and only past N on the
// heap: an instruction's semaphore waits and signals (arch/isa/program.hpp), of which a program has two
// lists per instruction and one to four entries in each. As std::vector, each list cost an allocation to
// make and a free to destroy, in the mapper's lowering, in every worker's reading of a program and in
// every program's destruction (docs/design-notes.md, "Instructions' lists inline").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>

namespace tessera {

template <class T, size_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "InlineVector copies its elements as bytes");
  static_assert(N > 0, "an InlineVector holds at least one element in place");

 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  InlineVector() = default;
  InlineVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  InlineVector(It first, It last) {
    assign(first, last);
  }
  InlineVector(const InlineVector& other) { assign(other.begin(), other.end()); }
  InlineVector(InlineVector&& other) noexcept { take(other); }
  InlineVector& operator=(const InlineVector& other) {
    if (this != &other) {
      clear();
      assign(other.begin(), other.end());
    }
    return *this;
  }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> values) {
    clear();
    assign(values.begin(), values.end());
    return *this;
  }
  ~InlineVector() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return on_heap() ? heap_ : in_place(); }
  const T* data() const { return on_heap() ? heap_ : in_place(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  void reserve(size_t wanted) {
    if (wanted > capacity_) grow(wanted);
  }
  void push_back(const T& value) {
    if (size_ == capacity_) {
      const T copy = value;  // `value` may be one of ours, about to move
      grow(2 * capacity_);
      new (data() + size_++) T(copy);
      return;
    }
    new (data() + size_++) T(value);
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  T* insert(const T* at, const T& value) {
    const size_t index = static_cast<size_t>(at - data());
    push_back(value);
    std::rotate(begin() + index, end() - 1, end());
    return begin() + index;
  }
  T* erase(const T* at) {
    const size_t index = static_cast<size_t>(at - data());
    std::copy(begin() + index + 1, end(), begin() + index);
    --size_;
    return begin() + index;
  }

  bool operator==(const InlineVector& other) const {
    return size_ == other.size_ && std::equal(begin(), end(), other.begin());
  }
  bool operator!=(const InlineVector& other) const { return !(*this == other); }

 private:
  bool on_heap() const { return capacity_ > N; }
  T* in_place() { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* in_place() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
  template <class It>
  void assign(It first, It last) {
    if constexpr (std::is_base_of_v<std::forward_iterator_tag,
                                    typename std::iterator_traits<It>::iterator_category>)
      reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) push_back(*first);
  }
  void grow(size_t wanted) {
    T* grown = static_cast<T*>(::operator new(wanted * sizeof(T)));
    if (size_ > 0) std::memcpy(static_cast<void*>(grown), data(), size_ * sizeof(T));
    release();
    heap_ = grown;
    capacity_ = static_cast<uint32_t>(wanted);
  }
  void release() {
    if (on_heap()) ::operator delete(heap_);
    capacity_ = N;
  }
  // Leaves `other` empty and in place.
  void take(InlineVector& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.on_heap())
      heap_ = other.heap_;
    else
      std::memcpy(storage_, other.storage_, sizeof storage_);  // a fixed size: a few moves, no call
    other.size_ = 0;
    other.capacity_ = N;
  }

  uint32_t size_ = 0;
  uint32_t capacity_ = N;
  union {
    alignas(T) unsigned char storage_[N * sizeof(T)];
    T* heap_;
  };
};

}  // namespace tessera
