/* buf.c: bounded growable buffers; hitting the cap is reported, never an OOM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/banned.h"

static int
buf_reserve(struct kb_buf *b, size_t extra)
{
	size_t	cap = b->cap ? b->cap : KB_BUF_DEFAULT_CAP;
	size_t	need, alloc;
	char	*p;

	if (extra > cap || b->len > cap - extra)
		return -KB_ETOOBIG;
	need = b->len + extra + 1;
	if (need <= b->alloc)
		return 0;
	alloc = b->alloc ? b->alloc : 256;
	while (alloc < need)
		alloc = alloc > SIZE_MAX / 2 ? need : alloc * 2;
	if (alloc > cap + 1)
		alloc = cap + 1;
	if ((p = realloc(b->p, alloc)) == NULL)
		return -KB_ENOMEM;
	b->p = p;
	b->alloc = alloc;
	return 0;
}

int
kb_buf_append(struct kb_buf *b, const void *data, size_t n)
{
	int	rc;

	if ((rc = buf_reserve(b, n)) < 0)
		return rc;
	if (n > 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

void
kb_buf_append_trunc(struct kb_buf *b, const void *data, size_t n)
{
	size_t	cap = b->cap ? b->cap : KB_BUF_DEFAULT_CAP;
	size_t	room = cap > b->len ? cap - b->len : 0;

	if (n > room) {
		b->truncated = true;
		n = room;
	}
	if (n > 0 && kb_buf_append(b, data, n) < 0)
		b->truncated = true;
}

int
kb_buf_printf(struct kb_buf *b, const char *fmt, ...)
{
	va_list	ap;
	int	n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -KB_EINVAL;
	if ((rc = buf_reserve(b, (size_t)n)) < 0)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void
kb_buf_clear(struct kb_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->alloc = 0;
	b->truncated = false;
}

char *
kb_buf_steal(struct kb_buf *b)
{
	char	*p = b->p;

	if (p == NULL && (p = calloc(1, 1)) == NULL)
		abort();
	b->p = NULL;
	b->len = b->alloc = 0;
	b->truncated = false;
	return p;
}
