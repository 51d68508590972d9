/*
 * llm_prompt.c: the prompts built from the bundled templates (KFORGE_HOME points at
 * the source tree under ctest) and from a user's prompts_dir.
 */
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

	CHECK_RC(llm_prompt_initial(cfg, problem, &out, err, sizeof(err)), 0);
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
		CHECK_RC(llm_prompt_refine(&cfg, problem, &fb, &p, err, sizeof(err)), 0);
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

	/* Enabled, but the previous turn left no profile (it did not run correctly). */
	fb.profile_text = NULL;
	CHECK_RC(llm_prompt_refine(&cfg, problem, &fb, &p, err, sizeof(err)), 0);
	CHECK_HAS(p, g_head);
	CHECK_HAS(p, e_head);
	CHECK_LACKS(p, p_head);
	free(p);
	kb_config_clear(&cfg);
}

static void
copy_bundled(const char *dir)
{
	static const char *const files[] = {
		"statement_cuda.md", "statement_cpu.md", "example.md", "example_cuda.py",
		"example_cuda_new.py", "example_cpu.py", "example_cpu_new.py",
		"precision_note.md", "initial.md", "refine.md", "feedback_g.md",
		"feedback_e.md", "feedback_p.md",
	};
	char	*src, *text;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		src = kb_asprintf("%s/llm/prompts/%s", kb_home(), files[i]);
		if (kb_read_file(src, 1 << 20, &text, NULL) < 0) {
			fprintf(stderr, "cannot read %s\n", src);
			exit(1);
		}
		tu_write(dir, files[i], text);
		free(text);
		free(src);
	}
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
	CHECK_RC(llm_prompt_initial(&cfg, "src {x}", &p, err, sizeof(err)), 0);
	CHECK(p != NULL && strcmp(p, "Mine: {literal} CUDA fp32 cuda\nsrc {x}\n") == 0);
	free(p);

	tu_write(dir, "initial.md", "Hello {problem_source}\n");
	CHECK_RC(llm_prompt_initial(&cfg, problem, &p, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "unknown placeholder {problem_source}");
	CHECK_HAS(err, "initial.md");

	/* Braces that are not placeholders stay as they are. */
	tu_write(dir, "initial.md", "{ } {1} {not closed {x y} }}\n");
	CHECK_RC(llm_prompt_initial(&cfg, problem, &p, err, sizeof(err)), 0);
	CHECK(p != NULL && strcmp(p, "{ } {1} {not closed {x y} }\n") == 0);
	free(p);

	/* Unknown placeholders inside fragments are found too. */
	tu_write(dir, "feedback_e.md", "E: {exec_txt}\n");
	cfg.refinement.feedback_e = true;
	{
		struct llm_feedback fb = { .exec_text = "boom" };

		CHECK_RC(llm_prompt_refine(&cfg, problem, &fb, &p, err, sizeof(err)), -KB_ECONFIG);
		CHECK_HAS(err, "{exec_txt}");
	}

	{
		char *gone = kb_asprintf("%s/statement_cuda.md", dir);

		remove(gone);
		free(gone);
	}
	CHECK_RC(llm_prompt_initial(&cfg, problem, &p, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "statement_cuda.md");

	tu_set(&cfg.refinement.prompt, "few_shot");
	tu_set(&cfg.refinement.prompts_dir, "");
	CHECK_RC(llm_prompt_initial(&cfg, problem, &p, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "refinement.prompt");

	tu_rm_rf(dir);
	free(dir);
	kb_config_clear(&cfg);
}

int
main(void)
{
	test_initial_cuda();
	test_initial_cpu();
	test_initial_raw();
	test_refine_sections();
	test_prompts_dir();
	if (failures > 0) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("llm_prompt: all checks passed\n");
	return 0;
}
