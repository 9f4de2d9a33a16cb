/* Public API of libwidget.so: a tiny "widget" toolkit in C. */
#ifndef WIDGET_H
#define WIDGET_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct widget;
struct widget_list;

struct widget *widget_new(const char *name, size_t hint);
void widget_free(struct widget *w);
int widget_append(struct widget *w, const void *data, size_t n);
size_t widget_fill(struct widget *w, unsigned char c, size_t n);
char *widget_describe(const struct widget *w);
unsigned widget_checksum(const struct widget *w);

struct widget_list *widget_list_new(void);
int widget_list_push(struct widget_list *l, struct widget *w);
size_t widget_list_total(const struct widget_list *l);
void widget_list_destroy(struct widget_list *l);

int widget_demo(int n);

#ifdef __cplusplus
}
#endif

#endif /* WIDGET_H */
