/*
 * rundir.h: the layout of a run directory (docs/DESIGN.md §1), in one table. Every path to a
 * file or folder inside a run directory is built here; other modules ask for it by name
 * and never spell a file name or a level's folder themselves.
 *
 *   <run>/                      RD_RUN entries: config.yaml, run.json, tasks.json, ...
 *     tasks/<task id>/          RD_TASK entries: trajectory.jsonl, lock, turns, work,
 *                               reference_profile.json
 *       turns/<k>/              RD_TURN entries: prompt.md, response.md, kernel.py, ...
 *         agent/                RD_AGENT entries: an agent's workspace (llm.provider agent):
 *                               problem.py, prompt.md, bin/kforge-tool, final.py
 *         tool_calls/<n>/       RD_TOOL_CALL entries: kernel.py, result.json, run.log (the
 *                               agent's n-th `kforge-tool eval`, from 1)
 *     baselines/<device>/       RD_BASELINE entries: <problem key>.json, <problem key>.lock
 *     redteam/                  RD_REDTEAM entries: index.json (a red-team run's findings)
 *     shards/<shard id>/        a Slurm shard's own supervisor files: the RD_RUN entries
 *                               run.json, gpus.json, pool.json, supervisor.{log,lock,pid}
 *     claims/<task id>          which shard works on the task (orchestrator/claims.c)
 *       <task id>_t<turn>/      RD_FINDING entries: kernel.py, problem.py, result.json,
 *                               suite.py (one candidate kept for review)
 *     build/<key>/  inputs/<key>/   keyed folders (rd_run_key)
 *
 * A runner's staging directory (feedback/stage.c) mirrors the same layout under its own
 * root, so "run_dir" below is any such root.
 *
 * Every function writes at most n bytes (NUL included) to out and returns 0, or
 * -KB_ETOOBIG when the path would not fit, or -KB_EINVAL when a name is not of the
 * function's level, a task id or key is not one plain path component (empty, ".", ".."
 * or holding '/'), or a turn is below 1; on error out is the empty string. A NULL run_dir
 * gives the path relative to the run directory ("tasks/L1_19_ReLU_s0").
 *
 * Lifecycle and ownership: no state; inputs are borrowed. Processes: any.
 */
#ifndef KFORGE_RUNDIR_H
#define KFORGE_RUNDIR_H

#include <stddef.h>

#include "base/base.h"

/* name, level, file or folder name (for RD_BASELINE, the suffix after the problem key) */
#define RD_ENTRIES(X)							\
	X(CONFIG_YAML,		RUN,	  "config.yaml")		\
	X(RUN_JSON,		RUN,	  "run.json")			\
	X(TASKS_JSON,		RUN,	  "tasks.json")			\
	X(GPUS_JSON,		RUN,	  "gpus.json")			\
	X(POOL_JSON,		RUN,	  "pool.json")			\
	X(SUPERVISOR_LOG,	RUN,	  "supervisor.log")		\
	X(SUPERVISOR_LOCK,	RUN,	  "supervisor.lock")		\
	X(SUPERVISOR_PID,	RUN,	  "supervisor.pid")		\
	X(SUPERVISOR_RESERVE,	RUN,	  "supervisor.reserve")		\
	X(TASKS_DIR,		RUN,	  "tasks")			\
	X(BASELINES_DIR,	RUN,	  "baselines")			\
	X(BUILD_DIR,		RUN,	  "build")			\
	X(INPUTS_DIR,		RUN,	  "inputs")			\
	X(REDTEAM_DIR,		RUN,	  "redteam")			\
	X(SHARDS_DIR,		RUN,	  "shards")			\
	X(CLAIMS_DIR,		RUN,	  "claims")			\
	X(STATUS_CACHE,		RUN,	  "status.cache")		\
	X(TRAJECTORY,		TASK,	  "trajectory.jsonl")		\
	X(TASK_LOCK,		TASK,	  "lock")			\
	X(TURNS_DIR,		TASK,	  "turns")			\
	X(WORK_DIR,		TASK,	  "work")			\
	X(REFERENCE_PROFILE_JSON, TASK,	  "reference_profile.json")	\
	X(PROMPT_MD,		TURN,	  "prompt.md")			\
	X(RESPONSE_MD,		TURN,	  "response.md")		\
	X(RESPONSE_JSON,	TURN,	  "response.json")		\
	X(RESPONSE_RAW_JSON,	TURN,	  "response.raw.json")		\
	X(REPLY_REFUSED_MD,	TURN,	  "reply_refused.md")		\
	X(KERNEL_PY,		TURN,	  "kernel.py")			\
	X(STATIC_JSON,		TURN,	  "static.json")		\
	X(COMPILE_JSON,		TURN,	  "compile.json")		\
	X(COMPILE_LOG,		TURN,	  "compile.log")		\
	X(EXECUTE_LOG,		TURN,	  "execute.log")		\
	X(RESULT_JSON,		TURN,	  "result.json")		\
	X(PROFILE_JSON,		TURN,	  "profile.json")		\
	X(PROFILE_FEEDBACK_MD,	TURN,	  "profile_feedback.md")	\
	X(FEEDBACK_MD,		TURN,	  "feedback.md")		\
	X(ENV_ERROR_JSON,	TURN,	  "env_error.json")		\
	X(AGENT_DIR,		TURN,	  "agent")			\
	X(AGENT_STDOUT,		TURN,	  "agent_stdout.txt")		\
	X(AGENT_STDERR,		TURN,	  "agent_stderr.txt")		\
	X(TOOL_CALLS_DIR,	TURN,	  "tool_calls")			\
	X(AGENT_PROBLEM_PY,	AGENT,	  "problem.py")			\
	X(AGENT_PROMPT_MD,	AGENT,	  "prompt.md")			\
	X(AGENT_FINAL_PY,	AGENT,	  "final.py")			\
	X(AGENT_BIN_DIR,	AGENT,	  "bin")			\
	X(AGENT_TOOL,		AGENT,	  "bin/kforge-tool")		\
	X(TOOL_KERNEL_PY,	TOOL_CALL, "kernel.py")			\
	X(TOOL_RESULT_JSON,	TOOL_CALL, "result.json")		\
	X(TOOL_LOG,		TOOL_CALL, "run.log")			\
	X(BASELINE_JSON,	BASELINE, ".json")			\
	X(BASELINE_LOCK,	BASELINE, ".lock")			\
	X(REDTEAM_INDEX_JSON,	REDTEAM,  "index.json")			\
	X(FINDING_KERNEL_PY,	FINDING,  "kernel.py")			\
	X(FINDING_PROBLEM_PY,	FINDING,  "problem.py")			\
	X(FINDING_RESULT_JSON,	FINDING,  "result.json")		\
	X(FINDING_SUITE_PY,	FINDING,  "suite.py")

enum rd_level { RD_LEVEL_RUN, RD_LEVEL_TASK, RD_LEVEL_TURN, RD_LEVEL_BASELINE,
		RD_LEVEL_REDTEAM, RD_LEVEL_FINDING, RD_LEVEL_AGENT, RD_LEVEL_TOOL_CALL };

#define RD_ENUM_(name, level, file) RD_##name,
enum rd_entry { RD_ENTRIES(RD_ENUM_) RD_ENTRY__N };
#undef RD_ENUM_

/* The entry's file or folder name ("result.json"), and its level; NULL / -1 for no entry. */
const char	*rd_name(enum rd_entry e);
int		 rd_level(enum rd_entry e);

/* <run>/<name>: a file or folder of the run itself (an RD_LEVEL_RUN entry). */
int	rd_run_file(char *out, size_t n, const char *run_dir, enum rd_entry e);
/* <run>/<folder>/<key>: one keyed entry of a run-level folder (build/<key>, inputs/<sha>). */
int	rd_run_key(char *out, size_t n, const char *run_dir, enum rd_entry folder,
		   const char *key);
/* <run>/shards/<shard_id>/<name>: a Slurm shard's own copy of a supervisor's file (an
 * RD_LEVEL_RUN entry: run.json, pool.json, supervisor.log ...). */
int	rd_shard_file(char *out, size_t n, const char *run_dir, const char *shard_id,
		      enum rd_entry e);
/* <run>/tasks/<task_id> and an RD_LEVEL_TASK entry in it. */
int	rd_task_dir(char *out, size_t n, const char *run_dir, const char *task_id);
int	rd_task_file(char *out, size_t n, const char *run_dir, const char *task_id,
		     enum rd_entry e);
/* <run>/tasks/<task_id>/turns/<turn> (turn from 1, in decimal) and an RD_LEVEL_TURN entry. */
int	rd_turn_dir(char *out, size_t n, const char *run_dir, const char *task_id, int turn);
int	rd_turn_file(char *out, size_t n, const char *run_dir, const char *task_id, int turn,
		     enum rd_entry e);
/* <run>/tasks/<task_id>/turns/<turn>/agent/<name>: the workspace an agent works in
 * for the turn (an RD_LEVEL_AGENT entry; AGENT_TOOL is "bin/<the tool's name>"). */
int	rd_agent_file(char *out, size_t n, const char *run_dir, const char *task_id, int turn,
		      enum rd_entry e);
/* <run>/tasks/<task_id>/turns/<turn>/tool_calls/<call> (call from 1) and an
 * RD_LEVEL_TOOL_CALL entry in it: what one of the agent's tool calls evaluated. */
int	rd_tool_call_dir(char *out, size_t n, const char *run_dir, const char *task_id,
			 int turn, int call);
int	rd_tool_call_file(char *out, size_t n, const char *run_dir, const char *task_id,
			  int turn, int call, enum rd_entry e);
/* <run>/baselines/<device>/: the reference timings a run measured, per device model.
 * device_name is any text (a GPU's name): every byte but [A-Za-z0-9.-] becomes '_'
 * (a name of only dots is refused). rd_baseline_file adds <problem_key><suffix>. */
int	rd_baseline_dir(char *out, size_t n, const char *run_dir, const char *device_name);
int	rd_baseline_file(char *out, size_t n, const char *run_dir, const char *device_name,
			 const char *problem_key, enum rd_entry e);
/* <run>/redteam/ and an RD_LEVEL_REDTEAM entry in it (index.json). */
int	rd_redteam_file(char *out, size_t n, const char *run_dir, enum rd_entry e);
/* <run>/redteam/<task_id>_t<turn>: the candidate of a task's turn that a red-team run
 * kept, and an RD_LEVEL_FINDING entry in it. */
int	rd_finding_dir(char *out, size_t n, const char *run_dir, const char *task_id, int turn);
int	rd_finding_file(char *out, size_t n, const char *run_dir, const char *task_id, int turn,
			enum rd_entry e);

/* ------------------------------------------------------------ what its logs say
 * The words the run directory's logs are written in, each spelt once here: those who
 * write them (fsm/, feedback/, the supervisor) and those who read them back (report/)
 * take them from this header rather than spelling them again. */

/* The states and events of a task's trajectory.jsonl ("from" and "to", "event"), in the
 * order of fsm/'s table, which makes its enums of these lists; a reader makes its own. */
#define RD_TASK_STATES(X) \
	X(INVALID)	\
	X(GENERATE)	\
	X(PRECOMPILE)	\
	X(EXECUTE)	\
	X(PROFILE)	\
	X(FEEDBACK)	\
	X(DONE)		\
	X(FAILED)

/* The stages of a turn, the states a task works in, in the order a turn passes them, and
 * whether a step of it takes a slot (its data then holds a lease record): the one list
 * the stage-times tables (report/'s views and run model, tools/stage_times.py through
 * `kforge --list stages`) are made from. */
#define RD_TASK_STAGES(X) \
	X(GENERATE, true)	\
	X(PRECOMPILE, true)	\
	X(EXECUTE, true)	\
	X(PROFILE, true)	\
	X(FEEDBACK, false)

/* A part of a step timed apart from its slot, in the step's data: the start of the
 * worker's runner before a PRECOMPILE asks for its compile slot (fsm/actions.c; on a
 * worker's first step its fork server imports torch, seconds). The stage-times tables
 * show it as a row of its own, "runner start", beside the stages. */
#define RD_STEP_RUNNER_START_MS	"runner_start_ms"
#define RD_STEP_RUNNER_START_ROW	"runner start"

#define RD_TASK_EVENTS(X) \
	X(start)	\
	X(ok)		\
	X(no_code)	\
	X(transient)	\
	X(fatal)	\
	X(compile_error)\
	X(rejected)	\
	X(correct)	\
	X(incorrect)	\
	X(timeout)	\
	X(profiled)	\
	X(next_turn)	\
	X(budget_spent)	\
	X(env_error)	\
	X(tool_call)

/* A turn's verdict, as its FEEDBACK record and result.json name it (feedback/verdict.c
 * judges; only correct counts, a suspect turn where its reasons are accepted). */
#define RD_VERDICT_CORRECT	"correct"
#define RD_VERDICT_INCORRECT	"incorrect"
#define RD_VERDICT_REJECTED	"rejected"
#define RD_VERDICT_SUSPECT	"suspect"

/* A task's search (docs/search.md): each turn is a node, numbered by its turn, whose
 * parent (0: the problem alone) its GENERATE and FEEDBACK records name, with a second
 * parent where the strategy shows two (evolve); a next_turn FEEDBACK record names the
 * next node's, so that a replay rebuilds the search exactly. A log without them is a
 * chain (parent: turn - 1). An agent's tool call (the event tool_call, GENERATE to
 * GENERATE, one record per call) is a leaf under its turn: parent the turn, RD_NODE_CALL
 * its number within the turn. */
#define RD_NODE_PARENT		"parent"
#define RD_NODE_CALL		"call"
#define RD_NODE_PARENT2		"parent2"
#define RD_NEXT_PARENT		"next_parent"
#define RD_NEXT_PARENT2		"next_parent2"
/* The node that data's key (one of the above) names for node `node`: an earlier one (0,
 * the problem, to node - 1), else none, what a log that names no valid one means (a
 * parent: node - 1, the chain; a second parent: 0). The one reading of a recorded parent,
 * for the worker's replay (fsm/) and the views (report/) alike. */
int	rd_node_named(const json_t *data, const char *key, int node, int none);

/* What a task has spent (refinement.budget), summed over its records in order: the one
 * reading of it, for the worker's budgets (fsm/) and the report's fast_p against spend
 * (report/) alike. requests: a GENERATE record's attempts (a retried request counts each
 * time); tokens: its prompt and completion tokens; cost_usd: its cost (priced runs);
 * gpu_s: the execution slot's hold of EXECUTE and PROFILE records (their lease, from
 * acquired to released: on the CPU, the CPU execution slot's). */
struct rd_spend {
	long	 requests, tokens;
	double	 cost_usd, gpu_s;
};
void	rd_spend_add(struct rd_spend *s, const char *from, const json_t *data);
/* The spend's measures by name, for the report's tables: "requests", "tokens",
 * "cost_usd", "gpu_s"; rd_spend_get reads one (-1 for a name not listed). */
#define RD_SPEND_MEASURES(X) X(requests) X(tokens) X(cost_usd) X(gpu_s)
double	rd_spend_get(const struct rd_spend *s, const char *measure);

/* Lines of supervisor.log that `kforge tail` shows beside the transitions: the
 * supervisor writes them with these formats, and tail recognises them by the same. */
#define RD_LOG_SUP_START	"run %s in %s (python %s)"
#define RD_LOG_WORKER_RESTART	"%s: worker %s; restarting it (death %d of %d)"

#endif /* KFORGE_RUNDIR_H */
