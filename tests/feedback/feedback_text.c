/*
 * feedback_text.c: fb_exec_feedback and fb_profile_feedback on hand-made results — the
 * App. D.3 wording per status, and truncation to refinement.feedback_max_chars: long
 * g++ and nvcc output (written here, in the shape those compilers and torch's build
 * print) keeps its first error with its context and its tail, every cut marked and
 * between UTF-8 sequences, at every cap. No Python needed.
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

/* ---------------------------------------------------- first errors kept */

#define SRC	"/runs/demo/build/3f9a/kforge_t2/main.cpp"
#define MAX_ERROR "error: no matching function for call to \xe2\x80\x98max(const float&, double)\xe2\x80\x99"

/* What a load_inline build of a C++ candidate prints when it fails, as the runner
 * passes it on: ninja's command lines, warnings, the one error with gcc's context and
 * source excerpt, pages of candidate notes, ninja's summary, then the Python exception.
 * gcc's quotes are U+2018/U+2019 (three bytes each) in a UTF-8 locale. */
static void
gcc_output(struct kb_buf *b)
{
	const char *cmd = "c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=kforge_t2 "
		"-DTORCH_API_INCLUDE_EXTENSION_H -isystem /usr/lib/python3/dist-packages/torch/include "
		"-isystem /usr/lib/python3/dist-packages/torch/include/torch/csrc/api/include "
		"-isystem /usr/include/python3.11 -D_GLIBCXX_USE_CXX11_ABI=1 -fPIC -std=c++17 -O3 "
		"-c " SRC " -o main.o";

	kb_buf_printf(b, "[1/2] %s\nFAILED: main.o\n%s\n", cmd, cmd);
	for (int i = 0; i < 30; i++)
		kb_buf_printf(b, SRC ":%d:13: warning: unused variable \xe2\x80\x98tmp%d\xe2\x80\x99 "
			      "[-Wunused-variable]\n   %d |         float tmp%d = 0;\n      |"
			      "             ^~~~\n", 40 + i, i, 40 + i, i);
	kb_buf_printf(b, "In file included from /usr/include/c++/12/algorithm:60,\n"
		      "                 from /usr/lib/python3/dist-packages/torch/include/c10/"
		      "util/SmallVector.h:31,\n"
		      "                 from " SRC ":1:\n"
		      SRC ": In function \xe2\x80\x98" "at::Tensor relu_fwd(at::Tensor)\xe2\x80\x99:\n"
		      SRC ":14:34: " MAX_ERROR "\n"
		      "   14 |         out[i] = std::max(in[i], 0.0);\n"
		      "      |                  ~~~~~~~~^~~~~~~~~~~~\n");
	for (int i = 0; i < 40; i++)
		kb_buf_printf(b, "/usr/include/c++/12/bits/stl_algobase.h:%d:5: note: candidate: "
			      "\xe2\x80\x98template<class _Tp> constexpr const _Tp& std::max(const "
			      "_Tp&, const _Tp&)\xe2\x80\x99\n  %d |     max(const _Tp& __a, const _Tp& "
			      "__b)\n      |     ^~~\n/usr/include/c++/12/bits/stl_algobase.h:%d:5: "
			      "note:   template argument deduction/substitution failed:\n", 254 + i,
			      254 + i, 254 + i);
	kb_buf_printf(b, "ninja: build stopped: subcommand failed.\n\nTraceback (most recent call "
		      "last):\n  File \"/usr/lib/python3/dist-packages/torch/utils/cpp_extension.py\", "
		      "line 1900, in _run_ninja_build\n    subprocess.run(\nsubprocess."
		      "CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n"
		      "RuntimeError: Error building extension 'kforge_t2'");
}

/* nvcc's shape: "file(line): error: ..." with its excerpt, then notes and remarks. */
static void
nvcc_output(struct kb_buf *b)
{
	for (int i = 0; i < 25; i++)
		kb_buf_printf(b, "/runs/demo/build/77aa/kforge_t3/cuda.cu(%d): warning #177-D: "
			      "variable \"unused%d\" was declared but never referenced\n"
			      "      int unused%d = 0;\n          ^\n\n", 20 + i, i, i);
	kb_buf_printf(b, "/runs/demo/build/77aa/kforge_t3/cuda.cu(61): error: identifier "
		      "\"blockDimx\" is undefined\n      int i = blockIdx.x * blockDimx + "
		      "threadIdx.x;\n                           ^\n\n");
	for (int i = 0; i < 25; i++)
		kb_buf_printf(b, "/runs/demo/build/77aa/kforge_t3/cuda.cu(%d): remark: "
			      "\xc2\xabloop %d not unrolled\xc2\xbb: trip count unknown\n\n", 70 + i, i);
	kb_buf_printf(b, "1 error detected in the compilation of \"/runs/demo/build/77aa/"
		      "kforge_t3/cuda.cu\".\nninja: build stopped: subcommand failed.\n");
}

/* Reassembles text (after the head) from its kept pieces and the counts its markers
 * give, and checks that it is exactly body: nothing kept was changed and every dropped
 * byte was counted. Returns how many markers there were, -1 when it does not match. */
static int
markers_account_for(const char *text, const char *body)
{
	static const char open[] = "[... ", close[] = " characters truncated ...]\n";
	size_t		  pos = 0, blen = strlen(body);
	int		  markers = 0;

	for (;;) {
		const char	*m = strstr(text, open), *end;
		size_t		 seg = m != NULL ? (size_t)(m - text) : strlen(text);
		char		*num_end;
		unsigned long	 dropped;

		/* A piece cut inside a line gets a newline before its marker. */
		if (pos + seg > blen || memcmp(body + pos, text, seg) != 0) {
			if (m == NULL || seg == 0 || text[seg - 1] != '\n' ||
			    memcmp(body + pos, text, seg - 1) != 0)
				return -1;
			seg--;
		}
		pos += seg;
		if (m == NULL)
			return pos == blen ? markers : -1;
		dropped = strtoul(m + strlen(open), &num_end, 10);
		if (strncmp(num_end, close, strlen(close)) != 0 || dropped == 0)
			return -1;
		end = num_end + strlen(close);
		pos += dropped;
		markers++;
		text = end;
	}
}

static bool
valid_utf8(const char *s)
{
	json_t	*j = json_string(s);

	json_decref(j);
	return j != NULL;
}

/* body as a failed compile's output through fb_exec_feedback at caps from 100 to beyond
 * its length (each up to 1000, then every 7th, which still cuts at every offset of a
 * three-byte sequence): within the cap, valid UTF-8, and every cut accounted for; from
 * cap min_cap on, with the error line whole. */
static void
sweep_caps(struct kb_config *cfg, const char *body, const char *error_line, size_t min_cap)
{
	static const char	 head[] = "Compilation failed:\n";
	struct fb_outcome	 o;
	int			 bad = 0;

	o = outcome(FB_ST_COMPILE_ERROR, "{\"status\": \"compile_error\", \"mode\": \"precompile\","
		    " \"details\": {\"message\": \"Compilation failed\"}}");
	json_object_set_new(json_object_get(o.result, "details"), "compiler_output",
			    json_string(body));
	for (size_t cap = 100; cap <= strlen(body) + 100 && bad < 5;
	     cap += cap < 1000 ? 1 : 7) {
		char	*text;
		bool	 ok;

		cfg->refinement.feedback_max_chars = (long)cap;
		text = fb_exec_feedback(cfg, &o);
		ok = strlen(text) <= cap && valid_utf8(text) &&
		     strncmp(text, head, strlen(head)) == 0 &&
		     markers_account_for(text + strlen(head), body) >= 0 &&
		     (cap < min_cap || strstr(text, error_line) != NULL);
		CHECKM(ok, "cap %zu: %zu bytes, utf8 %d, error line %s:\n%s", cap, strlen(text),
		       valid_utf8(text), strstr(text, error_line) ? "kept" : "lost", text);
		bad += !ok;
		free(text);
	}
	cfg->refinement.feedback_max_chars = 4000;
	fb_outcome_clear(&o);
}

static void
test_first_error(struct kb_config *cfg)
{
	struct kb_buf		 gcc = KB_BUF_INIT(0), nvcc = KB_BUF_INIT(0), huge = KB_BUF_INIT(0);
	struct fb_outcome	 o;
	char			*text;

	gcc_output(&gcc);
	nvcc_output(&nvcc);
	CHECK(gcc.len > 12000 && nvcc.len > 6000);
	/* The default cap, as in the demo that lost the error. */
	o = outcome(FB_ST_COMPILE_ERROR, "{\"status\": \"compile_error\", \"mode\": \"precompile\","
		    " \"details\": {\"message\": \"Compilation failed\"}}");
	json_object_set_new(json_object_get(o.result, "details"), "compiler_output",
			    json_string(gcc.p));
	text = fb_exec_feedback(cfg, &o);
	if (getenv("KB_TEST_VERBOSE") != NULL)
		printf("%s\n", text);
	CHECK(strlen(text) <= 4000 && strlen(text) > 3900);
	CHECK(strstr(text, SRC ":14:34: " MAX_ERROR "\n") != NULL);
	/* the context gcc gives before it and the source excerpt after it */
	CHECK(strstr(text, "In file included from /usr/include/c++/12/algorithm:60,\n") != NULL);
	CHECK(strstr(text, ": In function \xe2\x80\x98" "at::Tensor relu_fwd") != NULL);
	CHECK(strstr(text, "   14 |         out[i] = std::max(in[i], 0.0);\n") != NULL);
	/* the tail too, after a marker; the warnings before the error are what went */
	CHECK(strstr(text, "RuntimeError: Error building extension 'kforge_t2'") != NULL);
	CHECK(strstr(text, "tmp3\xe2\x80\x99") == NULL);
	CHECK(markers_account_for(text + strlen("Compilation failed:\n"), gcc.p) == 2);
	free(text);
	fb_outcome_clear(&o);

	sweep_caps(cfg, gcc.p, MAX_ERROR, 400);
	sweep_caps(cfg, nvcc.p, "cuda.cu(61): error: identifier \"blockDimx\" is undefined", 400);

	/* One error line longer than the room (a candidate's printout, say), multibyte
	 * throughout: its beginning, cut between sequences. */
	kb_buf_printf(&huge, "note: building\nkernel.cpp:1:1: error: ");
	for (int i = 0; i < 3000; i++)
		kb_buf_printf(&huge, "\xe4\xb8\xad");
	kb_buf_printf(&huge, "\nninja: build stopped: subcommand failed.\n");
	sweep_caps(cfg, huge.p, "kernel.cpp:1:1: error: ", 200);
	kb_buf_clear(&gcc);
	kb_buf_clear(&nvcc);
	kb_buf_clear(&huge);
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

	CHECK(fb_profile_feedback(cfg, NULL, NULL) == NULL);
	p = json_loads("{\"kernels\": []}", 0, NULL);
	CHECK(fb_profile_feedback(cfg, p, NULL) == NULL);
	json_decref(p);

	p = json_loads("{\"source\": \"torch.profiler\", \"device\": \"cuda\", \"iterations\": 5,"
		       " \"kernels\": [{\"name\": \"add_kernel(float const*, float const*, float*, long)\","
		       " \"calls\": 5, \"total_ms\": 0.5, \"mean_ms\": 0.1},"
		       " {\"name\": \"void at::native::elementwise_kernel\", \"calls\": 10,"
		       " \"total_ms\": 0.25, \"mean_ms\": 0.025}]}", 0, NULL);
	text = fb_profile_feedback(cfg, p, NULL);
	CHECK(text != NULL);
	if (text != NULL) {
		CHECK(strstr(text, "Profile (torch.profiler, cuda, 5 iterations)") == text);
		CHECK(strstr(text, "    0.5000        5     0.1000  add_kernel(float const*") != NULL);
		CHECK(strstr(text, "    0.2500       10     0.0250  void at::native::") != NULL);
	}
	free(text);
	/* The cap drops whole rows. */
	cfg->refinement.feedback_max_chars = 160;
	text = fb_profile_feedback(cfg, p, NULL);
	CHECK(text != NULL && strlen(text) <= 160 && strstr(text, "add_kernel") == NULL);
	free(text);
	cfg->refinement.feedback_max_chars = 4000;
	json_decref(p);
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

/* The number of lines of text that start with prefix. */
static int
lines_starting(const char *text, const char *prefix)
{
	int	n = 0;

	for (const char *l = text; l != NULL && *l != '\0'; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += strncmp(l, prefix, strlen(prefix)) == 0;
	return n;
}

/* The CUPTI P text (text.c) from the library's JSON (the kprof contract's fixtures). */
static void
test_cupti_profile(struct kb_config *cfg)
{
	json_t	*p = fixture("kprof_full.json"), *ref = fixture("kprof_reference.json"), *k, *ks;
	char	*text, name[600];

	/* full: heading, columns with the measured metrics, rows, copies, hints */
	text = fb_profile_feedback(cfg, p, NULL);
	CHECK(text != NULL);
	if (text != NULL) {
		fprintf(stderr, "--- full\n%s", text);
		CHECK(strstr(text, "Profile (CUPTI, NVIDIA H100 80GB HBM3, 5 forward calls): 15 "
			     "kernel launches, 1.350 ms of kernel time; top kernels:\n") == text);
		CHECK(strstr(text, " dram% achv%") != NULL);
		CHECK(strstr(text, " 74.1%      5    200.00 16384x1x1      256x1x1       64       0"
			     "  50% registers        85    45  relu_kernel\n") != NULL);
		CHECK(strstr(text, "8x1x1          128x1x1      255   49152  25% shared_memory") != NULL);
		CHECK(strstr(text, "  at::native::vectorized_elementwise_kernel\n") != NULL);
		CHECK(strstr(text, "memcpy: 2 copies, 4.19 MB, 0.400 ms; memset: 1, 0.00102 MB, "
			     "0.002 ms\n") != NULL);
		CHECK(strstr(text, "- relu_kernel: memory-bound: DRAM at 85% of peak; occupancy "
			     "50%, limited by registers (64/thread)\n") != NULL);
		CHECK(strstr(text, "- tiled_gemm: occupancy 25%, limited by shared memory (49152 "
			     "B/block); local memory in use (96 B/thread): register spills or a "
			     "stack array; grid of 8 blocks for 132 SMs: most SMs idle\n") != NULL);
		/* a kernel whose numbers say nothing plain gets no line */
		CHECK(strstr(text, "- at::native") == NULL);
		CHECK(strstr(text, "reference model") == NULL);
		CHECK(strstr(text, "other:") == NULL && strstr(text, "Hardware counters") == NULL);
	}
	free(text);

	/* with the reference model's kernels for comparison (the first profiled turn) */
	text = fb_profile_feedback(cfg, p, ref);
	CHECK(text != NULL && strstr(text, "\nThe reference model (PyTorch) for comparison: 5 "
				     "kernel launches, 0.900 ms of kernel time in 5 forward calls:\n") != NULL);
	CHECK(text != NULL && strstr(text, "100.0%      5    180.00 65536x1x1      128x1x1    "
				     "  at::native::vectorized_elementwise_kernel\n") != NULL);
	free(text);
	/* a failed reference profile adds nothing */
	json_object_set_new(ref, "status", json_string("error"));
	text = fb_profile_feedback(cfg, p, ref);
	CHECK(text != NULL && strstr(text, "reference model") == NULL);
	free(text);

	/* partial: still used, and said so */
	json_object_set_new(p, "complete", json_false());
	json_object_set_new(p, "partial", json_true());
	text = fb_profile_feedback(cfg, p, NULL);
	CHECK(text != NULL && strstr(text, "5 forward calls, partial: the runner ended before "
				     "the profile was complete)") != NULL);
	CHECK(text != NULL && strstr(text, "relu_kernel\n") != NULL);
	free(text);
	json_decref(p);

	/* cupti_busy: one line, no table */
	p = fixture("kprof_busy.json");
	text = fb_profile_feedback(cfg, p, NULL);
	CHECK(text != NULL && strcmp(text, "No CUPTI profile this turn: CUPTI is in use by "
				     "another profiler (Kineto).\n") == 0);
	free(text);
	json_object_set_new(p, "status", json_string("version_mismatch"));
	json_object_set_new(p, "message", json_string("CUPTI 13.2 records,\nbuilt for 13.0"));
	text = fb_profile_feedback(cfg, p, NULL);
	CHECK(text != NULL && strcmp(text, "No CUPTI profile this turn (version_mismatch): "
				     "CUPTI 13.2 records, built for 13.0.\n") == 0);
	free(text);
	json_decref(p);

	/* metrics not permitted: the table without counter columns, one line saying so */
	p = fixture("kprof_not_permitted.json");
	text = fb_profile_feedback(cfg, p, NULL);
	CHECK(text != NULL);
	if (text != NULL) {
		fprintf(stderr, "--- not permitted\n%s", text);
		CHECK(strstr(text, "dram%") == NULL && strstr(text, "memory-bound") == NULL);
		CHECK(lines_starting(text, "Hardware counters: not permitted on this host "
				     "(ERR_NVGPUCTRPERM: ") == 1);
		CHECK(strstr(text, "  50% registers      relu_kernel\n") != NULL);
		CHECK(strstr(text, "- relu_kernel: occupancy 50%, limited by registers") != NULL);
	}
	free(text);
	json_decref(p);

	/* caps: at most FB_PROFILE_ROWS rows (the rest summed as other), long names cut,
	 * and never more than feedback_max_chars bytes */
	p = fixture("kprof_full.json");
	ks = json_object_get(p, "kernels");
	memset(name, 'k', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	for (int i = 0; i < 17; i++) {
		k = json_deep_copy(json_array_get(ks, 2));
		json_object_set_new(k, "short", json_string(i == 0 ? name : "fill"));
		json_array_append_new(ks, k);
	}
	json_object_set_new(p, "other", json_pack("{s:i, s:i, s:i}", "kernels", 4, "calls", 9,
						  "total_ns", 1000));
	text = fb_profile_feedback(cfg, p, ref);
	CHECK(text != NULL);
	if (text != NULL) {
		CHECK(lines_starting(text, "  ") + lines_starting(text, " ") >= FB_PROFILE_ROWS);
		CHECK(strstr(text, "  fill\n") != NULL);
		CHECK(strstr(text, "kkk...\n") != NULL && strstr(text, name) == NULL);
		/* 20 listed - 8 shown = 12 more, and the library's 4 unnamed */
		CHECK(strstr(text, "\nother: 16 kernels, 69 calls, ") != NULL);
	}
	free(text);
	cfg->refinement.feedback_max_chars = 600;
	text = fb_profile_feedback(cfg, p, ref);
	CHECK(text != NULL && strlen(text) <= 600 && strstr(text, "Profile (CUPTI") == text);
	CHECK(text != NULL && text[strlen(text) - 1] == '\n');
	free(text);
	cfg->refinement.feedback_max_chars = 100;	/* not even the heading */
	text = fb_profile_feedback(cfg, p, ref);
	CHECK(text == NULL);
	free(text);
	cfg->refinement.feedback_max_chars = 4000;
	json_decref(p);
	json_decref(ref);

	/* torch.profiler's table with the one-line note saying why it is not CUPTI's */
	p = json_loads("{\"source\": \"torch.profiler\", \"device\": \"cuda\", \"iterations\": 5,"
		       " \"note\": \"CUPTI profiler library (libkforge_kprof.so) not built: this is"
		       " torch.profiler's table\", \"kernels\": [{\"name\": \"k\", \"calls\": 5,"
		       " \"total_ms\": 0.5, \"mean_ms\": 0.1}]}", 0, NULL);
	text = fb_profile_feedback(cfg, p, NULL);
	CHECK(text != NULL && strncmp(text, "CUPTI profiler library (libkforge_kprof.so) not "
				      "built: this is torch.profiler's table\nProfile "
				      "(torch.profiler, cuda, 5 iterations)", 117) == 0);
	free(text);
	json_decref(p);
}

int
main(void)
{
	struct kb_config	cfg;

	fbt_config(&cfg, "cpu");
	test_truncation(&cfg);
	test_first_error(&cfg);
	test_wording(&cfg);
	test_profile(&cfg);
	test_cupti_profile(&cfg);
	kb_config_clear(&cfg);
	return failures > 0 ? 1 : 0;
}
