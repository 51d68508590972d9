/* report_int.h: what the report's files share — the tally, the run model, the plots, the
 * page and the statistics behind the comparisons. */
#ifndef KFORGE_REPORT_INT_H
#define KFORGE_REPORT_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "report/report.h"
#include "rundir/rundir.h"

/* summary.c: the stages of a turn (rundir.h's RD_TASK_STAGES, the one list), in order,
 * and whether a step of each takes a slot; the stage-times tables (views.c's, the run
 * model's) are the slot-taking ones. */
struct rpt_stage {
	enum rpt_state	 state;
	bool		 slot;
};
extern const struct rpt_stage rpt_stages[];
extern const size_t rpt_nstages;

/* views.c */
/* The report's tally of an open run, as `report --json` prints it (fast_0, fast_p per
 * level and overall, fast_1 by turn, ...): the one count that --csv, the plots and the
 * HTML page show, made of sums, every task's summary in task order (read with accept,
 * which the report names). NULL on OOM. */
json_t	*rpt_report_json(const struct rpt_run *run, const struct rpt_summary *sums,
			 const char *const *accept);
/* The same over the problems whose keys keep (a JSON object) has; NULL: all. */
json_t	*rpt_report_json_of(const struct rpt_run *run, const struct rpt_summary *sums,
			    const char *const *accept, const json_t *keep);
/* The report's one definition of a task's outcome: correct with a best speedup above p
 * (p <= 0: correct at all, fast_0), over the whole task or by turn (1-based; a task that
 * ended earlier keeps its last best). */
bool	rpt_summary_fast(const struct rpt_summary *s, double p);
bool	rpt_summary_fast_by(const struct rpt_summary *s, int turn, double p);
/* The fast_p levels the report shows (0.5, 1, 1.5, 2). */
extern const double rpt_fast_p_levels[];
#define RPT_N_FAST_P 4

/* statcache.c: what status took from each task's log, kept in the run's status.cache
 * for the next status while the log and kforge's build are the same (see the file's
 * head). open: the cache as the file has it (empty where it has none, NULL without
 * memory). get: task i's value if its entry holds for its log as it is now (a new
 * reference), else NULL; *ident (the log's identity, the caller's to release, NULL for a
 * task with no log) goes with the value the caller then puts. Each task by one thread.
 * close: writes the file where an entry changed and keep (the run directory writable),
 * then frees; NULL is fine. */
struct rpt_statcache;
struct rpt_statcache *rpt_statcache_open(const struct rpt_run *run);
json_t	*rpt_statcache_get(struct rpt_statcache *c, int i, json_t **ident);
void	 rpt_statcache_put(struct rpt_statcache *c, int i, json_t *ident, json_t *value);
void	 rpt_statcache_close(struct rpt_statcache *c, bool keep);

/* runmodel.c: a run read back for the CSV, the plots and the page: {dir, name, device,
 * turns, report (rpt_report_json), tasks: [{id, level, problem, state, turn,
 * turns_done, best_speedup, last_status, fail_reason, rows: [one per turn, keyed by
 * rpt_turn_columns, plus artifacts {key: path in the task dir}], records: [{seq, ts,
 * turn, from, event, to, lease?, reason?}]}], leases: [{class, slot, task, turn,
 * acquired_ms, released_ms}]}. Bounded: at most 256 turns and 20000 records a task. */
struct rpt_column {
	const char	*name, *help;
};
extern const struct rpt_column rpt_turn_columns[];	/* ends with a NULL name */
json_t	*rpt_run_model(const struct rpt_run *run, const char *const *accept);
/* The rows of every model (a JSON array of run models) as CSV, a header first. */
int	rpt_csv_write(json_t *models, struct kb_buf *out);

/* plot.c: SVG charts of run models, kforge's own SVG (no plotting library). Each draws
 * every model of the array overlaid, its numbers in data-* attributes. */
struct rpt_plot {
	const char	*name;	/* file name (NAME.svg) and element id (plot-NAME) */
	const char	*title;
	void		(*draw)(json_t *models, struct kb_buf *out);
};
extern const struct rpt_plot rpt_plots[];	/* ends with a NULL name */
/* &, <, >, quotes escaped; control characters other than whitespace replaced. */
void	rpt_xml_escape(struct kb_buf *out, const char *s);
/* A turn row's outcome as the status plot and the page name it. */
const char *rpt_turn_category(json_t *row);

/* html.c: the report page of run models: summary, plots, a sortable task table, each
 * task's timeline and turns (prompt, reply, kernel with its diff against the previous
 * turn's, build output, result, verdict, profile, feedback), every text escaped. With a
 * live_stamp (rpt_run_stamp when rendered) the page polls the viewer's "stamp" for a
 * change and redraws itself (kforge view); NULL: a self-contained file. -KB_ETOOBIG
 * past the buffer's cap. */
int	rpt_html_page(json_t *models, const char *live_stamp, struct kb_buf *out);
/* A line diff of old against new (LCS), as HTML lines classed add, del or same. */
void	rpt_html_diff(const char *old, const char *new, struct kb_buf *out);

/* viewer.c: what changes whenever the run moves on: the sizes and times of its logs and
 * run.json. */
void	rpt_run_stamp(const struct rpt_run *run, char *out, size_t len);

/* stats.c: the numbers behind the comparisons and `kforge subset` (pure functions). */
/* The unbiased estimator of fast_p@k (pass@k's): of n samples of a problem, c are fast_p;
 * the chance that k drawn without replacement hold one: 1 - C(n-c, k)/C(n, k). NAN
 * unless 0 <= c <= n and 1 <= k <= n. */
double	rpt_fast_at_k(int n, int c, int k);
/* A seeded generator (splitmix64): the same numbers for a seed on every machine. */
uint64_t rpt_rand_next(uint64_t *state);
int	rpt_rand_below(uint64_t *state, int n);	/* uniform in 0..n-1, n > 0 */
/* The paired bootstrap over problems of mean(b - a): diff, and the 95% interval of the
 * resampled means (percentiles); beyond_noise when it leaves out 0. */
struct rpt_bootstrap {
	double	diff, lo, hi;
	bool	beyond_noise;
};
int	rpt_paired_bootstrap(const double *a, const double *b, int n, int resamples,
			     uint64_t seed, struct rpt_bootstrap *out);
/* Each of dim columns of the n x dim row-major x to mean 0, deviation 1 (a constant
 * column to 0). */
void	rpt_standardize(double *x, int n, int dim);
/* k-medoids (PAM: greedy build, then best swaps until none lowers the cost) of the n rows
 * of x under the Euclidean distance: medoids gets k row indices, ascending; deterministic.
 * -KB_EINVAL unless 1 <= k <= n <= RPT_KMEDOIDS_MAX (report.h). */
int	rpt_kmedoids(const double *x, int n, int dim, int k, int *medoids, double *cost);

#endif
