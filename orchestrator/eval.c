/* eval.c: `kforge eval` — one kernel against one problem, through the same runner steps
 * as a run's turn (precompile, baseline, execute), like KernelBench's run_and_check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feedback/feedback.h"
#include "llm/llm.h"
#include "orchestrator/orch_int.h"
#include "base/banned.h"

static const char eval_defaults[] =
	"name: eval\n"
	"problems: {dir: .}\n"
	"llm: {provider: replay, replay_dir: .}\n";

/*
 * The exit statuses of `kforge eval`, for scripts: one row per status, with the result
 * statuses (feedback.h's closed set, plus "rejected" and "env_error" of the verdicts)
 * that give it. orch_cmd_eval exits with them and `kforge eval --help` lists them.
 */
enum {
	EVAL_EXIT_CORRECT = 0,
	EVAL_EXIT_INCORRECT = 1,
	EVAL_EXIT_USAGE = 2,
	EVAL_EXIT_NOT_BUILT = 3,
	EVAL_EXIT_FAILED = 4,
	EVAL_EXIT_ENV = 5,
	EVAL_EXIT_SUSPECT = 6,
};

static const struct eval_exit {
	int		 code;
	const char	*meaning;
	const char	*statuses;	/* space-separated; NULL: no result status */
} eval_exits[] = {
	{ EVAL_EXIT_CORRECT, "correct", "ok" },
	{ EVAL_EXIT_INCORRECT, "incorrect: wrong output", "shape_mismatch value_mismatch" },
	{ EVAL_EXIT_USAGE, "usage error: a bad option or --set, an unreadable file, a reply "
	  "with no code", NULL },
	{ EVAL_EXIT_NOT_BUILT, "did not compile, or was rejected",
	  "compile_error no_model_new rejected" },
	{ EVAL_EXIT_FAILED, "failed when run: an exception, a crash or a timeout (and any "
	  "status not listed)", "runtime_error cuda_error timeout crashed" },
	{ EVAL_EXIT_ENV, "the environment failed, not the kernel: no Python with torch, no "
	  "GPU, no compiler", "env_error" },
	{ EVAL_EXIT_SUSPECT, "correct but suspect: flagged for review (verdict suspect; "
	  "reasons in the output)", NULL },
};
#define N_EVAL_EXITS (sizeof(eval_exits) / sizeof(eval_exits[0]))

static bool
word_in(const char *word, const char *list)
{
	size_t	n = strlen(word);

	for (const char *p = list; p != NULL && (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

/* The verdict decides first: a rejected kernel did not pass whatever it printed, and a
 * suspect one is not simply correct; then the status says how an incorrect one failed. */
static int
eval_exit_code(const char *status, enum fb_verdict verdict)
{
	if (verdict == FB_VERDICT_REJECTED)
		return EVAL_EXIT_NOT_BUILT;
	if (verdict == FB_VERDICT_SUSPECT)
		return EVAL_EXIT_SUSPECT;
	if (verdict == FB_VERDICT_CORRECT)
		return EVAL_EXIT_CORRECT;
	for (size_t i = 0; i < N_EVAL_EXITS; i++)
		if (word_in(status, eval_exits[i].statuses))
			/* "ok" without correct: checked, and not found right */
			return eval_exits[i].code == EVAL_EXIT_CORRECT ? EVAL_EXIT_INCORRECT :
			       eval_exits[i].code;
	return EVAL_EXIT_FAILED;
}

/* The runner's per-precision tolerances: its line "TOLERANCE = {...}", which it keeps
 * one line of JSON-compatible text for this. NULL when it cannot be read. */
static json_t *
runner_tolerances(void)
{
	static const char	 key[] = "\nTOLERANCE = ";
	char			 path[PATH_MAX], *text = NULL, *at;
	json_t			*tol = NULL;

	if (kb_path_join(path, sizeof(path), kb_home(), "feedback/kforge_runner.py") == 0 &&
	    kb_read_file(path, 1 << 20, &text, NULL) == 0 && (at = strstr(text, key)) != NULL) {
		at += sizeof(key) - 1;
		tol = json_loadb(at, strcspn(at, "\n"), 0, NULL);
		if (!json_is_object(tol)) {
			json_decref(tol);
			tol = NULL;
		}
	}
	free(text);
	return tol;
}

void
orch_eval_help(FILE *fp)
{
	struct kb_config	 cfg;
	char			 err[512];
	json_t			*tol = runner_tolerances(), *v;
	const char		*prec;
	char			 preset[512];

	fprintf(fp, "\nexit status:\n");
	for (size_t i = 0; i < N_EVAL_EXITS; i++)
		fprintf(fp, "  %d  %s\n%s%s%s", eval_exits[i].code, eval_exits[i].meaning,
		       eval_exits[i].statuses ? "     status: " : "",
		       eval_exits[i].statuses ?: "", eval_exits[i].statuses ? "\n" : "");
	if (orch_config_load_string(eval_defaults, strlen(eval_defaults), "kforge eval", NULL,
				    0, &cfg, err, sizeof(err)) < 0) {
		fprintf(fp, "\n(the defaults cannot be shown: %s)\n", err);
		json_decref(tol);
		return;
	}
	fprintf(fp, "\ndefaults (--set eval.KEY=VALUE changes one):\n"
	       "  eval.device %s, eval.precision %s\n"
	       "  eval.correctness_trials %ld, inputs seeded from eval.seed %ld\n"
	       "  eval.warmup %ld runs, then eval.perf_trials %ld timed trials (mean reported)\n"
	       "  eval.timeout_s %ld per run (from the runner's start, after torch's import),"
	       " eval.compile_timeout_s %ld for the build\n"
	       "  eval.format %s (KernelBench's torch.utils.cpp_extension.load_inline; raw: kernels\n"
	       "    built with kforge's load_cuda or load_cpp, as the demo's replies in\n"
	       "    configs/demo_responses/raw/ are; a kernel in the other format is refused\n"
	       "    as no_custom_kernel with a line saying so)\n",
	       cfg.eval.device, cfg.eval.precision, cfg.eval.correctness_trials, cfg.eval.seed,
	       cfg.eval.warmup, cfg.eval.perf_trials, cfg.eval.timeout_s,
	       cfg.eval.compile_timeout_s, cfg.eval.format);
	fprintf(fp, "  eval.atol and eval.rtol: the precision's tolerance, ");
	if (tol != NULL) {
		bool first = true;

		json_object_foreach(tol, prec, v) {
			fprintf(fp, "%s%s %g", first ? "" : ", ", prec, json_number_value(v));
			first = false;
		}
		fprintf(fp, "\n");
	} else {
		fprintf(fp, "TOLERANCE in feedback/kforge_runner.py\n");
	}
	fb_timing_describe(&cfg, preset, sizeof(preset));
	fprintf(fp, "  eval.timing_preset %s\n    (%s);\n"
	       "  eval.timing_preset kernelbench: KernelBench's method, one key away;\n"
	       "  eval.timing %s on cuda (cuda_event: CUDA events; host_time; do_bench: Triton's,\n"
	       "  where Triton imports), the host clock on cpu; eval.l2_flush %s;\n"
	       "  eval.timing_hold_us %ld (the GPU spins that many us before each timed call;\n"
	       "  -1: the preset's); the first trial discarded; eval.allow_tf32 %s (fp32);\n"
	       "  the speedup is the ratio of their %s (eval.speedup %s; auto: the preset's),\n"
	       "  with its 95%% interval; excessive_speedup above %gx by the means and the medians\n",
	       cfg.eval.timing_preset, preset, cfg.eval.timing, cfg.eval.l2_flush ? "true" : "false",
	       cfg.eval.timing_hold_us, cfg.eval.allow_tf32 ? "true" : "false",
	       strcmp(fb_speedup_statistic(&cfg, true), "mean") == 0 ? "means" : "medians",
	       cfg.eval.speedup, FB_EXCESSIVE_SPEEDUP);
	json_decref(tol);
	kb_config_clear(&cfg);
}

/* The evaluation's outcome on standard output: JSON (with each step's wall time and
 * whether it was a cache hit, for scripts and tools/bench/inner) or text. */
static void
print_evaluation(const struct kb_config *cfg, struct fb_evaluation *ev, bool as_json)
{
	struct fb_outcome	 o;
	const char		*status = json_string_value(json_object_get(ev->result, "status"));
	json_t			*flags = json_object_get(ev->result, "flags");
	json_t			*ci = json_object_get(ev->result, "speedup_ci95"), *out;
	bool			 executed = ev->executed.result != NULL;

	if (status == NULL)
		status = fb_status_name(ev->status);
	fb_outcome_of_judged(json_incref(ev->result), executed, &o);
	if (as_json) {
		out = json_pack("{s:s, s:s, s:O, s:b, s:b, s:O, s:o, s:o, s:o, s:O, s:s, s:O}",
				"status", status, "verdict", fb_verdict_name(ev->verdict),
				"reasons", json_object_get(ev->result, "reasons"),
				"compiled", !ev->rejected && o.compiled, "correct", o.correct,
				"flags", flags != NULL ? flags : json_array(),
				"runtime_ms", o.runtime_ms > 0 ? json_real(o.runtime_ms) : json_null(),
				"ref_runtime_ms",
				o.ref_runtime_ms > 0 ? json_real(o.ref_runtime_ms) : json_null(),
				"speedup", o.speedup > 0 ? json_real(o.speedup) : json_null(),
				"speedup_ci95", o.speedup > 0 && ci != NULL ? ci : json_null(),
				"device", cfg->eval.device, "result", ev->result);
		json_object_set_new(out, "steps", json_pack("{s:{s:f, s:b}, s:{s:f, s:b}, s:o}",
			"precompile", "wall_s", ev->build.ran.wall_ms / 1000.0, "cache_hit",
			ev->build.cache_hit, "baseline", "wall_s", ev->baseline.wall_ms / 1000.0,
			"cache_hit", ev->baseline.cache_hit, "execute", executed ?
			json_pack("{s:f}", "wall_s", ev->executed.wall_ms / 1000.0) : json_null()));
		if (ev->profile != NULL) {
			json_object_set(out, "profile", ev->profile);
			json_object_set_new(out, "reference_profile",
					    json_incref(ev->reference_profile));
			json_object_set_new(json_object_get(out, "steps"), "profile",
					    json_pack("{s:f}", "wall_s",
						      ev->profile_wall_ms / 1000.0));
		}
		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(out);
	} else {
		char *text = ev->rejected ? NULL : fb_exec_feedback(cfg, &o);
		char *why = fb_verdict_feedback(ev->result);
		char *ptext = ev->profile != NULL ?
			      fb_profile_feedback(cfg, ev->profile, ev->reference_profile) : NULL;

		printf("status: %s%s\n", status, o.correct ? " (correct)" : "");
		printf("verdict: %s\n", fb_verdict_name(ev->verdict));
		if (o.runtime_ms > 0)
			printf("runtime: %.4f ms\n", o.runtime_ms);
		if (o.ref_runtime_ms > 0)
			printf("reference: %.4f ms\n", o.ref_runtime_ms);
		if (o.speedup > 0 && json_array_size(ci) == 2)
			printf("speedup: %.3fx (95%% interval %.3f-%.3fx)\n", o.speedup,
			       json_number_value(json_array_get(ci, 0)),
			       json_number_value(json_array_get(ci, 1)));
		else if (o.speedup > 0)
			printf("speedup: %.3fx\n", o.speedup);
		if (json_array_size(flags) > 0) {
			char *f = json_dumps(flags, JSON_COMPACT);

			printf("flags: %s\n", f);
			free(f);
		}
		if (text != NULL)
			printf("\n%s\n", text);
		if (ptext != NULL)
			printf("\n%s\n", ptext);
		if (why != NULL)
			printf("\n%s", why);
		free(text);
		free(why);
		free(ptext);
	}
	fb_outcome_clear(&o);
}

/* Whether --kernel names a model's reply (a run keeps each as response.md) rather than
 * the Python file itself. */
static bool
is_reply(const char *path)
{
	size_t	n = strlen(path);

	return n > 3 && strcmp(path + n - 3, ".md") == 0;
}

/* The code of a model's reply, taken from it as a run's turn takes it (llm_extract_code,
 * the reply read up to llm.max_response_bytes), written into dir as the candidate; its
 * path into out. -KB_E* with one line on stderr when there is none. */
static int
kernel_from_reply(const struct kb_config *cfg, const char *reply, const char *dir, char *out,
		  size_t n)
{
	char	*text = NULL, *code = NULL;
	size_t	 len;
	int	 rc;

	if ((rc = kb_read_file(reply, (size_t)cfg->llm.max_response_bytes, &text, &len)) < 0) {
		if (rc == -KB_ETOOBIG)
			fprintf(stderr, "kforge: %s exceeds llm.max_response_bytes (%ld bytes)\n",
				reply, cfg->llm.max_response_bytes);
		else
			fprintf(stderr, "kforge: cannot read %s: %s\n", reply, kb_strerror(rc));
		return rc;
	}
	if ((rc = llm_extract_code(text, len, &code)) < 0)
		fprintf(stderr, "kforge: %s: %s (a run's turn would have no kernel)\n", reply,
			LLM_NO_CODE);
	else if ((rc = kb_path_join(out, n, dir, "kernel.py")) < 0 ||
		 (rc = kb_write_atomic(out, code, strlen(code))) < 0)
		fprintf(stderr, "kforge: cannot write the reply's code to %s: %s\n", out,
			kb_strerror(rc));
	free(code);
	free(text);
	return rc;
}

int
orch_cmd_eval(const char *problem, const char *kernel, const char *device,
	      const char *const *sets, int nsets, bool as_json)
{
	struct kb_config	 cfg;
	struct fb_request	 req = { 0 };
	struct fb_evaluation	 ev = { 0 };
	char			 err[512], tmpl[PATH_MAX], build[PATH_MAX], work[PATH_MAX];
	char			 prob[PATH_MAX], kern[PATH_MAX], reply_code[PATH_MAX];
	char			*src = NULL;
	const char		*devname, *candidate = kern;
	json_t			*gpus = NULL, *dev;
	int			 rc, code = EVAL_EXIT_ENV;

	if (realpath(problem, prob) == NULL || realpath(kernel, kern) == NULL) {
		fprintf(stderr, "kforge: cannot open '%s': %s\n",
			realpath(problem, prob) == NULL ? problem : kernel, strerror(errno));
		return EVAL_EXIT_USAGE;
	}
	if (orch_config_load_string(eval_defaults, strlen(eval_defaults), "kforge eval", sets,
				    nsets, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return EVAL_EXIT_USAGE;
	}
	if (device != NULL) {
		free(cfg.eval.device);
		cfg.eval.device = kb_strdup(device);
	}
	if (orch_resolve_devices(&cfg, &gpus, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		goto out_cfg;
	}
	if (fb_contain_setup(&cfg, err, sizeof(err)) < 0 ||
	    fb_contain_sandbox_ready(err, sizeof(err)) < 0 ||
	    fb_stage_scratch("eval", tmpl, sizeof(tmpl), err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		goto out_clean;
	}
	if (is_reply(kern)) {
		if (kernel_from_reply(&cfg, kern, tmpl, reply_code, sizeof(reply_code)) < 0) {
			code = EVAL_EXIT_USAGE;
			goto out_clean;
		}
		candidate = reply_code;
	}
	/* What a run checks before its first request, checked here too, so that both judge
	 * a candidate on the same ground: this machine builds and runs a known-good kernel
	 * (cached per environment: free after the first pass). That selftest is also what
	 * makes the shared cache's precompiled headers where the runner may not write them
	 * (as another user); without it every build of an eval took the original compiler. */
	if (cfg.runner.selftest) {
		struct fb_selftest st = { 0 };

		if ((rc = fb_selftest(&cfg, cfg.eval.device, true, &st)) < 0 || !st.ok) {
			if (rc < 0 && st.message[0] == '\0')
				fprintf(stderr, "kforge: cannot check the environment: %s\n",
					kb_strerror(rc));
			else
				fprintf(stderr, "kforge: environment error (%s): %s; fix: %s\n",
					st.stage, st.message, st.fix);
			goto out_clean;
		}
	}
	/* The shared build cache, as a run's: a build any run or eval made is reused. */
	if (kb_read_file(candidate, FB_BUILD_KEY_CAP / 2, &src, NULL) < 0 ||
	    fb_build_dir(&cfg, src, build, sizeof(build)) < 0)
		fb_stage_build_dir(tmpl, "candidate", build, sizeof(build));
	free(src);
	fb_stage_work_dir(tmpl, "eval", work, sizeof(work));
	if ((rc = fb_stage_mkdir(build)) < 0 || (rc = fb_stage_mkdir(work)) < 0)
		goto out_fail;
	dev = json_array_get(json_object_get(gpus, "devices"), 0);
	devname = strcmp(cfg.eval.device, "cuda") == 0 &&
		  json_is_string(json_object_get(dev, "name")) ?
		  json_string_value(json_object_get(dev, "name")) : cfg.eval.device;
	req.problem_path = prob;
	req.candidate_path = candidate;
	req.build_dir = build;
	req.work_dir = work;
	req.device_index = strcmp(cfg.eval.device, "cuda") == 0 ?
			   (int)json_integer_value(json_object_get(dev, "index")) : -1;
	/* The steps' runners as a worker's: each forked from one server that imports torch
	 * once (feedback/warm.c, fork servers), and that server outlives this eval for the
	 * next (runner.server_idle_s): an eval of a built candidate then costs a fork, not
	 * torch's import. */
	fb_warm_share(&cfg);
	rc = fb_evaluate(&cfg, &req, devname, &ev, err, sizeof(err));
	fb_warm_end();
	if (rc < 0) {
		if (err[0] != '\0')
			fprintf(stderr, "kforge: %s\n", err);
		else
			fprintf(stderr, "kforge: evaluation failed: %s\n", kb_strerror(rc));
		goto out_clean;
	}
	print_evaluation(&cfg, &ev, as_json);
	code = eval_exit_code(json_string_value(json_object_get(ev.result, "status")) ?:
			      fb_status_name(ev.status), ev.verdict);
	goto out_clean;
out_fail:
	fprintf(stderr, "kforge: evaluation failed: %s\n", kb_strerror(rc));
out_clean:
	fb_evaluation_clear(&ev);
	/* The scratch directory stays when KFORGE_KEEP is set, for a look at the build. */
	(void)fb_stage_close(getenv("KFORGE_KEEP") == NULL);
out_cfg:
	json_decref(gpus);
	kb_config_clear(&cfg);
	return code;
}
