// libgadget.so: C++ with namespaces, methods, templates and operator new.
#include "gadget.h"

#include <algorithm>
#include <new>

namespace gadget {

namespace {

// Forced inline: Ring<T>::grow -> next_capacity -> clamp_capacity.
__attribute__((always_inline)) inline std::size_t clamp_capacity(std::size_t n) {
  return std::min<std::size_t>(std::max<std::size_t>(n, 4), std::size_t(1) << 20);
}

__attribute__((always_inline)) inline std::size_t next_capacity(std::size_t cap) {
  return clamp_capacity(cap * 2);
}

}  // namespace

Arena::Arena(std::size_t block_size) : block_size_(detail::align_up(block_size, 64)) {}

Arena::~Arena() {
  Block* b = head_;
  while (b) {
    Block* next = b->next;
    delete[] b->data;
    delete b;
    b = next;
  }
}

__attribute__((noinline)) Arena::Block* Arena::new_block(std::size_t min_size) {
  std::size_t size = std::max(block_size_, detail::align_up(min_size, 64));
  Block* b = new Block;
  b->data = new unsigned char[size];
  b->size = size;
  b->used = 0;
  b->next = head_;
  head_ = b;
  return b;
}

void* Arena::allocate(std::size_t n) {
  if (head_) {
    if (void* p = bump(head_, n))
      return p;
  }
  Block* b = new_block(n);
  return bump(b, n);
}

std::size_t Arena::blocks() const {
  std::size_t n = 0;
  for (const Block* b = head_; b; b = b->next)
    ++n;
  return n;
}

template <typename T>
Ring<T>::Ring(std::size_t cap) : buf_(new T[clamp_capacity(cap)]), cap_(clamp_capacity(cap)) {}

template <typename T>
Ring<T>::~Ring() {
  delete[] buf_;
}

template <typename T>
void Ring<T>::grow() {
  std::size_t ncap = next_capacity(cap_);
  T* nb = new T[ncap];
  for (std::size_t i = 0; i < size_; ++i)
    nb[i] = *slot(i);
  delete[] buf_;
  buf_ = nb;
  cap_ = ncap;
  head_ = 0;
}

template <typename T>
void Ring<T>::push(const T& v) {
  if (size_ == cap_)
    grow();
  *slot(size_) = v;
  ++size_;
}

template <typename T>
T Ring<T>::sum() const {
  T s{};
  for (std::size_t i = 0; i < size_; ++i)
    s += *slot(i);
  return s;
}

// Explicit instantiations: these become weak FUNC symbols with mangled
// template names in libgadget.so.
template class Ring<int>;
template class Ring<double>;

std::size_t Registry::intern(const std::string& name) {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it != names_.end())
    return static_cast<std::size_t>(it - names_.begin());
  names_.push_back(name);  // std::vector<std::string>::_M_realloc_insert
  return names_.size() - 1;
}

namespace {

__attribute__((noinline)) double fill_rings(Ring<int>& ri, Ring<double>& rd, int n) {
  for (int i = 0; i < n; ++i) {
    ri.push(i);
    rd.push(i * 0.5);
  }
  return rd.sum() + ri.sum();
}

}  // namespace

}  // namespace gadget

extern "C" int gadget_run(int n) {
  gadget::Arena arena(256);
  gadget::Ring<int> ri(2);
  gadget::Ring<double> rd(2);
  gadget::Registry reg;
  for (int i = 0; i < n; ++i) {
    void* p = arena.allocate(static_cast<std::size_t>(24 + i * 40));
    static_cast<unsigned char*>(p)[0] = static_cast<unsigned char>(i);
    reg.intern(std::string("gadget-") + std::to_string(i % 5));
  }
  double s = gadget::fill_rings(ri, rd, n);
  return static_cast<int>(s) + static_cast<int>(arena.blocks() + reg.size());
}
