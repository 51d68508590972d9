/* summary.c: what status, tail and report need of a task, rebuilt read-only from its
 * log. FEEDBACK records carry each turn's outcome, so nothing else is opened. The states
 * are the log's words (rundir.h), named as fsm/'s table names them. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "report/report_int.h"
#include "base/banned.h"

#define NAME_(n) #n,
static const char *const state_names[RPT_ST__N] = { RD_TASK_STATES(NAME_) };
#undef NAME_

#define RPT_STAGE_ROW_(n, takes_slot)	{ RPT_ST_##n, takes_slot },
const struct rpt_stage rpt_stages[] = { RD_TASK_STAGES(RPT_STAGE_ROW_) };
const size_t rpt_nstages = sizeof(rpt_stages) / sizeof(rpt_stages[0]);
/* The fast_p levels the report shows (and the summary's spend marks, RPT_SPEND_LEVELS). */
const double rpt_fast_p_levels[RPT_N_FAST_P] = { 0.5, 1.0, 1.5, 2.0 };

const char *
rpt_state_name(enum rpt_state s)
{
	return (unsigned)s < RPT_ST__N ? state_names[s] : "INVALID";
}

/* INVALID is the table's "no edge", never a state a record names. */
int
rpt_state_parse(const char *s, enum rpt_state *out)
{
	for (int i = RPT_ST_INVALID + 1; i < RPT_ST__N; i++)
		if (strcmp(s, state_names[i]) == 0) {
			*out = (enum rpt_state)i;
			return 0;
		}
	return -KB_EINVAL;
}

bool
rpt_state_finished(enum rpt_state s)
{
	return s == RPT_ST_DONE || s == RPT_ST_FAILED;
}

/* A count from a GENERATE record, or 0 when it is not a plausible one: the sums over a
 * log must not overflow, whatever the log holds. */
static long
count_at(json_t *d, const char *key)
{
	json_t	*v = json_object_get(d, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 &&
	       json_integer_value(v) <= INT_MAX ? (long)json_integer_value(v) : 0;
}

struct summarizing {
	struct rpt_summary	*s;
	const char *const	*accept;
	kb_tlog_replay_fn	 also;		/* the caller's, on each record too */
	void			*also_arg;
};

static bool
accepted(const char *const *accept, const char *rule)
{
	for (int i = 0; accept != NULL && accept[i] != NULL; i++)
		if (strcmp(accept[i], rule) == 0)
			return true;
	return false;
}

/* Whether a FEEDBACK record's turn counts as correct: a correct verdict (a log written
 * before verdicts has none: its correct flag decides), or a suspect one whose every
 * reason is accepted. A flagged turn is remembered for the report. */
static bool
turn_counts(struct summarizing *z, int turn, json_t *d)
{
	struct rpt_summary	*s = z->s;
	const char		*verdict = json_string_value(json_object_get(d, "verdict"));
	json_t			*reasons = json_object_get(d, "reasons"), *r;
	bool			 all_accepted = json_array_size(reasons) > 0;
	struct rpt_flagged	*f;
	size_t			 i, len;

	if (verdict == NULL || strcmp(verdict, RD_VERDICT_CORRECT) == 0)
		return json_is_true(json_object_get(d, "correct"));
	if (strcmp(verdict, RD_VERDICT_REJECTED) != 0 && strcmp(verdict, RD_VERDICT_SUSPECT) != 0)
		return false;
	json_array_foreach(reasons, i, r)
		all_accepted = all_accepted && json_is_string(r) &&
			       accepted(z->accept, json_string_value(r));
	if (strcmp(verdict, RD_VERDICT_REJECTED) == 0)
		s->rejected++;
	else
		s->suspect++;
	if (s->nflagged < RPT_MAX_FLAGGED) {
		f = &s->flagged[s->nflagged++];
		f->turn = turn;
		snprintf(f->verdict, sizeof(f->verdict), "%s", verdict);
		f->reasons[0] = '\0';
		json_array_foreach(reasons, i, r) {
			len = strlen(f->reasons);
			if (json_is_string(r))
				snprintf(f->reasons + len, sizeof(f->reasons) - len, "%s%s",
					 len > 0 ? "," : "", json_string_value(r));
		}
	}
	if (strcmp(verdict, RD_VERDICT_SUSPECT) == 0 && all_accepted && json_is_true(json_object_get(d, "correct"))) {
		s->accepted++;
		return true;
	}
	return false;
}

/* Takes a counted turn's speedup interval (ci: [lo, hi], or none: the speedup itself)
 * into best_lo and best_hi. */
static void
ci_widen(struct rpt_summary *s, double speedup, const json_t *ci)
{
	double	lo = speedup, hi = speedup;

	if (speedup > 0 && json_array_size(ci) == 2 && json_is_number(json_array_get(ci, 0)) &&
	    json_is_number(json_array_get(ci, 1))) {
		lo = json_number_value(json_array_get(ci, 0));
		hi = json_number_value(json_array_get(ci, 1));
	}
	if (lo > s->best_lo)
		s->best_lo = lo;
	if (hi > s->best_hi)
		s->best_hi = hi;
}

static int
summarize_record(const struct kb_tlog_rec *rec, void *arg)
{
	struct summarizing	*z = arg;
	struct rpt_summary	*s = z->s;
	enum rpt_state		 to;
	json_t			*d = rec->data, *v;
	int			 parent, depth;

	if (rpt_state_parse(rec->to, &to) < 0)
		return 0;
	s->state = to;
	s->turn = rec->turn;
	s->last_seq = rec->seq;
	if (strcmp(rec->event, "next_turn") == 0)
		s->turn = rec->turn + 1;
	rd_spend_add(&s->spent, rec->from, d);
	s->env_error[0] = '\0';
	if (strcmp(rec->event, "env_error") == 0) {
		s->env_errors++;
		snprintf(s->env_error, sizeof(s->env_error), "%s: %s",
			 json_string_value(json_object_get(d, "stage")) ?: "environment",
			 json_string_value(json_object_get(d, "message")) ?: "no message");
	}
	if (to == RPT_ST_FAILED && json_is_string(json_object_get(d, "reason")))
		snprintf(s->fail_reason, sizeof(s->fail_reason), "%s",
			 json_string_value(json_object_get(d, "reason")));
	if (strcmp(rec->from, rpt_state_name(RPT_ST_GENERATE)) == 0 && json_is_integer(json_object_get(d, "attempts"))) {
		s->llm_requests += count_at(d, "attempts");
		s->prompt_tokens += count_at(d, "prompt_tokens");
		s->completion_tokens += count_at(d, "completion_tokens");
		s->reasoning_tokens += count_at(d, "reasoning_tokens");
		if (json_is_number(v = json_object_get(d, "cost_usd")) &&
		    json_number_value(v) >= 0 && json_number_value(v) < 1e9)
			s->cost_usd += json_number_value(v);
	}
	if (strcmp(rec->from, rpt_state_name(RPT_ST_EXECUTE)) == 0 &&
	    kb_json_has_string(json_object_get(d, "flags"), "degenerate_output"))
		s->degenerate_reference = true;
	if (strcmp(rec->from, rpt_state_name(RPT_ST_FEEDBACK)) != 0 || rec->turn < 1 || rec->turn > 256)
		return 0;
	s->turns_done = rec->turn;
	parent = rd_node_named(d, RD_NODE_PARENT, rec->turn, rec->turn - 1);
	depth = parent > 0 ? s->node_depth[parent - 1] + 1 : 1;
	s->node_depth[rec->turn - 1] = (unsigned char)(depth < 255 ? depth : 255);
	if (s->node_depth[rec->turn - 1] > s->depth)
		s->depth = s->node_depth[rec->turn - 1];
	if (json_is_string(v = json_object_get(d, "status")))
		snprintf(s->last_status, sizeof(s->last_status), "%s", json_string_value(v));
	if (json_is_true(json_object_get(d, "compiled")))
		s->any_compiled = s->compiled_at_turn[rec->turn - 1] = true;
	if (turn_counts(z, rec->turn, d)) {
		double	speedup;

		s->any_correct = true;
		/* Only a speedup > 0 is a measurement (the worker logs no other); anything
		 * else is "correct, speed unknown", 0, so best_speedup stays -1 or >= 0. */
		v = json_object_get(d, "speedup");
		speedup = json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : 0;
		ci_widen(s, speedup, json_object_get(d, "speedup_ci95"));
		if (speedup > s->best_speedup) {
			s->best_speedup = speedup;
			s->best_turn = rec->turn;
		}
	}
	/* Turns are logged in order; fill any gap so best_at_turn is monotone. */
	for (int k = s->nbest; k < rec->turn; k++)
		s->best_at_turn[k] = k > 0 ? s->best_at_turn[k - 1] : -1;
	s->best_at_turn[rec->turn - 1] = s->best_speedup;
	for (int i = 0; i < RPT_SPEND_LEVELS; i++)
		if (!s->fast_reached[i] && s->any_correct &&
		    (i == 0 || s->best_speedup > rpt_fast_p_levels[i - 1])) {
			s->fast_reached[i] = true;
			s->fast_spent[i] = s->spent;
		}
	if (rec->turn > s->nbest)
		s->nbest = rec->turn;
	return 0;
}

int
rpt_summarize(const char *run_dir, const char *task_id, struct rpt_summary *out)
{
	return rpt_summarize_accepting(run_dir, task_id, NULL, out);
}

int
rpt_summarize_accepting(const char *run_dir, const char *task_id, const char *const *accept,
			struct rpt_summary *out)
{
	return rpt_summarize_with(run_dir, task_id, accept, out, NULL, NULL);
}

/* The summary and the caller's look at each record, in one read of the log. */
static int
summarize_and_more(const struct kb_tlog_rec *rec, void *arg)
{
	struct summarizing	*z = arg;
	int			 rc = summarize_record(rec, arg);

	return rc == 0 && z->also != NULL ? z->also(rec, z->also_arg) : rc;
}

int
rpt_summarize_with(const char *run_dir, const char *task_id, const char *const *accept,
		   struct rpt_summary *out, kb_tlog_replay_fn also, void *also_arg)
{
	struct summarizing	z = { out, accept, also, also_arg };
	char			path[PATH_MAX];
	int			rc;

	memset(out, 0, sizeof(*out));
	out->state = RPT_ST_GENERATE;
	out->best_speedup = out->best_lo = out->best_hi = -1;
	if ((rc = rd_task_file(path, sizeof(path), run_dir, task_id, RD_TRAJECTORY)) < 0)
		return rc;
	rc = kb_tlog_read(path, summarize_and_more, &z);
	if (rc == -KB_ENOENT)
		return 0;
	return rc < 0 ? rc : 0;
}
