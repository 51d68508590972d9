/*
 * report.h: a run directory read back — status, tail, the report (text, JSON, CSV, SVG
 * plots, one HTML page), runs side by side, a representative subset, and the live
 * viewer (libmicrohttpd) — and the one summary of a task's log that they and the
 * supervisor share.
 *
 * It reads a run directory and nothing else: it never takes a lock, signals a process,
 * maps the pool, asks a model or evaluates anything. The trajectories are the truth, and
 * each is read once per report; the supervisor publishes pool.json and run.json for it.
 * What the files alone cannot say comes from the caller (the kforge command): the run
 * opened — its frozen config and task list, which only the config loader reads — with a
 * line on how its speeds were timed (struct rpt_run), and whether a supervisor holds it
 * (struct rpt_supervision, rpt_cmd_tail's supervisor_pid).
 *
 * Ownership: functions borrow their inputs; what they return is the caller's. The
 * rpt_cmd_* functions print to stdout and stderr and return the command's exit status.
 * Processes: the kforge command; rpt_summarize also the supervisor.
 */
#ifndef KFORGE_REPORT_H
#define KFORGE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"
#include "rundir/rundir.h"

/* An open run, as the caller opened it. */
struct rpt_run {
	const char		*dir;		/* absolute */
	const char		*named;		/* as the command line named it (messages) */
	const struct kb_config	*cfg;		/* its config.yaml, loaded */
	const struct kb_task	*tasks;		/* tasks.json's, in order */
	int			 ntasks;
	/* How its speeds are measured: eval.timing_preset's name, and one line saying the
	 * method (the report's "timing"). */
	const char		*timing_preset, *timing_method;
};

/* ------------------------------------------------------------- summary.c */

/* A task's state as its log's last record leaves it (rundir.h's RD_TASK_STATES, which
 * fsm/'s table moves between). */
#define RPT_ENUM_ST_(n) RPT_ST_##n,
enum rpt_state { RD_TASK_STATES(RPT_ENUM_ST_) RPT_ST__N };
#undef RPT_ENUM_ST_
const char	*rpt_state_name(enum rpt_state s);	/* "GENERATE" */
int		 rpt_state_parse(const char *s, enum rpt_state *out);
bool		 rpt_state_finished(enum rpt_state s);	/* DONE or FAILED */

/* A task rebuilt from its log (status, tail, report; the supervisor and its progress
 * display). */
#define RPT_SPEND_LEVELS 5	/* fast_0 and the report's four fast_p */
struct rpt_summary {
	enum rpt_state	 state;
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
	/* Turns judged rejected or suspect (the evaluation's verdicts), never counted correct
	 * unless accepted; the first RPT_MAX_FLAGGED of them with their reasons. */
	int		 rejected, suspect, accepted;
	struct rpt_flagged {
		int	 turn;
		char	 verdict[12];
		char	 reasons[160];	/* rule names, comma-separated */
	} flagged[8];
	int		 nflagged;
	/* What the task spent (rundir's rd_spend_add over its records), in all and when
	 * its best first counted as fast_0 (index 0) and as each fast_p the report shows
	 * (index 1 + i: the report's i-th level, 0.5, 1, 1.5, 2): fast_p against budget
	 * spent (docs/search.md). fast_reached[k] false: not (yet). */
	struct rd_spend	 spent;
	struct rd_spend	 fast_spent[RPT_SPEND_LEVELS];
	bool		 fast_reached[RPT_SPEND_LEVELS];
	/* An execution found the reference's output near zero or constant on the problem's
	 * inputs (degenerate_output): a property of the problem, reported per problem. */
	bool		 degenerate_reference;
	/* The search (docs/search.md): each finished node's depth (index k-1; 1 under the
	 * problem itself) by the parent its FEEDBACK record names (a log without one is a
	 * chain), and the deepest; best_turn is the best node. */
	unsigned char	 node_depth[256];
	int		 depth;
};
#define RPT_MAX_FLAGGED	8
/* Reads tasks/<id>/trajectory.jsonl (read-only; a torn tail is ignored). A task with
 * no log yet has state GENERATE, turn 0. */
int	rpt_summarize(const char *run_dir, const char *task_id, struct rpt_summary *out);
/* The same, counting a suspect turn as correct when every one of its reasons is named in
 * accept (NULL-ended; report --accept FLAG). */
int	rpt_summarize_accepting(const char *run_dir, const char *task_id,
				const char *const *accept, struct rpt_summary *out);
/* The same, also handing each record to also(rec, also_arg) (may be NULL): a view that
 * wants more of the log than the summary reads it once. */
int	rpt_summarize_with(const char *run_dir, const char *task_id, const char *const *accept,
			   struct rpt_summary *out, kb_tlog_replay_fn also, void *also_arg);

/* --------------------------------------------------------------- views.c */

/* Who holds the run, as the caller found out: status says whether it is running. */
struct rpt_supervision {
	pid_t	 pid;		/* its supervisor's; 0: none; -1: locked, pid unreadable */
	bool	 alive;		/* a supervisor, or for a Slurm run a shard Slurm still has */
	json_t	*shards;	/* a Slurm run's shards with their Slurm states, or NULL */
};
int	rpt_cmd_status(const struct rpt_run *run, const struct rpt_supervision *sup, bool json);
/* Reads what status reads of every task's log and keeps it in the run's status cache
 * (statcache.c), printing nothing: the next status reads no log that has not changed. */
void	rpt_status_cache_fill(const struct rpt_run *run);
/* task: one task's id or problem key, NULL: all. follow (-f) goes on until the followed
 * tasks finish or supervisor_pid(dir) (as rpt_supervision's pid) says none is left. */
int	rpt_cmd_tail(const struct rpt_run *run, const char *task, bool follow,
		     pid_t (*supervisor_pid)(const char *dir));
/* accept: NULL-ended rules whose suspect turns count as correct (report --accept). */
int	rpt_cmd_report(const struct rpt_run *run, bool json, const char *const *accept);

/* report.c: `kforge report DIR... --csv | --html FILE | --svg DIR` over one run or
 * several. */
struct rpt_files {
	bool		 csv;
	const char	*html, *svg_dir;
};
int	rpt_cmd_report_files(const struct rpt_run *runs, int nruns, const char *const *accept,
			     const struct rpt_files *o);

/* compare.c: `kforge report RUN_A RUN_B ...` (text or JSON): the runs side by side on
 * their common problems, with the differences from the first and whether each is beyond
 * the runs' noise; `kforge subset RUN_DIR... --size N --out FILE`: the medoids of the
 * problems' results, with how well they reproduce the full set against random subsets.
 * Both warn, a line per key, where a problem's content differs between runs. 0 or 1. */
int	rpt_cmd_compare(const struct rpt_run *runs, int nruns, bool json,
			const char *const *accept);
int	rpt_cmd_subset(const struct rpt_run *runs, int nruns, int size, const char *out,
		       uint64_t seed);
/* The most problems k-medoids takes, and so subset's largest --size. */
#define RPT_KMEDOIDS_MAX 1000

#define RPT_VIEW_PORT	8737	/* kforge view's default port */
/* viewer.c: `kforge view DIR`: serves the page on addr:port (port 0: any free one; the
 * URL is printed) with libmicrohttpd until SIGINT or SIGTERM. 0, or 1 (2 for a bad
 * address) with a line on stderr. */
int	rpt_cmd_viewer(const struct rpt_run *run, const char *addr, int port);

#endif /* KFORGE_REPORT_H */
