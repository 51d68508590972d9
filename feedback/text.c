/*
 * text.c: the E and P parts of the refinement prompt (paper App. D.3), from a result in
 * the runner's shape. E is a fixed head saying what happened plus a body of raw output
 * (compiler output, traceback, per-trial differences, the runner's log); when the whole
 * exceeds refinement.feedback_max_chars the body keeps its first error with the lines
 * around it (gcc, nvcc and the linker put the error that caused the rest first; what
 * follows is often pages of notes and a Python traceback) and then its tail (where
 * Python puts its exception), with a marker wherever text was cut. A body without an
 * error line keeps its tail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback.h"

#define FB_DEFAULT_MAX_CHARS	4000
#define FB_KERNEL_NAME_MAX	100
#define FB_PROFILE_LABEL_MAX	64	/* the profile's source and device names */
/* A cut body gives at most this share of its room to the first error's excerpt, the
 * rest to its tail. */
#define FB_FIRST_ERROR_SHARE_NUM 2
#define FB_FIRST_ERROR_SHARE_DEN 3
#define FB_CONTEXT_LINES_MAX	8	/* "In file included from" etc. kept before an error */

/* What marks the line of an error: gcc, clang and nvcc print "error:" ("fatal error:",
 * "main.cu(12): error: ..."), the linker "undefined reference to", Python "...Error:". */
static const char *const error_markers[] = {
	"error:", "Error:", "undefined reference to",
};
/* What marks the lines gcc prints just before an error to say where it is: the chain of
 * includes, the function or template instantiation it is in. */
static const char *const context_markers[] = {
	"In file included from ", "                 from ", ": In ", "required from ",
	"required by ",
};

static const char *
str_at(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s != NULL ? s : "";
}

static bool
has_flag(json_t *res, const char *flag)
{
	size_t	 i;
	json_t	*f;

	json_array_foreach(json_object_get(res, "flags"), i, f)
		if (json_is_string(f) && strcmp(json_string_value(f), flag) == 0)
			return true;
	return false;
}

/* A number, or the runner's "nan"/"inf" strings, or "n/a". */
static void
num_text(json_t *v, char *out, size_t n)
{
	if (json_is_number(v))
		snprintf(out, n, "%.6g", json_number_value(v));
	else if (json_is_string(v))
		snprintf(out, n, "%s", json_string_value(v));
	else
		snprintf(out, n, "n/a");
}

/* The length of s's longest prefix of at most max bytes that ends between UTF-8
 * sequences: the texts go into a prompt and must stay valid UTF-8 when cut. */
static size_t
utf8_prefix(const char *s, size_t max)
{
	size_t	n = strlen(s);

	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

static size_t
max_chars(const struct kb_config *cfg)
{
	return cfg != NULL && cfg->refinement.feedback_max_chars > 0 ?
	       (size_t)cfg->refinement.feedback_max_chars : FB_DEFAULT_MAX_CHARS;
}

/* The marker put where text was cut; its length is at most marker_max(all). */
static void
put_marker(struct kb_buf *b, size_t dropped)
{
	if (b->len > 0 && b->p[b->len - 1] != '\n')
		kb_buf_printf(b, "\n");
	kb_buf_printf(b, "[... %zu characters truncated ...]\n", dropped);
}

static size_t
marker_max(size_t all)
{
	return (size_t)snprintf(NULL, 0, "\n[... %zu characters truncated ...]\n", all);
}

static size_t
line_end(const char *s, size_t n, size_t at)
{
	const char	*nl = memchr(s + at, '\n', n - at);

	return nl != NULL ? (size_t)(nl - s) + 1 : n;
}

static size_t
line_start(const char *s, size_t at)
{
	while (at > 0 && s[at - 1] != '\n')
		at--;
	return at;
}

static bool
line_has(const char *s, size_t from, size_t to, const char *const *marks, size_t nmarks)
{
	for (size_t i = 0; i < nmarks; i++)
		if (memmem(s + from, to - from, marks[i], strlen(marks[i])) != NULL)
			return true;
	return false;
}

/* [*from, *to) is the first line of s that holds an error marker. */
static bool
first_error_line(const char *s, size_t n, size_t *from, size_t *to)
{
	for (size_t a = 0, b; a < n; a = b) {
		b = line_end(s, n, a);
		if (line_has(s, a, b, error_markers,
			     sizeof(error_markers) / sizeof(error_markers[0]))) {
			*from = a;
			*to = b;
			return true;
		}
	}
	return false;
}

/* Where the excerpt of the error line [from, to) starts: back over the lines that say
 * where it is, as long as the excerpt stays within room. */
static size_t
context_start(const char *s, size_t from, size_t to, size_t room)
{
	size_t	start = from;

	for (int i = 0; i < FB_CONTEXT_LINES_MAX && start > 0; i++) {
		size_t	prev = line_start(s, start - 1);

		if (to - prev > room ||
		    !line_has(s, prev, start, context_markers,
			      sizeof(context_markers) / sizeof(context_markers[0])))
			break;
		start = prev;
	}
	return start;
}

/* Appends the last keep bytes of body[0, n), not starting inside a UTF-8 sequence,
 * after a marker saying how much before them was dropped (counting from `from`). */
static void
put_tail(struct kb_buf *b, const char *body, size_t from, size_t n, size_t keep)
{
	while (keep > 0 && ((unsigned char)body[n - keep] & 0xc0) == 0x80)
		keep--;
	put_marker(b, n - keep - from);
	kb_buf_append(b, body + n - keep, keep);
}

/* head + body within cap bytes. A body that does not fit keeps its first error line
 * with its context and the lines after it, up to FB_FIRST_ERROR_SHARE of the room, then
 * its tail; without an error line, only its tail. Every cut is marked and falls between
 * UTF-8 sequences. */
static char *
compose(const char *head, const char *body, size_t cap)
{
	struct kb_buf	 b = KB_BUF_INIT(0);
	size_t		 hlen = strlen(head), blen = strlen(body), room, mmax, share;
	size_t		 err_from, err_to, from, to, lead, tail_room;

	if (hlen + blen <= cap)
		return kb_asprintf("%s%s", head, body);
	if (hlen >= cap)
		return kb_asprintf("%.*s", (int)utf8_prefix(head, cap), head);
	room = cap - hlen;
	mmax = marker_max(blen);
	if (room <= mmax)
		return kb_asprintf("%s", head);	/* no room to say what was cut */
	kb_buf_append(&b, head, hlen);
	if (room < 4 * mmax || !first_error_line(body, blen, &err_from, &err_to))
		goto tail_only;
	share = (room - 2 * mmax) / FB_FIRST_ERROR_SHARE_DEN * FB_FIRST_ERROR_SHARE_NUM;
	from = context_start(body, err_from, err_to, share);
	if (err_to - from > share) {
		/* The error line alone is longer than its share: its beginning. */
		to = from + utf8_prefix(body + from, share);
	} else {
		to = err_to;
		while (to < blen && line_end(body, blen, to) - from <= share)
			to = line_end(body, blen, to);
	}
	lead = from > 0 ? mmax : 0;
	tail_room = room - lead - (to - from) - mmax;
	if (blen - to <= tail_room)
		goto tail_only;	/* the tail reaches the excerpt: one cut before both */
	if (from > 0)
		put_marker(&b, from);
	kb_buf_append(&b, body + from, to - from);
	put_tail(&b, body, to, blen, tail_room);
	return kb_buf_steal(&b);
tail_only:
	put_tail(&b, body, 0, blen, room - mmax);
	return kb_buf_steal(&b);
}

static void
mismatch_body(json_t *res, struct kb_buf *body)
{
	json_t		*details = json_object_get(res, "details"), *t;
	char		 maxd[64], avgd[64];
	size_t		 i;

	json_array_foreach(json_object_get(details, "trials"), i, t) {
		if (json_is_true(json_object_get(t, "ok")))
			continue;
		num_text(json_object_get(t, "max_abs_diff"), maxd, sizeof(maxd));
		num_text(json_object_get(t, "avg_abs_diff"), avgd, sizeof(avgd));
		kb_buf_printf(body, "Trial %lld: max_abs_diff=%s, avg_abs_diff=%s\n",
			      (long long)json_integer_value(json_object_get(t, "trial")), maxd, avgd);
	}
}

/* What the candidate did besides its result (flags fb_run adds), whatever the status. */
static void
leftover_notes(json_t *res, struct kb_buf *head)
{
	json_t	*details = json_object_get(res, "details");

	if (head->len > 0 && head->p[head->len - 1] != '\n' &&
	    (has_flag(res, "output_truncated") || has_flag(res, "stray_processes")))
		kb_buf_printf(head, "\n");
	if (has_flag(res, "output_truncated"))
		kb_buf_printf(head, "Your code wrote more than %lld bytes to stdout/stderr; the rest "
			      "was discarded. Do not print from the kernel or the model.\n",
			      (long long)json_integer_value(json_object_get(details,
									    "output_cap_bytes")));
	if (has_flag(res, "stray_processes"))
		kb_buf_printf(head, "Your code left %lld process(es) running after the evaluation "
			      "ended; they were killed. Do not start processes or daemons.\n",
			      (long long)json_integer_value(json_object_get(details,
									    "stray_processes")));
}

char *
fb_exec_feedback(const struct kb_config *cfg, const struct fb_outcome *o)
{
	struct kb_buf	 head = KB_BUF_INIT(1 << 16), body = KB_BUF_INIT(1 << 24);
	json_t		*res = o->result, *details = json_object_get(o->result, "details");
	const char	*message = str_at(details, "message"), *mode = str_at(res, "mode");
	const char	*text;
	char		*out;

	switch (o->status) {
	case FB_ST_OK:
		if (o->correct && o->runtime_ms > 0) {
			kb_buf_printf(&head, "Your kernel is correct. Wall-clock time: %.4g ms",
				      o->runtime_ms);
			if (o->ref_runtime_ms > 0 && o->speedup > 0)
				kb_buf_printf(&head, " (reference: %.4g ms, speedup %.3gx)",
					      o->ref_runtime_ms, o->speedup);
			else if (o->ref_runtime_ms > 0)
				kb_buf_printf(&head, " (reference: %.4g ms)", o->ref_runtime_ms);
			kb_buf_printf(&head, ".");
		} else if (o->correct) {
			kb_buf_printf(&head, "Your kernel is correct.");
		} else if (strcmp(mode, "precompile") == 0) {
			kb_buf_printf(&head, "Your kernel compiled successfully.");
		} else {
			kb_buf_printf(&head, "%s", message);
		}
		break;
	case FB_ST_COMPILE_ERROR:
		kb_buf_printf(&head, "Compilation failed:\n");
		text = str_at(details, "compiler_output");
		kb_buf_printf(&body, "%s", text[0] != '\0' ? text : str_at(details, "exception"));
		break;
	case FB_ST_NO_MODEL_NEW:
		kb_buf_printf(&head, "Your code ran but does not define the class ModelNew (%s).",
			      message);
		break;
	case FB_ST_RUNTIME_ERROR:
	case FB_ST_CUDA_ERROR:
		kb_buf_printf(&head, "%s\n", o->status == FB_ST_CUDA_ERROR ?
			      "Your kernel failed with a CUDA error:" :
			      "Your kernel failed at runtime:");
		text = str_at(details, "traceback");
		if (text[0] == '\0')
			text = str_at(details, "exception");
		kb_buf_printf(&body, "%s", text[0] != '\0' ? text : message);
		break;
	case FB_ST_SHAPE_MISMATCH:
		kb_buf_printf(&head, "Your kernel produced an output of the wrong shape. %s", message);
		break;
	case FB_ST_VALUE_MISMATCH:
		kb_buf_printf(&head, "Your kernel produced incorrect results");
		if (json_is_integer(json_object_get(details, "trials_total")))
			kb_buf_printf(&head, " (%lld of %lld correctness trials passed)",
				      (long long)json_integer_value(
					      json_object_get(details, "trials_passed")),
				      (long long)json_integer_value(
					      json_object_get(details, "trials_total")));
		kb_buf_printf(&head, ".\n");
		if (has_flag(res, "input_mutated"))
			kb_buf_printf(&head, "ModelNew modified its input tensors in place; a kernel "
				      "must not write to its inputs.\n");
		mismatch_body(res, &body);
		break;
	case FB_ST_TIMEOUT:
		kb_buf_printf(&head, "%s", strcmp(mode, "precompile") == 0 ?
			      "Your kernel compilation timed out" : "Your kernel execution timed out");
		break;
	case FB_ST_ENV_ERROR:
		/* Never fed back in a run (the run pauses); kforge eval prints it. */
		kb_buf_printf(&head, "The environment failed, not the kernel: %s\n", message);
		if (str_at(details, "fix")[0] != '\0')
			kb_buf_printf(&head, "Fix: %s\n", str_at(details, "fix"));
		break;
	case FB_ST_CRASHED:
	default:
		kb_buf_printf(&head, "Your kernel crashed the evaluation process: %s\n", message);
		text = str_at(details, "log_tail");
		kb_buf_printf(&body, "%s", text[0] != '\0' ? text : str_at(details, "traceback"));
		break;
	}
	leftover_notes(res, &head);
	out = compose(head.p != NULL ? head.p : "", body.p != NULL ? body.p : "", max_chars(cfg));
	kb_buf_clear(&head);
	kb_buf_clear(&body);
	return out;
}

char *
fb_profile_feedback(const struct kb_config *cfg, json_t *profile)
{
	struct kb_buf	 b = KB_BUF_INIT(1 << 20);
	json_t		*kernels = json_object_get(profile, "kernels"), *k;
	size_t		 i, cap = max_chars(cfg), before;
	const char	*source = str_at(profile, "source"), *device = str_at(profile, "device");

	if (!json_is_array(kernels) || json_array_size(kernels) == 0)
		return NULL;
	if (source[0] == '\0')
		source = "profiler";
	if (device[0] == '\0')
		device = "device";
	kb_buf_printf(&b, "Profile (%.*s, %.*s", (int)utf8_prefix(source, FB_PROFILE_LABEL_MAX),
		      source, (int)utf8_prefix(device, FB_PROFILE_LABEL_MAX), device);
	if (json_is_integer(json_object_get(profile, "iterations")))
		kb_buf_printf(&b, ", %lld iterations",
			      (long long)json_integer_value(json_object_get(profile, "iterations")));
	kb_buf_printf(&b, "), kernels by total time:\n%10s %8s %10s  %s\n", "total ms", "calls",
		      "mean ms", "kernel");
	if (b.len > cap) {
		kb_buf_clear(&b);	/* not even the heading fits */
		return NULL;
	}
	json_array_foreach(kernels, i, k) {
		const char	*name = str_at(k, "name");
		size_t		 nlen = strlen(name), shown = utf8_prefix(name, FB_KERNEL_NAME_MAX);

		before = b.len;
		kb_buf_printf(&b, "%10.4f %8lld %10.4f  %.*s%s\n",
			      json_number_value(json_object_get(k, "total_ms")),
			      (long long)json_integer_value(json_object_get(k, "calls")),
			      json_number_value(json_object_get(k, "mean_ms")),
			      (int)shown, name, shown < nlen ? "..." : "");
		if (b.len > cap) {
			b.len = before;
			b.p[b.len] = '\0';
			break;
		}
	}
	return kb_buf_steal(&b);
}
