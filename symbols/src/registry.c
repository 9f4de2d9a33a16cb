/* libregistry.so: a string -> int hash map in C. Its debug file is only
 * stored in the .build-id tree (buildid-tree/.build-id/xx/yyyy.debug). */
#include <stdlib.h>
#include <string.h>

struct reg_entry {
  char *key;
  int value;
  struct reg_entry *next;
};

struct registry {
  struct reg_entry **buckets;
  size_t nbuckets;
  size_t count;
};

#define REG_INLINE static inline __attribute__((always_inline))

REG_INLINE unsigned reg_fnv1a(const char *s) {
  unsigned h = 2166136261u;
  while (*s) {
    h ^= (unsigned char)*s++;
    h *= 16777619u;
  }
  return h;
}

/* reg_get/reg_put -> reg_lookup -> reg_slot -> reg_fnv1a */
REG_INLINE struct reg_entry **reg_slot(const struct registry *r, const char *key) {
  return &r->buckets[reg_fnv1a(key) & (r->nbuckets - 1)];
}

REG_INLINE struct reg_entry *reg_lookup(const struct registry *r, const char *key) {
  for (struct reg_entry *e = *reg_slot(r, key); e; e = e->next)
    if (strcmp(e->key, key) == 0)
      return e;
  return NULL;
}

struct registry *reg_new(size_t nbuckets) {
  struct registry *r = malloc(sizeof *r);
  if (!r)
    return NULL;
  size_t n = 8;
  while (n < nbuckets)
    n <<= 1;
  r->buckets = calloc(n, sizeof *r->buckets);
  if (!r->buckets) {
    free(r);
    return NULL;
  }
  r->nbuckets = n;
  r->count = 0;
  return r;
}

__attribute__((noinline)) static int reg_resize(struct registry *r) {
  size_t n = r->nbuckets * 2;
  struct reg_entry **nb = calloc(n, sizeof *nb);
  if (!nb)
    return -1;
  for (size_t i = 0; i < r->nbuckets; i++) {
    struct reg_entry *e = r->buckets[i];
    while (e) {
      struct reg_entry *next = e->next;
      struct reg_entry **slot = &nb[reg_fnv1a(e->key) & (n - 1)];
      e->next = *slot;
      *slot = e;
      e = next;
    }
  }
  free(r->buckets);
  r->buckets = nb;
  r->nbuckets = n;
  return 0;
}

int reg_put(struct registry *r, const char *key, int value) {
  struct reg_entry *e = reg_lookup(r, key);
  if (e) {
    e->value = value;
    return 0;
  }
  if (r->count + 1 > r->nbuckets * 3 / 4 && reg_resize(r) != 0)
    return -1;
  e = malloc(sizeof *e);
  if (!e)
    return -1;
  e->key = strdup(key);
  e->value = value;
  struct reg_entry **slot = reg_slot(r, key);
  e->next = *slot;
  *slot = e;
  r->count++;
  return 1;
}

int reg_get(const struct registry *r, const char *key, int dflt) {
  const struct reg_entry *e = reg_lookup(r, key);
  return e ? e->value : dflt;
}

int reg_remove(struct registry *r, const char *key) {
  struct reg_entry **slot = reg_slot(r, key);
  for (struct reg_entry *e = *slot; e; slot = &e->next, e = e->next) {
    if (strcmp(e->key, key) == 0) {
      *slot = e->next;
      free(e->key);
      free(e);
      r->count--;
      return 1;
    }
  }
  return 0;
}

void reg_destroy(struct registry *r) {
  for (size_t i = 0; i < r->nbuckets; i++) {
    struct reg_entry *e = r->buckets[i];
    while (e) {
      struct reg_entry *next = e->next;
      free(e->key);
      free(e);
      e = next;
    }
  }
  free(r->buckets);
  free(r);
}

int reg_demo(int n) {
  struct registry *r = reg_new(4);
  if (!r)
    return -1;
  char key[16];
  for (int i = 0; i < n; i++) {
    key[0] = (char)('a' + i % 26);
    key[1] = (char)('a' + (i / 26) % 26);
    key[2] = 0;
    reg_put(r, key, i);
  }
  int s = reg_get(r, "ab", -1) + reg_remove(r, "aa");
  reg_destroy(r);
  return s;
}
