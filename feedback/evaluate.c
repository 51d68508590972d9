/*
 * evaluate.c: fb_evaluate, a candidate through the three steps of steps.c in a row, as
 * `kforge eval` does. A run's turn takes the same steps, each in the state and slot it
 * belongs to (fsm/actions.c: PRECOMPILE holds a compile slot, EXECUTE and PROFILE a
 * GPU), so a file gets the same build, the same reference and the same verdict in both.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "rundir/rundir.h"
#include "base/banned.h"

/*
 * The PROFILE step of a run's turn, for `kforge eval --profile`: the reference's profile
 * and the candidate's (fb_profile: CUPTI on a GPU, torch.profiler elsewhere), then the
 * profile rule on the judged result, as fsm/actions.c does after a turn's EXECUTE.
 */
static int
eval_profile(const struct kb_config *cfg, const struct fb_request *req,
	     struct fb_evaluation *ev)
{
	struct fb_profile_ask	 ask = { 0 };
	struct fb_profiled	 p;
	char			*code = NULL;
	int			 rc;

	(void)kb_read_file(req->candidate_path, FB_BUILD_KEY_CAP, &code, NULL);
	ask.tag = "candidate";
	ask.reference = FB_REF_PROFILE_NOW;
	ask.judged = ev->result;
	ask.source = code;
	rc = fb_step_profile(cfg, req, &ask, NULL, &p);
	if (p.reference_ran && p.reference.status == FB_ST_OK)
		ev->reference_profile = json_incref(json_object_get(p.reference.result,
								    "profile"));
	ev->profile_wall_ms = p.reference.wall_ms + p.run.wall_ms;
	ev->profile = json_incref(json_object_get(p.run.result, "profile"));
	if (p.judged)
		ev->verdict = p.verdict;
	fb_profiled_clear(&p);
	free(code);
	return rc;
}

int
fb_evaluate(const struct kb_config *cfg, const struct fb_request *req,
	    const char *device_name, struct fb_evaluation *ev, char *err, size_t errlen)
{
	struct fb_precompiled	 pre;
	struct fb_executed	 ex;
	json_t			*findings = NULL;
	int			 rc;

	memset(ev, 0, sizeof(*ev));
	ev->verdict = FB_VERDICT_INCORRECT;
	rc = fb_step_precompile(cfg, req, NULL, NULL, &pre, err, errlen);
	findings = pre.findings;
	pre.findings = NULL;
	ev->build = pre.build;
	memset(&pre.build, 0, sizeof(pre.build));
	if (rc < 0)
		goto out;
	if (pre.rejected) {
		ev->result = pre.result;	/* judged there */
		pre.result = NULL;
		ev->verdict = FB_VERDICT_REJECTED;
		ev->rejected = true;
		goto out;
	}
	if (fb_status_parse(json_string_value(json_object_get(ev->build.result, "status")),
			    &ev->status) < 0)
		ev->status = FB_ST_CRASHED;
	if (ev->status != FB_ST_OK) {
		ev->result = json_incref(ev->build.result);
		goto judge;
	}
	ev->compiled = true;
	rc = fb_step_execute(cfg, req, req->problem_path, device_name, NULL, findings, NULL,
			     &ex);
	ev->baseline = ex.baseline;
	ev->executed = ex.run;
	if (rc < 0)
		goto out;
	if (!ex.executed) {
		/* The reference failed by itself: the environment's error. */
		char *msg = fb_reference_failure(ev->baseline.record);

		ev->status = FB_ST_ENV_ERROR;
		ev->result = json_pack("{s:s, s:b, s:b, s:O, s:{s:s}}", "status",
				       fb_status_name(FB_ST_ENV_ERROR), "compiled", 1, "correct", 0,
				       "baseline", ev->baseline.record, "details", "message", msg);
		free(msg);
		goto judge;
	}
	ev->status = ev->executed.status;
	ev->result = json_incref(ev->executed.result);
	if (ex.judged) {
		ev->verdict = ex.verdict;
		goto judged;
	}
judge:
	ev->verdict = fb_judge(ev->result, findings, ev->baseline.record);
judged:
	if (cfg->refinement.feedback_p && ev->executed.result != NULL &&
	    (ev->verdict == FB_VERDICT_CORRECT || ev->verdict == FB_VERDICT_SUSPECT))
		rc = eval_profile(cfg, req, ev);
	ev->correct = json_is_true(json_object_get(ev->result, "correct"));
out:
	fb_precompiled_clear(&pre);
	json_decref(findings);
	return rc;
}

void
fb_outcome_of_judged(json_t *result, bool executed, struct fb_outcome *o)
{
	json_t	*v;

	memset(o, 0, sizeof(*o));
	o->runtime_ms = o->ref_runtime_ms = o->speedup = -1;
	o->result = result;
	if (fb_status_parse(json_string_value(json_object_get(result, "status")), &o->status) < 0)
		o->status = FB_ST_CRASHED;
	o->compiled = executed || o->status == FB_ST_OK;
	o->correct = json_is_true(json_object_get(result, "correct"));
	if (json_is_number(v = json_object_get(result, "speedup")))
		o->speedup = json_number_value(v);
	if (json_is_number(v = json_object_get(result, "ref_runtime_ms")))
		o->ref_runtime_ms = json_number_value(v);
	/* runtime_ms is fb_judge's; a result judged before it set one has the mean. */
	if (json_is_number(v = json_object_get(result, "runtime_ms")) ||
	    json_is_number(v = json_object_get(json_object_get(json_object_get(result, "timing"),
							       "candidate"), "mean_ms")))
		o->runtime_ms = json_number_value(v);
}

void
fb_evaluation_clear(struct fb_evaluation *ev)
{
	json_decref(ev->result);
	json_decref(ev->profile);
	json_decref(ev->reference_profile);
	fb_build_clear(&ev->build);
	fb_baseline_clear(&ev->baseline);
	fb_outcome_clear(&ev->executed);
	memset(ev, 0, sizeof(*ev));
}
