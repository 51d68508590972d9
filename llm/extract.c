/*
 * extract.c: finding the code in a model's answer. A pure function of (text, n), which
 * may hold any bytes (NULs included, no terminator assumed): it gets a fuzz target.
 *
 * Fences follow CommonMark closely enough for model output: a line indented by at
 * most three spaces, then three or more ` or ~; the info string's first word names the
 * language (a ` fence's info may not contain `). The block ends at a line of the same
 * character, at least as long, followed only by blanks. A block left open at the end
 * of the text is ignored (the answer was cut off; an earlier complete block is a
 * better guess). Lines lose the opening fence's indentation and CRs before LF.
 * Blocks with nothing but whitespace do not count.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "llm/llm.h"
#include "base/banned.h"

struct line {
	size_t	start, end;	/* end excludes "\n" and a "\r" before it */
	size_t	next;		/* start of the next line */
};

static struct line
line_at(const char *s, size_t n, size_t pos)
{
	struct line	l = { pos, pos, n };
	const char	*nl = memchr(s + pos, '\n', n - pos);

	l.end = nl != NULL ? (size_t)(nl - s) : n;
	l.next = nl != NULL ? l.end + 1 : n;
	if (l.end > l.start && s[l.end - 1] == '\r')
		l.end--;
	return l;
}

struct fence {
	char	ch;
	size_t	run;		/* length of the fence characters */
	size_t	indent;
	size_t	info, info_end;	/* the info string, trimmed */
};

static bool
is_fence(const char *s, const struct line *l, struct fence *f)
{
	size_t	p = l->start;

	while (p < l->end && s[p] == ' ' && p - l->start < 4)
		p++;
	if (p - l->start > 3 || p >= l->end || (s[p] != '`' && s[p] != '~'))
		return false;
	f->indent = p - l->start;
	f->ch = s[p];
	f->run = 0;
	while (p < l->end && s[p] == f->ch) {
		p++;
		f->run++;
	}
	if (f->run < 3)
		return false;
	while (p < l->end && (s[p] == ' ' || s[p] == '\t'))
		p++;
	f->info = p;
	f->info_end = l->end;
	while (f->info_end > f->info && (s[f->info_end - 1] == ' ' || s[f->info_end - 1] == '\t'))
		f->info_end--;
	if (f->ch == '`' && memchr(s + f->info, '`', f->info_end - f->info) != NULL)
		return false;
	return true;
}

static bool
closes(const char *s, const struct line *l, const struct fence *open)
{
	struct fence	f;

	return is_fence(s, l, &f) && f.ch == open->ch && f.run >= open->run &&
	    f.info == f.info_end;
}

static bool
is_python_tag(const char *s, const struct fence *f)
{
	static const char *const tags[] = { "python", "py", "python3" };
	size_t	n = 0;

	while (f->info + n < f->info_end && s[f->info + n] != ' ' && s[f->info + n] != '\t' &&
	    s[f->info + n] != '{')
		n++;
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		if (strlen(tags[i]) == n && strncasecmp(s + f->info, tags[i], n) == 0)
			return true;
	return false;
}

struct block {
	bool	found;
	size_t	start, end;	/* content lines: [start, end) */
	size_t	indent;
};

int
llm_extract_code(const char *text, size_t n, char **code)
{
	struct block	py = { 0 }, plain = { 0 }, *b;
	struct fence	f;
	struct line	l, c;
	size_t		pos = 0, out = 0;
	char		*p;

	*code = NULL;
	while (pos < n) {
		l = line_at(text, n, pos);
		pos = l.next;
		if (!is_fence(text, &l, &f))
			continue;
		bool	closed = false, blank = true;
		size_t	q = pos;

		while (q < n) {
			c = line_at(text, n, q);
			q = c.next;
			if (closes(text, &c, &f)) {
				closed = true;
				break;
			}
			for (size_t i = c.start; i < c.end && blank; i++)
				blank = text[i] == ' ' || text[i] == '\t' || text[i] == '\r';
		}
		if (!closed)
			break;	/* open to the end: ignored, and nothing after can be a fence */
		if (!blank) {
			b = is_python_tag(text, &f) ? &py : f.info == f.info_end ? &plain : NULL;
			if (b != NULL)
				*b = (struct block){ true, pos, c.start, f.indent };
		}
		pos = c.next;
	}
	b = py.found ? &py : plain.found ? &plain : NULL;
	if (b == NULL)
		return -KB_ENOENT;
	if ((p = malloc(b->end - b->start + 1)) == NULL)
		return -KB_ENOMEM;
	for (pos = b->start; pos < b->end; pos = l.next) {
		l = line_at(text, b->end, pos);
		for (size_t k = 0; k < b->indent && l.start < l.end && text[l.start] == ' '; k++)
			l.start++;
		memcpy(p + out, text + l.start, l.end - l.start);
		out += l.end - l.start;
		p[out++] = '\n';
	}
	p[out] = '\0';
	*code = p;
	return 0;
}
