/*
 * feedback_verdict.c: the verdict policy (feedback/verdict.c) on hand-made results: each
 * verdict and the reasons that lead to it, the excessive-speedup threshold applied once,
 * broken rules winning over a correct output, the rejection record of static findings,
 * and the feedback text the model reads. No Python needed.
 */
#include <math.h>

#include "feedback_testutil.h"

static json_t *
parse(const char *text)
{
	json_error_t	 jerr;
	json_t		*v = json_loads(text, 0, &jerr);

	if (v == NULL) {
		fprintf(stderr, "bad test json: %s\n", jerr.text);
		exit(1);
	}
	return v;
}

/* Whether result's reasons name rule. */
static bool
names(const json_t *result, const char *rule)
{
	json_t	*r;
	size_t	 i;

	json_array_foreach(json_object_get(result, "reasons"), i, r)
		if (strcmp(json_string_value(json_object_get(r, "rule")) ?: "", rule) == 0)
			return true;
	return false;
}

static enum fb_verdict
judge(const char *result_json, const char *findings_json, double speedup, json_t **out)
{
	json_t		*findings = findings_json != NULL ? parse(findings_json) : NULL;
	enum fb_verdict	 v;

	json_t		*baseline = NULL;

	/* speedup > 0: a candidate timed alone at 1 ms against a baseline's reference. */
	*out = parse(result_json);
	if (speedup > 0) {
		json_object_set_new(*out, "timing", json_pack("{s:{s:f}}", "candidate", "mean_ms",
							      1.0));
		baseline = json_pack("{s:{s:f}}", "eager", "mean_ms", speedup);
	}
	v = fb_judge(*out, findings, baseline);
	json_decref(findings);
	json_decref(baseline);
	if (speedup > 0 && v != FB_VERDICT_INCORRECT && v != FB_VERDICT_REJECTED)
		CHECK(fabs(json_number_value(json_object_get(*out, "speedup")) - speedup) < 1e-12);
	CHECK(strcmp(json_string_value(json_object_get(*out, "verdict")) ?: "",
		     fb_verdict_name(v)) == 0);
	return v;
}

static void
test_verdicts(void)
{
	json_t	*r;

	CHECK(judge("{\"status\": \"ok\", \"correct\": true, \"flags\": []}", NULL, 2.0, &r) ==
	      FB_VERDICT_CORRECT);
	CHECK(json_array_size(json_object_get(r, "reasons")) == 0);
	json_decref(r);

	/* Wrong output: incorrect, and the status is the reason. */
	CHECK(judge("{\"status\": \"value_mismatch\", \"correct\": false}", NULL, -1, &r) ==
	      FB_VERDICT_INCORRECT);
	CHECK(names(r, "value_mismatch"));
	json_decref(r);

	/* The threshold is applied here, once: above it, suspect; at it, not. */
	CHECK(judge("{\"status\": \"ok\", \"correct\": true}", NULL, FB_EXCESSIVE_SPEEDUP + 0.5,
		    &r) == FB_VERDICT_SUSPECT);
	CHECK(names(r, "excessive_speedup"));
	CHECK(json_array_size(json_object_get(r, "flags")) == 1);
	json_decref(r);
	CHECK(judge("{\"status\": \"ok\", \"correct\": true}", NULL, FB_EXCESSIVE_SPEEDUP, &r) ==
	      FB_VERDICT_CORRECT);
	json_decref(r);
	/* The runner flagged it already: not twice. */
	CHECK(judge("{\"status\": \"ok\", \"correct\": true, \"flags\": [\"excessive_speedup\"]}",
		    NULL, 50, &r) == FB_VERDICT_SUSPECT);
	CHECK(json_array_size(json_object_get(r, "flags")) == 1);
	json_decref(r);

	CHECK(judge("{\"status\": \"ok\", \"correct\": true, \"flags\": "
		    "[\"side_stream_suspected\"]}", NULL, 3, &r) == FB_VERDICT_SUSPECT);
	CHECK(names(r, "side_stream_suspected"));
	json_decref(r);

	/* The judge's rules: a reference slowed beside the candidate and a time below the
	 * physical floor reject; the outside clock's disagreement is a suspicion. */
	CHECK(judge("{\"status\": \"ok\", \"correct\": true, \"flags\": "
		    "[\"reference_slowed\"]}", NULL, 3, &r) == FB_VERDICT_REJECTED);
	CHECK(names(r, "reference_slowed"));
	json_decref(r);
	CHECK(judge("{\"status\": \"ok\", \"correct\": true, \"flags\": "
		    "[\"below_physical_floor\"]}", NULL, 3, &r) == FB_VERDICT_REJECTED);
	CHECK(names(r, "below_physical_floor"));
	json_decref(r);
	CHECK(judge("{\"status\": \"ok\", \"correct\": true, \"flags\": "
		    "[\"timers_disagree\"]}", NULL, 3, &r) == FB_VERDICT_SUSPECT);
	CHECK(names(r, "timers_disagree"));
	json_decref(r);

	/* A broken rule wins over a correct output, and over a wrong one. */
	CHECK(judge("{\"status\": \"ok\", \"correct\": true, \"flags\": [\"torch_patched\", "
		    "\"excessive_speedup\"]}", NULL, 30, &r) == FB_VERDICT_REJECTED);
	CHECK(names(r, "torch_patched") && !names(r, "excessive_speedup"));
	json_decref(r);
	CHECK(judge("{\"status\": \"value_mismatch\", \"correct\": false, \"flags\": "
		    "[\"stray_processes\"]}", NULL, -1, &r) == FB_VERDICT_REJECTED);
	CHECK(names(r, "stray_processes"));
	json_decref(r);

	/* Flags about the problem or the machine leave the verdict alone. */
	CHECK(judge("{\"status\": \"ok\", \"correct\": true, \"flags\": [\"degenerate_output\", "
		    "\"timing_error\", \"out_of_memory\"]}", NULL, 1.2, &r) == FB_VERDICT_CORRECT);
	json_decref(r);

	/* Static findings: a warning makes a correct result suspect (with its line), an
	 * error rejects it; a warning on a wrong result leaves it incorrect. */
	CHECK(judge("{\"status\": \"ok\", \"correct\": true}",
		    "[{\"rule\": \"torch_compute\", \"severity\": \"warning\", \"line\": 31, "
		    "\"message\": \"line 31: forward calls torch.matmul\"}]", 1.1, &r) ==
	      FB_VERDICT_SUSPECT);
	CHECK(names(r, "torch_compute"));
	CHECK(json_integer_value(json_object_get(json_array_get(json_object_get(r, "reasons"), 0),
						 "line")) == 31);
	CHECK(json_array_size(json_object_get(r, "findings")) == 1);
	json_decref(r);
	CHECK(judge("{\"status\": \"ok\", \"correct\": true}",
		    "[{\"rule\": \"concurrency\", \"severity\": \"error\", \"line\": 4, "
		    "\"message\": \"line 4: imports threading\"}]", 1.1, &r) == FB_VERDICT_REJECTED);
	json_decref(r);
	CHECK(judge("{\"status\": \"runtime_error\", \"correct\": false}",
		    "[{\"rule\": \"torch_compute\", \"severity\": \"warning\", \"line\": 9, "
		    "\"message\": \"line 9: forward calls torch.relu\"}]", -1, &r) ==
	      FB_VERDICT_INCORRECT);
	CHECK(!names(r, "torch_compute") && names(r, "runtime_error"));
	json_decref(r);
}

/* A correct result whose pair was timed by its medians (the CPU's statistic), with both
 * models' means and medians and the interval [lo, hi]; the pair's ratios follow. */
static json_t *
median_pair(double cand_mean, double cand_median, double ref_mean, double ref_median,
	    double lo, double hi)
{
	return json_pack("{s:s, s:b, s:{s:{s:f, s:f}, s:{s:f, s:f}, s:{s:s, s:[f, f], s:f, s:f}}}",
			 "status", "ok", "correct", 1, "timing",
			 "candidate", "mean_ms", cand_mean, "median_ms", cand_median,
			 "reference", "mean_ms", ref_mean, "median_ms", ref_median,
			 "pair", "statistic", "median", "ci95", lo, hi,
			 "mean_speedup", ref_mean / cand_mean,
			 "median_speedup", ref_median / cand_median);
}

/* The speedup is settled in fb_judge: the runner's reference, timed beside the candidate,
 * by the pair's statistic (means, or medians on the CPU), over a baseline's; the excessive flag by the lower of the ratios of means and of
 * medians; no speedup for a wrong result. */
static void
test_speedup(void)
{
	json_t	*base = parse("{\"eager\": {\"mean_ms\": 100.0}}");
	json_t	*r;

	/* In-process pair: 12x by the means (a few slow reference calls), 1.1x by the
	 * medians: not flagged; the speedup reported is the means'. */
	r = parse("{\"status\": \"ok\", \"correct\": true, \"timing\": {\"candidate\": "
		  "{\"mean_ms\": 1.0}, \"reference\": {\"mean_ms\": 12.0}, \"pair\": "
		  "{\"ci95\": [7.5, 19.0], \"median_speedup\": 1.1}}}");
	CHECK(fb_judge(r, NULL, base) == FB_VERDICT_CORRECT);
	CHECK(fabs(json_number_value(json_object_get(r, "speedup")) - 12.0) < 1e-12);
	CHECK(fabs(json_number_value(json_object_get(r, "ref_runtime_ms")) - 12.0) < 1e-12);
	CHECK(fabs(json_number_value(json_object_get(r, "runtime_ms")) - 1.0) < 1e-12);
	CHECK(json_number_value(json_array_get(json_object_get(r, "speedup_ci95"), 0)) == 7.5);
	CHECK(!names(r, "excessive_speedup"));
	json_decref(r);
	/* Above it by both, however wide the interval (a few slow calls cannot hide it). */
	r = parse("{\"status\": \"ok\", \"correct\": true, \"timing\": {\"candidate\": "
		  "{\"mean_ms\": 1.0}, \"reference\": {\"mean_ms\": 12.0}, \"pair\": "
		  "{\"ci95\": [0.5, 90.0], \"median_speedup\": 400.0}}}");
	CHECK(fb_judge(r, NULL, base) == FB_VERDICT_SUSPECT);
	CHECK(names(r, "excessive_speedup"));
	json_decref(r);
	/* A pair timed by its medians (the CPU's statistic): the speedup and the reference's
	 * time are the medians'; 12x by the medians, 1.5x by the means: not flagged. */
	r = median_pair(8.0, 1.0, 12.0, 12.0, 10.0, 14.0);
	CHECK(fb_judge(r, NULL, base) == FB_VERDICT_CORRECT);
	CHECK(fabs(json_number_value(json_object_get(r, "speedup")) - 12.0) < 1e-12);
	CHECK(fabs(json_number_value(json_object_get(r, "ref_runtime_ms")) - 12.0) < 1e-12);
	CHECK(fabs(json_number_value(json_object_get(r, "runtime_ms")) - 1.0) < 1e-12);
	CHECK(!names(r, "excessive_speedup"));
	json_decref(r);
	/* ... and above it by both: suspect. */
	r = median_pair(1.0, 0.5, 12.0, 12.0, 20.0, 28.0);
	CHECK(fb_judge(r, NULL, base) == FB_VERDICT_SUSPECT);
	CHECK(fabs(json_number_value(json_object_get(r, "speedup")) - 24.0) < 1e-12);
	CHECK(names(r, "excessive_speedup"));
	json_decref(r);
	/* Timed alone: the baseline's reference, no interval (100x: suspect). */
	r = parse("{\"status\": \"ok\", \"correct\": true, \"timing\": {\"candidate\": "
		  "{\"mean_ms\": 1.0}}}");
	CHECK(fb_judge(r, NULL, base) == FB_VERDICT_SUSPECT);
	CHECK(fabs(json_number_value(json_object_get(r, "speedup")) - 100.0) < 1e-12);
	CHECK(json_is_null(json_object_get(r, "speedup_ci95")));
	json_decref(r);
	/* Wrong: no speedup, whatever the timings; the reference's time is still told. */
	r = parse("{\"status\": \"value_mismatch\", \"correct\": false, \"timing\": "
		  "{\"candidate\": {\"mean_ms\": 0.01}}}");
	CHECK(fb_judge(r, NULL, base) == FB_VERDICT_INCORRECT);
	CHECK(json_is_null(json_object_get(r, "speedup")) && !names(r, "excessive_speedup"));
	CHECK(fabs(json_number_value(json_object_get(r, "ref_runtime_ms")) - 100.0) < 1e-12);
	json_decref(r);
	/* No baseline and no reference: no speedup. */
	r = parse("{\"status\": \"ok\", \"correct\": true, \"timing\": {\"candidate\": "
		  "{\"mean_ms\": 1.0}}}");
	CHECK(fb_judge(r, NULL, NULL) == FB_VERDICT_CORRECT);
	CHECK(json_is_null(json_object_get(r, "speedup")));
	json_decref(r);
	json_decref(base);
}

static void
test_rejection_and_text(void)
{
	json_t	*findings = parse("[{\"rule\": \"inherits_reference\", \"severity\": \"error\", "
				  "\"line\": 12, \"message\": \"line 12: ModelNew inherits Model\"},"
				  "{\"rule\": \"torch_compute\", \"severity\": \"warning\", "
				  "\"line\": 20, \"message\": \"forward calls torch.relu\"}]");
	json_t	*warn_only = parse("[{\"rule\": \"torch_compute\", \"severity\": \"warning\", "
				   "\"line\": 20, \"message\": \"forward calls torch.relu\"}]");
	json_t	*r;
	char	*text;

	CHECK(fb_findings_reject(findings));
	CHECK(!fb_findings_reject(warn_only));
	CHECK(!fb_findings_reject(NULL));

	r = fb_rejection(findings);
	CHECK(strcmp(json_string_value(json_object_get(r, "status")), "rejected") == 0);
	CHECK(json_is_false(json_object_get(r, "compiled")));
	CHECK(strcmp(json_string_value(json_object_get(r, "verdict")), "rejected") == 0);
	CHECK(names(r, "inherits_reference"));
	CHECK(strstr(json_string_value(json_object_get(json_object_get(r, "details"), "message")),
		     "ModelNew inherits Model") != NULL);
	text = fb_verdict_feedback(r);
	CHECKM(text != NULL && strstr(text, "was rejected") != NULL &&
	       strstr(text, "- line 12: ModelNew inherits Model (inherits_reference)") != NULL,
	       "rejection text: %s", text ?: "(null)");
	/* The checker's message names its line: not said twice. */
	CHECK(text == NULL || strstr(text, "line 12: line 12") == NULL);
	free(text);
	json_decref(r);

	/* A suspect result lists its reasons, the line added where the message lacks it. */
	r = parse("{\"status\": \"ok\", \"correct\": true}");
	(void)fb_judge(r, warn_only, NULL);
	text = fb_verdict_feedback(r);
	CHECKM(text != NULL && strstr(text, "suspect") != NULL &&
	       strstr(text, "- line 20: forward calls torch.relu (torch_compute)") != NULL,
	       "suspect text: %s", text ?: "(null)");
	free(text);
	json_decref(r);

	/* Correct with nothing to say: no text. */
	r = parse("{\"status\": \"ok\", \"correct\": true}");
	(void)fb_judge(r, NULL, NULL);
	CHECK(fb_verdict_feedback(r) == NULL);
	json_decref(r);
	json_decref(findings);
	json_decref(warn_only);
}

static json_t *
fixture(const char *name)
{
	char	 path[4096];
	json_t	*v;

	fbt_data(path, sizeof(path), name);
	if ((v = json_load_file(path, 0, NULL)) == NULL) {
		fprintf(stderr, "cannot load %s\n", path);
		exit(1);
	}
	return v;
}

static bool
has_flag(const json_t *result, const char *flag)
{
	return kb_json_has_string(json_object_get(result, "flags"), flag);
}

/* A correct execute result as EXECUTE judged it (result.json before PROFILE). */
static json_t *
correct_result(void)
{
	json_t	*r = parse("{\"status\": \"ok\", \"compiled\": true, \"correct\": true, "
			   "\"flags\": [], \"details\": {\"message\": \"correct\"}, \"timing\": "
			   "{\"candidate\": {\"mean_ms\": 1.0}, \"reference\": {\"mean_ms\": 2.0}}}");
	json_t	*none = parse("[]");

	CHECK(fb_judge(r, none, NULL) == FB_VERDICT_CORRECT);
	json_decref(none);
	return r;
}

static const char relu_source[] =
	"import torch\nfrom torch.utils.cpp_extension import load_inline\n"
	"src = r'''\n__global__ void relu_kernel(const float* x, float* y, long n) {}\n"
	"template <int T>\n__global__ void __launch_bounds__(256, 2)\ntiled_gemm(const float* a) {}\n"
	"'''\n";

/* kernel i of profile p */
static json_t *
kernel_at(json_t *p, size_t i)
{
	return json_array_get(json_object_get(p, "kernels"), i);
}

/* The profile rule (fb_judge_profile) on synthetic kernel lists, through fb_judge. */
static void
test_profile_rule(void)
{
	json_t		*r, *p, *ref = fixture("kprof_reference.json"), *list, *check, *k;
	enum fb_verdict	 v;
	char		*text;

	/* what a source defines */
	list = fb_source_kernels(relu_source);
	CHECK(json_array_size(list) == 2 &&
	      strcmp(json_string_value(json_array_get(list, 0)), "relu_kernel") == 0 &&
	      strcmp(json_string_value(json_array_get(list, 1)), "tiled_gemm") == 0);
	json_decref(list);
	list = fb_source_kernels("extern \"C\" __global__ void k1(int *p) {}\n"
				 "__global__ void __launch_bounds__(THREADS)\nmatmul_regtile(float *a);\n"
				 "int not__global__x(void);\n"
				 "@triton.jit\ndef add_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n");
	CHECK(json_array_size(list) == 3 && kb_json_has_string(list, "k1") &&
	      kb_json_has_string(list, "matmul_regtile") && kb_json_has_string(list, "add_kernel"));
	json_decref(list);

	/* honest: its own kernels ran on one stream: unchanged */
	r = correct_result();
	p = fixture("kprof_full.json");
	v = fb_judge_profile(r, p, ref, relu_source);
	check = json_object_get(json_object_get(r, "details"), "profile_check");
	CHECK(v == FB_VERDICT_CORRECT && !has_flag(r, "custom_kernel_not_run") &&
	      !has_flag(r, "side_stream"));
	CHECK(json_is_true(json_object_get(check, "judged")) &&
	      json_is_true(json_object_get(check, "custom_kernel_ran")));
	CHECK(json_array_size(json_object_get(check, "kernels")) == 3 &&
	      json_is_true(json_object_get(json_array_get(json_object_get(check, "kernels"), 0), "own")) &&
	      json_is_false(json_object_get(json_array_get(json_object_get(check, "kernels"), 2), "own")));
	CHECK(json_array_size(json_object_get(check, "streams")) == 1);
	CHECK(fb_verdict_feedback(r) == NULL);

	/* its kernel did not run: only ATen's did -> rejected, and the model hears why */
	json_array_remove(json_object_get(p, "kernels"), 0);
	json_array_remove(json_object_get(p, "kernels"), 0);
	v = fb_judge_profile(r, p, ref, relu_source);
	CHECK(v == FB_VERDICT_REJECTED && has_flag(r, "custom_kernel_not_run") &&
	      names(r, "custom_kernel_not_run"));
	text = fb_verdict_feedback(r);
	CHECK(text != NULL && strstr(text, "This kernel was rejected") == text &&
	      strstr(text, "none of its own kernels running") != NULL &&
	      strstr(text, "(custom_kernel_not_run)") != NULL);
	free(text);
	/* a source without kernels and a profile of torch's alone: the same */
	v = fb_judge_profile(r, p, ref, "import torch\nclass ModelNew(torch.nn.Module): pass\n");
	CHECK(v == FB_VERDICT_REJECTED && has_flag(r, "custom_kernel_not_run"));
	/* a kernel torch did not launch counts as its own, named in the source or not */
	k = json_deep_copy(kernel_at(p, 0));
	json_object_set_new(k, "name", json_string("fused_op_kernel(float*)"));
	json_object_set_new(k, "short", json_string("fused_op_kernel"));
	json_array_append_new(json_object_get(p, "kernels"), k);
	v = fb_judge_profile(r, p, ref, "");
	CHECK(v == FB_VERDICT_CORRECT && !has_flag(r, "custom_kernel_not_run"));
	json_array_remove(json_object_get(p, "kernels"), 1);
	/* unnamed kernels beyond the list may be its: not judged so */
	json_object_set_new(p, "other", json_pack("{s:i, s:i, s:i}", "kernels", 2, "calls", 4,
						  "total_ns", 100));
	v = fb_judge_profile(r, p, ref, relu_source);
	CHECK(v == FB_VERDICT_CORRECT);
	json_decref(p);

	/* a partial, a failed or a torch.profiler profile proves nothing: unchanged */
	p = fixture("kprof_full.json");
	json_array_remove(json_object_get(p, "kernels"), 0);
	json_array_remove(json_object_get(p, "kernels"), 0);
	json_object_set_new(p, "complete", json_false());
	v = fb_judge_profile(r, p, ref, relu_source);
	check = json_object_get(json_object_get(r, "details"), "profile_check");
	CHECK(v == FB_VERDICT_CORRECT && json_is_false(json_object_get(check, "judged")) &&
	      strcmp(json_string_value(json_object_get(check, "why")) ?: "", "a partial profile") == 0);
	json_object_set_new(p, "complete", json_true());
	json_object_set_new(p, "status", json_string("cupti_busy"));
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_CORRECT);
	json_object_set_new(p, "status", json_string("ok"));
	json_object_set_new(p, "source", json_string("torch.profiler"));
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_CORRECT);
	CHECK(fb_judge_profile(r, NULL, NULL, relu_source) == FB_VERDICT_CORRECT);
	json_decref(p);

	/* kernels on two streams: suspect, unless the reference's are on two as well */
	p = fixture("kprof_full.json");
	json_array_append_new(json_object_get(kernel_at(p, 1), "streams"), json_integer(13));
	v = fb_judge_profile(r, p, ref, relu_source);
	CHECK(v == FB_VERDICT_SUSPECT && has_flag(r, "side_stream") && names(r, "side_stream"));
	check = json_object_get(json_object_get(r, "details"), "profile_check");
	CHECK(json_array_size(json_object_get(check, "streams")) == 2 &&
	      json_integer_value(json_object_get(check, "reference_streams")) == 1);
	text = fb_verdict_feedback(r);
	CHECK(text != NULL && strstr(text, "suspect") != NULL && strstr(text, "(side_stream)") != NULL);
	free(text);
	json_array_append_new(json_object_get(kernel_at(ref, 0), "streams"), json_integer(9));
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_CORRECT &&
	      !has_flag(r, "side_stream"));
	/* a broken rule wins over a suspicion; judging again replaces both */
	json_decref(ref);
	ref = fixture("kprof_reference.json");
	json_array_remove(json_object_get(p, "kernels"), 0);
	json_array_remove(json_object_get(p, "kernels"), 0);
	json_array_append_new(json_object_get(kernel_at(p, 0), "streams"), json_integer(13));
	v = fb_judge_profile(r, p, ref, relu_source);
	CHECK(v == FB_VERDICT_REJECTED && has_flag(r, "side_stream") &&
	      has_flag(r, "custom_kernel_not_run"));
	json_decref(p);
	p = fixture("kprof_full.json");
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_CORRECT &&
	      json_array_size(json_object_get(r, "flags")) == 0);
	json_decref(p);
	json_decref(r);

	/* the third timer: the kernels CUPTI saw in a call (kprof_full.json: 1.35 ms over 5
	 * calls, 0.27 ms a call) against the events' time of a call in the timing */
	r = correct_result();
	p = fixture("kprof_full.json");
	json_object_set_new(json_object_get(json_object_get(r, "timing"), "candidate"),
			    "method", json_string("cuda_event"));
	json_object_set_new(json_object_get(json_object_get(r, "timing"), "candidate"),
			    "median_ms", json_real(0.26));
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_CORRECT &&
	      !has_flag(r, "timers_disagree"));
	json_object_set_new(json_object_get(json_object_get(r, "timing"), "candidate"),
			    "median_ms", json_real(0.1));
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_SUSPECT &&
	      has_flag(r, "timers_disagree") && names(r, "timers_disagree"));
	check = json_object_get(json_object_get(r, "details"), "profile_check");
	CHECK(fabs(json_number_value(json_object_get(check, "cupti_ms_per_call")) - 0.27) < 1e-9);
	/* judged again with agreeing timers: the profile's part goes; the judge's own stays */
	json_object_set_new(json_object_get(json_object_get(r, "timing"), "candidate"),
			    "median_ms", json_real(0.3));
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_CORRECT);
	json_object_set_new(json_object_get(r, "details"), "timers",
			    json_pack("{s:f, s:f, s:f}", "excess_ms", 5.0, "reference_excess_ms", 1.0,
				      "allowed_ms", 0.5));
	json_array_append_new(json_object_get(r, "flags"), json_string("timers_disagree"));
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_SUSPECT &&
	      has_flag(r, "timers_disagree"));
	json_decref(p);
	json_decref(r);

	/* an incorrect result stays incorrect whatever its profile says */
	r = parse("{\"status\": \"value_mismatch\", \"compiled\": true, \"correct\": false, "
		  "\"flags\": []}");
	p = fixture("kprof_full.json");
	CHECK(fb_judge_profile(r, p, ref, relu_source) == FB_VERDICT_INCORRECT);
	json_decref(p);
	json_decref(r);
	json_decref(ref);
}

/* The library's JSON read back from the scratch directory: the runner's own file first,
 * else the most complete one of the tag; another tag's never. */
static void
test_kprof_read(void)
{
	char	 dir[4096], path[4200];
	json_t	*p;

	fbt_scratch(dir, sizeof(dir), "kprof-read");
	CHECK(fb_kprof_read(dir, "kprof-t1", 100) == NULL);
#define PUT_(name, text) do { snprintf(path, sizeof(path), "%s/%s", dir, name); \
			      CHECK(kb_write_atomic(path, text, strlen(text)) == 0); } while (0)
	PUT_("kprof-t1.100.json", "{\"launches\": 3, \"complete\": false, \"who\": \"runner\"}");
	PUT_("kprof-t1.101.json", "{\"launches\": 9, \"complete\": true, \"who\": \"child\"}");
	PUT_("kprof-t1.102.json", "{\"launches\": 50, \"complete\": false, \"who\": \"torn\"}");
	PUT_("kprof-t1.103.json", "[1, 2]");
	PUT_("kprof-t1-metrics.100.json", "{\"launches\": 99, \"complete\": true, \"who\": \"m\"}");
	PUT_("kprof-t1.104.json.tmp", "{\"launches\": 999, \"complete\": true, \"who\": \"tmp\"}");
#undef PUT_
	p = fb_kprof_read(dir, "kprof-t1", 100);
	CHECK(strcmp(json_string_value(json_object_get(p, "who")) ?: "", "runner") == 0);
	json_decref(p);
	p = fb_kprof_read(dir, "kprof-t1", 0);
	CHECK(strcmp(json_string_value(json_object_get(p, "who")) ?: "", "child") == 0);
	json_decref(p);
	p = fb_kprof_read(dir, "kprof-t1-metrics", 7);
	CHECK(strcmp(json_string_value(json_object_get(p, "who")) ?: "", "m") == 0);
	json_decref(p);
}

int
main(void)
{
	test_verdicts();
	test_profile_rule();
	test_kprof_read();
	test_speedup();
	test_rejection_and_text();
	return failures ? 1 : 0;
}
