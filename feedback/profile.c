/*
 * profile.c: the PROFILE step's runs (feedback.h, "CUPTI profiles"). On cuda, with the
 * CUPTI injection library built, the runner is started fresh with CUDA_INJECTION64_PATH
 * and KPROF_* set (run.c, kprof_env) and gates its forward calls with
 * cudaProfilerStart/Stop; the library writes its JSON into the task's scratch directory
 * (the runner's user may write there, and the run directory may be out of its reach),
 * and this file reads it back after the runner ended, whatever its end: a killed
 * runner's last flushed profile ("complete": false) is kept and marked partial. A second
 * run in metrics mode reads the hardware counters of the trace's top kernels (never in
 * the same process: kernel replay distorts the timings), for a candidate's profile only.
 * Elsewhere the runner's
 * torch.profiler table is the profile.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

#define FB_KPROF_NAME		"libkforge_kprof.so"
#define FB_KPROF_TARGETS_CAP	4096	/* KPROF_TARGETS: a few mangled names */

int
fb_kprof_library(char *out, size_t n)
{
	const char	*env = getenv("KFORGE_KPROF_LIB");
	char		 exe[PATH_MAX], *slash;
	ssize_t		 len;

	/* Set but empty: profiles are torch.profiler's (a way to compare the two). */
	if (env != NULL)
		return env[0] != '\0' && access(env, R_OK) == 0 &&
		       snprintf(out, n, "%s", env) < (int)n ? 0 : -KB_ENOENT;
	/* Defined by feedback/CMakeLists.txt where kprof/ built the library (CUPTI found). */
#ifdef KFORGE_KPROF_PATH
	if (access(KFORGE_KPROF_PATH, R_OK) == 0 &&
	    snprintf(out, n, "%s", KFORGE_KPROF_PATH) < (int)n)
		return 0;
#endif
	if ((len = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
		return -KB_ENOENT;
	exe[len] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return -KB_ENOENT;
	*slash = '\0';
	if (snprintf(out, n, "%s/kprof/%s", exe, FB_KPROF_NAME) < (int)n &&
	    access(out, R_OK) == 0)
		return 0;
	return -KB_ENOENT;
}

bool
fb_kprof_usable(void)
{
	char	path[PATH_MAX];

	return fb_kprof_library(path, sizeof(path)) == 0;
}

/* ------------------------------------------------------------ reading */

static bool
is_tag_file(const char *name, const char *tag, size_t taglen)
{
	size_t	n = strlen(name);

	return strncmp(name, tag, taglen) == 0 && name[taglen] == '.' && n > taglen + 6 &&
	       strcmp(name + n - 5, ".json") == 0;
}

static json_t *
load_capped(const char *path)
{
	char	*text = NULL;
	size_t	 len = 0;
	json_t	*doc;

	if (kb_read_file(path, FB_KPROF_CAP, &text, &len) < 0)
		return NULL;
	doc = json_loadb(text, len, 0, NULL);
	free(text);
	if (doc != NULL && !json_is_object(doc)) {
		json_decref(doc);
		doc = NULL;
	}
	return doc;
}

static json_int_t
launches_of(const json_t *p)
{
	return json_integer_value(json_object_get(p, "launches")) +
	       (json_is_true(json_object_get(p, "complete")) ? ((json_int_t)1 << 40) : 0);
}

json_t *
fb_kprof_read(const char *dir, const char *tag, pid_t pid)
{
	char		 path[PATH_MAX];
	size_t		 taglen = strlen(tag);
	DIR		*d;
	struct dirent	*e;
	json_t		*best = NULL, *doc;

	if (pid > 0 && snprintf(path, sizeof(path), "%s/%s.%d.json", dir, tag, (int)pid) <
	    (int)sizeof(path) && (best = load_capped(path)) != NULL)
		return best;
	if ((d = opendir(dir)) == NULL)
		return NULL;
	while ((e = readdir(d)) != NULL) {
		if (!is_tag_file(e->d_name, tag, taglen) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
		    (doc = load_capped(path)) == NULL)
			continue;
		if (best == NULL || launches_of(doc) > launches_of(best)) {
			json_decref(best);
			best = doc;
		} else {
			json_decref(doc);
		}
	}
	closedir(d);
	return best;
}

/* A run's files of tag from an earlier attempt of the same step would be read as its. */
static void
remove_tag_files(const char *dir, const char *tag)
{
	char		 path[PATH_MAX];
	size_t		 taglen = strlen(tag);
	DIR		*d;
	struct dirent	*e;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, tag, taglen) == 0 && e->d_name[taglen] == '.' &&
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
			(void)unlink(path);
	closedir(d);
}

/* ------------------------------------------------------------ source */

static bool
ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static void
add_name(json_t *names, const char *p, size_t n)
{
	json_t	*v;
	size_t	 i;

	if (n == 0 || n > 200 || json_array_size(names) >= FB_MAX_OWN_KERNELS)
		return;
	json_array_foreach(names, i, v)
		if (strlen(json_string_value(v)) == n && strncmp(json_string_value(v), p, n) == 0)
			return;
	json_array_append_new(names, json_stringn(p, n));
}

/* The name of the function declared after "__global__" at p: the last identifier before
 * the parameter list, past the return type and attributes such as __launch_bounds__(..).
 * Returns where the scan stopped. */
static const char *
global_name(const char *p, const char *end, json_t *names)
{
	const char	*last = NULL;
	size_t		 lastlen = 0;

	while (p < end) {
		if (ident_char(*p)) {
			const char *s = p;

			while (p < end && ident_char(*p))
				p++;
			if ((size_t)(p - s) == 17 && strncmp(s, "__launch_bounds__", 17) == 0) {
				int depth = 0;

				while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
					p++;
				for (; p < end; p++) {
					depth += *p == '(';
					depth -= *p == ')';
					if (depth == 0 && *p == ')') {
						p++;
						break;
					}
				}
				continue;
			}
			last = s;
			lastlen = (size_t)(p - s);
		} else if (*p == '(') {
			add_name(names, last, last != NULL ? lastlen : 0);
			return p;
		} else if (*p == ';' || *p == '{' || *p == '=' || *p == '<') {
			return p;
		} else {
			p++;
		}
	}
	return p;
}

json_t *
fb_source_kernels(const char *source)
{
	json_t		*names = json_array();
	const char	*p, *end;

	if (source == NULL)
		return names;
	end = source + strlen(source);
	for (p = source; (p = strstr(p, "__global__")) != NULL;) {
		p += strlen("__global__");
		if (p < end && ident_char(*p))
			continue;
		p = global_name(p, p + 512 < end ? p + 512 : end, names);
	}
	/* Triton: the function a @triton.jit decorates. */
	for (p = source; (p = strstr(p, "@triton.jit")) != NULL;) {
		const char *def = strstr(p, "def ");

		p += strlen("@triton.jit");
		if (def == NULL || def - p > 512)
			continue;
		def += 4;
		while (*def == ' ')
			def++;
		p = def;
		while (ident_char(*p))
			p++;
		add_name(names, def, (size_t)(p - def));
	}
	return names;
}

/* ------------------------------------------------------------ running */

/* The same kernel in two profiles of the same code: its mangled name (else its name)
 * and launch configuration. */
static bool
same_kernel(const json_t *a, const json_t *b)
{
	const char	*ma = json_string_value(json_object_get(a, "mangled"));
	const char	*mb = json_string_value(json_object_get(b, "mangled"));

	if (ma == NULL || mb == NULL) {
		ma = json_string_value(json_object_get(a, "name"));
		mb = json_string_value(json_object_get(b, "name"));
	}
	return ma != NULL && mb != NULL && strcmp(ma, mb) == 0 &&
	       json_equal(json_object_get(a, "grid"), json_object_get(b, "grid")) &&
	       json_equal(json_object_get(a, "block"), json_object_get(b, "block"));
}

/* KPROF_TARGETS: the top kernels' mangled names (no commas in those), comma-joined. */
static char *
metrics_targets(const json_t *trace, long top)
{
	struct kb_buf	 b = KB_BUF_INIT(FB_KPROF_TARGETS_CAP);
	json_t		*k;
	size_t		 i;

	json_array_foreach(json_object_get(trace, "kernels"), i, k) {
		const char *name = json_string_value(json_object_get(k, "mangled"));

		if ((long)i >= top)
			break;
		if (name == NULL)
			name = json_string_value(json_object_get(k, "short"));
		if (name == NULL || strchr(name, ',') != NULL)
			continue;
		if (kb_buf_printf(&b, "%s%s", b.len > 0 ? "," : "", name) < 0)
			break;
	}
	if (b.len == 0) {
		kb_buf_clear(&b);
		return NULL;
	}
	return kb_buf_steal(&b);
}

static void
merge_metrics(json_t *profile, const json_t *metrics)
{
	json_t		*k, *m;
	size_t		 i, j;
	const char	*st = json_string_value(json_object_get(metrics, "metrics_status"));

	if (st == NULL)
		st = json_string_value(json_object_get(metrics, "status"));
	json_object_set_new(profile, "metrics_status", json_string(st != NULL ? st : "error"));
	if (json_is_string(json_object_get(metrics, "message")))
		json_object_set(profile, "metrics_message", json_object_get(metrics, "message"));
	if (json_is_string(json_object_get(metrics, "counter_availability")))
		json_object_set(profile, "counter_availability",
				json_object_get(metrics, "counter_availability"));
	json_array_foreach(json_object_get(metrics, "kernels"), j, m) {
		if (!json_is_object(json_object_get(m, "metrics")))
			continue;
		json_array_foreach(json_object_get(profile, "kernels"), i, k)
			if (json_is_object(k) && same_kernel(k, m) &&
			    !json_is_object(json_object_get(k, "metrics"))) {
				json_object_set(k, "metrics", json_object_get(m, "metrics"));
				break;
			}
	}
}

/* One run under the injection; the library's JSON for it (NULL: none was written). */
static int
kprof_run(const struct kb_config *cfg, const struct fb_request *req, const char *lib,
	  const char *tag, const char *mode, const char *targets, struct fb_outcome *o,
	  json_t **kprof)
{
	struct fb_request	r = *req;
	char			out[PATH_MAX];
	int			rc;

	*kprof = NULL;
	if (snprintf(out, sizeof(out), "%s/%s.%%p.json", req->work_dir, tag) >= (int)sizeof(out))
		return -KB_ETOOBIG;
	r.kprof_lib = lib;
	r.kprof_out = out;
	r.kprof_mode = mode;
	r.kprof_targets = targets;
	for (;;) {
		remove_tag_files(req->work_dir, tag);
		if ((rc = fb_run(cfg, &r, o)) < 0)
			return rc;
		*kprof = fb_kprof_read(req->work_dir, tag, (pid_t)json_integer_value(
					json_object_get(json_object_get(o->result, "runner"),
							"pid")));
		if (*kprof != NULL || o->status != FB_ST_OK || r.cold)
			return 0;
		/* A warm runner whose driver had started before the injection was named
		 * (run.c): the same step again in a fresh one. */
		log_info("no CUPTI profile from a warm runner; profiling again in a fresh one");
		fb_outcome_clear(o);
		r.cold = true;
	}
}

/* The profile kept from a trace run: the library's JSON (or why there is none) with the
 * runner's own facts about what it profiled. */
static json_t *
trace_profile(json_t *kprof, const struct fb_outcome *o)
{
	json_t	*runner_profile = json_object_get(o->result, "profile");
	json_t	*p = kprof != NULL ? json_incref(kprof) : NULL;

	if (p == NULL) {
		char *msg = kb_asprintf("the profiled runner wrote no CUPTI profile (it ended "
					"with %s)", fb_status_name(o->status));

		p = json_pack("{s:s, s:s, s:s, s:b}", "source", "cupti", "status", "error",
			      "message", msg, "complete", 0);
		free(msg);
	}
	if (!json_is_string(json_object_get(p, "source")))
		json_object_set_new(p, "source", json_string("cupti"));
	json_object_set_new(p, "partial", json_boolean(kprof != NULL &&
			    !json_is_true(json_object_get(kprof, "complete"))));
	if (json_is_integer(json_object_get(runner_profile, "iterations")))
		json_object_set(p, "iterations", json_object_get(runner_profile, "iterations"));
	if (json_is_string(json_object_get(runner_profile, "target")))
		json_object_set(p, "target", json_object_get(runner_profile, "target"));
	return p;
}

static bool
profile_ok(const json_t *p)
{
	const char *st = json_string_value(json_object_get(p, "status"));

	return st == NULL || strcmp(st, "ok") == 0;
}

int
fb_profile(const struct kb_config *cfg, const struct fb_request *req, const char *tag,
	   struct fb_outcome *out)
{
	struct fb_outcome	 mo = { 0 };
	char			 lib[PATH_MAX], staged[PATH_MAX], mtag[128], *targets;
	json_t			*kprof = NULL, *mkprof = NULL, *profile;
	int			 rc;

	if (!fb_on_cuda(cfg, req) || req->work_dir == NULL)
		return fb_run(cfg, req, out);
	if (fb_kprof_library(lib, sizeof(lib)) < 0) {
		if ((rc = fb_run(cfg, req, out)) == 0 &&
		    json_is_object(json_object_get(out->result, "profile")))
			json_object_set_new(json_object_get(out->result, "profile"), "note",
					    json_string("CUPTI profiler library (" FB_KPROF_NAME
							") not built: this is torch.profiler's table"));
		return rc;
	}
	/* The runner's user reads it where it is, or a copy made for it. */
	if ((rc = fb_stage_input(lib, staged, sizeof(staged))) < 0)
		return rc;
	if ((rc = kprof_run(cfg, req, staged, tag, "trace", NULL, out, &kprof)) < 0)
		return rc;
	profile = trace_profile(kprof, out);
	json_decref(kprof);
	/* The reference's profile is read for its kernels and streams (the table beside the
	 * candidate's first profile, the side-stream rule), never for counters: no metrics
	 * run, whose process would hold the GPU about a second for nothing. */
	if (cfg->refinement.profile_metrics && !req->profile_reference &&
	    out->status == FB_ST_OK && profile_ok(profile) &&
	    json_array_size(json_object_get(profile, "kernels")) > 0 &&
	    (targets = metrics_targets(profile, cfg->refinement.profile_metrics_top)) != NULL) {
		snprintf(mtag, sizeof(mtag), "%s-metrics", tag);
		rc = kprof_run(cfg, req, staged, mtag, "metrics", targets, &mo, &mkprof);
		free(targets);
		if (rc == -KB_ESTOPPED) {
			json_decref(profile);
			fb_outcome_clear(&mo);
			return rc;
		}
		if (rc == 0 && mkprof != NULL) {
			merge_metrics(profile, mkprof);
		} else {
			char *msg = kb_asprintf("the metrics run ended with %s and wrote no "
						"profile", rc < 0 ? kb_strerror(rc) :
						fb_status_name(mo.status));

			json_object_set_new(profile, "metrics_status", json_string("error"));
			json_object_set_new(profile, "metrics_message", json_string(msg));
			free(msg);
		}
		json_object_set_new(profile, "metrics_wall_ms", json_integer(mo.wall_ms));
		out->wall_ms += mo.wall_ms;
		json_decref(mkprof);
		fb_outcome_clear(&mo);
	}
	json_object_set_new(out->result, "profile", profile);
	return 0;
}
