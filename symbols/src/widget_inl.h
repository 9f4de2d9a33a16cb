/* Inline helpers of libwidget.so. Everything here is forced inline, so at -O2
 * the callers get inline chains three deep whose innermost frames point into
 * this header (widget_new -> widget_alloc_zeroed -> widget_round_capacity ->
 * widget_clamp). */
#ifndef WIDGET_INL_H
#define WIDGET_INL_H

#include <stdlib.h>
#include <string.h>

#define WIDGET_INLINE static inline __attribute__((always_inline))

#ifdef WIDGET_MISMATCH
#define WIDGET_MIN_CAPACITY 32u /* the "mismatch" build differs here */
#else
#define WIDGET_MIN_CAPACITY 16u
#endif
#define WIDGET_MAX_CAPACITY (1u << 24)

WIDGET_INLINE size_t widget_clamp(size_t n, size_t lo, size_t hi) {
  if (n < lo)
    return lo;
  if (n > hi)
    return hi;
  return n;
}

WIDGET_INLINE size_t widget_round_capacity(size_t n) {
  size_t c = widget_clamp(n, WIDGET_MIN_CAPACITY, WIDGET_MAX_CAPACITY);
  c--;
  c |= c >> 1;
  c |= c >> 2;
  c |= c >> 4;
  c |= c >> 8;
  c |= c >> 16;
  return c + 1;
}

WIDGET_INLINE void *widget_alloc_zeroed(size_t n, size_t *cap_out) {
  size_t cap = widget_round_capacity(n);
  unsigned char *p = malloc(cap);
  if (p)
    memset(p, 0, cap);
  *cap_out = cap;
  return p;
}

WIDGET_INLINE unsigned widget_mix(unsigned h, unsigned char b) {
  h ^= b;
  h *= 16777619u;
  return h;
}

#endif /* WIDGET_INL_H */
