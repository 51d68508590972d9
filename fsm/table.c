/* table.c: the task state machine as one const table (docs/DESIGN.md §3). Every edge of the
 * refinement loop is a row here; actions never choose a state themselves. */
#include <string.h>

#include "fsm/fsm.h"
#include "fsm/fsm_int.h"
#include "base/banned.h"

#define NAME_(n) #n,
static const char *const state_names[FSM_ST__N] = { RD_TASK_STATES(NAME_) };
static const char *const event_names[FSM_EV__N] = { RD_TASK_EVENTS(NAME_) };
#undef NAME_

/* next: the state after (state, event). without_p: where a correct EXECUTE goes when the
 * P feedback is off (PROFILE only runs when it feeds the next prompt). */
struct fsm_rule {
	enum fsm_state	next;
	enum fsm_state	without_p;
};

#define R(s, e, n) [FSM_ST_##s][FSM_EV_##e] = { FSM_ST_##n, FSM_ST_##n }
static const struct fsm_rule rules[FSM_ST__N][FSM_EV__N] = {
	R(GENERATE, start, GENERATE),		/* a task's first record */
	R(GENERATE, ok, PRECOMPILE),
	R(GENERATE, no_code, FEEDBACK),
	R(GENERATE, transient, GENERATE),	/* retried after a backoff */
	R(GENERATE, fatal, FAILED),
	/* One record per tool call of an agent (llm.provider agent) while it generates the
	 * turn: the call's kernel and verdict, a node of the turn (rundir.h). */
	R(GENERATE, tool_call, GENERATE),

	R(PRECOMPILE, ok, EXECUTE),
	R(PRECOMPILE, compile_error, FEEDBACK),
	R(PRECOMPILE, rejected, FEEDBACK),	/* static checks refused it */
	R(PRECOMPILE, timeout, FEEDBACK),
	R(PRECOMPILE, transient, PRECOMPILE),
	R(PRECOMPILE, fatal, FAILED),
	/* The environment failed, not the candidate (docs/DESIGN.md §5): the run pauses and
	 * the step is redone on resume, so the event stays in its state and spends nothing. */
	R(PRECOMPILE, env_error, PRECOMPILE),

	[FSM_ST_EXECUTE][FSM_EV_correct] = { FSM_ST_PROFILE, FSM_ST_FEEDBACK },
	R(EXECUTE, incorrect, FEEDBACK),
	R(EXECUTE, timeout, FEEDBACK),
	R(EXECUTE, transient, EXECUTE),
	R(EXECUTE, fatal, FAILED),
	R(EXECUTE, env_error, EXECUTE),

	R(PROFILE, profiled, FEEDBACK),
	R(PROFILE, transient, PROFILE),
	R(PROFILE, fatal, FAILED),
	R(PROFILE, env_error, PROFILE),

	R(FEEDBACK, next_turn, GENERATE),
	R(FEEDBACK, budget_spent, DONE),
	R(FEEDBACK, fatal, FAILED),
};
#undef R

const char *
fsm_state_name(enum fsm_state s)
{
	return (unsigned)s < FSM_ST__N ? state_names[s] : "INVALID";
}

const char *
fsm_event_name(enum fsm_event e)
{
	return (unsigned)e < FSM_EV__N ? event_names[e] : "invalid";
}

int
fsm_state_parse(const char *s, enum fsm_state *out)
{
	for (int i = 1; i < FSM_ST__N; i++)
		if (strcmp(s, state_names[i]) == 0) {
			*out = (enum fsm_state)i;
			return 0;
		}
	return -KB_EINVAL;
}

int
fsm_event_parse(const char *s, enum fsm_event *out)
{
	for (int i = 0; i < FSM_EV__N; i++)
		if (strcmp(s, event_names[i]) == 0) {
			*out = (enum fsm_event)i;
			return 0;
		}
	return -KB_EINVAL;
}

bool
fsm_state_terminal(enum fsm_state s)
{
	return s == FSM_ST_DONE || s == FSM_ST_FAILED;
}

enum fsm_state
fsm_next(enum fsm_state s, enum fsm_event e, bool feedback_p)
{
	if ((unsigned)s >= FSM_ST__N || (unsigned)e >= FSM_EV__N)
		return FSM_ST_INVALID;
	return feedback_p ? rules[s][e].next : rules[s][e].without_p;
}
