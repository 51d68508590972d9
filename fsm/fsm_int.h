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
	int			 tool_calls;		/* an agent's, in turn tool_calls_turn */
	int			 tool_calls_turn;
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

/* An agent's tool call (llm.provider agent; fsm/agent.c): the kernel at kernel_path
 * (source code) through the turn's own steps (PRECOMPILE's static checks and build in a
 * compile slot, EXECUTE's reference and execution on a leased device, the verdict) as
 * the turn's kernel would go, with nothing of the turn's records written: the result
 * (the rejection's, the build's or the judged execution's), its status and verdict and
 * the runner's log, the caller's (fsm_tool_outcome_clear). A failure of the machine is
 * an env_error status, said to the agent. 0, or -KB_ESTOPPED / -KB_ENOSPC. Leases and
 * health land in t->data, which the caller points at the call's record. */
struct fsm_tool_outcome {
	json_t		*result;
	enum fb_status	 status;
	enum fb_verdict	 verdict;
	bool		 compiled, executed;
	char		*log;
};
int	fsm_tool_evaluate(struct task_run *t, const char *kernel_path, const char *code,
			  struct fsm_tool_outcome *out);
/* The turn's agent workspace (rundir.h's RD_AGENT entries) made for a run of the agent:
 * the problem, the prompt, bin/kforge-tool, no final.py; ws its path. Its tool's calls
 * (fsm_agent_tool_eval, arg the task) each evaluated with fsm_tool_evaluate, recorded
 * (artifacts, then a tool_call record) and answered. fsm_agent_reply keeps the reply's
 * transcript as the turn's artifacts and says in t->data how the agent ended. */
int	fsm_agent_workspace(struct task_run *t, const char *prompt, char *ws, size_t n);
json_t	*fsm_agent_tool_eval(void *arg, const char *kernel, size_t n);
/* The agent, a child of the worker, is spared by the runners' reaping of strays while it
 * runs (fb_strays_spare; call_model forgets it after). */
void	fsm_agent_started(pid_t pid, void *arg);
int	fsm_agent_reply(struct task_run *t, const struct llm_reply *reply);
/* How the agent ended ({end, final, tool_calls}), for response.json and the record; and
 * for a reply reused on resume, the transcript and that summary named again. */
json_t	*fsm_agent_summary(const struct task_run *t, const struct llm_reply *reply);
void	fsm_agent_reused(struct task_run *t);
/* The argv that confines the agent to its workspace before it runs (this kforge's
 * `tool confine SPEC --`, the spec fb_agent_sandbox_spec's), into argv (NULL-ended,
 * strings the caller's: fsm_agent_confine_clear). */
#define FSM_AGENT_CONFINE_ARGV	6
int	fsm_agent_confine(struct task_run *t, const char *ws, char *argv[FSM_AGENT_CONFINE_ARGV]);
void	fsm_agent_confine_clear(char *argv[FSM_AGENT_CONFINE_ARGV]);

bool	fsm_should_stop(void *arg);	/* the worker was asked to stop */
bool	fsm_should_abort(void *arg);	/* ... twice: drop even a reply being paid for */
/* The path of a turn's file (an RD_LEVEL_TURN entry) of this task. */
int	fsm_turn_path(const struct task_run *t, int turn, enum rd_entry file, char *out, size_t n);
/* Writes an artifact of the current turn atomically and records its path and hash in
 * t->data under key. */
int	fsm_put_artifact(struct task_run *t, const char *key, enum rd_entry file, const void *p,
			 size_t n);

#endif
