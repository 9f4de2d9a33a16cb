// Public API of libgadget.so: a small C++ library (namespaces, classes,
// templates) with a C entry point.
#ifndef GADGET_H
#define GADGET_H

#include <cstddef>
#include <string>
#include <vector>

namespace gadget {

namespace detail {
// Forced inline so callers get inline chains into this header.
__attribute__((always_inline)) inline std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) & ~(a - 1);
}
}  // namespace detail

// Bump allocator over operator-new'd blocks.
class Arena {
 public:
  explicit Arena(std::size_t block_size);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  void* allocate(std::size_t n);
  std::size_t used() const { return used_; }
  std::size_t blocks() const;

 private:
  struct Block {
    Block* next;
    std::size_t size;
    std::size_t used;
    unsigned char* data;
  };
  Block* new_block(std::size_t min_size);
  // Inlined into allocate(): allocate -> bump -> detail::align_up.
  __attribute__((always_inline)) void* bump(Block* b, std::size_t n) {
    std::size_t at = detail::align_up(b->used, alignof(std::max_align_t));
    if (at + n > b->size)
      return nullptr;
    b->used = at + n;
    used_ += n;
    return b->data + at;
  }

  Block* head_ = nullptr;
  std::size_t block_size_;
  std::size_t used_ = 0;
};

// Fixed-capacity ring that doubles when full (operator new[]).
template <typename T>
class Ring {
 public:
  explicit Ring(std::size_t cap);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  void push(const T& v);
  T sum() const;
  std::size_t size() const { return size_; }

 private:
  void grow();
  T* slot(std::size_t i) const { return &buf_[(head_ + i) % cap_]; }

  T* buf_;
  std::size_t cap_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

// Names interned in a std::vector<std::string>.
class Registry {
 public:
  std::size_t intern(const std::string& name);
  const std::string& name(std::size_t id) const { return names_[id]; }
  std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
};

}  // namespace gadget

extern "C" int gadget_run(int n);

#endif  // GADGET_H
