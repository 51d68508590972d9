/*
 * entries.c: the shared cache's entries of each kind, by their keys (cache.c keeps the
 * place): a candidate's build, whose key hashes the runner's environment (fb_env_key),
 * the precision, the fast build and the code, and which of its outcomes is the code's to
 * keep beside it; a problem's baseline, whose key hashes everything its reference's
 * timing depends on, and its record. Apart from cache.c, so that the place depends on
 * nothing of the runner's environment, which keeps its own memo there (env.c,
 * has_torch).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

/* ------------------------------------------------------------ builds */

int
fb_build_dir(const struct kb_config *cfg, const char *code, char *out, size_t n)
{
	struct kb_buf	 key = KB_BUF_INIT(FB_BUILD_KEY_CAP);
	char		 python[PATH_MAX], err[512], env[65], sha[65];
	const char	*device = cfg->eval.device != NULL ? cfg->eval.device : "cpu";
	int		 rc;

	if ((rc = fb_find_python(cfg, python, sizeof(python), err, sizeof(err))) < 0 ||
	    (rc = fb_env_key(cfg, device, python, env)) < 0)
		return rc;
	/* The environment (python, torch, compilers, arch list, runner), then what else
	 * changes the build: precision, the fast build (another compiler), the code. */
	kb_buf_printf(&key, "env=%s\nprecision=%s\nfast_build=%d\n", env,
		      cfg->eval.precision != NULL ? cfg->eval.precision : "fp32",
		      cfg->runner.fast_build);
	if ((rc = kb_buf_append(&key, code, strlen(code))) < 0) {
		kb_buf_clear(&key);
		return rc;
	}
	kb_sha256_hex(key.p, key.len, sha);
	kb_buf_clear(&key);
	sha[32] = '\0';
	return fb_cache_dir("builds", sha, out, n);
}

bool
fb_build_cacheable(enum fb_status st)
{
	/* What the code alone decides; a timeout, a crash or an env_error may not recur. */
	return st == FB_ST_OK || st == FB_ST_COMPILE_ERROR || st == FB_ST_NO_MODEL_NEW;
}

/* ------------------------------------------------------------ baselines */

/* /proc/cpuinfo's first "model name" ("" where there is none). */
static void
cpu_model(char *out, size_t n)
{
	char	*text = NULL, *p, *end;

	out[0] = '\0';
	if (kb_read_file("/proc/cpuinfo", 1u << 20, &text, NULL) < 0)
		return;
	if ((p = strstr(text, "model name")) != NULL && (p = strchr(p, ':')) != NULL) {
		p += strspn(p, ": \t");
		end = p + strcspn(p, "\n");
		snprintf(out, n, "%.*s", (int)(end - p), p);
	}
	free(text);
}

int
fb_baseline_path(const struct kb_config *cfg, const char *problem_path, const char *device_name,
		 char *out, size_t n)
{
	struct kb_buf	 key = KB_BUF_INIT(FB_BUILD_KEY_CAP);
	char		 python[PATH_MAX], err[512], env[65], sha[65], dir[PATH_MAX], *text = NULL;
	char		 timing[64];
	const char	*device = cfg->eval.device != NULL ? cfg->eval.device : "cpu";
	size_t		 len = 0;
	int		 rc;

	if ((rc = fb_find_python(cfg, python, sizeof(python), err, sizeof(err))) < 0 ||
	    (rc = fb_env_key(cfg, device, python, env)) < 0 ||
	    (rc = kb_read_file(problem_path, FB_BUILD_KEY_CAP / 2, &text, &len)) < 0)
		return rc;
	/* Everything the reference's timing depends on: the problem's content, the device
	 * model, the environment (python, torch and CUDA under it), precision, the
	 * timing settings and where the inputs are made (the same seed gives other
	 * tensors on the GPU); on the CPU, the threads an execution gets (feedback/env.c). */
	fb_timing_method(cfg, timing, sizeof(timing));
	kb_buf_printf(&key, "env=%s\ndevice_name=%s\nprecision=%s\nperf_trials=%ld\nwarmup=%ld\n"
		      "seed=%ld\ntiming=%s\ncompile=%d\ninputs=%s\ntf32=%d\n", env, device_name,
		      cfg->eval.precision != NULL ? cfg->eval.precision : "fp32",
		      cfg->eval.perf_trials, cfg->eval.warmup, cfg->eval.seed, timing,
		      cfg->eval.baseline_compile,
		      cfg->eval.inputs != NULL && strcmp(device, "cpu") != 0 ? cfg->eval.inputs :
		      "host", cfg->eval.allow_tf32);
	if (strcmp(device, "cpu") == 0) {
		char model[256];

		/* On the CPU the device model is the processor's: shards of one run on
		 * different nodes never share a reference timing. */
		cpu_model(model, sizeof(model));
		kb_buf_printf(&key, "cpu_threads=%ld\ncpu_model=%s\n", fb_cpu_threads(cfg), model);
	}
	rc = kb_buf_append(&key, text, len);
	free(text);
	if (rc < 0) {
		kb_buf_clear(&key);
		return rc;
	}
	kb_sha256_hex(key.p, key.len, sha);
	kb_buf_clear(&key);
	sha[32] = '\0';
	if ((rc = fb_cache_dir("baselines", NULL, dir, sizeof(dir))) < 0)
		return rc;
	return snprintf(out, n, "%s/%s.json", dir, sha) >= (int)n ? -KB_ETOOBIG : 0;
}

json_t *
fb_baseline_record(const char *problem, const char *device_name, const struct fb_outcome *o)
{
	json_t	*d = json_object_get(o->result, "details");
	json_t	*timing = json_object_get(o->result, "timing");

	return json_pack("{s:s, s:s, s:O?, s:O?, s:O?, s:s, s:O?, s:O?, s:O?}", "problem",
			 problem, "device_name", device_name, "eager",
			 json_object_get(timing, "reference"), "compile",
			 json_object_get(timing, "reference_compile"), "env",
			 json_object_get(o->result, "env"), "status", fb_status_name(o->status),
			 "message", json_object_get(d, "message"), "stage",
			 json_object_get(d, "stage"), "fix", json_object_get(d, "fix"));
}
