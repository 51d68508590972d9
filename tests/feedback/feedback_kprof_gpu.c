/*
 * feedback_kprof_gpu.c: the PROFILE step on a real GPU under the CUPTI injection library
 * (fb_profile): the profile of a CUDA load_inline candidate has the candidate's own
 * kernel on top with its launch configuration and registers, read back from the library's
 * JSON after the runner ended; the metrics run adds counters or says in one line why it
 * could not; the reference's profile is ATen's kernels; the P text shows all of it; and
 * the profile rule keeps the honest candidate correct and rejects one whose forward is
 * PyTorch's add alone (custom_kernel_not_run). Skips (77) without a GPU, without a
 * Python with CUDA torch, or when libkforge_kprof.so was not built.
 */
#include <unistd.h>

#include "feedback_testutil.h"

static struct kb_config	cfg;
static char		scratch[2048], work[4096];

static void
dump(const char *what, int rc, const struct fb_outcome *o)
{
	char *s = o->result != NULL ? json_dumps(o->result, JSON_INDENT(1)) : NULL;

	fprintf(stderr, "%s: rc %d, status %s, %lld ms\n%s\n", what, rc, fb_status_name(o->status),
		(long long)o->wall_ms, s != NULL ? s : "");
	if (rc == 0 && o->status != FB_ST_OK && o->log != NULL)
		fprintf(stderr, "--- log ---\n%s\n", o->log);
	free(s);
}

/* mode for candidate (NULL: the reference) with its own build directory; profile steps
 * through fb_profile, others through fb_run. */
static int
step(enum fb_mode mode, const char *candidate, const char *build, struct fb_outcome *o)
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
	req.profile_reference = candidate == NULL;
	rc = mode == FB_PROFILE ? fb_profile(&cfg, &req, candidate != NULL ? "kprof-cand" :
					     "kprof-ref", o) : fb_run(&cfg, &req, o);
	dump(candidate != NULL ? candidate : "reference", rc, o);
	return rc;
}

static json_t *
judged_correct(void)
{
	json_t	*r = json_pack("{s:s, s:b, s:b, s:[], s:{s:s}}", "status", "ok", "compiled", 1,
			       "correct", 1, "flags", "details", "message", "correct");

	CHECK(fb_judge(r, NULL, NULL) == FB_VERDICT_CORRECT);
	return r;
}

int
main(void)
{
	struct fb_outcome	 o = { 0 };
	char			 py[4096], err[1024], lib[4096], build_cuda[4096], build_torch[4096];
	char			 path[4096], *source = NULL, *text;
	json_t			*prof, *ref = NULL, *top, *result;
	const char		*cap, *name, *mst;

	if (!fbt_have_gpu()) {
		fprintf(stderr, "SKIP: no GPU (/dev/nvidia0, nvidia-smi -L)\n");
		return 77;
	}
	if (fb_kprof_library(lib, sizeof(lib)) < 0) {
		fprintf(stderr, "SKIP: libkforge_kprof.so was not built (CUPTI not found?)\n");
		return 77;
	}
	fbt_config(&cfg, "cuda");
	if (fb_find_python(&cfg, py, sizeof(py), err, sizeof(err)) < 0) {
		fprintf(stderr, "SKIP: %s\n", err);
		return 77;
	}
	fprintf(stderr, "library: %s\n", lib);
	fbt_scratch(scratch, sizeof(scratch), "feedback_kprof_gpu");
	snprintf(build_cuda, sizeof(build_cuda), "%s/build-cuda", scratch);
	snprintf(build_torch, sizeof(build_torch), "%s/build-torch", scratch);
	snprintf(work, sizeof(work), "%s/work", scratch);
	kb_mkdir_p(build_cuda, 0755);
	kb_mkdir_p(build_torch, 0755);
	kb_mkdir_p(work, 0755);

	CHECK(step(FB_PROBE, NULL, NULL, &o) == 0 && o.status == FB_ST_OK);
	cap = json_string_value(json_object_get(json_object_get(o.result, "env"), "capability"));
	free(cfg.eval.arch_list);
	cfg.eval.arch_list = kb_strdup(cap != NULL ? cap : "9.0");
	fb_outcome_clear(&o);

	/* the honest CUDA candidate: its add_kernel is the top kernel, launched 64x256 */
	CHECK(step(FB_PRECOMPILE, "cand_cuda_add.py", build_cuda, &o) == 0 && o.status == FB_ST_OK);
	fb_outcome_clear(&o);
	CHECK(step(FB_PROFILE, "cand_cuda_add.py", build_cuda, &o) == 0 && o.status == FB_ST_OK);
	prof = json_object_get(o.result, "profile");
	top = json_array_get(json_object_get(prof, "kernels"), 0);
	name = json_string_value(json_object_get(top, "short"));
	CHECK(strcmp(json_string_value(json_object_get(prof, "source")) ?: "", "cupti") == 0);
	CHECK(strcmp(json_string_value(json_object_get(prof, "status")) ?: "", "ok") == 0);
	CHECK(json_is_true(json_object_get(prof, "complete")) &&
	      json_is_false(json_object_get(prof, "partial")));
	CHECK(name != NULL && strstr(name, "add_kernel") != NULL);
	CHECK(json_integer_value(json_object_get(top, "calls")) ==
	      json_integer_value(json_object_get(prof, "iterations")));
	CHECK(json_integer_value(json_array_get(json_object_get(top, "grid"), 0)) == 64 &&
	      json_integer_value(json_array_get(json_object_get(top, "block"), 0)) == 256);
	CHECK(json_integer_value(json_object_get(top, "registers")) > 0);
	CHECK(json_array_size(json_object_get(top, "streams")) == 1);
	/* metrics: counters where permitted, else one status saying why, never a failure */
	mst = json_string_value(json_object_get(prof, "metrics_status"));
	CHECK(mst != NULL);
	if (mst != NULL && strcmp(mst, "ok") == 0)
		CHECK(json_is_object(json_object_get(top, "metrics")));
	fprintf(stderr, "metrics: %s (%s)\n", mst ? mst : "-",
		json_string_value(json_object_get(prof, "metrics_message")) ?: "");

	/* the reference's profile: ATen's kernel, none of the candidate's */
	{
		struct fb_outcome r = { 0 };

		CHECK(step(FB_PROFILE, NULL, NULL, &r) == 0 && r.status == FB_ST_OK);
		ref = json_incref(json_object_get(r.result, "profile"));
		top = json_array_get(json_object_get(ref, "kernels"), 0);
		CHECK(strstr(json_string_value(json_object_get(top, "name")) ?: "", "at::") != NULL);
		/* a trace alone: nothing reads the reference's counters */
		CHECK(json_object_get(ref, "metrics_status") == NULL &&
		      json_object_get(top, "metrics") == NULL);
		fb_outcome_clear(&r);
	}
	text = fb_profile_feedback(&cfg, prof, ref);
	fprintf(stderr, "--- P text\n%s", text != NULL ? text : "(none)\n");
	CHECK(text != NULL && strstr(text, "Profile (CUPTI, ") == text &&
	      strstr(text, "add_kernel") != NULL && strstr(text, "64x1x1") != NULL &&
	      strstr(text, "The reference model (PyTorch) for comparison") != NULL);
	free(text);
	fbt_data(path, sizeof(path), "cand_cuda_add.py");
	CHECK(kb_read_file(path, 1 << 20, &source, NULL) == 0);
	result = judged_correct();
	CHECK(fb_judge_profile(result, prof, ref, source) == FB_VERDICT_CORRECT);
	CHECK(json_is_true(json_object_get(json_object_get(json_object_get(result, "details"),
				"profile_check"), "custom_kernel_ran")));
	json_decref(result);
	free(source);
	source = NULL;
	fb_outcome_clear(&o);

	/* a candidate whose forward is torch.add alone: correct output, rejected by the
	 * profile rule */
	CHECK(step(FB_PRECOMPILE, "cand_torch_add.py", build_torch, &o) == 0 &&
	      o.status == FB_ST_OK);
	fb_outcome_clear(&o);
	CHECK(step(FB_PROFILE, "cand_torch_add.py", build_torch, &o) == 0 && o.status == FB_ST_OK);
	prof = json_object_get(o.result, "profile");
	CHECK(json_array_size(json_object_get(prof, "kernels")) > 0);
	fbt_data(path, sizeof(path), "cand_torch_add.py");
	CHECK(kb_read_file(path, 1 << 20, &source, NULL) == 0);
	result = judged_correct();
	CHECK(fb_judge_profile(result, prof, ref, source) == FB_VERDICT_REJECTED);
	CHECK(kb_json_has_string(json_object_get(result, "flags"), "custom_kernel_not_run"));
	text = fb_verdict_feedback(result);
	fprintf(stderr, "--- verdict text\n%s", text != NULL ? text : "(none)\n");
	CHECK(text != NULL && strstr(text, "custom_kernel_not_run") != NULL);
	free(text);
	json_decref(result);
	free(source);
	fb_outcome_clear(&o);
	json_decref(ref);
	kb_config_clear(&cfg);
	return failures > 0 ? 1 : 0;
}
