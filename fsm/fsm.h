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
 * pure and usable anywhere (tests, the supervisor, the red-team harvest). Reading a log
 * back (status, tail, report) is report/'s: rpt_summarize.
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

/* refinement.strategy's names (fsm/search.c's table), NULL-ended. */
const char *const *fsm_strategy_names(void);

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

#endif /* KFORGE_FSM_H */
