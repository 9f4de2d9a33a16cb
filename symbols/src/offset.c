/* liboffset.so: a byte buffer with a varint codec. Linked with
 * -Ttext-segment=0x200000 and 16 KiB max-page-size, so its first PT_LOAD
 * starts at p_vaddr 0x200000 and its executable PT_LOAD has p_offset 0x4000,
 * p_vaddr 0x204000 (load bias 0x200000). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct obuf {
  uint8_t *data;
  size_t len;
  size_t cap;
};

#define OFF_INLINE static inline __attribute__((always_inline))

OFF_INLINE size_t off_next_cap(size_t cap, size_t need) {
  size_t c = cap ? cap : 32;
  while (c < need)
    c += c / 2;
  return c;
}

/* off_put_varint -> off_put_byte -> off_reserve -> off_next_cap */
OFF_INLINE int off_reserve(struct obuf *b, size_t extra) {
  if (b->len + extra <= b->cap)
    return 0;
  size_t cap = off_next_cap(b->cap, b->len + extra);
  uint8_t *nd = realloc(b->data, cap);
  if (!nd)
    return -1;
  b->data = nd;
  b->cap = cap;
  return 0;
}

OFF_INLINE int off_put_byte(struct obuf *b, uint8_t v) {
  if (off_reserve(b, 1) != 0)
    return -1;
  b->data[b->len++] = v;
  return 0;
}

struct obuf *off_new(size_t cap) {
  struct obuf *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  if (cap && off_reserve(b, cap) != 0) {
    free(b);
    return NULL;
  }
  return b;
}

void off_free(struct obuf *b) {
  if (b) {
    free(b->data);
    free(b);
  }
}

__attribute__((noinline)) int off_put_varint(struct obuf *b, uint64_t v) {
  while (v >= 0x80) {
    if (off_put_byte(b, (uint8_t)(v | 0x80)) != 0)
      return -1;
    v >>= 7;
  }
  return off_put_byte(b, (uint8_t)v);
}

size_t off_get_varint(const struct obuf *b, size_t pos, uint64_t *out) {
  uint64_t v = 0;
  unsigned shift = 0;
  while (pos < b->len && shift < 64) {
    uint8_t c = b->data[pos++];
    v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *out = v;
      return pos;
    }
    shift += 7;
  }
  return 0;
}

static uint32_t *crc_table;

__attribute__((noinline)) static const uint32_t *off_crc_table(void) {
  if (!crc_table) {
    uint32_t *t = malloc(256 * sizeof *t);
    if (!t)
      return NULL;
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++)
        c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    crc_table = t;
  }
  return crc_table;
}

uint32_t off_crc32(const struct obuf *b) {
  const uint32_t *t = off_crc_table();
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < b->len; i++)
    c = t[(c ^ b->data[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

struct obuf *off_copy(const struct obuf *b) {
  struct obuf *c = off_new(b->len);
  if (!c)
    return NULL;
  memcpy(c->data, b->data, b->len);
  c->len = b->len;
  return c;
}

int off_demo(int n) {
  struct obuf *b = off_new(0);
  if (!b)
    return -1;
  for (int i = 0; i < n; i++)
    off_put_varint(b, (uint64_t)i * 300u);
  struct obuf *c = off_copy(b);
  uint64_t v = 0;
  size_t pos = off_get_varint(c, 0, &v);
  int r = (int)(off_crc32(c) & 0xff) + (int)pos;
  off_free(c);
  off_free(b);
  return r;
}
