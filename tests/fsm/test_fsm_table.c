/* test_fsm_table.c: the transition table, exhaustively — every (state, event) pair is
 * either an edge to a valid state or deliberately absent, terminal states have no
 * edges, every non-terminal state can fail and can reach DONE, and names round-trip. */
#include <stdio.h>
#include <string.h>

#include "fsm/fsm.h"

#include "kb_check.h"

/* The edges docs/DESIGN.md §3 names, in (state, event, next with P, next without P). */
static const struct {
	enum fsm_state	s;
	enum fsm_event	e;
	enum fsm_state	with_p, without_p;
} edges[] = {
	{ FSM_ST_GENERATE, FSM_EV_start, FSM_ST_GENERATE, FSM_ST_GENERATE },
	{ FSM_ST_GENERATE, FSM_EV_ok, FSM_ST_PRECOMPILE, FSM_ST_PRECOMPILE },
	{ FSM_ST_GENERATE, FSM_EV_no_code, FSM_ST_FEEDBACK, FSM_ST_FEEDBACK },
	{ FSM_ST_GENERATE, FSM_EV_transient, FSM_ST_GENERATE, FSM_ST_GENERATE },
	{ FSM_ST_GENERATE, FSM_EV_fatal, FSM_ST_FAILED, FSM_ST_FAILED },
	/* An agent's tool call, recorded while its turn generates (llm.provider agent). */
	{ FSM_ST_GENERATE, FSM_EV_tool_call, FSM_ST_GENERATE, FSM_ST_GENERATE },
	{ FSM_ST_PRECOMPILE, FSM_EV_ok, FSM_ST_EXECUTE, FSM_ST_EXECUTE },
	{ FSM_ST_PRECOMPILE, FSM_EV_compile_error, FSM_ST_FEEDBACK, FSM_ST_FEEDBACK },
	{ FSM_ST_PRECOMPILE, FSM_EV_rejected, FSM_ST_FEEDBACK, FSM_ST_FEEDBACK },
	{ FSM_ST_PRECOMPILE, FSM_EV_timeout, FSM_ST_FEEDBACK, FSM_ST_FEEDBACK },
	{ FSM_ST_PRECOMPILE, FSM_EV_transient, FSM_ST_PRECOMPILE, FSM_ST_PRECOMPILE },
	{ FSM_ST_PRECOMPILE, FSM_EV_fatal, FSM_ST_FAILED, FSM_ST_FAILED },
	{ FSM_ST_EXECUTE, FSM_EV_correct, FSM_ST_PROFILE, FSM_ST_FEEDBACK },
	{ FSM_ST_EXECUTE, FSM_EV_incorrect, FSM_ST_FEEDBACK, FSM_ST_FEEDBACK },
	{ FSM_ST_EXECUTE, FSM_EV_timeout, FSM_ST_FEEDBACK, FSM_ST_FEEDBACK },
	{ FSM_ST_EXECUTE, FSM_EV_transient, FSM_ST_EXECUTE, FSM_ST_EXECUTE },
	{ FSM_ST_EXECUTE, FSM_EV_fatal, FSM_ST_FAILED, FSM_ST_FAILED },
	{ FSM_ST_PROFILE, FSM_EV_profiled, FSM_ST_FEEDBACK, FSM_ST_FEEDBACK },
	{ FSM_ST_PROFILE, FSM_EV_transient, FSM_ST_PROFILE, FSM_ST_PROFILE },
	{ FSM_ST_PROFILE, FSM_EV_fatal, FSM_ST_FAILED, FSM_ST_FAILED },
	/* An environment failure stays in its step: resume redoes it, no turn is spent. */
	{ FSM_ST_PRECOMPILE, FSM_EV_env_error, FSM_ST_PRECOMPILE, FSM_ST_PRECOMPILE },
	{ FSM_ST_EXECUTE, FSM_EV_env_error, FSM_ST_EXECUTE, FSM_ST_EXECUTE },
	{ FSM_ST_PROFILE, FSM_EV_env_error, FSM_ST_PROFILE, FSM_ST_PROFILE },
	{ FSM_ST_FEEDBACK, FSM_EV_next_turn, FSM_ST_GENERATE, FSM_ST_GENERATE },
	{ FSM_ST_FEEDBACK, FSM_EV_budget_spent, FSM_ST_DONE, FSM_ST_DONE },
	{ FSM_ST_FEEDBACK, FSM_EV_fatal, FSM_ST_FAILED, FSM_ST_FAILED },
};
#define NEDGES (sizeof(edges) / sizeof(edges[0]))

static int
expected(enum fsm_state s, enum fsm_event e, int p)
{
	for (size_t i = 0; i < NEDGES; i++)
		if (edges[i].s == s && edges[i].e == e)
			return p ? edges[i].with_p : edges[i].without_p;
	return FSM_ST_INVALID;
}

/* Can state s reach target through the table (with or without P)? */
static int
reaches(enum fsm_state s, enum fsm_state target, int p)
{
	int	seen[FSM_ST__N] = { 0 }, stack[FSM_ST__N * FSM_EV__N], n = 0;

	stack[n++] = s;
	while (n > 0) {
		int cur = stack[--n];

		if (cur == (int)target)
			return 1;
		if (seen[cur]++)
			continue;
		for (int e = 0; e < FSM_EV__N; e++) {
			enum fsm_state nx = fsm_next((enum fsm_state)cur, (enum fsm_event)e, p);

			if (nx != FSM_ST_INVALID && !seen[nx])
				stack[n++] = nx;
		}
	}
	return 0;
}

int
main(void)
{
	int edges_seen = 0;

	for (int p = 0; p <= 1; p++) {
		for (int s = 0; s < FSM_ST__N; s++) {
			for (int e = 0; e < FSM_EV__N; e++) {
				enum fsm_state got = fsm_next((enum fsm_state)s, (enum fsm_event)e, p);

				CHECKM((int)got == expected((enum fsm_state)s, (enum fsm_event)e, p),
				      "%s/%s (P=%d): got %s, want %s", fsm_state_name(s),
				      fsm_event_name(e), p, fsm_state_name(got),
				      fsm_state_name(expected(s, e, p)));
				CHECKM(got >= FSM_ST_INVALID && got < FSM_ST__N, "out of range");
				if (fsm_state_terminal(s) || s == FSM_ST_INVALID)
					CHECKM(got == FSM_ST_INVALID, "%s has an outgoing edge",
					      fsm_state_name(s));
				edges_seen += got != FSM_ST_INVALID;
			}
			if (s == FSM_ST_INVALID || fsm_state_terminal(s))
				continue;
			CHECKM(fsm_next(s, FSM_EV_fatal, p) == FSM_ST_FAILED, "%s cannot fail",
			      fsm_state_name(s));
			CHECKM(reaches(s, FSM_ST_DONE, p), "%s cannot reach DONE (P=%d)",
			      fsm_state_name(s), p);
		}
		CHECKM(reaches(FSM_ST_GENERATE, FSM_ST_PROFILE, p) == p,
		      "PROFILE reachable exactly when P is on (P=%d)", p);
	}
	CHECKM(edges_seen == 2 * (int)NEDGES, "table has %d edges, want %d", edges_seen,
	      2 * (int)NEDGES);
	for (int s = 1; s < FSM_ST__N; s++) {
		enum fsm_state back;

		CHECKM(fsm_state_parse(fsm_state_name(s), &back) == 0 && (int)back == s,
		      "state name %s does not round-trip", fsm_state_name(s));
	}
	for (int e = 0; e < FSM_EV__N; e++) {
		enum fsm_event back;

		CHECKM(fsm_event_parse(fsm_event_name(e), &back) == 0 && (int)back == e,
		      "event name %s does not round-trip", fsm_event_name(e));
	}
	CHECKM(fsm_state_parse("BOGUS", &(enum fsm_state){ 0 }) < 0, "BOGUS parsed");
	CHECKM(strcmp(fsm_state_name(FSM_ST_PRECOMPILE), "PRECOMPILE") == 0, "names are upper case");
	if (failures == 0)
		printf("ok: %d edges checked exhaustively\n", edges_seen);
	return failures == 0 ? 0 : 1;
}
