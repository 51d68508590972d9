/*
 * llm_prompt.c: the prompts built from the bundled templates (KFORGE_HOME points at
 * the source tree under ctest) and from a user's prompts_dir: zero-, one- and few-shot,
 * the build formats, the Triton backend, the hardware block and a red-team run's
 * statement.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "llm/llm.h"
#include "llm_testutil.h"

/* Braces in the problem must come through untouched. */
static const char problem[] =
"import torch\n"
"import torch.nn as nn\n\n"
"class Model(nn.Module):\n"
"    def forward(self, x):\n"
"        cfg = {'scale': 2}  # {problem_src} {{not a placeholder}}\n"
"        return torch.relu(x) * cfg['scale']\n\n"
"def get_inputs():\n"
"    return [torch.rand(16, 16384)]\n\n"
"def get_init_inputs():\n"
"    return []\n";

static const char *const g_head = "Here is your latest generation:";
static const char *const e_head = "Here is the compiler and execution feedback for it:";
static const char *const p_head = "Here is the profiler output for it:";

static char *
initial(const struct kb_config *cfg)
{
	char	*out = NULL, err[512];

	CHECK_RC(llm_prompt_initial(cfg, NULL, problem, &out, err, sizeof(err)), 0);
	if (out == NULL) {
		fprintf(stderr, "llm_prompt_initial: %s\n", err);
		exit(1);
	}
	return out;
}

static void
test_initial_cuda(void)
{
	struct kb_config	 cfg;
	char			*p;

	tu_config(&cfg, "replay", NULL);
	p = initial(&cfg);
	CHECK_HAS(p, problem);
	CHECK_HAS(p, "custom CUDA kernels");
	/* The one-shot example: a + b, and ModelNew with a CUDA kernel via load_inline. */
	CHECK_HAS(p, "return a + b");
	CHECK_HAS(p, "load_inline(");
	CHECK_HAS(p, "cuda_sources=add_cuda_source");
	CHECK_HAS(p, "__global__ void add_kernel");
	CHECK_HAS(p, "class ModelNew(nn.Module)");
	CHECK_HAS(p, "Call the optimized class ModelNew");
	CHECK_HAS(p, "single ```python fenced block");
	CHECK_LACKS(p, "Precision:");
	CHECK_LACKS(p, g_head);
	CHECK_LACKS(p, "{example");
	CHECK_LACKS(p, "{statement}");
	/* The problem comes after the example, and the instruction last. */
	CHECK(strstr(p, "return a + b") < strstr(p, problem));
	CHECK(strstr(p, problem) < strstr(p, "Call the optimized class ModelNew"));
	free(p);

	tu_set(&cfg.refinement.prompt, "zero_shot");
	p = initial(&cfg);
	CHECK_HAS(p, problem);
	CHECK_LACKS(p, "return a + b");
	CHECK_LACKS(p, "__global__");
	CHECK_HAS(p, "Call the optimized class ModelNew");
	free(p);

	tu_set(&cfg.refinement.prompt, "one_shot");
	tu_set(&cfg.eval.precision, "bf16");
	p = initial(&cfg);
	CHECK_HAS(p, "Precision: the inputs and the model's parameters are bf16 (torch.bfloat16)");
	free(p);
	kb_config_clear(&cfg);
}

static void
test_initial_cpu(void)
{
	struct kb_config	 cfg;
	char			*p;

	tu_config(&cfg, "replay", NULL);
	tu_set(&cfg.eval.device, "cpu");
	p = initial(&cfg);
	CHECK_HAS(p, problem);
	CHECK_HAS(p, "custom C++ operators");
	CHECK_HAS(p, "cpp_sources only");
	CHECK_HAS(p, "return a + b");
	CHECK_HAS(p, "at::parallel_for");
	CHECK_HAS(p, "cpp_sources=add_cpp_source");
	CHECK_LACKS(p, "__global__");
	CHECK_LACKS(p, "cuda_sources=");
	CHECK_LACKS(p, "device=\"cuda\"");
	CHECK_HAS(p, "class ModelNew(nn.Module)");
	free(p);
	kb_config_clear(&cfg);
}

/* The raw build format: its own statement and example, no torch header, no load_inline. */
static void
test_initial_raw(void)
{
	struct kb_config	 cfg;
	char			*p;

	tu_config(&cfg, "replay", NULL);
	tu_set(&cfg.eval.format, "raw");
	p = initial(&cfg);
	CHECK_HAS(p, problem);
	CHECK_HAS(p, "from kforge import load_cuda");
	CHECK_HAS(p, "extern \"C\" void add_forward(");
	CHECK_HAS(p, "cudaStream_t stream");
	CHECK_HAS(p, "__global__ void add_kernel");
	CHECK_HAS(p, "class ModelNew(nn.Module)");
	CHECK_LACKS(p, "load_inline");
	CHECK_LACKS(p, "#include <torch/extension.h>");
	free(p);

	tu_set(&cfg.eval.device, "cpu");
	p = initial(&cfg);
	CHECK_HAS(p, "from kforge import load_cpp");
	CHECK_HAS(p, "-fopenmp");
	CHECK_LACKS(p, "load_inline");
	CHECK_LACKS(p, "at::parallel_for");
	CHECK_LACKS(p, "__global__");
	free(p);
	kb_config_clear(&cfg);
}

static void
test_refine_sections(void)
{
	struct kb_config	 cfg;
	struct llm_feedback	 fb = {
		.prev_kernel = "class ModelNew:  # previous {turn}\n    pass\n",
		.exec_text = "error: identifier \"foo\" is undefined\n",
		.profile_text = "kernel add_kernel  12.5 us  occupancy 50%\n",
	};
	char			*p, err[512];

	tu_config(&cfg, "replay", NULL);
	for (int mask = 0; mask < 8; mask++) {
		cfg.refinement.feedback_g = mask & 1;
		cfg.refinement.feedback_e = mask & 2;
		cfg.refinement.feedback_p = mask & 4;
		p = NULL;
		CHECK_RC(llm_prompt_refine(&cfg, NULL, problem, &fb, &p, err, sizeof(err)), 0);
		if (p == NULL)
			continue;
		CHECK_HAS(p, problem);
		CHECK((strstr(p, g_head) != NULL) == ((mask & 1) != 0));
		CHECK((strstr(p, fb.prev_kernel) != NULL) == ((mask & 1) != 0));
		CHECK((strstr(p, e_head) != NULL) == ((mask & 2) != 0));
		CHECK((strstr(p, "identifier \"foo\"") != NULL) == ((mask & 2) != 0));
		CHECK((strstr(p, p_head) != NULL) == ((mask & 4) != 0));
		CHECK((strstr(p, "occupancy 50%") != NULL) == ((mask & 4) != 0));
		CHECK_HAS(p, "Please fix the errors (if any) and improve the kernel to be as fast "
		    "as possible. Name it ModelNew; output it in one ```python block.");
		if (mask == 7) {
			CHECK(strstr(p, problem) < strstr(p, g_head));
			CHECK(strstr(p, g_head) < strstr(p, e_head));
			CHECK(strstr(p, e_head) < strstr(p, p_head));
			CHECK(strstr(p, p_head) < strstr(p, "Please fix the errors"));
		}
		free(p);
	}

	/* A search's second parent (evolve): its kernel and speedup after the feedback,
	 * whatever G, E and P say; none without one. */
	fb.other_kernel = "class ModelNew:  # the other parent\n    pass\n";
	fb.other_speedup = 1.25;
	for (int mask = 0; mask < 8; mask += 7) {
		cfg.refinement.feedback_g = mask & 1;
		cfg.refinement.feedback_e = mask & 2;
		cfg.refinement.feedback_p = mask & 4;
		p = NULL;
		CHECK_RC(llm_prompt_refine(&cfg, NULL, problem, &fb, &p, err, sizeof(err)), 0);
		CHECK_HAS(p, "# the other parent");
		CHECK_HAS(p, "1.25x");
		CHECK(p == NULL || strstr(p, "# the other parent") < strstr(p, "Please fix the errors"));
		CHECK(p == NULL || mask == 0 || strstr(p, p_head) < strstr(p, "# the other parent"));
		free(p);
	}
	fb.other_kernel = NULL;

	/* Enabled, but the previous turn left no profile (it did not run correctly). */
	fb.profile_text = NULL;
	CHECK_RC(llm_prompt_refine(&cfg, NULL, problem, &fb, &p, err, sizeof(err)), 0);
	CHECK_HAS(p, g_head);
	CHECK_HAS(p, e_head);
	CHECK_LACKS(p, p_head);
	free(p);
	kb_config_clear(&cfg);
}

/* Every bundled template into dir, so that a test can replace one. */
static void
copy_bundled(const char *dir)
{
	char		*bundled = kb_asprintf("%s/llm/prompts", kb_home()), *src, *text;
	DIR		*d = opendir(bundled);
	struct dirent	*e;

	if (d == NULL) {
		fprintf(stderr, "cannot open %s\n", bundled);
		exit(1);
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		src = kb_asprintf("%s/%s", bundled, e->d_name);
		if (kb_read_file(src, 1 << 20, &text, NULL) < 0) {
			fprintf(stderr, "cannot read %s\n", src);
			exit(1);
		}
		tu_write(dir, e->d_name, text);
		free(text);
		free(src);
	}
	closedir(d);
	free(bundled);
}

/* How many times needle occurs in p. */
static int
count_of(const char *p, const char *needle)
{
	int	n = 0;

	for (const char *q = p; (q = strstr(q, needle)) != NULL; q += strlen(needle))
		n++;
	return n;
}

/* few_shot: N example pairs, each headed "Example k of N", in order, for every device,
 * build format and backend; the refinement prompt shows them too. */
static void
test_few_shot(void)
{
	static const struct {
		const char	*device, *format, *backend;
		const char	*marks[3];	/* a line only example k's answer has */
	} cases[] = {
		{ "cuda", "load_inline", "cuda", { "add_kernel<<<", "bias_relu_kernel<<<",
		  "row_softmax_kernel<<<" } },
		{ "cuda", "raw", "cuda", { "extern \"C\" void add_forward(",
		  "extern \"C\" void bias_relu_forward(", "extern \"C\" void row_softmax_forward(" } },
		{ "cuda", "load_inline", "triton", { "add_kernel[grid](", "bias_relu_kernel[grid](",
		  "row_softmax_kernel[(rows,)](" } },
		{ "cpu", "load_inline", "cuda", { "name=\"example_add_cpu\"",
		  "name=\"example_bias_relu_cpu\"", "name=\"example_row_softmax_cpu\"" } },
		{ "cpu", "raw", "cuda", { "add_ops = load_cpp(", "bias_relu_ops = load_cpp(",
		  "softmax_ops = load_cpp(" } },
	};
	static const char *const problems[3] = { "return a + b", "torch.relu(x + self.bias)",
		"torch.softmax(x, dim=1)" };
	struct kb_config	 cfg;
	struct llm_feedback	 fb = { .exec_text = "it compiled" };
	char			*p, head[64], err[512];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		tu_config(&cfg, "replay", NULL);
		tu_set(&cfg.eval.device, cases[c].device);
		tu_set(&cfg.eval.format, cases[c].format);
		tu_set(&cfg.eval.backend, cases[c].backend);
		tu_set(&cfg.refinement.prompt, "few_shot");
		for (long n = 1; n <= 3; n++) {
			cfg.refinement.examples = n;
			p = initial(&cfg);
			for (long k = 1; k <= 3; k++) {
				snprintf(head, sizeof(head), "Example %ld of %ld.", k, n);
				CHECK(count_of(p, head) == (k <= n));
				CHECK(count_of(p, cases[c].marks[k - 1]) == (k <= n));
				CHECK(count_of(p, problems[k - 1]) == (k <= n));
				if (k > 1 && k <= n)
					CHECK(strstr(p, cases[c].marks[k - 2]) <
					      strstr(p, cases[c].marks[k - 1]));
			}
			CHECK(count_of(p, "class ModelNew(nn.Module)") == n);
			CHECK(strstr(p, cases[c].marks[n - 1]) < strstr(p, problem));
			CHECK_LACKS(p, "The example below shows");
			CHECK_LACKS(p, "{example");
			if (strcmp(cases[c].format, "raw") == 0)
				CHECK_LACKS(p, "load_inline");
			free(p);
		}
		CHECK_RC(llm_prompt_refine(&cfg, NULL, problem, &fb, &p, err, sizeof(err)), 0);
		CHECK(p != NULL && count_of(p, "Example 3 of 3.") == 1 &&
		      count_of(p, cases[c].marks[2]) == 1);
		free(p);
		kb_config_clear(&cfg);
	}
}

/* eval.backend triton: its own statement and Triton answers; ignored on the CPU. */
static void
test_triton(void)
{
	struct kb_config	 cfg;
	char			*p;

	tu_config(&cfg, "replay", NULL);
	tu_set(&cfg.eval.backend, "triton");
	p = initial(&cfg);
	CHECK_HAS(p, "custom Triton kernels");
	CHECK_HAS(p, "@triton.jit");
	CHECK_HAS(p, "import triton.language as tl");
	CHECK_HAS(p, "a custom Triton operator");
	CHECK_HAS(p, "Optimize the architecture named Model with custom Triton operators");
	CHECK_LACKS(p, "load_inline(");
	CHECK_LACKS(p, "__global__");
	free(p);

	tu_set(&cfg.eval.device, "cpu");
	p = initial(&cfg);
	CHECK_HAS(p, "custom C++ operators");
	CHECK_LACKS(p, "triton");
	free(p);
	kb_config_clear(&cfg);
}

/* refinement.hardware: the device's facts, one line each in a fixed order, the unknown
 * ones left out; after the statement, before the examples. */
static void
test_hardware(void)
{
	struct kb_config	 cfg;
	struct llm_hardware	 gpu = {
		.gpu = true, .name = "NVIDIA H100 80GB HBM3",
		.arch = "compute capability 9.0 (Hopper), sm_90", .units = 132,
		.memory_bytes = 85520809984LL, .bandwidth_gbps = 3352,
		.bandwidth_source = "from the memory clock (2619 MHz) and bus width (5120 bits)",
		.smem_per_block = 49152, .smem_per_block_optin = 232448, .smem_per_sm = 233472,
		.l2_bytes = 52428800,
	};
	struct llm_hardware	 cpu = {
		.name = "AMD EPYC 9654", .arch = "x86_64", .units = 3,
		.memory_bytes = 25769803776LL, .simd = "avx2 fma avx512f",
		.caches = "L1d 32 KiB, L2 1024 KiB, L3 32768 KiB",
	};
	static const char gpu_block[] =
		"The code will run on this hardware; choose block sizes, tiling and memory "
		"traffic to suit it:\n\n"
		"- GPU: NVIDIA H100 80GB HBM3\n"
		"- Architecture: compute capability 9.0 (Hopper), sm_90\n"
		"- Streaming multiprocessors (SMs): 132\n"
		"- GPU memory: 79.6 GiB\n"
		"- Peak memory bandwidth: 3352 GB/s (from the memory clock (2619 MHz) and bus "
		"width (5120 bits))\n"
		"- Shared memory per block: 48 KiB (up to 227 KiB when a kernel opts in)\n"
		"- Shared memory per SM: 228 KiB\n"
		"- L2 cache: 50 MiB\n\n";
	static const char cpu_block[] =
		"- CPU: AMD EPYC 9654\n"
		"- Architecture: x86_64\n"
		"- Cores this code may use: 3\n"
		"- Main memory: 24 GiB\n"
		"- Caches: L1d 32 KiB, L2 1024 KiB, L3 32768 KiB\n"
		"- SIMD extensions: avx2 fma avx512f\n\n";
	struct llm_feedback	 fb = { .exec_text = "it compiled" };
	char			*p, *again, err[512];

	tu_config(&cfg, "replay", NULL);
	p = initial(&cfg);
	CHECK_LACKS(p, "on this hardware");
	free(p);

	cfg.refinement.hardware = true;
	CHECK_RC(llm_prompt_initial(&cfg, &gpu, problem, &p, err, sizeof(err)), 0);
	CHECK_HAS(p, gpu_block);
	CHECK(strstr(p, "custom CUDA kernels") < strstr(p, gpu_block));
	CHECK(strstr(p, gpu_block) < strstr(p, "return a + b"));
	CHECK_RC(llm_prompt_initial(&cfg, &gpu, problem, &again, err, sizeof(err)), 0);
	CHECK(strcmp(p, again) == 0);
	free(again);
	free(p);
	CHECK_RC(llm_prompt_refine(&cfg, &gpu, problem, &fb, &p, err, sizeof(err)), 0);
	CHECK_HAS(p, gpu_block);
	free(p);

	/* unknown facts are left out, the rest keep their order */
	gpu.bandwidth_gbps = 0;
	gpu.smem_per_block_optin = 0;
	gpu.l2_bytes = 0;
	CHECK_RC(llm_prompt_initial(&cfg, &gpu, problem, &p, err, sizeof(err)), 0);
	CHECK_HAS(p, "- GPU memory: 79.6 GiB\n- Shared memory per block: 48 KiB\n"
		  "- Shared memory per SM: 228 KiB\n\n");
	CHECK_LACKS(p, "bandwidth");
	CHECK_LACKS(p, "L2 cache");
	free(p);

	tu_set(&cfg.eval.device, "cpu");
	CHECK_RC(llm_prompt_initial(&cfg, &cpu, problem, &p, err, sizeof(err)), 0);
	CHECK_HAS(p, cpu_block);
	CHECK(strstr(p, "custom C++ operators") < strstr(p, cpu_block));
	free(p);

	CHECK_RC(llm_prompt_initial(&cfg, NULL, problem, &p, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "refinement.hardware");
	kb_config_clear(&cfg);
}

/* Every template a prompt is built from comes from refinement.prompts_dir: each file,
 * replaced there by a marker, shows the marker in the prompt that uses it. */
static void
test_prompts_dir_overrides(void)
{
	static const struct {
		const char	*device, *format, *backend, *prompt;
		const char	*files[11];
	} cases[] = {
		{ "cuda", "load_inline", "triton", "few_shot", { "statement_cuda_triton.md",
		  "hardware.md", "example_few.md", "example_cuda.py", "example_cuda_triton_new.py",
		  "example2_cuda.py", "example2_cuda_triton_new.py", "example3_cuda.py",
		  "example3_cuda_triton_new.py", "initial.md", NULL } },
		{ "cuda", "load_inline", "cuda", "few_shot", { "statement_cuda.md",
		  "example_cuda_new.py", "example2_cuda_new.py", "example3_cuda_new.py",
		  "precision_note.md", NULL } },
		{ "cuda", "raw", "cuda", "one_shot", { "statement_cuda_raw.md", "example.md",
		  "example_cuda.py", "example_cuda_raw_new.py", NULL } },
		{ "cpu", "raw", "cuda", "few_shot", { "statement_cpu_raw.md", "example_cpu.py",
		  "example_cpu_raw_new.py", "example2_cpu.py", "example2_cpu_raw_new.py",
		  "example3_cpu.py", "example3_cpu_raw_new.py", "hardware.md", NULL } },
		{ "cpu", "load_inline", "cuda", "few_shot", { "statement_cpu.md",
		  "example_cpu_new.py", "example2_cpu_new.py", "example3_cpu_new.py", NULL } },
	};
	struct llm_hardware	 hw = { .name = "some device" };
	struct kb_config	 cfg;
	char			*dir = tu_tmpdir("llm-prompts-each"), *p, mark[128], err[512];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		tu_config(&cfg, "replay", NULL);
		tu_set(&cfg.refinement.prompts_dir, dir);
		tu_set(&cfg.eval.device, cases[c].device);
		tu_set(&cfg.eval.format, cases[c].format);
		tu_set(&cfg.eval.backend, cases[c].backend);
		tu_set(&cfg.eval.precision, "fp16");
		tu_set(&cfg.refinement.prompt, cases[c].prompt);
		cfg.refinement.examples = 3;
		cfg.refinement.hardware = true;
		for (int f = 0; cases[c].files[f] != NULL; f++) {
			copy_bundled(dir);
			snprintf(mark, sizeof(mark), "MARK-%s-MARK", cases[c].files[f]);
			tu_write(dir, cases[c].files[f], mark);
			p = NULL;
			CHECK_RC(llm_prompt_initial(&cfg, &hw, problem, &p, err, sizeof(err)), 0);
			if (p == NULL || strstr(p, mark) == NULL)
				fprintf(stderr, "%s (%s %s %s): not taken from prompts_dir\n",
					cases[c].files[f], cases[c].device, cases[c].format,
					cases[c].backend);
			CHECK(p != NULL && strstr(p, mark) != NULL);
			free(p);
		}
		kb_config_clear(&cfg);
	}

	/* the refinement prompt's own templates */
	{
		static const char *const refine_files[] = { "refine.md", "feedback_g.md",
			"feedback_e.md", "feedback_p.md", "feedback_other.md", "statement_cuda.md",
			"example.md" };
		struct llm_feedback fb = { .prev_kernel = "prev", .exec_text = "exec",
					   .profile_text = "prof", .other_kernel = "other",
					   .other_speedup = 1.5 };

		tu_config(&cfg, "replay", NULL);
		tu_set(&cfg.refinement.prompts_dir, dir);
		for (size_t f = 0; f < sizeof(refine_files) / sizeof(refine_files[0]); f++) {
			copy_bundled(dir);
			snprintf(mark, sizeof(mark), "MARK-%s-MARK", refine_files[f]);
			tu_write(dir, refine_files[f], mark);
			p = NULL;
			CHECK_RC(llm_prompt_refine(&cfg, NULL, problem, &fb, &p, err, sizeof(err)), 0);
			if (p == NULL || strstr(p, mark) == NULL)
				fprintf(stderr, "%s: not taken from prompts_dir\n", refine_files[f]);
			CHECK(p != NULL && strstr(p, mark) != NULL);
			free(p);
		}
		kb_config_clear(&cfg);
	}
	tu_rm_rf(dir);
	free(dir);
}

static void
test_prompts_dir(void)
{
	struct kb_config	 cfg;
	char			*dir = tu_tmpdir("llm-prompts"), *p = NULL, err[1024];

	copy_bundled(dir);
	tu_config(&cfg, "replay", NULL);
	tu_set(&cfg.refinement.prompts_dir, dir);

	tu_write(dir, "initial.md", "Mine: {{literal}} {backend} {precision} {device}\n{problem_src}\n");
	CHECK_RC(llm_prompt_initial(&cfg, NULL, "src {x}", &p, err, sizeof(err)), 0);
	CHECK(p != NULL && strcmp(p, "Mine: {literal} CUDA fp32 cuda\nsrc {x}\n") == 0);
	free(p);

	tu_write(dir, "initial.md", "Hello {problem_source}\n");
	CHECK_RC(llm_prompt_initial(&cfg, NULL, problem, &p, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "unknown placeholder {problem_source}");
	CHECK_HAS(err, "initial.md");

	/* Braces that are not placeholders stay as they are. */
	tu_write(dir, "initial.md", "{ } {1} {not closed {x y} }}\n");
	CHECK_RC(llm_prompt_initial(&cfg, NULL, problem, &p, err, sizeof(err)), 0);
	CHECK(p != NULL && strcmp(p, "{ } {1} {not closed {x y} }\n") == 0);
	free(p);

	/* Unknown placeholders inside fragments are found too. */
	tu_write(dir, "feedback_e.md", "E: {exec_txt}\n");
	cfg.refinement.feedback_e = true;
	{
		struct llm_feedback fb = { .exec_text = "boom" };

		CHECK_RC(llm_prompt_refine(&cfg, NULL, problem, &fb, &p, err, sizeof(err)), -KB_ECONFIG);
		CHECK_HAS(err, "{exec_txt}");
	}

	{
		char *gone = kb_asprintf("%s/statement_cuda.md", dir);

		remove(gone);
		free(gone);
	}
	CHECK_RC(llm_prompt_initial(&cfg, NULL, problem, &p, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "statement_cuda.md");

	tu_set(&cfg.refinement.prompt, "many_shot");
	tu_set(&cfg.refinement.prompts_dir, "");
	CHECK_RC(llm_prompt_initial(&cfg, NULL, problem, &p, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "refinement.prompt");

	tu_rm_rf(dir);
	free(dir);
	kb_config_clear(&cfg);
}

/* redteam.enabled: for every device, build format and backend, the initial and the
 * refinement prompts open with the red-team statement of that combination, bundled text
 * for text, and hold nothing of the ordinary statement; the refinement prompt's feedback
 * is the ordinary feedback. From a prompts_dir, the red-team statement is the one read. */
static void
test_redteam(void)
{
	static const struct {
		const char	*device, *format, *backend, *statement, *ordinary;
	} cases[] = {
		{ "cpu", "load_inline", "cuda", "statement_redteam_cpu.md", "statement_cpu.md" },
		{ "cpu", "raw", "cuda", "statement_redteam_cpu_raw.md", "statement_cpu_raw.md" },
		{ "cuda", "load_inline", "cuda", "statement_redteam_cuda.md", "statement_cuda.md" },
		{ "cuda", "raw", "cuda", "statement_redteam_cuda_raw.md",
		  "statement_cuda_raw.md" },
		{ "cuda", "load_inline", "triton", "statement_redteam_cuda_triton.md",
		  "statement_cuda_triton.md" },
	};
	struct llm_feedback	 fb = { .prev_kernel = "class ModelNew: pass  # prev\n",
					 .exec_text = "verdict: correct\n" };
	struct kb_config	 cfg;
	char			*dir = tu_tmpdir("llm-prompts-redteam"), *p, *text, *ordinary;
	char			*path, err[512], mark[128];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		tu_config(&cfg, "replay", NULL);
		tu_set(&cfg.eval.device, cases[c].device);
		tu_set(&cfg.eval.format, cases[c].format);
		tu_set(&cfg.eval.backend, cases[c].backend);
		cfg.redteam.enabled = true;
		path = kb_asprintf("%s/llm/prompts/%s", kb_home(), cases[c].statement);
		CHECK_RC(kb_read_file(path, 1 << 20, &text, NULL), 0);
		free(path);
		path = kb_asprintf("%s/llm/prompts/%s", kb_home(), cases[c].ordinary);
		CHECK_RC(kb_read_file(path, 1 << 20, &ordinary, NULL), 0);
		free(path);
		if (text == NULL || ordinary == NULL)
			exit(1);
		/* the ordinary statement's opening paragraph */
		ordinary[strcspn(ordinary, "\n")] = '\0';
		text[strcspn(text, "\n")] = '\0';
		CHECK_HAS(text, "you are helping to test a kernel evaluator");

		p = initial(&cfg);
		CHECK(strncmp(p, text, strlen(text)) == 0);
		CHECK_HAS(p, "judges correct and faster than Model without computing");
		CHECK_HAS(p, "kept, with its files, verdict and timings");
		CHECK_LACKS(p, ordinary);
		CHECK_HAS(p, problem);
		free(p);
		p = NULL;
		CHECK_RC(llm_prompt_refine(&cfg, NULL, problem, &fb, &p, err, sizeof(err)), 0);
		if (p != NULL) {
			CHECK(strncmp(p, text, strlen(text)) == 0);
			CHECK_LACKS(p, ordinary);
			CHECK_HAS(p, g_head);
			CHECK_HAS(p, fb.prev_kernel);
			CHECK_HAS(p, e_head);
			CHECK_HAS(p, "verdict: correct");
		}
		free(p);

		/* from a prompts_dir: its red-team statement, not the bundled one */
		copy_bundled(dir);
		snprintf(mark, sizeof(mark), "MARK-%s-MARK", cases[c].statement);
		tu_write(dir, cases[c].statement, mark);
		tu_set(&cfg.refinement.prompts_dir, dir);
		p = initial(&cfg);
		CHECK(strncmp(p, mark, strlen(mark)) == 0);
		free(p);
		/* and without it, the message names the file the run needs */
		path = kb_asprintf("%s/%s", dir, cases[c].statement);
		unlink(path);
		free(path);
		p = NULL;
		CHECK_RC(llm_prompt_initial(&cfg, NULL, problem, &p, err, sizeof(err)),
			 -KB_ECONFIG);
		CHECK_HAS(err, cases[c].statement);
		free(p);
		free(text);
		free(ordinary);
		kb_config_clear(&cfg);
	}
	tu_rm_rf(dir);
	free(dir);
}

int
main(void)
{
	test_initial_cuda();
	test_initial_cpu();
	test_initial_raw();
	test_refine_sections();
	test_prompts_dir();
	test_few_shot();
	test_triton();
	test_hardware();
	test_prompts_dir_overrides();
	test_redteam();
	if (failures > 0) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("llm_prompt: all checks passed\n");
	return 0;
}
