/* summary.c: what status, tail and report need of a task, rebuilt read-only from its
 * log. FEEDBACK records carry each turn's outcome, so nothing else is opened. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fsm/fsm_int.h"

/* A count from a GENERATE record, or 0 when it is not a plausible one: the sums over a
 * log must not overflow, whatever the log holds. */
static long
count_at(json_t *d, const char *key)
{
	json_t	*v = json_object_get(d, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 &&
	       json_integer_value(v) <= INT_MAX ? (long)json_integer_value(v) : 0;
}

static int
summarize_record(const struct kb_tlog_rec *rec, void *arg)
{
	struct fsm_summary	*s = arg;
	enum fsm_state		 to;
	json_t			*d = rec->data, *v;

	if (fsm_state_parse(rec->to, &to) < 0)
		return 0;
	s->state = to;
	s->turn = rec->turn;
	s->last_seq = rec->seq;
	if (strcmp(rec->event, "next_turn") == 0)
		s->turn = rec->turn + 1;
	s->env_error[0] = '\0';
	if (strcmp(rec->event, "env_error") == 0) {
		s->env_errors++;
		snprintf(s->env_error, sizeof(s->env_error), "%s: %s",
			 json_string_value(json_object_get(d, "stage")) ?: "environment",
			 json_string_value(json_object_get(d, "message")) ?: "no message");
	}
	if (to == FSM_ST_FAILED && json_is_string(json_object_get(d, "reason")))
		snprintf(s->fail_reason, sizeof(s->fail_reason), "%s",
			 json_string_value(json_object_get(d, "reason")));
	if (strcmp(rec->from, "GENERATE") == 0 && json_is_integer(json_object_get(d, "attempts"))) {
		s->llm_requests += count_at(d, "attempts");
		s->prompt_tokens += count_at(d, "prompt_tokens");
		s->completion_tokens += count_at(d, "completion_tokens");
	}
	if (strcmp(rec->from, "FEEDBACK") != 0 || rec->turn < 1 || rec->turn > 256)
		return 0;
	s->turns_done = rec->turn;
	if (json_is_string(v = json_object_get(d, "status")))
		snprintf(s->last_status, sizeof(s->last_status), "%s", json_string_value(v));
	if (json_is_true(json_object_get(d, "compiled")))
		s->any_compiled = true;
	if (json_is_true(json_object_get(d, "correct"))) {
		double	speedup;

		s->any_correct = true;
		/* Only a speedup > 0 is a measurement (the worker logs no other); anything
		 * else is "correct, speed unknown", 0, so best_speedup stays -1 or >= 0. */
		v = json_object_get(d, "speedup");
		speedup = json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : 0;
		if (speedup > s->best_speedup) {
			s->best_speedup = speedup;
			s->best_turn = rec->turn;
		}
	}
	/* Turns are logged in order; fill any gap so best_at_turn is monotone. */
	for (int k = s->nbest; k < rec->turn; k++)
		s->best_at_turn[k] = k > 0 ? s->best_at_turn[k - 1] : -1;
	s->best_at_turn[rec->turn - 1] = s->best_speedup;
	if (rec->turn > s->nbest)
		s->nbest = rec->turn;
	return 0;
}

int
fsm_log_path(const char *run_dir, const char *task_id, char *out, size_t outlen)
{
	int	n = snprintf(out, outlen, "%s/tasks/%s/trajectory.jsonl", run_dir, task_id);

	return n < 0 || (size_t)n >= outlen ? -KB_ETOOBIG : 0;
}

int
fsm_summarize(const char *run_dir, const char *task_id, struct fsm_summary *out)
{
	char	path[PATH_MAX];
	int	rc;

	memset(out, 0, sizeof(*out));
	out->state = FSM_ST_GENERATE;
	out->best_speedup = -1;
	if (fsm_log_path(run_dir, task_id, path, sizeof(path)) < 0)
		return -KB_ETOOBIG;
	rc = kb_tlog_read(path, summarize_record, out);
	if (rc == -KB_ENOENT)
		return 0;
	return rc < 0 ? rc : 0;
}
