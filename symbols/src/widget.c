/* libwidget.so: growable named byte buffers and a list of them.
 * Allocates with malloc/realloc/calloc; the inline helpers of widget_inl.h
 * give -O2 inline chains up to three deep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "widget.h"
#include "widget_inl.h"

struct widget {
  char *name;
  unsigned char *buf;
  size_t len;
  size_t cap;
  struct widget *next;
};

struct widget_list {
  struct widget *head;
  size_t count;
};

/* Grows w->buf to hold at least `need` bytes. Inlined into widget_append. */
static inline int widget_grow(struct widget *w, size_t need) {
  if (need <= w->cap)
    return 0;
  size_t cap = widget_round_capacity(need);
  unsigned char *nb = realloc(w->buf, cap);
  if (!nb)
    return -1;
  w->buf = nb;
  w->cap = cap;
  return 0;
}

static inline char *widget_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

__attribute__((noinline)) struct widget *widget_new(const char *name, size_t hint) {
  struct widget *w = malloc(sizeof *w);
  if (!w)
    return NULL;
  w->name = widget_strdup(name ? name : "unnamed");
  w->buf = widget_alloc_zeroed(hint, &w->cap);
  w->len = 0;
  w->next = NULL;
  if (!w->name || !w->buf) {
    widget_free(w);
    return NULL;
  }
  return w;
}

void widget_free(struct widget *w) {
  if (!w)
    return;
  free(w->name);
  free(w->buf);
  free(w);
}

__attribute__((noinline)) int widget_append(struct widget *w, const void *data, size_t n) {
  if (widget_grow(w, w->len + n) != 0)
    return -1;
  memcpy(w->buf + w->len, data, n);
  w->len += n;
  return 0;
}

__attribute__((noinline)) size_t widget_fill(struct widget *w, unsigned char c, size_t n) {
  if (widget_grow(w, n) != 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    w->buf[i] = c;
  if (n > w->len)
    w->len = n;
  return w->len;
}

unsigned widget_checksum(const struct widget *w) {
  unsigned h = 2166136261u;
  for (size_t i = 0; i < w->len; i++)
    h = widget_mix(h, w->buf[i]);
  return h;
}

char *widget_describe(const struct widget *w) {
  size_t cap = strlen(w->name) + 64;
  char *out = malloc(cap);
  if (!out)
    return NULL;
#ifdef WIDGET_MISMATCH
  snprintf(out, cap, "widget<%s> len=%zu", w->name, w->len);
#else
  snprintf(out, cap, "%s: %zu/%zu bytes, sum %08x", w->name, w->len, w->cap,
           widget_checksum(w));
#endif
  return out;
}

struct widget_list *widget_list_new(void) {
  return calloc(1, sizeof(struct widget_list));
}

int widget_list_push(struct widget_list *l, struct widget *w) {
  w->next = l->head;
  l->head = w;
  l->count++;
  return (int)l->count;
}

size_t widget_list_total(const struct widget_list *l) {
  size_t total = 0;
  for (const struct widget *w = l->head; w; w = w->next)
    total += w->len;
  return total;
}

void widget_list_destroy(struct widget_list *l) {
  struct widget *w = l->head;
  while (w) {
    struct widget *next = w->next;
    widget_free(w);
    w = next;
  }
  free(l);
}

int widget_demo(int n) {
  struct widget_list *l = widget_list_new();
  if (!l)
    return -1;
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "w%d", i);
    struct widget *w = widget_new(name, (size_t)i * 8);
    if (!w)
      break;
    widget_fill(w, (unsigned char)i, (size_t)i * 3);
    widget_append(w, name, strlen(name));
    char *d = widget_describe(w);
    free(d);
    widget_list_push(l, w);
  }
  int total = (int)widget_list_total(l);
  widget_list_destroy(l);
  return total;
}
