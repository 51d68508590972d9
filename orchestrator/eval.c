/* eval.c: `kforge eval` — one kernel against one problem, through the same runner steps
 * as a run's turn (precompile, baseline, execute), like KernelBench's run_and_check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feedback/feedback.h"
#include "orchestrator/orch_int.h"

static const char eval_defaults[] =
	"name: eval\n"
	"problems: {dir: .}\n"
	"llm: {provider: replay, replay_dir: .}\n";

int
orch_cmd_eval(const char *problem, const char *kernel, const char *device,
	      const char *const *sets, int nsets, bool as_json)
{
	struct kb_config	 cfg;
	struct fb_request	 req = { 0 };
	struct fb_outcome	 pre = { 0 }, base = { 0 }, ex = { 0 };
	char			 err[512], tmpl[PATH_MAX], build[PATH_MAX], work[PATH_MAX];
	char			 prob[PATH_MAX], kern[PATH_MAX];
	const char		*tmp = getenv("TMPDIR");
	json_t			*gpus = NULL, *out, *flags;
	double			 ref_ms = -1, speedup = -1;
	struct fb_outcome	*final;
	int			 rc, code = 1;

	if (realpath(problem, prob) == NULL || realpath(kernel, kern) == NULL) {
		fprintf(stderr, "kforge: cannot open '%s': %s\n",
			realpath(problem, prob) == NULL ? problem : kernel, strerror(errno));
		return 2;
	}
	if (orch_config_load_string(eval_defaults, strlen(eval_defaults), "kforge eval", sets,
				    nsets, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 2;
	}
	if (device != NULL) {
		free(cfg.eval.device);
		cfg.eval.device = kb_strdup(device);
	}
	if (orch_resolve_devices(&cfg, &gpus, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		goto out_cfg;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/kforge-eval-XXXXXX", tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(tmpl) == NULL) {
		fprintf(stderr, "kforge: cannot create a scratch directory: %s\n", strerror(errno));
		goto out_cfg;
	}
	/* mkdtemp made it 0700; the runner may run as another user (runner.user). Where
	 * that user cannot reach it (nor the problem and the kernel), fb_run works in a
	 * staging directory of its own. */
	(void)chmod(tmpl, 0755);
	if (fb_contain_setup(&cfg, err, sizeof(err)) < 0 ||
	    fb_stage_open(tmpl, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		goto out_clean;
	}
	fb_stage_build_dir(tmpl, "candidate", build, sizeof(build));
	fb_stage_work_dir(tmpl, "eval", work, sizeof(work));

	req.problem_path = prob;
	req.candidate_path = kern;
	req.build_dir = build;
	req.work_dir = work;
	req.device_index = -1;
	req.mode = FB_PRECOMPILE;
	if ((rc = fb_run(&cfg, &req, &pre)) < 0)
		goto out_fail;
	final = &pre;
	if (pre.status == FB_ST_OK) {
		req.device_index = strcmp(cfg.eval.device, "cuda") == 0 ?
			(int)json_integer_value(json_object_get(
				json_array_get(json_object_get(gpus, "devices"), 0), "index")) : -1;
		req.mode = FB_BASELINE;
		if ((rc = fb_run(&cfg, &req, &base)) < 0)
			goto out_fail;
		if (json_is_object(json_object_get(json_object_get(base.result, "timing"), "reference")))
			ref_ms = json_number_value(json_object_get(json_object_get(
				json_object_get(base.result, "timing"), "reference"), "mean_ms"));
		req.mode = FB_EXECUTE;
		if ((rc = fb_run(&cfg, &req, &ex)) < 0)
			goto out_fail;
		final = &ex;
		if (ex.correct && ex.runtime_ms > 0 && ref_ms > 0)
			speedup = ref_ms / ex.runtime_ms;
	}
	flags = json_object_get(final->result, "flags");
	flags = json_is_array(flags) ? json_incref(flags) : json_array();
	if (speedup > 10.0)
		json_array_append_new(flags, json_string("excessive_speedup"));
	out = json_pack("{s:s, s:b, s:b, s:o, s:o, s:o, s:o, s:s, s:O}", "status",
			fb_status_name(final->status), "compiled", final->compiled || final == &ex,
			"correct", final->correct, "flags", flags, "runtime_ms",
			final->runtime_ms > 0 ? json_real(final->runtime_ms) : json_null(),
			"ref_runtime_ms", ref_ms > 0 ? json_real(ref_ms) : json_null(), "speedup",
			speedup > 0 ? json_real(speedup) : json_null(), "device", cfg.eval.device,
			"result", final->result);
	if (as_json) {
		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
	} else {
		char *text = fb_exec_feedback(&cfg, final);

		printf("status: %s%s\n", fb_status_name(final->status),
		       final->correct ? " (correct)" : "");
		if (final->runtime_ms > 0)
			printf("runtime: %.4f ms\n", final->runtime_ms);
		if (ref_ms > 0)
			printf("reference: %.4f ms\n", ref_ms);
		if (speedup > 0)
			printf("speedup: %.3fx\n", speedup);
		if (json_array_size(flags) > 0) {
			char *f = json_dumps(flags, JSON_COMPACT);

			printf("flags: %s\n", f);
			free(f);
		}
		printf("\n%s\n", text);
		free(text);
	}
	json_decref(out);
	code = 0;
	goto out_clean;
out_fail:
	fprintf(stderr, "kforge: evaluation failed: %s\n", kb_strerror(rc));
out_clean:
	fb_outcome_clear(&pre);
	fb_outcome_clear(&base);
	fb_outcome_clear(&ex);
	/* The scratch directory stays when KFORGE_KEEP is set, for a look at the build. */
	(void)fb_stage_close(getenv("KFORGE_KEEP") == NULL);
	if (getenv("KFORGE_KEEP") == NULL) {
		const char *argv[] = { "/bin/rm", "-rf", tmpl, NULL };
		const char *envp[] = { NULL };
		struct kb_spawn_opts	o = { 0 };
		struct kb_spawn_result	r = { 0 };

		o.argv = argv;
		o.envp = envp;
		o.timeout_ms = 60000;
		kb_spawn_run(&o, &r);
		kb_spawn_result_clear(&r);
	}
out_cfg:
	json_decref(gpus);
	kb_config_clear(&cfg);
	return code;
}
