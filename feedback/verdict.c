/*
 * verdict.c: the one judgement of an evaluated candidate (feedback.h, "verdicts"): the
 * static checks that run before a build, and the policy that turns a result's status,
 * flags and findings into correct, incorrect, rejected or suspect. Runs and `kforge
 * eval` both come here, so the same files get the same verdict in both.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback_int.h"
#include "rundir/rundir.h"
#include "base/banned.h"

#define FB_CHECK_TIMEOUT_MS	30000		/* the checker parses; it never runs code */
#define FB_CHECK_OUT_CAP	(256 << 10)	/* at most 50 findings of a line each */

static const char *const verdict_names[] = {
	[FB_VERDICT_CORRECT] = RD_VERDICT_CORRECT,
	[FB_VERDICT_INCORRECT] = RD_VERDICT_INCORRECT,
	[FB_VERDICT_REJECTED] = RD_VERDICT_REJECTED,
	[FB_VERDICT_SUSPECT] = RD_VERDICT_SUSPECT,
};

const char *
fb_verdict_name(enum fb_verdict v)
{
	return (unsigned)v < sizeof(verdict_names) / sizeof(verdict_names[0]) ?
	       verdict_names[v] : "incorrect";
}

/*
 * The runner's flags (and those fb_run and fb_judge add), every one of them, a row each
 * (tests/feedback_flags.py holds the runner's and the C side's to this table, through
 * `kforge --list flags`): the verdict it leads to, REJECTED or SUSPECT, or CORRECT for a
 * flag that says something about the problem, the environment or the runner rather than
 * the candidate and leaves the verdict alone; and what it means.
 */
static const struct flag_rule {
	const char	*flag;
	enum fb_verdict	 verdict;	/* REJECTED, SUSPECT, or CORRECT: none */
	const char	*message;
} flag_rules[] = {
	{ "torch_patched", FB_VERDICT_REJECTED,
	  "it replaced PyTorch functions that the evaluation uses (restored after it ran)" },
	{ "stray_processes", FB_VERDICT_REJECTED,
	  "it left processes running after its step ended: work must happen inside forward, "
	  "in this process" },
	{ "output_subclass", FB_VERDICT_REJECTED,
	  "it returned a subclass of torch.Tensor, which can answer the comparison itself" },
	{ "tf32_enabled", FB_VERDICT_REJECTED,
	  "it turned TF32 on in an fp32 evaluation (lower precision than the reference's; "
	  "restored after it ran)" },
	{ "stale_output", FB_VERDICT_REJECTED,
	  "the outputs of its timed calls (each on inputs of its own) did not match the "
	  "reference's on the same inputs: an output kept from an earlier call, or not "
	  "computed (outputs must be computed from each call's inputs)" },
	{ "reference_slowed", FB_VERDICT_REJECTED,
	  "the reference ran slower between its timed calls than alone, beyond the noise: "
	  "something it left running took the reference's time" },
	{ "below_physical_floor", FB_VERDICT_REJECTED,
	  "its time is below what reading its inputs (and writing its outputs) once at the "
	  "GPU's peak memory bandwidth takes: it cannot have computed its outputs" },
	{ "timers_disagree", FB_VERDICT_SUSPECT,
	  "its calls took much longer by an outside clock (or by the GPU time of the kernels "
	  "CUPTI saw) than its timers measured: work may run outside the timed windows" },
	{ "threads_left", FB_VERDICT_REJECTED,
	  "a thread it started was still running after forward returned: work must happen "
	  "inside forward, in the caller's thread" },
	{ "processes_left", FB_VERDICT_REJECTED,
	  "a child process it started was still running after forward returned" },
	{ "excessive_speedup", FB_VERDICT_SUSPECT,
	  "its speedup over the reference, by the means and by the medians of its timed "
	  "calls, is above KernelBench's review threshold (10x)" },
	{ "side_stream_suspected", FB_VERDICT_SUSPECT,
	  "its wall time is well above its CUDA-event time: work may run on a stream the "
	  "timing does not see" },
	{ "custom_kernel_not_run", FB_VERDICT_REJECTED,
	  "the CUPTI profile of its forward shows none of its own kernels running: every "
	  "kernel that ran was PyTorch's or a library's (cuBLAS, cuDNN ...), so its custom "
	  "kernel did not do the work; forward must launch the kernel it defines" },
	{ "side_stream", FB_VERDICT_SUSPECT,
	  "the CUPTI profile of its forward shows kernels on more than one CUDA stream (the "
	  "reference's use one): work on a side stream can escape the timing; launch on "
	  "the current stream" },
	{ "output_dtype_mismatch", FB_VERDICT_SUSPECT,
	  "its output's dtype differs from the reference's (compared after conversion)" },
	{ "degenerate_output", FB_VERDICT_CORRECT,
	  "the reference's outputs are near zero or constant within the tolerance: a property "
	  "of the problem, which a wrong kernel may pass" },
	{ "reference_nan", FB_VERDICT_CORRECT, "the reference's outputs hold NaN" },
	{ "reference_error", FB_VERDICT_CORRECT, "the reference itself failed to run" },
	{ "inputs_not_reproducible", FB_VERDICT_CORRECT,
	  "the problem's get_inputs() made other values from the same seed in the candidate's "
	  "runner (eval.inputs: device), so the judge sent its inputs instead" },
	{ "input_mutated", FB_VERDICT_CORRECT,
	  "it changed its inputs in place (the reference's outputs are compared on pristine "
	  "inputs)" },
	{ "import_needs_gpu", FB_VERDICT_CORRECT,
	  "its module needs a GPU when imported; the execute step builds and checks it" },
	{ "compile_failed", FB_VERDICT_CORRECT,
	  "torch.compile of the reference failed, so there is no compiled baseline" },
	{ "compile_unavailable", FB_VERDICT_CORRECT,
	  "this torch has no torch.compile, so there is no compiled baseline" },
	{ "timing_error", FB_VERDICT_CORRECT,
	  "its timing failed (not with a CUDA error): correct, but untimed" },
	{ "out_of_memory", FB_VERDICT_CORRECT, "the step ran out of memory" },
	{ "runner_error", FB_VERDICT_CORRECT, "the runner itself failed: a bug in kforge" },
	{ "sandbox_failed", FB_VERDICT_CORRECT,
	  "the runner's namespaces could not be made under sandbox.mode strict" },
	{ "candidate_ended", FB_VERDICT_CORRECT,
	  "the candidate's process ended before the judge had its answers" },
	{ "judge_failed", FB_VERDICT_CORRECT, "the judge process failed" },
	{ "host_memory_exceeded", FB_VERDICT_CORRECT,
	  "the runner's processes held more host memory than the cap and were killed" },
	{ "runner_hung_after_result", FB_VERDICT_CORRECT,
	  "the runner reported, then outlived its deadline or its judge" },
	{ "runner_died_after_result", FB_VERDICT_CORRECT,
	  "the runner reported, then died of a signal" },
	{ "output_truncated", FB_VERDICT_CORRECT, "the runner's output was over its cap" },
};
#define N_FLAG_RULES	(sizeof(flag_rules) / sizeof(flag_rules[0]))

int
fb_flag_rule(size_t i, const char **flag, enum fb_verdict *verdict, const char **message)
{
	if (i >= N_FLAG_RULES)
		return -KB_ENOENT;
	*flag = flag_rules[i].flag;
	*verdict = flag_rules[i].verdict;
	*message = flag_rules[i].message;
	return 0;
}

static const struct flag_rule *
flag_rule(const char *flag)
{
	for (size_t i = 0; flag != NULL && i < N_FLAG_RULES; i++)
		if (strcmp(flag_rules[i].flag, flag) == 0)
			return &flag_rules[i];
	return NULL;
}

int
fb_static_check(const struct kb_config *cfg, const char *problem_path,
		const char *candidate_path, json_t **findings, char *err, size_t errlen)
{
	char			 python[PATH_MAX], checker[PATH_MAX], why[256];
	const char		*fmt = fb_raw_format(cfg) ? "raw" : "load_inline";
	const char		*torch_ops = cfg->eval.torch_ops != NULL ? cfg->eval.torch_ops :
						     "warning";
	const char		*envp[] = { "PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL };
	struct kb_spawn_opts	 o = { 0 };
	struct kb_spawn_result	 r = { 0 };
	json_t			*doc = NULL, *list = NULL;
	json_error_t		 jerr;
	int			 rc;

	*findings = NULL;
	if (!cfg->eval.static_checks) {
		*findings = json_array();	/* the runtime checks alone judge */
		return 0;
	}
	if ((rc = fb_find_python(cfg, python, sizeof(python), err, errlen)) < 0)
		return rc;
	if ((rc = kb_path_join(checker, sizeof(checker), kb_home(),
			       "feedback/kforge_check.py")) < 0) {
		snprintf(err, errlen, "the static checker's path is too long");
		return rc;
	}
	const char *argv[] = { python, "-SE", checker, "--problem", problem_path,
			       "--candidate", candidate_path, "--device", cfg->eval.device,
			       "--format", fmt, "--precision", cfg->eval.precision,
			       "--torch-ops", torch_ops, "--backend",
			       cfg->eval.backend != NULL ? cfg->eval.backend : "cuda", NULL };

	o.argv = argv;
	o.envp = envp;
	o.out_cap = FB_CHECK_OUT_CAP;
	o.timeout_ms = FB_CHECK_TIMEOUT_MS;
	if ((rc = kb_spawn_run(&o, &r)) < 0) {
		snprintf(err, errlen, "cannot run the static checker %s: %s", checker,
			 kb_strerror(rc));
		kb_spawn_result_clear(&r);
		return rc;
	}
	why[0] = '\0';
	if (r.end != KB_END_EXITED || r.exit_code != 0)
		snprintf(why, sizeof(why), "it %s %d", r.end == KB_END_EXITED ? "exited with" :
			 r.end == KB_END_TIMEOUT ? "timed out, signal" : "died of signal",
			 r.end == KB_END_EXITED ? r.exit_code : r.signo);
	else if ((doc = json_loadb(r.out.p != NULL ? r.out.p : "", r.out.len, 0,
				   &jerr)) == NULL)
		snprintf(why, sizeof(why), "its output is not JSON (%s)", jerr.text);
	else if (!json_is_array(list = json_object_get(doc, "findings")))
		snprintf(why, sizeof(why), "its output has no findings list");
	if (why[0] != '\0') {
		/* Its first line says why (a usage error, a traceback's last line is
		 * further down: the log has the rest). */
		const char *first = r.out.p != NULL ? r.out.p : "";

		snprintf(err, errlen, "the static checker failed: %s: %.*s", why,
			 (int)strcspn(first, "\n"), first);
		log_warnx("%s", err);
		json_decref(doc);
		kb_spawn_result_clear(&r);
		return -KB_ECORRUPT;
	}
	*findings = json_incref(list);
	json_decref(doc);
	kb_spawn_result_clear(&r);
	return 0;
}

static bool
is_error(const json_t *finding)
{
	const char *sev = json_string_value(json_object_get(finding, "severity"));

	return sev == NULL || strcmp(sev, "warning") != 0;
}

/* An error that rejects: every one but a syntax error, which is no broken rule but a
 * failed build, and goes to the build so that the model reads Python's own message and
 * the status is compile_error, as KernelBench's. */
static bool
rejects(const json_t *finding)
{
	const char *rule = json_string_value(json_object_get(finding, "rule"));

	return is_error(finding) && (rule == NULL || strcmp(rule, "syntax_error") != 0);
}

bool
fb_findings_reject(const json_t *findings)
{
	size_t	 i;
	json_t	*f;

	json_array_foreach(findings, i, f)
		if (rejects(f))
			return true;
	return false;
}

static json_t *
reason(const char *rule, const char *kind, const char *message, json_int_t line)
{
	json_t	*r = json_pack("{s:s, s:s, s:s}", "rule", rule != NULL ? rule : "unknown",
			       "kind", kind, "message", message != NULL ? message : "");

	if (line > 0)
		json_object_set_new(r, "line", json_integer(line));
	return r;
}

static json_t *
finding_reason(const json_t *f)
{
	return reason(json_string_value(json_object_get(f, "rule")), "finding",
		      json_string_value(json_object_get(f, "message")),
		      json_integer_value(json_object_get(f, "line")));
}

json_t *
fb_rejection(const json_t *findings)
{
	json_t	*result;
	char	*message = NULL, *next;
	size_t	 i;
	json_t	*f;

	json_array_foreach(findings, i, f) {
		if (!rejects(f))
			continue;
		next = kb_asprintf("%s%s%s", message != NULL ? message : "",
				   message != NULL ? "; " : "",
				   json_string_value(json_object_get(f, "message")) ?: "");
		free(message);
		message = next;
	}
	result = json_pack("{s:s, s:s, s:b, s:b, s:o, s:{s:s}}", "status", "rejected", "mode",
			   "precompile", "compiled", 0, "correct", 0, "flags", json_array(),
			   "details", "message", message != NULL ? message :
			   "the static checks rejected it");
	free(message);
	(void)fb_judge(result, findings, NULL);
	return result;
}

/* Adds to reasons the findings and flags that lead to verdict (REJECTED: the errors and
 * the rejecting flags; SUSPECT: the warnings and the suspect flags); whether any did. */
static bool
add_reasons(json_t *reasons, const json_t *findings, const json_t *flags, enum fb_verdict verdict)
{
	const struct flag_rule	*rule;
	bool			 added = false;
	json_t			*f;
	size_t			 i;

	json_array_foreach(findings, i, f) {
		if (verdict == FB_VERDICT_REJECTED ? rejects(f) : !is_error(f)) {
			json_array_append_new(reasons, finding_reason(f));
			added = true;
		}
	}
	json_array_foreach(flags, i, f) {
		if ((rule = flag_rule(json_string_value(f))) != NULL && rule->verdict == verdict) {
			json_array_append_new(reasons, reason(rule->flag, "flag", rule->message, 0));
			added = true;
		}
	}
	return added;
}

/* A number of result's at path (NULL-terminated keys), or -1 where it is not a finite
 * positive number. */
static double
positive_at(const json_t *v, const char *const *path)
{
	double	d;

	for (; *path != NULL; path++)
		v = json_object_get(v, *path);
	d = json_is_number(v) ? json_number_value(v) : -1;
	return isfinite(d) && d > 0 ? d : -1;
}

/*
 * The speedup of a correct result, settled in one place for runs and `kforge eval`: the
 * runner's, from the reference timed beside the candidate in one process, the ratio of
 * the statistic that the timing's pair names (eval.speedup, fb_speedup_statistic: by
 * default KernelBench's ratio of means on a GPU, of medians on the CPU), with its 95%
 * interval; else, where the runner timed the candidate alone, the baseline's reference
 * mean over the candidate's (no interval). Sets the result's speedup, speedup_ci95, runtime_ms and ref_runtime_ms
 * (the candidate's and the reference's times by the same statistic, so that the speedup
 * is the one over the other; null where not measured). Returns the speedup
 * to judge an excessive one by, -1 when none: the lower of the ratio of means and the
 * ratio of medians where the runner measured both. A few preempted trials of the
 * reference raise its mean, not its median, so an honest kernel is not flagged for them;
 * and a candidate cannot hide a large speedup behind a few slow calls that widen its
 * interval, since its median stays fast (to bring the median down it must be slow on
 * most calls, which leaves its mean at most about twice as fast as its median).
 */
static double
settle_speedup(json_t *result, const json_t *baseline, bool correct)
{
	static const char *const base[] = { "eager", "mean_ms", NULL };
	json_t	*timing = json_object_get(result, "timing");
	json_t	*pair = json_object_get(timing, "pair");
	json_t	*stat = json_object_get(pair, "statistic");
	bool	 by_median = json_is_string(stat) && strcmp(json_string_value(stat), "median") == 0;
	const char *key = by_median ? "median_ms" : "mean_ms";
	const char *const cand[] = { "timing", "candidate", key, NULL };
	const char *const ref[] = { "timing", "reference", key, NULL };
	const char *const other[] = { "timing", "pair", by_median ? "mean_speedup" :
				      "median_speedup", NULL };
	double	 cand_ms = positive_at(result, cand), ref_ms = positive_at(result, ref);
	double	 speedup = -1, judged = -1, second = -1;
	json_t	*ci = NULL;

	if (ref_ms > 0) {
		ci = json_object_get(pair, "ci95");
		second = positive_at(result, other);
	} else {
		ref_ms = positive_at(baseline, base);
	}
	if (correct && cand_ms > 0 && ref_ms > 0) {
		speedup = ref_ms / cand_ms;
		judged = second > 0 && second < speedup ? second : speedup;
	}
	json_object_set_new(result, "runtime_ms", cand_ms > 0 ? json_real(cand_ms) : json_null());
	json_object_set_new(result, "ref_runtime_ms", ref_ms > 0 ? json_real(ref_ms) : json_null());
	json_object_set_new(result, "speedup", speedup > 0 ? json_real(speedup) : json_null());
	json_object_set_new(result, "speedup_ci95", speedup > 0 && json_array_size(ci) == 2 ?
			    json_incref(ci) : json_null());
	return judged;
}

enum fb_verdict
fb_judge(json_t *result, const json_t *findings, const json_t *baseline)
{
	const char		*status = json_string_value(json_object_get(result, "status"));
	bool			 correct = json_is_true(json_object_get(result, "correct"));
	enum fb_verdict		 v;
	json_t			*flags = fb_flags_of(result), *reasons;

	if (settle_speedup(result, baseline, correct && status != NULL &&
			   strcmp(status, "ok") == 0) > FB_EXCESSIVE_SPEEDUP)
		fb_flag(result, "excessive_speedup");
	if (findings != NULL)
		json_object_set(result, "findings", (json_t *)findings);
	findings = json_object_get(result, "findings");

	reasons = json_array();
	v = correct && status != NULL && strcmp(status, "ok") == 0 ? FB_VERDICT_CORRECT :
	    FB_VERDICT_INCORRECT;
	if (status != NULL && strcmp(status, "rejected") == 0)
		v = FB_VERDICT_REJECTED;
	/* Broken rules first: a rejected result says so whether or not it ran right;
	 * then what makes a correct result one to review. */
	if (add_reasons(reasons, findings, flags, FB_VERDICT_REJECTED))
		v = FB_VERDICT_REJECTED;
	if (v == FB_VERDICT_CORRECT && add_reasons(reasons, findings, flags, FB_VERDICT_SUSPECT))
		v = FB_VERDICT_SUSPECT;
	if (v == FB_VERDICT_INCORRECT)
		json_array_append_new(reasons, reason(status != NULL ? status : "crashed",
						      "status", "its result was not correct", 0));
	json_object_set_new(result, "verdict", json_string(fb_verdict_name(v)));
	json_object_set_new(result, "reasons", reasons);
	return v;
}

char *
fb_verdict_feedback(const json_t *result)
{
	const char	*v = json_string_value(json_object_get(result, "verdict"));
	const char	*heading;
	struct kb_buf	 b = KB_BUF_INIT(64 << 10);
	json_t		*reasons = json_object_get(result, "reasons"), *r;
	size_t		 i;

	if (v == NULL)
		return NULL;
	if (strcmp(v, "rejected") == 0) {
		heading = "This kernel was rejected: it breaks the rules of the evaluation, so "
			  "it does not count whatever its output. Fix each point:";
	} else if (strcmp(v, "suspect") == 0) {
		heading = "This result is suspect: it does not count as correct until a person "
			  "reviews it. The reasons:";
	} else if (strcmp(v, "incorrect") == 0 &&
		   json_array_size(json_object_get(result, "findings")) > 0) {
		/* Warnings say nothing of why it failed, but would count against it once
		 * it is right: the model hears of them now. */
		heading = "The static checks also found what would make a correct result "
			  "suspect:";
		reasons = json_object_get(result, "findings");
	} else {
		return NULL;
	}
	kb_buf_printf(&b, "%s\n", heading);
	json_array_foreach(reasons, i, r) {
		json_int_t	 line = json_integer_value(json_object_get(r, "line"));
		const char	*msg = json_string_value(json_object_get(r, "message")) ?: "";

		/* The checker's messages name their line already. */
		if (line > 0 && strncmp(msg, "line ", 5) != 0)
			kb_buf_printf(&b, "- line %lld: ", (long long)line);
		else
			kb_buf_printf(&b, "- ");
		kb_buf_printf(&b, "%s (%s)\n", msg,
			      json_string_value(json_object_get(r, "rule")) ?: "");
	}
	return kb_buf_steal(&b);
}

/* ------------------------------------------------------------ the profile rule */

/*
 * What marks a kernel as PyTorch's or a vendor library's rather than the candidate's, by
 * its (demangled) name: ATen and c10, CUB and Thrust as torch uses them, cuBLAS(Lt) and
 * its GEMM families, cuDNN, CUTLASS, FlashAttention as torch ships it, Inductor's Triton
 * kernels. A kernel the candidate's source names counts as its own first, whatever its
 * name looks like.
 */
static const char *const library_kernel_marks[] = {
	"at::", "c10::", "cub::", "thrust::", "cublas", "cutlass", "cudnn", "xmma", "nvjet",
	"pytorch_flash::", "fmha", "flash_fwd", "sm80_", "sm86_", "sm89_", "sm90_", "sm100_",
	"ampere_", "volta_", "turing_", "hopper_", "gemv2", "gemvx", "gemmSN", "gemmk1",
	"splitKreduce", "dot_kernel", "scal_kernel", "axpy_kernel", "implicit_convolve",
	"nchwToNhwc", "nhwcToNchw", "triton_poi_", "triton_red_", "triton_per_",
	"triton_tem_",
};
#define FB_PROFILE_CHECK_KERNELS	16	/* kernels kept in details.profile_check */

static bool
library_kernel(const char *name)
{
	for (size_t i = 0; i < sizeof(library_kernel_marks) / sizeof(library_kernel_marks[0]); i++)
		if (strstr(name, library_kernel_marks[i]) != NULL)
			return true;
	return false;
}

/* The kernel's function name: "short" (or "name") without a leading return type,
 * template arguments, parameters and namespaces: "void ns::k<4>(float*)" -> "k". */
static void
kernel_ident(const json_t *k, char *out, size_t n)
{
	const char	*s = json_string_value(json_object_get(k, "short"));
	size_t		 len, start = 0;

	if (s == NULL)
		s = json_string_value(json_object_get(k, "name"));
	if (s == NULL)
		s = "";
	if (strncmp(s, "void ", 5) == 0)
		s += 5;
	len = strcspn(s, "<(");
	for (size_t i = 0; i + 1 < len; i++)
		if (s[i] == ':' && s[i + 1] == ':')
			start = i + 2;
	snprintf(out, n, "%.*s", (int)(len - start), s + start);
}

static bool
contains_integer(const json_t *array, const json_t *v)
{
	json_t	*e;
	size_t	 i;

	json_array_foreach(array, i, e)
		if (json_integer_value(e) == json_integer_value(v))
			return true;
	return false;
}

/* The distinct streams a profile's kernels ran on; -1 when it lists none. */
static int
stream_count(const json_t *profile, json_t *ids)
{
	json_t	*k, *s, *seen = json_array();
	size_t	 i, j;
	bool	 any = false;
	int	 n;

	json_array_foreach(json_object_get(profile, "kernels"), i, k) {
		json_array_foreach(json_object_get(k, "streams"), j, s) {
			any = true;
			if (json_is_integer(s) && !contains_integer(seen, s))
				json_array_append(seen, s);
		}
	}
	json_array_foreach(json_object_get(profile, "streams"), i, s) {
		json_t	*id = json_object_get(s, "id");

		any = true;
		if (json_is_integer(id) && json_integer_value(json_object_get(s, "kernels")) != 0 &&
		    !contains_integer(seen, id))
			json_array_append(seen, id);
	}
	n = any ? (int)json_array_size(seen) : -1;
	if (ids != NULL)
		json_array_extend(ids, seen);
	json_decref(seen);
	return n;
}

static void
drop_flag(json_t *flags, const char *flag)
{
	for (size_t i = json_array_size(flags); i-- > 0;)
		if (json_is_string(json_array_get(flags, i)) &&
		    strcmp(json_string_value(json_array_get(flags, i)), flag) == 0)
			json_array_remove(flags, i);
}

/* Why a profile proves nothing about what ran, or NULL when it does. */
static const char *
profile_unfit(const json_t *profile)
{
	const char	*source = json_string_value(json_object_get(profile, "source"));
	const char	*status = json_string_value(json_object_get(profile, "status"));

	if (profile == NULL)
		return "no profile";
	if (source == NULL || strcmp(source, "cupti") != 0)
		return "not a CUPTI profile";
	if (status != NULL && strcmp(status, "ok") != 0)
		return "the CUPTI profile failed";
	if (!json_is_true(json_object_get(profile, "complete")) ||
	    json_is_true(json_object_get(profile, "partial")))
		return "a partial profile";
	if (!json_is_array(json_object_get(profile, "kernels")))
		return "the profile lists no kernels";
	return NULL;
}

static json_int_t
kernels_launched(const json_t *p)
{
	json_t	*v = json_object_get(p, "launches");

	if (json_is_integer(v))
		return json_integer_value(v);
	return (json_int_t)json_array_size(json_object_get(p, "kernels")) +
	       json_integer_value(json_object_get(json_object_get(p, "other"), "calls"));
}

/*
 * The third timer: the GPU time of the kernels CUPTI saw in one forward call of the
 * profile, against the CUDA events' time of a call in the execute's timing. The profile
 * runs without the L2 flush, so an honest call's kernels take no longer there than the
 * events measured; kernels that take much longer did work the events did not see (on a
 * stream they do not cover, or before the start event): timers_disagree (suspect).
 */
#define FB_CUPTI_OVER_EVENTS	1.5	/* relative, and ... */
#define FB_CUPTI_OVER_MS	0.02	/* ... absolute, for the events' resolution */

static void
cross_examine(json_t *result, const json_t *profile, json_t *check)
{
	json_t		*k, *cand;
	json_int_t	 iters = json_integer_value(json_object_get(profile, "iterations"));
	double		 ns = (double)json_integer_value(json_object_get(json_object_get(profile,
						"other"), "total_ns"));
	double		 event_ms, kernel_ms;
	size_t		 i;

	/* The judge's own clock may have raised the flag (details.timers): kept so; only the
	 * profile's part of it is decided again. */
	json_t *t = json_object_get(json_object_get(result, "details"), "timers");

	if (!(json_number_value(json_object_get(t, "excess_ms")) -
	      json_number_value(json_object_get(t, "reference_excess_ms")) >
	      json_number_value(json_object_get(t, "allowed_ms"))))
		drop_flag(fb_flags_of(result), "timers_disagree");
	cand = json_object_get(json_object_get(result, "timing"), "candidate");
	event_ms = json_number_value(json_object_get(cand, "median_ms"));
	if (iters <= 0 || event_ms <= 0 ||
	    strcmp(json_string_value(json_object_get(cand, "method")) ?: "", "cuda_event") != 0)
		return;
	json_array_foreach(json_object_get(profile, "kernels"), i, k)
		ns += (double)json_integer_value(json_object_get(k, "total_ns"));
	kernel_ms = ns / 1e6 / (double)iters;
	json_object_set_new(check, "cupti_ms_per_call", json_real(kernel_ms));
	json_object_set_new(check, "event_ms_per_call", json_real(event_ms));
	if (kernel_ms > event_ms * FB_CUPTI_OVER_EVENTS + FB_CUPTI_OVER_MS)
		fb_flag(result, "timers_disagree");
}

enum fb_verdict
fb_judge_profile(json_t *result, const json_t *profile, const json_t *reference,
		 const char *source)
{
	json_t		*flags = fb_flags_of(result), *details, *check, *ran;
	json_t		*own = fb_source_kernels(source), *k, *v, *streams;
	const char	*why = profile_unfit(profile);
	char		 ident[256];
	bool		 own_ran = false;
	int		 nstreams, ref_streams;
	size_t		 i, j;

	drop_flag(flags, "custom_kernel_not_run");
	drop_flag(flags, "side_stream");
	if (!json_is_object(details = json_object_get(result, "details")))
		json_object_set_new(result, "details", details = json_object());
	check = json_pack("{s:b, s:O}", "judged", why == NULL, "own_names", own);
	json_object_set_new(details, "profile_check", check);
	if (why != NULL) {
		json_object_set_new(check, "why", json_string(why));
		goto out;
	}
	ran = json_array();
	json_array_foreach(json_object_get(profile, "kernels"), i, k) {
		const char	*name = json_string_value(json_object_get(k, "name"));
		bool		 mine = false;

		kernel_ident(k, ident, sizeof(ident));
		json_array_foreach(own, j, v)
			mine = mine || strcmp(json_string_value(v), ident) == 0;
		mine = mine || (name != NULL && !library_kernel(name));
		own_ran = own_ran || mine;
		if (json_array_size(ran) < FB_PROFILE_CHECK_KERNELS)
			json_array_append_new(ran, json_pack("{s:s, s:O?, s:O?, s:b}", "name",
					      ident, "calls", json_object_get(k, "calls"),
					      "streams", json_object_get(k, "streams"), "own", mine));
	}
	json_object_set_new(check, "kernels", ran);
	json_object_set_new(check, "custom_kernel_ran", json_boolean(own_ran));
	if (!own_ran) {
		json_int_t unnamed = json_integer_value(json_object_get(json_object_get(profile,
							"other"), "kernels"));

		if (unnamed > 0) {
			/* Its kernel may be among those the library did not name. */
			json_object_set_new(check, "why", json_string("kernels beyond those "
					    "listed are unnamed"));
		} else if (kernels_launched(profile) == 0 && reference != NULL &&
			   kernels_launched(reference) == 0) {
			json_object_set_new(check, "why", json_string("neither the candidate "
					    "nor the reference launched a kernel"));
		} else {
			fb_flag(result, "custom_kernel_not_run");
		}
	}
	streams = json_array();
	nstreams = stream_count(profile, streams);
	json_object_set_new(check, "streams", streams);
	ref_streams = reference != NULL && profile_unfit(reference) == NULL ?
		      stream_count(reference, NULL) : -1;
	if (ref_streams >= 0)
		json_object_set_new(check, "reference_streams", json_integer(ref_streams));
	if (nstreams > 1 && ref_streams <= 1)
		fb_flag(result, "side_stream");
	cross_examine(result, profile, check);
out:
	json_decref(own);
	return fb_judge(result, NULL, json_object_get(result, "baseline"));
}
