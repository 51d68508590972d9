/*
 * prompt.c: building the prompts from template files (llm/prompts, or
 * refinement.prompts_dir when set), which users may replace; llm/prompts/README.md
 * lists the files and their placeholders.
 *
 * Substitution: {name} is replaced by its value; {{ and }} stand for { and }; any
 * other brace is literal. Values go in as they are and are never scanned again, so
 * problem sources full of braces are safe. An unknown {name} is an error naming it
 * and the file. Fragments (statement, example, precision note, feedback sections)
 * are rendered first, lose trailing blanks, and end with one blank line when not
 * empty, so a template can place an optional fragment without leaving a gap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "llm/llm.h"
#include "base/banned.h"

#define PROMPT_FILE_CAP	(1u << 20)
#define PROMPT_OUT_CAP	(16u << 20)
#define PROMPT_NAME_MAX	64

#define PROMPT_VARS(X)                                                         \
	X(BACKEND, "backend")		/* CUDA | C++ | Triton */              \
	X(DEVICE, "device")		/* cuda | cpu */                       \
	X(PRECISION, "precision")	/* fp32 | fp16 | bf16 */               \
	X(DTYPE, "dtype")		/* torch.float32 ... */                \
	X(STATEMENT, "statement")	/* fragment statement_<device>.md */   \
	X(EXAMPLE, "example")		/* fragment example.md or examples */  \
	X(EXAMPLE_SRC, "example_src")                                          \
	X(EXAMPLE_NEW_SRC, "example_new_src")                                  \
	X(EXAMPLE_NUMBER, "example_number")	/* few_shot: 1, 2, ... */      \
	X(EXAMPLE_COUNT, "example_count")                                      \
	X(HARDWARE, "hardware")		/* fragment hardware.md, or empty */   \
	X(HARDWARE_FACTS, "hardware_facts")	/* one "- fact" line each */   \
	X(PROBLEM_SRC, "problem_src")                                          \
	X(PRECISION_NOTE, "precision_note") /* fragment, fp16/bf16 only */     \
	X(FEEDBACK, "feedback")		/* feedback_{g,e,p}.md, refine only */ \
	X(PREV_KERNEL, "prev_kernel")                                          \
	X(EXEC_TEXT, "exec_text")                                              \
	X(PROFILE_TEXT, "profile_text")                                        \
	X(OTHER_KERNEL, "other_kernel")	/* evolve: a second parent */          \
	X(OTHER_SPEEDUP, "other_speedup")	/* "1.23x", or "untimed" */

#define PV_ENUM_(id, name) PV_##id,
enum prompt_var { PROMPT_VARS(PV_ENUM_) PV__N };
#undef PV_ENUM_
#define PV_NAME_(id, name) name,
static const char *const var_names[PV__N] = { PROMPT_VARS(PV_NAME_) };
#undef PV_NAME_

struct prompt_ctx {
	char		 dir[4096];
	const char	*val[PV__N];	/* NULL reads as "" */
	char		*owned[PV__N];
	char		*err;
	size_t		 errlen;
	bool		 few;		/* few_shot: examples rendered by example_few.md */
};

static void
ctx_set_owned(struct prompt_ctx *x, enum prompt_var v, char *s)
{
	free(x->owned[v]);
	x->owned[v] = s;
	x->val[v] = s;
}

static void
ctx_clear(struct prompt_ctx *x)
{
	for (int i = 0; i < PV__N; i++)
		free(x->owned[i]);
}

static char *
trimmed_copy(const char *s, const char *suffix)
{
	size_t	n = s ? strlen(s) : 0;

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' ||
	    s[n - 1] == '\t'))
		n--;
	if (n == 0)
		return kb_strdup("");
	return kb_asprintf("%.*s%s", (int)n, s, suffix);
}

static bool
name_char(char ch, bool first)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
	    (!first && ch >= '0' && ch <= '9');
}

static int
substitute(struct prompt_ctx *x, const char *file, const char *t, size_t n,
	   struct kb_buf *out)
{
	size_t	i = 0, lit = 0, j;
	int	rc = 0, v;

	while (i < n && rc == 0) {
		if ((t[i] == '{' || t[i] == '}') && i + 1 < n && t[i + 1] == t[i]) {
			rc = kb_buf_append(out, t + lit, i + 1 - lit);
			lit = i += 2;
			continue;
		}
		if (t[i] != '{' || i + 1 >= n || !name_char(t[i + 1], true)) {
			i++;
			continue;
		}
		for (j = i + 1; j < n && j - i <= PROMPT_NAME_MAX && name_char(t[j], false); j++)
			;
		if (j >= n || t[j] != '}') {
			i++;
			continue;
		}
		for (v = 0; v < PV__N; v++)
			if (strlen(var_names[v]) == j - i - 1 &&
			    memcmp(var_names[v], t + i + 1, j - i - 1) == 0)
				break;
		if (v == PV__N) {
			snprintf(x->err, x->errlen, "prompt template %s: unknown placeholder {%.*s}",
			    file, (int)(j - i - 1), t + i + 1);
			return -KB_ECONFIG;
		}
		if ((rc = kb_buf_append(out, t + lit, i - lit)) == 0 && x->val[v] != NULL)
			rc = kb_buf_append(out, x->val[v], strlen(x->val[v]));
		lit = i = j + 1;
	}
	if (rc == 0)
		rc = kb_buf_append(out, t + lit, n - lit);
	if (rc < 0)
		snprintf(x->err, x->errlen, "prompt template %s: %s", file,
		    rc == -KB_ETOOBIG ? "the prompt exceeds 16 MiB" : kb_strerror(rc));
	return rc;
}

static int
load(struct prompt_ctx *x, const char *file, char **text, size_t *len)
{
	char	path[4096];
	int	rc;

	if (kb_path_join(path, sizeof(path), x->dir, file) < 0) {
		snprintf(x->err, x->errlen, "prompt template %s: path too long", file);
		return -KB_ECONFIG;
	}
	if ((rc = kb_read_file(path, PROMPT_FILE_CAP, text, len)) < 0) {
		snprintf(x->err, x->errlen, "prompt template %s: %s", path,
		    rc == -KB_ETOOBIG ? "larger than 1 MiB" : kb_strerror(rc));
		return -KB_ECONFIG;
	}
	return 0;
}

/* Renders file into a string; as a fragment, trimmed and ended with a blank line. */
static int
render(struct prompt_ctx *x, const char *file, bool fragment, char **out)
{
	struct kb_buf	 b = KB_BUF_INIT(PROMPT_OUT_CAP);
	char		*t;
	size_t		 n;
	int		 rc;

	if ((rc = load(x, file, &t, &n)) < 0)
		return rc;
	rc = substitute(x, file, t, n, &b);
	free(t);
	if (rc < 0) {
		kb_buf_clear(&b);
		return rc;
	}
	*out = kb_buf_steal(&b);
	if (fragment) {
		t = *out;
		*out = trimmed_copy(t, "\n\n");
		free(t);
	}
	return 0;
}

static int
render_var(struct prompt_ctx *x, enum prompt_var v, const char *file)
{
	char	*s;
	int	 rc;

	if ((rc = render(x, file, true, &s)) == 0)
		ctx_set_owned(x, v, s);
	return rc;
}

static int
load_code(struct prompt_ctx *x, enum prompt_var v, const char *file)
{
	char	*t;
	size_t	 n;
	int	 rc;

	if ((rc = load(x, file, &t, &n)) < 0)
		return rc;
	ctx_set_owned(x, v, trimmed_copy(t, ""));
	free(t);
	return 0;
}

/* "48 KiB", "80 GiB": whole units where the value is one, else one decimal. */
static void
bytes_text(long long v, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	double	d = (double)v;
	int	u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0 || d == (double)(long long)d)
		snprintf(buf, len, "%lld %s", (long long)d, units[u]);
	else
		snprintf(buf, len, "%.1f %s", d, units[u]);
}

/* The facts of hw as "- label: value" lines, in a fixed order; unknown ones left out. */
static char *
hardware_facts(const struct llm_hardware *hw)
{
	struct kb_buf	b = KB_BUF_INIT(8192);
	char		t1[32], t2[32];

	if (hw->name[0] != '\0')
		kb_buf_printf(&b, "- %s: %s\n", hw->gpu ? "GPU" : "CPU", hw->name);
	if (hw->arch[0] != '\0')
		kb_buf_printf(&b, "- Architecture: %s\n", hw->arch);
	if (hw->units > 0)
		kb_buf_printf(&b, hw->gpu ? "- Streaming multiprocessors (SMs): %ld\n" :
			      "- Cores this code may use: %ld\n", hw->units);
	if (hw->memory_bytes > 0) {
		bytes_text(hw->memory_bytes, t1, sizeof(t1));
		kb_buf_printf(&b, "- %s: %s\n", hw->gpu ? "GPU memory" : "Main memory", t1);
	}
	if (hw->bandwidth_gbps > 0)
		kb_buf_printf(&b, "- Peak memory bandwidth: %.0f GB/s%s%s%s\n", hw->bandwidth_gbps,
			      hw->bandwidth_source[0] != '\0' ? " (" : "", hw->bandwidth_source,
			      hw->bandwidth_source[0] != '\0' ? ")" : "");
	if (hw->smem_per_block > 0) {
		bytes_text(hw->smem_per_block, t1, sizeof(t1));
		kb_buf_printf(&b, "- Shared memory per block: %s", t1);
		if (hw->smem_per_block_optin > hw->smem_per_block) {
			bytes_text(hw->smem_per_block_optin, t2, sizeof(t2));
			kb_buf_printf(&b, " (up to %s when a kernel opts in)", t2);
		}
		kb_buf_printf(&b, "\n");
	}
	if (hw->smem_per_sm > 0) {
		bytes_text(hw->smem_per_sm, t1, sizeof(t1));
		kb_buf_printf(&b, "- Shared memory per SM: %s\n", t1);
	}
	if (hw->l2_bytes > 0) {
		bytes_text(hw->l2_bytes, t1, sizeof(t1));
		kb_buf_printf(&b, "- L2 cache: %s\n", t1);
	}
	if (hw->caches[0] != '\0')
		kb_buf_printf(&b, "- Caches: %s\n", hw->caches);
	if (hw->simd[0] != '\0')
		kb_buf_printf(&b, "- SIMD extensions: %s\n", hw->simd);
	return kb_buf_steal(&b);
}

/* The examples: one_shot's example.md, or few_shot's examples each rendered from
 * example_few.md. Example k's problem is example<k>_<device>.py and its answer
 * example<k>_<device><variant>_new.py, the first without the number. */
static int
render_examples(struct prompt_ctx *x, long count, const char *device, const char *variant)
{
	struct kb_buf	 all = KB_BUF_INIT(PROMPT_OUT_CAP);
	char		 problem[64], answer[96], number[24], total[24], *s;
	int		 rc = 0;

	snprintf(total, sizeof(total), "%ld", count);
	for (long k = 1; k <= count && rc == 0; k++) {
		char	stem[24] = "example";

		if (k > 1)
			snprintf(stem, sizeof(stem), "example%ld", k);
		snprintf(problem, sizeof(problem), "%s_%s.py", stem, device);
		snprintf(answer, sizeof(answer), "%s_%s%s_new.py", stem, device, variant);
		snprintf(number, sizeof(number), "%ld", k);
		x->val[PV_EXAMPLE_NUMBER] = number;
		x->val[PV_EXAMPLE_COUNT] = total;
		if ((rc = load_code(x, PV_EXAMPLE_SRC, problem)) < 0 ||
		    (rc = load_code(x, PV_EXAMPLE_NEW_SRC, answer)) < 0 ||
		    (rc = render(x, x->few ? "example_few.md" : "example.md", true, &s)) < 0)
			break;
		rc = kb_buf_append(&all, s, strlen(s));
		free(s);
		if (rc < 0)
			snprintf(x->err, x->errlen, "the examples exceed 16 MiB");
	}
	x->val[PV_EXAMPLE_NUMBER] = x->val[PV_EXAMPLE_COUNT] = NULL;
	if (rc == 0)
		ctx_set_owned(x, PV_EXAMPLE, kb_buf_steal(&all));
	kb_buf_clear(&all);
	return rc;
}

/* Everything the initial and refinement prompts share. */
static int
ctx_init(struct prompt_ctx *x, const struct kb_config *cfg, const struct llm_hardware *hw,
	 const char *problem_src, char *err, size_t errlen)
{
	const char	*dir = cfg->refinement.prompts_dir;
	const char	*prec = cfg->eval.precision ? cfg->eval.precision : "fp32";
	const char	*style = cfg->refinement.prompt ? cfg->refinement.prompt : "one_shot";
	bool		 cpu = cfg->eval.device != NULL && strcmp(cfg->eval.device, "cpu") == 0;
	bool		 raw = cfg->eval.format != NULL && strcmp(cfg->eval.format, "raw") == 0;
	bool		 triton = !cpu && cfg->eval.backend != NULL &&
				  strcmp(cfg->eval.backend, "triton") == 0;
	/* the backend's or the build format's own statement and example answers */
	const char	*variant = triton ? "_triton" : raw ? "_raw" : "";
	const char	*device = cpu ? "cpu" : "cuda";
	char		 statement[64], *facts;
	int		 rc;

	memset(x, 0, sizeof(*x));
	x->err = err;
	x->errlen = errlen;
	if (dir != NULL && dir[0] != '\0')
		rc = snprintf(x->dir, sizeof(x->dir), "%s", dir);
	else
		rc = snprintf(x->dir, sizeof(x->dir), "%s/llm/prompts", kb_home());
	if (rc < 0 || (size_t)rc >= sizeof(x->dir)) {
		snprintf(err, errlen, "refinement.prompts_dir: path too long");
		return -KB_ECONFIG;
	}
	x->val[PV_DEVICE] = device;
	x->val[PV_BACKEND] = cpu ? "C++" : triton ? "Triton" : "CUDA";
	x->val[PV_PRECISION] = prec;
	x->val[PV_DTYPE] = strcmp(prec, "fp16") == 0 ? "torch.float16" :
	    strcmp(prec, "bf16") == 0 ? "torch.bfloat16" : "torch.float32";
	ctx_set_owned(x, PV_PROBLEM_SRC, trimmed_copy(problem_src, ""));

	/* A red-team run asks for candidates that fool the evaluator: a statement of its
	 * own, the rest of the prompt (and every later turn's feedback) as in any run. */
	snprintf(statement, sizeof(statement), "statement_%s%s%s.md",
		 cfg->redteam.enabled ? "redteam_" : "", device, variant);
	if ((rc = render_var(x, PV_STATEMENT, statement)) < 0)
		return rc;
	if (cfg->refinement.hardware) {
		if (hw == NULL) {
			snprintf(err, errlen, "refinement.hardware: no facts about the device "
				 "(gpus.json has no \"hardware\")");
			return -KB_ECONFIG;
		}
		facts = hardware_facts(hw);
		ctx_set_owned(x, PV_HARDWARE_FACTS, trimmed_copy(facts, ""));
		free(facts);
		if ((rc = render_var(x, PV_HARDWARE, "hardware.md")) < 0)
			return rc;
	}
	if (strcmp(style, "one_shot") == 0 || strcmp(style, "few_shot") == 0) {
		x->few = strcmp(style, "few_shot") == 0;
		if ((rc = render_examples(x, x->few ? cfg->refinement.examples : 1, device,
					  variant)) < 0)
			return rc;
	} else if (strcmp(style, "zero_shot") != 0) {
		snprintf(err, errlen, "refinement.prompt: expected one_shot, zero_shot or few_shot, "
			 "got '%s'", style);
		return -KB_ECONFIG;
	}
	if (strcmp(prec, "fp32") != 0 &&
	    (rc = render_var(x, PV_PRECISION_NOTE, "precision_note.md")) < 0)
		return rc;
	return 0;
}

int
llm_prompt_initial(const struct kb_config *cfg, const struct llm_hardware *hw,
		   const char *problem_src, char **out, char *err, size_t errlen)
{
	struct prompt_ctx	x;
	int			rc;

	*out = NULL;
	if ((rc = ctx_init(&x, cfg, hw, problem_src, err, errlen)) == 0)
		rc = render(&x, "initial.md", false, out);
	ctx_clear(&x);
	return rc;
}

int
llm_prompt_refine(const struct kb_config *cfg, const struct llm_hardware *hw,
		  const char *problem_src, const struct llm_feedback *fb, char **out, char *err,
		  size_t errlen)
{
	static const struct {
		enum prompt_var	 var;
		const char	*file;
	} sections[] = {
		{ PV_PREV_KERNEL, "feedback_g.md" },
		{ PV_EXEC_TEXT, "feedback_e.md" },
		{ PV_PROFILE_TEXT, "feedback_p.md" },
		{ PV_OTHER_KERNEL, "feedback_other.md" },
	};
	struct prompt_ctx	 x;
	struct kb_buf		 all = KB_BUF_INIT(PROMPT_OUT_CAP);
	const char		*text[4] = { fb->prev_kernel, fb->exec_text, fb->profile_text,
					     fb->other_kernel };
	bool			 on[4] = { cfg->refinement.feedback_g, cfg->refinement.feedback_e,
				    cfg->refinement.feedback_p, true };
	char			*s;
	int			 rc;

	*out = NULL;
	if ((rc = ctx_init(&x, cfg, hw, problem_src, err, errlen)) < 0)
		goto out;
	for (int i = 0; i < 4; i++)
		if (on[i] && text[i] != NULL)
			ctx_set_owned(&x, sections[i].var, trimmed_copy(text[i], ""));
	if (fb->other_kernel != NULL)
		ctx_set_owned(&x, PV_OTHER_SPEEDUP, fb->other_speedup > 0 ?
			      kb_asprintf("%.2fx", fb->other_speedup) : kb_strdup("untimed"));
	for (int i = 0; i < 4; i++) {
		if (!on[i] || text[i] == NULL)
			continue;
		if ((rc = render(&x, sections[i].file, true, &s)) < 0)
			goto out;
		rc = kb_buf_append(&all, s, strlen(s));
		free(s);
		if (rc < 0) {
			snprintf(err, errlen, "refinement prompt exceeds 16 MiB");
			goto out;
		}
	}
	ctx_set_owned(&x, PV_FEEDBACK, kb_buf_steal(&all));
	rc = render(&x, "refine.md", false, out);
out:
	kb_buf_clear(&all);
	ctx_clear(&x);
	return rc;
}
