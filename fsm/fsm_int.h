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
/* A runner's own failure before the candidate ran, retried before the run pauses on it
 * (actions.c, runner_failure). */
#define FSM_RUNNER_RETRIES 2
#define FSM_GENERATE_RETRIES 5	/* transient LLM failures tolerated per turn, after the client's own retries */

/* A node of the task's search (fsm/search.c, docs/search.md): a turn, with its parents
 * and what its FEEDBACK record says of it. Turns are nodes 1..turns; 0 is the problem. */
#define FSM_MAX_NODES	256	/* refinement.turns' largest */
enum fsm_rank { FSM_RANK_NONE, FSM_RANK_CODE, FSM_RANK_BUILT, FSM_RANK_CORRECT };
struct fsm_node {
	int		 parent, parent2;	/* parent2: 0 when one parent */
	enum fsm_rank	 rank;
	double		 speedup;		/* a correct node's (0: not timed); else -1 */
};
/* The next node's parents after nodes[1..n] (nodes[0] unused), by refinement.strategy's
 * row: 0, or -KB_EINVAL past FSM_MAX_NODES. Deterministic: the same nodes, config and
 * task give the same parents. */
int	fsm_search_next(const struct kb_config *cfg, const char *task_id,
			const struct fsm_node *nodes, int n, int *parent, int *parent2);
/* A node as a FEEDBACK record's data describes it (turn: the record's; a log without
 * parents is a chain). */
int	fsm_node_of_record(const json_t *d, int turn, struct fsm_node *out);

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
	/* The search so far: nodes[1..nnodes] (the turns with a FEEDBACK record), the
	 * current turn's parents, and what the task has spent (refinement.budget). */
	struct fsm_node		 nodes[FSM_MAX_NODES + 1];
	int			 nnodes;
	int			 parent, parent2;
	int			 next_parent, next_parent2;	/* FEEDBACK's choice */
	struct rd_spend		 spent;
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
