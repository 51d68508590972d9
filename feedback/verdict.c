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

#include "feedback/feedback.h"

#define FB_CHECK_TIMEOUT_MS	30000		/* the checker parses; it never runs code */
#define FB_CHECK_OUT_CAP	(256 << 10)	/* at most 50 findings of a line each */

static const char *const verdict_names[] = {
	[FB_VERDICT_CORRECT] = "correct",
	[FB_VERDICT_INCORRECT] = "incorrect",
	[FB_VERDICT_REJECTED] = "rejected",
	[FB_VERDICT_SUSPECT] = "suspect",
};

const char *
fb_verdict_name(enum fb_verdict v)
{
	return (unsigned)v < sizeof(verdict_names) / sizeof(verdict_names[0]) ?
	       verdict_names[v] : "incorrect";
}

/*
 * The policy for the runner's flags (and those fb_run and fb_judge add): a flag not
 * listed says something about the problem or the environment, not the candidate
 * (degenerate_output, reference_nan, out_of_memory, timing_error ...), and leaves the
 * verdict alone.
 */
static const struct flag_rule {
	const char	*flag;
	enum fb_verdict	 verdict;	/* REJECTED or SUSPECT */
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
	  "after a few of its input values were changed in place between timed calls, its "
	  "output no longer matched the reference's: an output kept from an earlier call "
	  "(outputs must be computed from each call's inputs)" },
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
	{ "output_dtype_mismatch", FB_VERDICT_SUSPECT,
	  "its output's dtype differs from the reference's (compared after conversion)" },
	{ "output_device_mismatch", FB_VERDICT_SUSPECT,
	  "its output is on another device than the reference's (compared after a copy)" },
};
#define N_FLAG_RULES	(sizeof(flag_rules) / sizeof(flag_rules[0]))

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
	const char		*fmt = cfg->eval.format != NULL ? cfg->eval.format : "load_inline";
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
 * runner's, from the reference timed beside the candidate in one process (KernelBench's
 * ratio of means, with its 95% interval); else, where the runner timed the candidate
 * alone, the baseline's reference mean over the candidate's (no interval). Sets the
 * result's speedup, speedup_ci95 and ref_runtime_ms (null where not measured). Returns
 * the speedup to judge an excessive one by, -1 when none: the lower of the ratio of
 * means and the ratio of medians where the runner measured both. A few preempted trials
 * of the reference raise its mean, not its median, so an honest kernel is not flagged
 * for them; and a candidate cannot hide a large speedup behind a few slow calls that
 * widen its interval, since its median stays fast (to bring the median down it must be
 * slow on most calls, which leaves its mean at most about twice as fast as its median).
 */
static double
settle_speedup(json_t *result, const json_t *baseline, bool correct)
{
	static const char *const cand[] = { "timing", "candidate", "mean_ms", NULL };
	static const char *const ref[] = { "timing", "reference", "mean_ms", NULL };
	static const char *const median[] = { "timing", "pair", "median_speedup", NULL };
	static const char *const base[] = { "eager", "mean_ms", NULL };
	double	 cand_ms = positive_at(result, cand), ref_ms = positive_at(result, ref);
	double	 speedup = -1, judged = -1, med = -1;
	json_t	*ci = NULL;

	if (ref_ms > 0) {
		ci = json_object_get(json_object_get(json_object_get(result, "timing"), "pair"),
				     "ci95");
		med = positive_at(result, median);
	} else {
		ref_ms = positive_at(baseline, base);
	}
	if (correct && cand_ms > 0 && ref_ms > 0) {
		speedup = ref_ms / cand_ms;
		judged = med > 0 && med < speedup ? med : speedup;
	}
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
	json_t			*flags = json_object_get(result, "flags"), *reasons;

	if (!json_is_array(flags))
		json_object_set_new(result, "flags", flags = json_array());
	if (settle_speedup(result, baseline, correct && status != NULL &&
			   strcmp(status, "ok") == 0) > FB_EXCESSIVE_SPEEDUP &&
	    !kb_json_has_string(flags, "excessive_speedup"))
		json_array_append_new(flags, json_string("excessive_speedup"));
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
