/*
 * feedback_text.c: fb_exec_feedback and fb_profile_feedback on hand-made results — the
 * App. D.3 wording per status, and truncation to refinement.feedback_max_chars keeping
 * the tail of long compiler output. No Python needed.
 */
#include "feedback_testutil.h"

static struct fb_outcome
outcome(enum fb_status st, const char *json)
{
	struct fb_outcome	o;
	json_error_t		jerr;

	memset(&o, 0, sizeof(o));
	o.status = st;
	o.runtime_ms = o.ref_runtime_ms = o.speedup = -1;
	o.result = json_loads(json, 0, &jerr);
	if (o.result == NULL) {
		fprintf(stderr, "bad test json: %s\n", jerr.text);
		exit(1);
	}
	return o;
}

static void
test_truncation(struct kb_config *cfg)
{
	struct kb_buf		 out = KB_BUF_INIT(0);
	struct fb_outcome	 o;
	json_t			*details;
	char			*text, *m;
	size_t			 dropped;

	/* 20000 characters of compiler output whose last line is the real error. */
	for (int i = 0; i < 400; i++)
		kb_buf_printf(&out, "note: line %05d of noisy template instantiation output\n", i);
	kb_buf_printf(&out, "main.cpp:6:20: error: 'undeclared_identifier_xyz' was not declared");
	o = outcome(FB_ST_COMPILE_ERROR, "{\"status\": \"compile_error\", \"mode\": \"precompile\","
		    " \"details\": {\"message\": \"Compilation failed\"}}");
	details = json_object_get(o.result, "details");
	json_object_set_new(details, "compiler_output", json_string(out.p));

	cfg->refinement.feedback_max_chars = 1000;
	text = fb_exec_feedback(cfg, &o);
	CHECK(strlen(text) <= 1000);
	CHECK(strlen(text) >= 990);
	CHECK(strncmp(text, "Compilation failed:\n[... ", 25) == 0);
	CHECK((m = strstr(text, " characters truncated ...]\n")) != NULL);
	dropped = strtoul(text + 25, NULL, 10);
	/* What was dropped plus what was kept is the whole output. */
	if (m != NULL)
		CHECK(dropped + strlen(m + strlen(" characters truncated ...]\n")) == out.len);
	CHECK(strstr(text, "'undeclared_identifier_xyz' was not declared") != NULL);
	CHECK(strstr(text, "line 00000") == NULL);
	free(text);

	cfg->refinement.feedback_max_chars = 100000;
	text = fb_exec_feedback(cfg, &o);
	CHECK(strlen(text) == strlen("Compilation failed:\n") + out.len);
	CHECK(strstr(text, "truncated") == NULL);
	free(text);

	/* A cap smaller than the head: the head alone, cut. */
	cfg->refinement.feedback_max_chars = 10;
	text = fb_exec_feedback(cfg, &o);
	CHECK(strcmp(text, "Compilatio") == 0);
	free(text);
	cfg->refinement.feedback_max_chars = 4000;
	fb_outcome_clear(&o);
	kb_buf_clear(&out);
}

static void
test_wording(struct kb_config *cfg)
{
	struct fb_outcome	 o;
	char			*text;

	o = outcome(FB_ST_OK, "{\"status\": \"ok\", \"mode\": \"execute\", \"correct\": true}");
	o.correct = true;
	o.runtime_ms = 1.25;
	o.ref_runtime_ms = 2.5;
	o.speedup = 2.0;
	text = fb_exec_feedback(cfg, &o);
	CHECK(strcmp(text, "Your kernel is correct. Wall-clock time: 1.25 ms (reference: 2.5 ms, "
		     "speedup 2x).") == 0);
	free(text);
	o.ref_runtime_ms = o.speedup = -1;
	text = fb_exec_feedback(cfg, &o);
	CHECK(strcmp(text, "Your kernel is correct. Wall-clock time: 1.25 ms.") == 0);
	free(text);
	fb_outcome_clear(&o);

	o = outcome(FB_ST_TIMEOUT, "{\"status\": \"timeout\", \"mode\": \"execute\"}");
	text = fb_exec_feedback(cfg, &o);
	CHECK(strcmp(text, "Your kernel execution timed out") == 0);
	free(text);
	fb_outcome_clear(&o);

	o = outcome(FB_ST_VALUE_MISMATCH,
		    "{\"status\": \"value_mismatch\", \"mode\": \"execute\", \"flags\": [],"
		    " \"details\": {\"message\": \"m\", \"trials_passed\": 3, \"trials_total\": 5,"
		    " \"trials\": [{\"trial\": 1, \"ok\": true, \"max_abs_diff\": 0, \"avg_abs_diff\": 0},"
		    " {\"trial\": 2, \"ok\": false, \"max_abs_diff\": 0.125, \"avg_abs_diff\": 0.0625},"
		    " {\"trial\": 3, \"ok\": false, \"max_abs_diff\": \"nan\", \"avg_abs_diff\": \"nan\"}]}}");
	text = fb_exec_feedback(cfg, &o);
	CHECK(strcmp(text, "Your kernel produced incorrect results (3 of 5 correctness trials "
		     "passed).\nTrial 2: max_abs_diff=0.125, avg_abs_diff=0.0625\n"
		     "Trial 3: max_abs_diff=nan, avg_abs_diff=nan\n") == 0);
	free(text);
	fb_outcome_clear(&o);

	o = outcome(FB_ST_CUDA_ERROR,
		    "{\"status\": \"cuda_error\", \"mode\": \"execute\", \"details\": {\"message\":"
		    " \"ModelNew forward failed\", \"exception\": \"RuntimeError: CUDA error: an "
		    "illegal memory access was encountered\", \"traceback\": \"\"}}");
	text = fb_exec_feedback(cfg, &o);
	CHECK(strcmp(text, "Your kernel failed with a CUDA error:\nRuntimeError: CUDA error: an "
		     "illegal memory access was encountered") == 0);
	free(text);
	fb_outcome_clear(&o);

	o = outcome(FB_ST_CRASHED,
		    "{\"status\": \"crashed\", \"mode\": \"execute\", \"details\": {\"message\":"
		    " \"runner killed by signal 11 (SIGSEGV)\", \"log_tail\": \"Fatal Python "
		    "error: Segmentation fault\"}}");
	text = fb_exec_feedback(cfg, &o);
	CHECK(strcmp(text, "Your kernel crashed the evaluation process: runner killed by signal "
		     "11 (SIGSEGV)\nFatal Python error: Segmentation fault") == 0);
	free(text);
	fb_outcome_clear(&o);

	o = outcome(FB_ST_OK, "{\"status\": \"ok\", \"mode\": \"precompile\"}");
	text = fb_exec_feedback(cfg, &o);
	CHECK(strcmp(text, "Your kernel compiled successfully.") == 0);
	free(text);
	fb_outcome_clear(&o);
}

static void
test_profile(struct kb_config *cfg)
{
	json_t	*p;
	char	*text;

	CHECK(fb_profile_feedback(cfg, NULL) == NULL);
	p = json_loads("{\"kernels\": []}", 0, NULL);
	CHECK(fb_profile_feedback(cfg, p) == NULL);
	json_decref(p);

	p = json_loads("{\"source\": \"torch.profiler\", \"device\": \"cuda\", \"iterations\": 5,"
		       " \"kernels\": [{\"name\": \"add_kernel(float const*, float const*, float*, long)\","
		       " \"calls\": 5, \"total_ms\": 0.5, \"mean_ms\": 0.1},"
		       " {\"name\": \"void at::native::elementwise_kernel\", \"calls\": 10,"
		       " \"total_ms\": 0.25, \"mean_ms\": 0.025}]}", 0, NULL);
	text = fb_profile_feedback(cfg, p);
	CHECK(text != NULL);
	if (text != NULL) {
		CHECK(strstr(text, "Profile (torch.profiler, cuda, 5 iterations)") == text);
		CHECK(strstr(text, "    0.5000        5     0.1000  add_kernel(float const*") != NULL);
		CHECK(strstr(text, "    0.2500       10     0.0250  void at::native::") != NULL);
	}
	free(text);
	/* The cap drops whole rows. */
	cfg->refinement.feedback_max_chars = 160;
	text = fb_profile_feedback(cfg, p);
	CHECK(text != NULL && strlen(text) <= 160 && strstr(text, "add_kernel") == NULL);
	free(text);
	cfg->refinement.feedback_max_chars = 4000;
	json_decref(p);
}

int
main(void)
{
	struct kb_config	cfg;

	fbt_config(&cfg, "cpu");
	test_truncation(&cfg);
	test_wording(&cfg);
	test_profile(&cfg);
	kb_config_clear(&cfg);
	return failures > 0 ? 1 : 0;
}
