/*
 * judge.c: an execute's two results made one (docs/DESIGN.md §5, trust boundaries).
 *
 * An execute runs two runners (run.c starts them): the judge, which imports the problem
 * alone and holds the reference, its outputs and its timing, and the candidate's runner,
 * which imports the candidate and answers the judge. Each writes a result. The judge's
 * says whether the candidate is correct, how fast each was and which integrity rules it
 * broke; the candidate's says what only its process saw: the build's output, the
 * exception its code raised, the flags of its in-process checks, how the runner started.
 * What the candidate's process reports can only add to what is held against it, never
 * make it correct or faster: correctness, timings and speedup are the judge's alone.
 */
#include <string.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

/* What of the candidate's details the execute's result keeps (the judge has its own
 * trials, checks and timings): what its build printed, how its runner started and
 * where, what its code raised, what its process left. */
static const char *const candidate_details[] = {
	"compiler_output", "compile_s", "exception", "traceback", "start", "server",
	"cuda_ahead", "cpus", "sched_policy", "threads_left", "processes_left",
	"stray_processes", "output_cap_bytes", "log_tail", "input_placement", "trial_ms",
	"sandbox", "namespaces", "allocator",
};
/* The phases of the candidate's runner (from its request); the judge's follow, from
 * its own request, which came first: an order that still holds on one clock. */
static const char *const candidate_phases[] = { "torch", "load", "models" };
static const char *const judge_phases[] = { "correctness", "timing" };
/* The judge's own flag for a candidate side that went away, said better by the
 * candidate's runner's end. */
#define JUDGE_SAW_END	"candidate_ended"

static void
flags_union(json_t *into, json_t *from, const char *except)
{
	size_t	 i;
	json_t	*f;

	json_array_foreach(json_object_get(from, "flags"), i, f)
		if (json_is_string(f) && (except == NULL || strcmp(json_string_value(f), except) != 0))
			fb_flag(into, json_string_value(f));
}

static json_t *
details_of(json_t *res)
{
	json_t	*d = json_object_get(res, "details");

	if (!json_is_object(d)) {
		d = json_object();
		json_object_set_new(res, "details", d);
	}
	return d;
}

/* The judge's verdict on what the candidate did before it failed: its trials, how far
 * they got, and its own details (under details.judge). */
static void
add_judged(json_t *res, json_t *judge)
{
	json_t	*d = details_of(res), *jd = json_object_get(judge, "details");
	json_t	*j;

	json_object_set(d, "trials", json_is_array(json_object_get(jd, "trials")) ?
			json_object_get(jd, "trials") : json_array());
	if (json_object_get(jd, "trials_passed") != NULL) {
		json_object_set(d, "trials_passed", json_object_get(jd, "trials_passed"));
		json_object_set(d, "trials_total", json_object_get(jd, "trials_total"));
	}
	j = json_is_object(jd) ? json_deep_copy(jd) : json_object();
	json_object_del(j, "trials");
	json_object_set_new(d, "judge", j);
	flags_union(res, judge, JUDGE_SAW_END);
}

json_t *
fbj_merge(json_t *cand, json_t *judge, const char *judge_why)
{
	json_t		*res, *d, *cd, *phases, *cphases, *jphases, *sc;
	const char	*st = json_string_value(json_object_get(cand, "status"));
	size_t		 i;

	if (judge == NULL) {
		/* The judge wrote nothing: nothing of the candidate can be judged. */
		if (st != NULL && strcmp(st, "ok") == 0) {
			json_object_set_new(cand, "status", json_string("crashed"));
			json_object_set_new(cand, "correct", json_false());
			json_object_set_new(details_of(cand), "message",
					    json_sprintf("the judge failed: %s", judge_why));
		}
		fb_flag(cand, "judge_failed");
		return cand;
	}
	if (st == NULL || strcmp(st, "ok") != 0) {
		/* The candidate's side failed (or its runner died): its result says how. */
		add_judged(cand, judge);
		json_decref(judge);
		return cand;
	}
	res = judge;
	json_object_set_new(res, "mode", json_string("execute"));
	json_object_set(res, "compiled", json_object_get(cand, "compiled"));
	d = details_of(res);
	cd = json_object_get(cand, "details");
	/* Each runner's sandbox: the judge's under details.judge, the candidate's on top. */
	if (json_object_get(d, "sandbox") != NULL && json_is_object(json_object_get(d, "judge")))
		json_object_set(json_object_get(d, "judge"), "sandbox", json_object_get(d, "sandbox"));
	for (i = 0; i < sizeof(candidate_details) / sizeof(candidate_details[0]); i++) {
		json_t *v = json_object_get(cd, candidate_details[i]);

		if (v != NULL)
			json_object_set(d, candidate_details[i], v);
	}
	jphases = json_object_get(d, "phases_s");
	cphases = json_object_get(cd, "phases_s");
	phases = json_object();
	for (i = 0; i < sizeof(candidate_phases) / sizeof(candidate_phases[0]); i++)
		if (json_object_get(cphases, candidate_phases[i]) != NULL)
			json_object_set(phases, candidate_phases[i],
					json_object_get(cphases, candidate_phases[i]));
	for (i = 0; i < sizeof(judge_phases) / sizeof(judge_phases[0]); i++)
		if (json_object_get(jphases, judge_phases[i]) != NULL)
			json_object_set(phases, judge_phases[i],
					json_object_get(jphases, judge_phases[i]));
	if (json_is_object(json_object_get(d, "judge")) && jphases != NULL)
		json_object_set(json_object_get(d, "judge"), "phases_s", jphases);
	json_object_set_new(d, "phases_s", phases);
	/* The candidate's in-process comparison of wall and event time (side streams). */
	sc = json_object_get(json_object_get(json_object_get(cand, "timing"), "candidate"),
			     "stream_check");
	if (sc != NULL && json_is_object(json_object_get(json_object_get(res, "timing"), "candidate")))
		json_object_set(json_object_get(json_object_get(res, "timing"), "candidate"),
				"stream_check", sc);
	flags_union(res, cand, NULL);
	if (json_object_get(res, "runner") != NULL)
		json_object_set(res, "judge_runner", json_object_get(res, "runner"));
	if (json_object_get(cand, "runner") != NULL)
		json_object_set(res, "runner", json_object_get(cand, "runner"));
	if (json_object_get(cand, "wall_ms") != NULL)
		json_object_set(res, "wall_ms", json_object_get(cand, "wall_ms"));
	json_decref(cand);
	return res;
}

bool
fbj_connected(const json_t *judge)
{
	/* The judge's phases (details.phases_s) name "connected" once it took the
	 * candidate's runner's connection. */
	return json_object_get(json_object_get(json_object_get(judge, "details"), "phases_s"),
			       "connected") != NULL;
}

json_t *
fbj_left(json_t *cand, json_t *judge, const char *judge_why, bool candidate_ran)
{
	const char	*st = json_string_value(json_object_get(judge, "status"));
	const char	*msg;
	enum fb_status	 status;
	json_t		*d;

	/* A judge that had the runner's connection judged what it did (whatever its
	 * verdict); the runner then hung after it (result.c flagged it so). */
	if (fbj_connected(judge))
		return fbj_merge(cand, judge, judge_why);
	d = details_of(cand);
	msg = json_string_value(json_object_get(json_object_get(judge, "details"), "message"));
	json_object_set_new(cand, "status", json_string(st != NULL &&
				fb_status_parse(st, &status) == 0 ? st : "crashed"));
	json_object_set_new(cand, "correct", json_false());
	json_object_set_new(d, "message", json_sprintf("the judge failed, and its candidate's "
				"runner was stopped: %s", msg != NULL ? msg : judge_why));
	json_object_set_new(d, "candidate_ran", json_boolean(candidate_ran));
	if (judge != NULL)
		add_judged(cand, judge);
	json_decref(judge);
	fb_flag(cand, "judge_failed");
	/* Before any of the candidate's code ran, the failure is kforge's side alone (a
	 * judge whose CUDA would not start on a busy host): no turn is spent on it
	 * (fsm/actions.c, runner_failure). */
	if (!candidate_ran)
		fb_flag(cand, "runner_error");
	return cand;
}
