/* fsm_int.h: what the worker's files share — the running task and the actions. */
#ifndef KFORGE_FSM_INT_H
#define KFORGE_FSM_INT_H

#include <limits.h>

#include "base/base.h"
#include "feedback/feedback.h"
#include "fsm/fsm.h"
#include "llm/llm.h"
#include "rundir/rundir.h"

/* The per-task caps on files read back from the run directory (FSM_MAX_SOURCE: fsm.h). */
#define FSM_GENERATE_RETRIES 5	/* transient LLM failures tolerated per turn, after the client's own retries */

struct task_run {
	const struct fsm_ctx	*ctx;
	const struct kb_config	*cfg;
	const struct kb_task	*task;
	struct kb_tlog		*log;
	struct llm_client	*llm;
	enum fsm_state		 state;
	int			 turn;
	int			 transients;	/* consecutive transient events in this state */
	char			 dir[PATH_MAX];		/* tasks/<id> */
	char			 turn_dir[PATH_MAX];	/* tasks/<id>/turns/<turn> */
	char			*problem_src;
	double			 best_speedup;
	int			 best_turn;
	json_t			*data;		/* what the current action reports in its record */
	char			 fail_reason[256];
};

/* Actions: each does one state's work and returns the event it ends with, or a
 * negative KB error when the worker must stop without logging (-KB_ESTOPPED, or a
 * failure to write the run directory). They fill t->data for the log record. */
typedef int (*fsm_action_fn)(struct task_run *t);
int	fsm_act_generate(struct task_run *t);
int	fsm_act_precompile(struct task_run *t);
int	fsm_act_execute(struct task_run *t);
int	fsm_act_profile(struct task_run *t);
int	fsm_act_feedback(struct task_run *t);

bool	fsm_should_stop(void *arg);	/* the worker was asked to stop */
bool	fsm_should_abort(void *arg);	/* ... twice: drop even a reply being paid for */
/* The path of a turn's file (an RD_LEVEL_TURN entry) of this task. */
int	fsm_turn_path(const struct task_run *t, int turn, enum rd_entry file, char *out, size_t n);
/* Writes an artifact of the current turn atomically and records its path and hash in
 * t->data under key. */
int	fsm_put_artifact(struct task_run *t, const char *key, enum rd_entry file, const void *p,
			 size_t n);

#endif
