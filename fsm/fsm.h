/*
 * fsm.h: one task's refinement loop — the transition table of docs/DESIGN.md §3, the thin
 * state actions, and resume by replaying trajectory.jsonl.
 *
 * A worker process (forked by the supervisor) calls fsm_task_main() and exits with its
 * return value (KB_EXIT_*). Every transition is appended to the task's log (fsync'd)
 * before the next action starts; artifacts are written atomically before the line that
 * names them. Re-running a task's worker after any crash continues where the log ends.
 *
 * Ownership: fsm_* borrow their inputs. Processes: workers; the table accessors are
 * pure and usable anywhere (tests, status, tail).
 */
#ifndef KFORGE_FSM_H
#define KFORGE_FSM_H

#include <stdbool.h>

#include "base/base.h"
#include "gpu_pool/gpu_pool.h"
#include "llm/llm.h"
#include "rundir/rundir.h"

/* The states and events are the trajectory's words, listed in rundir.h; the table below
 * moves between them. */
#define FSM_ENUM_ST_(n) FSM_ST_##n,
#define FSM_ENUM_EV_(n) FSM_EV_##n,
enum fsm_state { RD_TASK_STATES(FSM_ENUM_ST_) FSM_ST__N };
enum fsm_event { RD_TASK_EVENTS(FSM_ENUM_EV_) FSM_EV__N };
#undef FSM_ENUM_ST_
#undef FSM_ENUM_EV_

const char	*fsm_state_name(enum fsm_state s);	/* "GENERATE" */
const char	*fsm_event_name(enum fsm_event e);	/* "ok" */
int		 fsm_state_parse(const char *s, enum fsm_state *out);
int		 fsm_event_parse(const char *s, enum fsm_event *out);
bool		 fsm_state_terminal(enum fsm_state s);
/* The table: the next state for (state, event), FSM_ST_INVALID where no edge exists.
 * feedback_p selects whether a correct EXECUTE goes to PROFILE. */
enum fsm_state	 fsm_next(enum fsm_state s, enum fsm_event e, bool feedback_p);

/* The largest problem or kernel source a task reads: a run's creation refuses a larger
 * problem file up front (it hashes each into tasks.json) rather than its worker later. */
#define FSM_MAX_SOURCE	(4u << 20)

/* A device of the run as the supervisor's probe recorded it in gpus.json, which the
 * supervisor reads once and hands to every worker typed (fsm_devices_parse): its CUDA
 * index, its model name (keys the baselines) and, where probed, its hardware facts (the
 * prompt's hardware block). */
struct fsm_device {
	int			 index;
	char			 name[128];
	bool			 has_hardware;
	struct llm_hardware	 hardware;
};

struct fsm_ctx {
	const struct kb_config		*cfg;
	const struct kb_task		*task;
	const char			*run_dir;
	struct gpool			*pool;
	const struct fsm_device		*devices;	/* gpus.json's, in its order */
	int				 ndevices;
};

/* gpus.json's "devices" into out (at most max of them); returns how many. */
int	fsm_devices_parse(const json_t *gpus, struct fsm_device *out, int max);

/* The worker's whole life. Returns KB_EXIT_DONE, KB_EXIT_TEMPFAIL or KB_EXIT_CONFIG. */
int	fsm_task_main(const struct fsm_ctx *ctx);

/* Summary of a task rebuilt from its log (status, report, tail). */
struct fsm_summary {
	enum fsm_state	 state;
	int		 turn;		/* current or last turn */
	int		 turns_done;	/* turns with a FEEDBACK record */
	double		 best_speedup;	/* best correct speedup so far, -1 when none */
	/* The highest lower and upper ends of the 95% intervals of the correct turns'
	 * speedups (a turn timed without one counts its speedup for both), -1 when none:
	 * fast_p is certain where best_lo > p, possible where best_hi > p. */
	double		 best_lo, best_hi;
	int		 best_turn;
	bool		 any_compiled, any_correct;
	bool		 compiled_at_turn[256];	/* turn k's kernel built (index k-1) */
	double		 best_at_turn[256];	/* best correct speedup up to turn k (index k-1) */
	int		 nbest;
	char		 last_status[32];	/* runner status of the latest evaluated turn */
	char		 fail_reason[256];
	int		 env_errors;	/* env_error records: steps the environment failed
					 * (never scored; each is redone on resume) */
	char		 env_error[256];	/* "stage: message" while the task's last
						 * record is one, else "" */
	int64_t		 last_seq;
	long		 llm_requests, prompt_tokens, completion_tokens;
	long		 reasoning_tokens;	/* of completion_tokens, where servers said */
	double		 cost_usd;	/* the GENERATE records' cost_usd (priced runs) */
	/* Turns judged rejected or suspect (fb_judge), which never count as correct
	 * unless accepted; the first FSM_MAX_FLAGGED of them with their reasons. */
	int		 rejected, suspect, accepted;
	struct fsm_flagged {
		int	 turn;
		char	 verdict[12];
		char	 reasons[160];	/* rule names, comma-separated */
	} flagged[8];
	int		 nflagged;
	/* An execution found the reference's output near zero or constant on the problem's
	 * inputs (degenerate_output): a property of the problem, reported per problem. */
	bool		 degenerate_reference;
};
#define FSM_MAX_FLAGGED	8
/* Reads tasks/<id>/trajectory.jsonl (read-only; a torn tail is ignored). A task with
 * no log yet has state GENERATE, turn 0. */
int	fsm_summarize(const char *run_dir, const char *task_id, struct fsm_summary *out);
/* The same, counting a suspect turn as correct when every one of its reasons is named in
 * accept (NULL-ended; report --accept FLAG). */
int	fsm_summarize_accepting(const char *run_dir, const char *task_id,
				const char *const *accept, struct fsm_summary *out);
/* The same, also handing each record to also(rec, also_arg) (may be NULL): a view that
 * wants more of the log than the summary reads it once. */
int	fsm_summarize_with(const char *run_dir, const char *task_id, const char *const *accept,
			   struct fsm_summary *out, kb_tlog_replay_fn also, void *also_arg);

#endif /* KFORGE_FSM_H */
