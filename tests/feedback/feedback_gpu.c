/*
 * feedback_gpu.c: the runner on a real GPU through fb_run — probe, precompile of a CUDA
 * load_inline kernel with the GPU hidden, execute from the same build (correct, CUDA-event
 * timing, reference timed alongside), profile, baseline (eager and torch.compile), and an
 * illegal memory access reported as cuda_error with the GPU healthy again for the next
 * process. Skips (77) without /dev/nvidia0 or a working `nvidia-smi -L`.
 */
#include <signal.h>
#include <unistd.h>

#include "feedback_testutil.h"

static struct kb_config	cfg;
static char		build[4096], work[4096], scratch[2048];

static int
run(enum fb_mode mode, const char *candidate, bool time_ref, struct fb_outcome *o)
{
	char			 prob[4096], cand[4096];
	struct fb_request	 req = { 0 };
	int			 rc;

	fbt_data(prob, sizeof(prob), "problem_add.py");
	if (candidate != NULL)
		fbt_data(cand, sizeof(cand), candidate);
	req.mode = mode;
	req.problem_path = prob;
	req.candidate_path = candidate != NULL ? cand : NULL;
	req.build_dir = candidate != NULL ? build : NULL;
	req.work_dir = work;
	req.device_index = mode == FB_PRECOMPILE ? -1 : 0;
	req.time_reference = time_ref;
	rc = fb_run(&cfg, &req, o);
	{
		char *s = o->result != NULL ? json_dumps(o->result, JSON_INDENT(1)) : NULL;

		fprintf(stderr, "mode %d %s: rc %d, status %s, %lld ms\n%s\n", (int)mode,
			candidate != NULL ? candidate : "-", rc, fb_status_name(o->status),
			(long long)o->wall_ms, s != NULL ? s : "");
		if (rc == 0 && o->status != FB_ST_OK)
			fprintf(stderr, "--- log ---\n%s\n", o->log);
		free(s);
	}
	return rc;
}

int
main(void)
{
	struct fb_outcome	 o = { 0 };
	pid_t			 server = 0, ahead = 0;
	char			 py[4096], err[1024], so[4096 + 64], *text;
	const char		*cap;
	json_t			*cand, *kernels, *k, *pair;
	json_int_t		 passes;
	int64_t			 t_so;
	size_t			 i;
	bool			 found;

	if (!fbt_have_gpu()) {
		fprintf(stderr, "SKIP: no GPU (/dev/nvidia0, nvidia-smi -L)\n");
		return 77;
	}
	fbt_config(&cfg, "cuda");
	if (fb_find_python(&cfg, py, sizeof(py), err, sizeof(err)) < 0) {
		fprintf(stderr, "SKIP: %s\n", err);
		return 77;
	}
	fbt_scratch(scratch, sizeof(scratch), "feedback_gpu");
	snprintf(build, sizeof(build), "%s/build", scratch);
	snprintf(work, sizeof(work), "%s/work", scratch);
	kb_mkdir_p(build, 0755);
	kb_mkdir_p(work, 0755);

	/* probe: the device's name and compute capability, which becomes the arch list */
	CHECK(run(FB_PROBE, NULL, false, &o) == 0);
	CHECK(o.status == FB_ST_OK);
	cap = json_string_value(json_object_get(json_object_get(o.result, "env"), "capability"));
	CHECK(cap != NULL);
	CHECK(json_is_string(json_object_get(json_object_get(o.result, "env"), "device_name")));
	free(cfg.eval.arch_list);
	cfg.eval.arch_list = kb_strdup(cap != NULL ? cap : "9.0");
	fb_outcome_clear(&o);

	/* precompile with the GPU hidden, then execute from the same build */
	CHECK(run(FB_PRECOMPILE, "cand_cuda_add.py", false, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.compiled);
	fb_outcome_clear(&o);
	snprintf(so, sizeof(so), "%s/kforge_test_cuda_ext/kforge_test_cuda_ext.so", build);
	CHECK((t_so = fbt_mtime_ns(so)) > 0);

	CHECK(run(FB_EXECUTE, "cand_cuda_add.py", true, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	CHECK(o.runtime_ms > 0 && o.ref_runtime_ms > 0 && o.speedup > 0);
	CHECK(fbt_mtime_ns(so) == t_so);
	cand = json_object_get(json_object_get(o.result, "timing"), "candidate");
	CHECK(strcmp(json_string_value(json_object_get(cand, "method")), "cuda_event") == 0);
	/* perf_trials a pass, passes added while the speedup's interval is wide */
	pair = json_object_get(json_object_get(o.result, "timing"), "pair");
	passes = json_integer_value(json_object_get(pair, "passes"));
	CHECK(passes >= 1 && passes <= fb_timing_preset(&cfg)->max_passes[1]);
	CHECK(json_integer_value(json_object_get(cand, "trials")) == 10 * passes);
	/* each pass logged */
	CHECK(json_array_size(json_object_get(pair, "pass_log")) == (size_t)passes);
	CHECK(json_is_number(json_object_get(json_object_get(cand, "stream_check"),
					     "host_median_ms")));
	text = fb_exec_feedback(&cfg, &o);
	fprintf(stderr, "feedback: %s\n", text);
	CHECK(strstr(text, "Your kernel is correct. Wall-clock time: ") == text);
	CHECK(strstr(text, "speedup") != NULL);
	free(text);

	CHECK(!fbt_flagged(&o, "side_stream_suspected"));
	CHECK(strcmp(json_string_value(json_object_get(json_object_get(o.result, "details"),
						       "input_placement")), "host") == 0);
	fb_outcome_clear(&o);

	/* inputs made on the GPU: the same judgement, from tensors that were never copied */
	free(cfg.eval.inputs);
	cfg.eval.inputs = kb_strdup("device");
	CHECK(run(FB_EXECUTE, "cand_cuda_add.py", true, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct && o.speedup > 0);
	CHECK(strcmp(json_string_value(json_object_get(json_object_get(o.result, "details"),
						       "input_placement")), "device") == 0);
	fb_outcome_clear(&o);
	free(cfg.eval.inputs);
	cfg.eval.inputs = kb_strdup("host");

	/* work hidden on a side stream is correct but flagged */
	CHECK(run(FB_EXECUTE, "cand_side_stream.py", true, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	CHECK(fbt_flagged(&o, "side_stream_suspected"));
	fb_outcome_clear(&o);

	/* profile: our kernel among the CUDA kernels */
	CHECK(run(FB_PROFILE, "cand_cuda_add.py", false, &o) == 0);
	CHECK(o.status == FB_ST_OK);
	kernels = json_object_get(json_object_get(o.result, "profile"), "kernels");
	found = false;
	json_array_foreach(kernels, i, k)
		found = found || strstr(json_string_value(json_object_get(k, "name")), "add_kernel");
	CHECK(found);
	text = fb_profile_feedback(&cfg, json_object_get(o.result, "profile"), NULL);
	CHECK(text != NULL && strstr(text, "add_kernel") != NULL);
	fprintf(stderr, "%s", text != NULL ? text : "(no profile text)\n");
	free(text);
	fb_outcome_clear(&o);

	/* baseline: eager, and torch.compile where it works */
	CHECK(run(FB_BASELINE, NULL, false, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.ref_runtime_ms > 0);
	fb_outcome_clear(&o);

	/* Runners forked from a fork server, as a worker's are (warm.c): one server, which
	 * never touches CUDA, makes the precompile's runner, which sees no GPU, and the
	 * execute's and the profile's, which see the GPU; each a fresh fork. */
	CHECK(fb_adopt_strays() == 0);
	fb_warm_enable();
	cfg.runner.warm = true;
	cfg.refinement.feedback_p = true;
	fb_warm_start(&cfg);
	CHECK(fb_warm_pid() > 0);
	CHECK((server = fbt_fork_server()) > 0);
	CHECK(run(FB_PRECOMPILE, "cand_cuda_add.py", false, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.compiled);
	CHECK(strcmp(fbt_detail(&o, "start"), "forked") == 0);
	fb_outcome_clear(&o);
	CHECK(fbt_fork_server() == server && (ahead = fb_warm_pid()) > 0);
	CHECK(run(FB_EXECUTE, "cand_cuda_add.py", true, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct && o.speedup > 0);
	CHECK(strcmp(fbt_detail(&o, "start"), "forked") == 0);
	CHECK(json_integer_value(json_object_get(json_object_get(o.result, "env"),
						 "gpu_count")) == 1);
	CHECK(json_is_string(json_object_get(json_object_get(o.result, "env"), "device_name")));
	fb_outcome_clear(&o);
	CHECK(fbt_fork_server() == server && fb_warm_pid() > 0 && fb_warm_pid() != ahead);
	CHECK(run(FB_PROFILE, "cand_cuda_add.py", false, &o) == 0);
	CHECK(o.status == FB_ST_OK && strcmp(fbt_detail(&o, "start"), "forked") == 0);
	CHECK(json_array_size(json_object_get(json_object_get(o.result, "profile"),
					      "kernels")) > 0);
	fb_outcome_clear(&o);
	CHECK(fbt_fork_server() == server);
	fb_warm_end();
	CHECK(server > 0 && kill(server, 0) == -1);
	cfg.runner.warm = false;
	cfg.refinement.feedback_p = false;

	/* an illegal memory access: cuda_error, and the next process finds the GPU fine */
	CHECK(run(FB_EXECUTE, "cand_cuda_oob.py", false, &o) == 0);
	CHECK(o.status == FB_ST_CUDA_ERROR || o.status == FB_ST_CRASHED);
	CHECK(o.status == FB_ST_CUDA_ERROR);
	CHECK(fbt_mtime_ns(so) == t_so);
	fb_outcome_clear(&o);
	CHECK(run(FB_PROBE, NULL, false, &o) == 0);
	CHECK(o.status == FB_ST_OK);
	fb_outcome_clear(&o);

	kb_config_clear(&cfg);
	return fbt_finish(scratch);
}
