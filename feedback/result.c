/*
 * result.c: what a runner step comes back as (docs/DESIGN.md §5, feedback.h's protocol):
 * the names of the protocol's modes and statuses, the runner's fd-3 result read and
 * checked, and where the runner could not report (a signal, a deadline, the memory cap,
 * no or garbled JSON) a result synthesized in the runner's shape, so that every consumer
 * reads one format; then the outcome fb_run returns. Apart from run.c, which starts the
 * runners, so that reading what one left depends on nothing of starting it and its fuzz
 * target (tests/feedback/fuzz_result.c) compiles this file alone.
 */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

#define FB_COMPILER_TAIL	8192
#define FB_LOG_TAIL		4096

static const char *const mode_names[] = {
	[FB_PRECOMPILE] = "precompile", [FB_EXECUTE] = "execute", [FB_PROFILE] = "profile",
	[FB_BASELINE] = "baseline", [FB_PROBE] = "probe", [FB_SELFTEST] = "selftest",
};

#define FB_NAME_(name, str) [FB_ST_##name] = str,
static const char *const status_names[FB__NSTATUS] = { FB_STATUSES(FB_NAME_) };
#undef FB_NAME_

const char *
fb_status_name(enum fb_status st)
{
	return (unsigned)st < FB__NSTATUS ? status_names[st] : "unknown";
}

int
fb_status_parse(const char *s, enum fb_status *out)
{
	for (int i = 0; s != NULL && i < FB__NSTATUS; i++)
		if (strcmp(s, status_names[i]) == 0) {
			*out = (enum fb_status)i;
			return 0;
		}
	return -KB_EINVAL;
}

const char *
fb_mode_name(enum fb_mode mode)
{
	return (unsigned)mode <= FB_SELFTEST ? mode_names[mode] : "unknown";
}

json_t *
fb_flags_of(json_t *result)
{
	json_t	*flags = json_object_get(result, "flags");

	if (!json_is_array(flags))
		json_object_set_new(result, "flags", flags = json_array());
	return flags;
}

void
fb_flag(json_t *result, const char *flag)
{
	json_t	*flags = fb_flags_of(result);

	if (!kb_json_has_string(flags, flag))
		json_array_append_new(flags, json_string(flag));
}

static const char *
signal_name(int sig)
{
	static const struct { int sig; const char *name; } names[] = {
		{ SIGSEGV, "SIGSEGV" }, { SIGBUS, "SIGBUS" }, { SIGABRT, "SIGABRT" },
		{ SIGILL, "SIGILL" }, { SIGFPE, "SIGFPE" }, { SIGKILL, "SIGKILL" },
		{ SIGTERM, "SIGTERM" }, { SIGXCPU, "SIGXCPU" }, { SIGXFSZ, "SIGXFSZ" },
		{ SIGPIPE, "SIGPIPE" }, { SIGINT, "SIGINT" }, { SIGHUP, "SIGHUP" },
		{ SIGTRAP, "SIGTRAP" }, { SIGSYS, "SIGSYS" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].sig == sig)
			return names[i].name;
	return "unknown signal";
}

/* The last cap bytes of s, starting on a line boundary when one is near. */
static const char *
tail_of(const char *s, size_t cap)
{
	size_t		 n = s != NULL ? strlen(s) : 0;
	const char	*t, *nl;

	if (s == NULL)
		return "";
	if (n <= cap)
		return s;
	t = s + n - cap;
	if ((nl = memchr(t, '\n', cap / 8)) != NULL)
		t = nl + 1;
	return t;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if invalid. */
static size_t
utf8_seq(const unsigned char *p, size_t n)
{
	size_t	len, i;
	unsigned c = p[0];

	if (c < 0x80)
		return 1;
	len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
	      c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	if (len == 0 || len > n)
		return 0;
	for (i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) ||
	    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
		return 0;
	return len;
}

/* A JSON string of s with every byte that is not valid UTF-8 replaced by '?'
 * (captured output is arbitrary bytes; jansson accepts only UTF-8). */
static json_t *
json_text(const char *s)
{
	size_t	 n = strlen(s), i = 0, k;
	char	*c;
	json_t	*j;

	if ((c = malloc(n + 1)) == NULL)
		return NULL;
	memcpy(c, s, n + 1);
	while (i < n) {
		if ((k = utf8_seq((const unsigned char *)c + i, n - i)) == 0) {
			c[i++] = '?';
			continue;
		}
		i += k;
	}
	j = json_stringn(c, n);
	free(c);
	return j;
}

/* A result in the runner's shape for a runner that could not write one. */
static json_t *
synthesize(enum fb_mode mode, enum fb_status st, const char *message, const char *log)
{
	json_t	*res, *details;

	res = json_pack("{s:s, s:s, s:b, s:b, s:[], s:{s:s, s:s, s:s, s:s, s:[], s:s},"
			 " s:{s:n, s:n, s:n}, s:n, s:{s:n, s:n, s:n, s:n, s:n}, s:b}",
			 "status", fb_status_name(st), "mode", mode_names[mode],
			 "compiled", mode == FB_EXECUTE || mode == FB_PROFILE, "correct", 0,
			 "flags",
			 "details", "message", message, "exception", "", "traceback", "",
			 "compiler_output", "", "trials", "log_tail", "",
			 "timing", "candidate", "reference", "reference_compile",
			 "speedup",
			 "env", "device_name", "torch", "cuda", "python", "gpu_count",
			 "synthesized", 1);
	if (res == NULL)
		return NULL;
	details = json_object_get(res, "details");
	json_object_set_new(details, "log_tail", json_text(tail_of(log, FB_LOG_TAIL)));
	if (mode == FB_PRECOMPILE)
		json_object_set_new(details, "compiler_output",
				    json_text(tail_of(log, FB_COMPILER_TAIL)));
	return res;
}

/* why is a one-line reason that ends up in a synthesized result's message, so bytes the
 * runner sent (quoted in jansson's error text) become '?' unless printable ASCII. */
static void
set_why(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
set_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	for (char *p = why; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
}

/* A well-formed runner result: a JSON object with a known status. */
static json_t *
load_result(const char *text, size_t n, char *why, size_t whylen)
{
	json_error_t	 jerr;
	json_t		*res;
	enum fb_status	 st;

	if (n == 0) {
		set_why(why, whylen, "no result");
		return NULL;
	}
	if ((res = json_loadb(text, n, 0, &jerr)) == NULL) {
		set_why(why, whylen, "an unparsable result (%s)", jerr.text);
		return NULL;
	}
	if (!json_is_object(res) ||
	    fb_status_parse(json_string_value(json_object_get(res, "status")), &st) < 0) {
		set_why(why, whylen, "a result without a valid status");
		json_decref(res);
		return NULL;
	}
	return res;
}

/*
 * The processes a runner in namespaces of its own left running, which its namespace's init
 * killed: the last line its waiter writes on the result pipe after the result, once
 * nothing in the namespace is left to write after it (FB_NS_TRAILER, then the count). Taken
 * off the result; 0 where there is none (no namespaces, or the waiter was killed).
 */
int
fb_ns_trailer_take(struct kb_buf *result)
{
	const size_t	 plen = sizeof(FB_NS_TRAILER) - 1;
	const char	*end, *p;
	long		 left;
	char		*stop;

	if (result->p == NULL || result->truncated || result->len < plen + 2 ||
	    result->p[result->len - 1] != '\n')
		return 0;
	end = result->p + result->len - 1;
	for (p = end; p > result->p && p[-1] >= '0' && p[-1] <= '9'; p--)
		;
	if (p == end || (size_t)(p - result->p) < plen ||
	    memcmp(p - plen, FB_NS_TRAILER, plen) != 0)
		return 0;
	left = strtol(p, &stop, 10);
	if (stop != end || left < 0 || left > INT_MAX)
		return 0;
	result->len = (size_t)(p - plen - result->p);
	result->p[result->len] = '\0';
	return (int)left;
}

bool
fb_candidate_mark_take(struct kb_buf *result)
{
	const size_t	n = sizeof(FB_CANDIDATE_MARK) - 1;

	if (result->p == NULL || result->len < n || memcmp(result->p, FB_CANDIDATE_MARK, n) != 0)
		return false;
	memmove(result->p, result->p + n, result->len - n + 1);	/* its NUL too */
	result->len -= n;
	return true;
}

/* The runner's own result, if it wrote a well-formed one. */
static json_t *
parse_result(const struct kb_spawn_result *r, char *why, size_t whylen)
{
	if (r->result.truncated) {
		set_why(why, whylen, "its result exceeded %zu bytes", r->result.cap);
		return NULL;
	}
	return load_result(r->result.p, r->result.len, why, whylen);
}

/* A measurement is a finite number >= 0; anything else reads as "not measured" (-1),
 * whatever the runner (or code running inside it) wrote. */
static double
measured(json_t *v)
{
	double	d = json_is_number(v) ? json_number_value(v) : -1;

	return isfinite(d) && d >= 0 ? d : -1;
}

static double
mean_ms(json_t *timing, const char *who)
{
	return measured(json_object_get(json_object_get(timing, who), "mean_ms"));
}

void
fb_outcome_fill(struct fb_outcome *o, json_t *res)
{
	json_t	*timing = json_object_get(res, "timing");

	if (fb_status_parse(json_string_value(json_object_get(res, "status")), &o->status) < 0)
		o->status = FB_ST_CRASHED;
	o->compiled = json_is_true(json_object_get(res, "compiled"));
	o->correct = json_is_true(json_object_get(res, "correct"));
	o->runtime_ms = mean_ms(timing, "candidate");
	o->ref_runtime_ms = mean_ms(timing, "reference");
	o->speedup = measured(json_object_get(res, "speedup"));
	o->result = res;
}

int
fb_result_parse(const char *text, size_t n, struct fb_outcome *o, char *why, size_t whylen)
{
	json_t	*res;

	memset(o, 0, sizeof(*o));
	o->runtime_ms = o->ref_runtime_ms = o->speedup = -1;
	if ((res = load_result(text, n, why, whylen)) == NULL)
		return -KB_ECORRUPT;
	fb_outcome_fill(o, res);
	return 0;
}

json_t *
fb_result_classify(const struct fb_request *req, const struct kb_spawn_result *r,
		   const char *log, int deadline, const struct fb_watch *w)
{
	json_t	*res, *end;
	char	 why[256], msg[512];

	res = parse_result(r, why, sizeof(why));
	if (w->over_cap) {
		/* Killed by the memory watch, whether or not it had reported. */
		snprintf(msg, sizeof(msg), "the runner's processes held %lld MB of host memory, "
			 "over the cap of %lld MB, and were killed", w->peak_kb >> 10,
			 w->cap_kb >> 10);
		json_decref(res);
		if ((res = synthesize(req->mode, FB_ST_CRASHED, msg, log)) != NULL)
			fb_flag(res, "host_memory_exceeded");
	} else if (res != NULL) {
		/* It reported; anything after that is noted, not held against it. */
		if (w->exec_timed_out || w->judge_gone || r->end == KB_END_TIMEOUT)
			fb_flag(res, "runner_hung_after_result");
		else if (r->end == KB_END_SIGNALED)
			fb_flag(res, "runner_died_after_result");
	} else if (w->judge_gone) {
		res = synthesize(req->mode, FB_ST_CRASHED, "the runner was killed: its judge had "
				 "ended", log);
	} else if (w->exec_timed_out) {
		snprintf(msg, sizeof(msg), "the candidate's code ran past its deadline of %lld s",
			 (long long)(w->exec_limit_ms / 1000));
		res = synthesize(req->mode, FB_ST_TIMEOUT, msg, log);
	} else if (r->end == KB_END_TIMEOUT) {
		snprintf(msg, sizeof(msg), "the runner exceeded its deadline of %d s", deadline);
		res = synthesize(req->mode, FB_ST_TIMEOUT, msg, log);
	} else if (r->end == KB_END_SIGNALED && r->signo == SIGXCPU) {
		snprintf(msg, sizeof(msg), "the runner exceeded its CPU-time limit (SIGXCPU)");
		res = synthesize(req->mode, FB_ST_TIMEOUT, msg, log);
	} else if (r->end == KB_END_SIGNALED) {
		snprintf(msg, sizeof(msg), "runner killed by signal %d (%s)", r->signo,
			 signal_name(r->signo));
		res = synthesize(req->mode, FB_ST_CRASHED, msg, log);
	} else {
		snprintf(msg, sizeof(msg), "the runner exited with status %d and %s", r->exit_code,
			 why);
		res = synthesize(req->mode, FB_ST_CRASHED, msg, log);
	}
	if (res == NULL)
		return NULL;
	end = json_pack("{s:s, s:i, s:i, s:i}", "end",
			r->end == KB_END_EXITED ? "exited" :
			r->end == KB_END_SIGNALED && !w->exec_timed_out ? "signaled" : "timeout",
			"exit_code", r->exit_code, "signal", r->signo, "pid", (int)r->pid);
	json_object_set_new(res, "runner", end);
	json_object_set_new(res, "wall_ms", json_integer(r->wall_ms));
	return res;
}

void
fb_result_note_leftovers(json_t *res, const struct kb_spawn_result *r,
			 const struct fb_watch *w, const struct fb_strays *s)
{
	json_t	*details = json_object_get(res, "details");
	int	 n = s->running + (r->end == KB_END_TIMEOUT || w->over_cap || w->exec_timed_out ||
				      w->judge_gone ? 0 : s->killed);

	if (r->out.truncated) {
		fb_flag(res, "output_truncated");
		if (json_is_object(details))
			json_object_set_new(details, "output_cap_bytes",
					    json_integer((json_int_t)r->out.cap));
	}
	if (n > 0) {
		fb_flag(res, "stray_processes");
		if (json_is_object(details))
			json_object_set_new(details, "stray_processes", json_integer(n));
	}
}

json_t *
fb_result_of_judge(int rc, const struct kb_spawn_result *r, char *why, size_t whylen)
{
	json_t	*res = NULL;

	if (rc == -KB_ESTOPPED)
		snprintf(why, whylen, "it was stopped: the candidate's runner never ran");
	else if (rc < 0)
		snprintf(why, whylen, "it could not be run (%s)", kb_strerror(rc));
	else if ((res = parse_result(r, why, whylen)) == NULL && r->end == KB_END_SIGNALED)
		snprintf(why, whylen, "it was killed by signal %d (%s)", r->signo,
			 signal_name(r->signo));
	else if (res == NULL && r->end == KB_END_TIMEOUT)
		snprintf(why, whylen, "it ran past its deadline");
	if (res == NULL && r->out.len > 0)
		log_info("the judge's output:\n%s", tail_of(r->out.p, FB_LOG_TAIL));
	if (res != NULL) {
		json_object_set_new(res, "runner", json_pack("{s:s, s:i, s:i, s:i}", "end",
				    r->end == KB_END_EXITED ? "exited" :
				    r->end == KB_END_SIGNALED ? "signaled" : "timeout",
				    "exit_code", r->exit_code, "signal", r->signo,
				    "pid", (int)r->pid));
		json_object_set_new(res, "judge_wall_ms", json_integer(r->wall_ms));
	}
	return res;
}

void
fb_outcome_clear(struct fb_outcome *o)
{
	json_decref(o->result);
	free(o->log);
	memset(o, 0, sizeof(*o));
	o->runtime_ms = o->ref_runtime_ms = o->speedup = -1;
}
