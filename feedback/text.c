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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback.h"
#include "base/banned.h"

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

/* ------------------------------------------------------------ P */

/*
 * The interpretation lines of a CUPTI profile: one table of what is worth one plain
 * sentence per kernel, each with its threshold. The numbers are the library's
 * (kprof contract): occupancy.theoretical a fraction, metrics in percent.
 */
enum hint_kind {
	HINT_MEMORY_BOUND,	/* metrics.dram_pct >= threshold */
	HINT_LOW_OCCUPANCY,	/* occupancy.theoretical * 100 <= threshold */
	HINT_LOCAL_MEMORY,	/* local_mem > threshold bytes per thread */
	HINT_ACHIEVED_LOW,	/* achieved occupancy < threshold x the theoretical */
	HINT_SMALL_GRID,	/* blocks < threshold x SMs */
	HINT_LOW_DRAM_SLOW,	/* dram_pct < threshold and the kernel is most of the time */
};
static const struct profile_hint {
	enum hint_kind	 kind;
	double		 threshold;
} profile_hints[] = {
	{ HINT_MEMORY_BOUND, 60.0 },
	{ HINT_LOW_OCCUPANCY, 50.0 },
	{ HINT_LOCAL_MEMORY, 0.0 },
	{ HINT_ACHIEVED_LOW, 0.6 },
	{ HINT_SMALL_GRID, 1.0 },
	{ HINT_LOW_DRAM_SLOW, 20.0 },
};
/* HINT_LOW_DRAM_SLOW speaks only of a kernel with at least this share of kernel time. */
#define FB_HINT_DOMINANT_SHARE	0.5

static double
num_at(const json_t *obj, const char *key, double missing)
{
	json_t	*v = json_object_get(obj, key);

	return json_is_number(v) ? json_number_value(v) : missing;
}

/* A kernel or device name from the profile: at most FB_KERNEL_NAME_MAX bytes, valid
 * UTF-8 (jansson's strings are), control characters made '?'. */
static void
put_name(struct kb_buf *b, const char *name, size_t max)
{
	size_t	shown = utf8_prefix(name, max);

	for (size_t i = 0; i < shown; i++)
		kb_buf_printf(b, "%c", (unsigned char)name[i] < 0x20 ? '?' : name[i]);
	if (shown < strlen(name))
		kb_buf_printf(b, "...");
}

static const char *
kernel_label(const json_t *k)
{
	const char *s = json_string_value(json_object_get(k, "short"));

	if (s == NULL || s[0] == '\0')
		s = json_string_value(json_object_get(k, "name"));
	return s != NULL ? s : "?";
}

static void
dims_text(const json_t *d, char *out, size_t n)
{
	if (json_array_size(d) != 3) {
		snprintf(out, n, "-");
		return;
	}
	snprintf(out, n, "%lldx%lldx%lld", (long long)json_integer_value(json_array_get(d, 0)),
		 (long long)json_integer_value(json_array_get(d, 1)),
		 (long long)json_integer_value(json_array_get(d, 2)));
}

static long long
dims_product(const json_t *d)
{
	long long p = 1;

	if (json_array_size(d) != 3)
		return -1;
	for (size_t i = 0; i < 3; i++)
		p *= json_integer_value(json_array_get(d, i));
	return p;
}

/* Kernel time of the profile in ns: its listed kernels and "other". */
static double
kernel_total_ns(const json_t *p)
{
	double	 t = num_at(json_object_get(p, "other"), "total_ns", 0);
	json_t	*k;
	size_t	 i;

	json_array_foreach(json_object_get(p, "kernels"), i, k)
		t += num_at(k, "total_ns", 0);
	return t;
}

static void
limiter_text(const json_t *k, const char *limiter, char *out, size_t n)
{
	json_t	*occ = json_object_get(k, "occupancy");

	if (strcmp(limiter, "registers") == 0)
		snprintf(out, n, "registers (%lld/thread)",
			 (long long)json_integer_value(json_object_get(k, "registers")));
	else if (strcmp(limiter, "shared_memory") == 0)
		snprintf(out, n, "shared memory (%lld B/block)",
			 (long long)(json_integer_value(json_object_get(k, "static_smem")) +
				     json_integer_value(json_object_get(k, "dynamic_smem"))));
	else if (strcmp(limiter, "blocks") == 0)
		snprintf(out, n, "blocks per SM (%lld of %lld threads: blocks too small)",
			 (long long)json_integer_value(json_object_get(occ, "blocks_per_sm")),
			 dims_product(json_object_get(k, "block")));
	else if (strcmp(limiter, "warps") == 0)
		snprintf(out, n, "warps per SM (%lld-thread blocks)",
			 dims_product(json_object_get(k, "block")));
	else
		snprintf(out, n, "%s", limiter);
}

/* The hint sentences for kernel k, "; "-joined into out ("" when none). */
static void
kernel_hints(const json_t *profile, const json_t *k, double share, char *out, size_t n)
{
	json_t		*m = json_object_get(k, "metrics"), *occ = json_object_get(k, "occupancy");
	double		 dram = num_at(m, "dram_pct", -1), ach = num_at(m, "achieved_occupancy_pct", -1);
	double		 theo = json_is_object(occ) ? num_at(occ, "theoretical", -1) * 100 : -1;
	double		 sms = num_at(json_object_get(profile, "device"), "sm_count", -1);
	long long	 blocks = dims_product(json_object_get(k, "grid"));
	const char	*limiter = json_string_value(json_object_get(occ, "limiter"));
	size_t		 len = 0;
	char		 lim[96];

	out[0] = '\0';
#define HINT_(...) do { if (len < n) len += (size_t)snprintf(out + len, n - len, \
				 "%s", len > 0 ? "; " : ""); \
			 if (len < n) len += (size_t)snprintf(out + len, n - len, __VA_ARGS__); \
		   } while (0)
	for (size_t i = 0; i < sizeof(profile_hints) / sizeof(profile_hints[0]); i++) {
		double t = profile_hints[i].threshold;

		switch (profile_hints[i].kind) {
		case HINT_MEMORY_BOUND:
			if (dram >= t)
				HINT_("memory-bound: DRAM at %.0f%% of peak", dram);
			break;
		case HINT_LOW_OCCUPANCY:
			if (theo >= 0 && theo <= t && limiter != NULL) {
				limiter_text(k, limiter, lim, sizeof(lim));
				HINT_("occupancy %.0f%%, limited by %s", theo, lim);
			}
			break;
		case HINT_LOCAL_MEMORY:
			if (num_at(k, "local_mem", 0) > t)
				HINT_("local memory in use (%.0f B/thread): register spills or a "
				      "stack array", num_at(k, "local_mem", 0));
			break;
		case HINT_ACHIEVED_LOW:
			if (ach >= 0 && theo > 0 && ach < t * theo)
				HINT_("achieved occupancy %.0f%% of a theoretical %.0f%%: too few "
				      "blocks in flight or uneven work", ach, theo);
			break;
		case HINT_SMALL_GRID:
			if (sms > 0 && blocks > 0 && (double)blocks < t * sms)
				HINT_("grid of %lld blocks for %.0f SMs: most SMs idle", blocks, sms);
			break;
		case HINT_LOW_DRAM_SLOW:
			if (dram >= 0 && dram < t && share >= FB_HINT_DOMINANT_SHARE)
				HINT_("DRAM at %.0f%% of peak: not memory-bound; compute, latency "
				      "or too little parallelism limits it", dram);
			break;
		}
	}
#undef HINT_
}

/* Appends what printf makes unless b would pass cap; false (b unchanged) then. */
static bool put_capped(struct kb_buf *b, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool
put_capped(struct kb_buf *b, size_t cap, const char *fmt, ...)
{
	size_t	before = b->len;
	va_list	ap;
	char	*s;
	int	 n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	if (before + (size_t)n > cap || kb_buf_append(b, s, (size_t)n) < 0) {
		free(s);
		if (b->p != NULL) {
			b->len = before;
			b->p[before] = '\0';
		}
		return false;
	}
	free(s);
	return true;
}

/* One kernel row; metrics adds the DRAM and achieved-occupancy columns. */
static bool
kernel_row(struct kb_buf *b, size_t cap, const json_t *k, double total_ns, bool metrics,
	   bool brief)
{
	struct kb_buf	 name = KB_BUF_INIT(4 * FB_KERNEL_NAME_MAX);
	json_t		*occ = json_object_get(k, "occupancy"), *m = json_object_get(k, "metrics");
	char		 grid[48], block[48], occ_text[8] = "-", dram[8] = "-", ach[8] = "-";
	const char	*limiter = json_string_value(json_object_get(occ, "limiter"));
	double		 t = num_at(k, "total_ns", 0);
	bool		 ok;

	put_name(&name, kernel_label(k), FB_KERNEL_NAME_MAX);
	dims_text(json_object_get(k, "grid"), grid, sizeof(grid));
	dims_text(json_object_get(k, "block"), block, sizeof(block));
	if (json_is_number(json_object_get(occ, "theoretical")))
		snprintf(occ_text, sizeof(occ_text), "%.0f%%", num_at(occ, "theoretical", 0) * 100);
	if (json_is_number(json_object_get(m, "dram_pct")))
		snprintf(dram, sizeof(dram), "%.0f", num_at(m, "dram_pct", 0));
	if (json_is_number(json_object_get(m, "achieved_occupancy_pct")))
		snprintf(ach, sizeof(ach), "%.0f", num_at(m, "achieved_occupancy_pct", 0));
	if (brief)
		ok = put_capped(b, cap, "%5.1f%% %6lld %9.2f %-14s %-11s  %s\n",
				total_ns > 0 ? 100 * t / total_ns : 0,
				(long long)json_integer_value(json_object_get(k, "calls")),
				num_at(k, "mean_ns", 0) / 1e3, grid, block, name.p ? name.p : "");
	else
	{
		char	cols[24] = "";

		if (metrics)
			snprintf(cols, sizeof(cols), " %5s %5s", dram, ach);
		ok = put_capped(b, cap, "%5.1f%% %6lld %9.2f %-14s %-11s %4lld %7lld %4s %-13s%s  %s\n",
				total_ns > 0 ? 100 * t / total_ns : 0,
				(long long)json_integer_value(json_object_get(k, "calls")),
				num_at(k, "mean_ns", 0) / 1e3, grid, block,
				(long long)json_integer_value(json_object_get(k, "registers")),
				(long long)(json_integer_value(json_object_get(k, "static_smem")) +
					    json_integer_value(json_object_get(k, "dynamic_smem"))),
				occ_text, limiter != NULL ? limiter : "-", cols,
				name.p ? name.p : "");
	}
	kb_buf_clear(&name);
	return ok;
}

static bool
any_metrics(const json_t *p)
{
	json_t	*k;
	size_t	 i;

	json_array_foreach(json_object_get(p, "kernels"), i, k)
		if (json_is_object(json_object_get(k, "metrics")))
			return true;
	return false;
}

static bool
copies_line(struct kb_buf *b, size_t cap, const json_t *p)
{
	json_t	*mc = json_object_get(p, "memcpy"), *ms = json_object_get(p, "memset");
	char	 line[256] = "";
	size_t	 len = 0;

	if (num_at(mc, "count", 0) > 0)
		len += (size_t)snprintf(line + len, sizeof(line) - len, "memcpy: %.0f copies, "
					"%.3g MB, %.3f ms", num_at(mc, "count", 0),
					num_at(mc, "bytes", 0) / 1e6, num_at(mc, "total_ns", 0) / 1e6);
	if (num_at(ms, "count", 0) > 0 && len < sizeof(line))
		snprintf(line + len, sizeof(line) - len, "%smemset: %.0f, %.3g MB, %.3f ms",
			 len > 0 ? "; " : "", num_at(ms, "count", 0), num_at(ms, "bytes", 0) / 1e6,
			 num_at(ms, "total_ns", 0) / 1e6);
	return line[0] == '\0' || put_capped(b, cap, "%s\n", line);
}

/* The one line a profile that is not one says ("" when it is one). */
static void
status_line(const json_t *p, char *out, size_t n)
{
	const char	*st = json_string_value(json_object_get(p, "status"));
	const char	*msg = json_string_value(json_object_get(p, "message"));
	const char	*holder = json_string_value(json_object_get(p, "holder"));

	out[0] = '\0';
	if (st == NULL || strcmp(st, "ok") == 0)
		return;
	if (strcmp(st, "cupti_busy") == 0)
		snprintf(out, n, "No CUPTI profile this turn: CUPTI is in use by another profiler%s%.*s%s.",
			 holder != NULL ? " (" : "", holder != NULL ? (int)utf8_prefix(holder, 64) : 0,
			 holder != NULL ? holder : "", holder != NULL ? ")" : "");
	else
		snprintf(out, n, "No CUPTI profile this turn (%.*s)%s%.*s.",
			 (int)utf8_prefix(st, 32), st, msg != NULL ? ": " : "",
			 msg != NULL ? (int)utf8_prefix(msg, 200) : 0, msg != NULL ? msg : "");
	for (char *c = out; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
}

static bool
reference_section(struct kb_buf *b, size_t cap, const json_t *ref)
{
	double	 total = kernel_total_ns(ref);
	json_t	*k;
	size_t	 i;
	char	 why[320];

	status_line(ref, why, sizeof(why));
	if (why[0] != '\0' || json_array_size(json_object_get(ref, "kernels")) == 0)
		return true;
	if (!put_capped(b, cap, "\nThe reference model (PyTorch) for comparison: %lld kernel "
			"launches, %.3f ms of kernel time in %lld forward calls:\n%6s %6s %9s "
			"%-14s %-11s  %s\n",
			(long long)json_integer_value(json_object_get(ref, "launches")), total / 1e6,
			(long long)json_integer_value(json_object_get(ref, "iterations")),
			"share", "calls", "mean us", "grid", "block", "kernel"))
		return false;
	json_array_foreach(json_object_get(ref, "kernels"), i, k) {
		if (i >= FB_PROFILE_REF_ROWS)
			break;
		if (!kernel_row(b, cap, k, total, false, true))
			return false;
	}
	return true;
}

static char *
cupti_feedback(const struct kb_config *cfg, json_t *profile, json_t *reference)
{
	struct kb_buf	 b = KB_BUF_INIT(1 << 20);
	size_t		 cap = max_chars(cfg), i, shown = 0;
	double		 total = kernel_total_ns(profile);
	bool		 metrics = any_metrics(profile);
	const char	*mst = json_string_value(json_object_get(profile, "metrics_status"));
	const char	*dev = json_string_value(json_object_get(json_object_get(profile, "device"),
								 "name"));
	json_t		*k, *other = json_object_get(profile, "other");
	char		 line[512], hints[400];

	status_line(profile, line, sizeof(line));
	if (line[0] != '\0') {
		put_capped(&b, cap, "%s\n", line);
		goto out;
	}
	if (json_array_size(json_object_get(profile, "kernels")) == 0) {
		put_capped(&b, cap, "CUPTI profile: no kernel ran in the profiled forward calls.\n");
		goto out;
	}
	kb_buf_printf(&b, "Profile (CUPTI, ");
	put_name(&b, dev != NULL ? dev : "GPU", FB_PROFILE_LABEL_MAX);
	kb_buf_printf(&b, ", %lld forward calls%s): %lld kernel launches, %.3f ms of kernel time; "
		      "top kernels:\n",
		      (long long)json_integer_value(json_object_get(profile, "iterations")),
		      json_is_true(json_object_get(profile, "partial")) ?
		      ", partial: the runner ended before the profile was complete" : "",
		      (long long)json_integer_value(json_object_get(profile, "launches")), total / 1e6);
	if (!put_capped(&b, cap, "%6s %6s %9s %-14s %-11s %4s %7s %4s %-13s%s  %s\n",
			"share", "calls", "mean us", "grid", "block", "regs", "smem B", "occ",
			"limiter", metrics ? " dram% achv%" : "", "kernel") || b.len > cap) {
		kb_buf_clear(&b);	/* not even the heading fits */
		return NULL;
	}
	json_array_foreach(json_object_get(profile, "kernels"), i, k) {
		if (i >= FB_PROFILE_ROWS || !kernel_row(&b, cap, k, total, metrics, false))
			break;
		shown++;
	}
	if (json_array_size(json_object_get(profile, "kernels")) > shown ||
	    num_at(other, "kernels", 0) > 0) {
		double	 rest = num_at(other, "total_ns", 0);
		double	 nrest = num_at(other, "kernels", 0), crest = num_at(other, "calls", 0);

		json_array_foreach(json_object_get(profile, "kernels"), i, k) {
			if (i < shown)
				continue;
			rest += num_at(k, "total_ns", 0);
			nrest += 1;
			crest += num_at(k, "calls", 0);
		}
		if (!put_capped(&b, cap, "other: %.0f kernels, %.0f calls, %.3f ms (%.1f%%)\n",
				nrest, crest, rest / 1e6, total > 0 ? 100 * rest / total : 0))
			goto out;
	}
	if (!copies_line(&b, cap, profile))
		goto out;
	if (mst != NULL && strcmp(mst, "ok") != 0) {
		const char *msg = json_string_value(json_object_get(profile, "metrics_message"));

		const char *what = strcmp(mst, "not_permitted") == 0 ? "not permitted on this host" :
				   strcmp(mst, "unsupported") == 0 ? "not supported on this GPU" :
				   "unavailable";

		if (msg != NULL)
			snprintf(line, sizeof(line), "Hardware counters: %s (%.*s).", what,
				 (int)utf8_prefix(msg, 160), msg);
		else
			snprintf(line, sizeof(line), "Hardware counters: %s.", what);
		for (char *c = line; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20)
				*c = ' ';
		if (!put_capped(&b, cap, "%s\n", line))
			goto out;
	}
	for (i = 0; i < shown; i++) {
		k = json_array_get(json_object_get(profile, "kernels"), i);
		kernel_hints(profile, k, total > 0 ? num_at(k, "total_ns", 0) / total : 0, hints,
			     sizeof(hints));
		if (hints[0] == '\0')
			continue;
		{
			struct kb_buf	name = KB_BUF_INIT(4 * FB_KERNEL_NAME_MAX);
			bool		ok;

			put_name(&name, kernel_label(k), FB_KERNEL_NAME_MAX);
			ok = put_capped(&b, cap, "- %s: %s\n", name.p ? name.p : "", hints);
			kb_buf_clear(&name);
			if (!ok)
				goto out;
		}
	}
	if (reference != NULL)
		(void)reference_section(&b, cap, reference);
out:
	if (b.len == 0) {
		kb_buf_clear(&b);
		return NULL;
	}
	return kb_buf_steal(&b);
}

char *
fb_profile_feedback(const struct kb_config *cfg, json_t *profile, json_t *reference)
{
	struct kb_buf	 b = KB_BUF_INIT(1 << 20);
	json_t		*kernels = json_object_get(profile, "kernels"), *k;
	size_t		 i, cap = max_chars(cfg), before;
	const char	*source = str_at(profile, "source"), *device = str_at(profile, "device");
	const char	*note = json_string_value(json_object_get(profile, "note"));

	if (strcmp(source, "cupti") == 0)
		return cupti_feedback(cfg, profile, reference);
	if (!json_is_array(kernels) || json_array_size(kernels) == 0)
		return NULL;
	if (source[0] == '\0')
		source = "profiler";
	if (device[0] == '\0')
		device = "device";
	if (note != NULL) {
		put_name(&b, note, 200);
		kb_buf_printf(&b, "\n");
	}
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
