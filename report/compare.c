/*
 * compare.c: reading several runs side by side — `kforge report RUN_A RUN_B ...` (the
 * runs as columns on their common problems, the differences from the first run and
 * whether each is beyond the runs' own noise) and `kforge subset RUN_DIR... --size N
 * --out FILE` (a representative subset by k-medoids over the problems' results). Every
 * rate is the report's own tally (rpt_report_json_of) or its definition of a task's
 * outcome (rpt_summary_fast); the statistics are stats.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "base/banned.h"

#define COMPARE_RESAMPLES	2000	/* paired bootstrap resamples */
#define COMPARE_SEED		12	/* the bootstrap's fixed seed: same verdicts every time */
#define SUBSET_RANDOM		50	/* random subsets the medoids are measured against */
#define SPEEDUP_LOG_FLOOR	(-3.0)	/* ln speedup of "no correct kernel", and the clip */
#define SPEEDUP_LOG_CEIL	3.0

/* One run as the comparisons read it: every task's summary, and each problem's hash. */
struct cmp_run {
	const struct rpt_run	*run;
	struct rpt_summary	*sum;		/* one per task */
	json_t			*sha;		/* {problem_key: sha256} from tasks.json */
	char			 label[64];	/* "name (G+E)" */
};

static void
cmp_runs_clear(struct cmp_run *r, int n)
{
	for (int i = 0; i < n; i++) {
		free(r[i].sum);
		json_decref(r[i].sha);
	}
	free(r);
}

static struct cmp_run *
cmp_runs_load(const struct rpt_run *runs, int n, const char *const *accept)
{
	struct cmp_run	*r = calloc((size_t)n, sizeof(*r));
	char		 path[PATH_MAX];

	if (r == NULL) {
		fprintf(stderr, "kforge: out of memory\n");
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		const struct kb_config	*c;
		json_t			*tasks, *t;
		size_t			 j;

		r[i].run = &runs[i];
		r[i].sum = calloc((size_t)r[i].run->ntasks + 1, sizeof(*r[i].sum));
		r[i].sha = json_object();
		if (r[i].sum == NULL) {
			fprintf(stderr, "kforge: out of memory\n");
			cmp_runs_clear(r, i + 1);
			return NULL;
		}
		for (int k = 0; k < r[i].run->ntasks; k++)
			rpt_summarize_accepting(r[i].run->dir, r[i].run->tasks[k].id, accept,
						&r[i].sum[k]);
		tasks = rd_run_file(path, sizeof(path), r[i].run->dir, RD_TASKS_JSON) == 0 ?
			json_load_file(path, 0, NULL) : NULL;
		json_array_foreach(tasks, j, t) {
			const char *key = json_string_value(json_object_get(t, "problem_key"));
			const char *sha = json_string_value(json_object_get(t, "problem_sha256"));

			if (key != NULL && sha != NULL && sha[0] != '\0')
				json_object_set_new(r[i].sha, key, json_string(sha));
		}
		json_decref(tasks);
		c = r[i].run->cfg;
		snprintf(r[i].label, sizeof(r[i].label), "%.40s (%s%s%s%s%s)", c->name,
			 c->refinement.feedback_g ? "G" : "",
			 c->refinement.feedback_g && c->refinement.feedback_e ? "+" : "",
			 c->refinement.feedback_e ? "E" : "",
			 (c->refinement.feedback_g || c->refinement.feedback_e) &&
			 c->refinement.feedback_p ? "+" : "",
			 c->refinement.feedback_p ? "P" : "");
	}
	return r;
}

/* One line on stderr per problem key whose content (its SHA-256 at each run's start)
 * differs between runs; returns how many. Runs from before the hashes say nothing. */
static int
warn_content_differs(const struct cmp_run *r, int n, json_t *list)
{
	json_t		*seen = json_object(), *v;
	const char	*key;
	int		 count = 0;

	for (int i = 0; i < n; i++)
		json_object_foreach(r[i].sha, key, v) {
			json_t	*first = json_object_get(seen, key);

			if (first == NULL) {
				json_object_set_new(seen, key, json_pack("{s:O, s:i}", "sha", v,
									 "run", i));
				continue;
			}
			if (json_boolean_value(json_object_get(first, "warned")) ||
			    json_equal(json_object_get(first, "sha"), v))
				continue;
			fprintf(stderr, "kforge: warning: %s has different content in %s (sha256 "
				"%.12s) than in %s (sha256 %.12s): the runs did not solve the "
				"same problem\n", key, r[i].run->named, json_string_value(v),
				r[json_integer_value(json_object_get(first, "run"))].run->named,
				json_string_value(json_object_get(first, "sha")));
			json_object_set_new(first, "warned", json_true());
			if (list != NULL)
				json_array_append_new(list, json_string(key));
			count++;
		}
	json_decref(seen);
	return count;
}

/* The problem keys every run has, in the first run's task order: {key: index}. */
static json_t *
common_keys(const struct cmp_run *r, int n, json_t *dropped)
{
	json_t	*all = json_object(), *common = json_object();
	int	 index = 0;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < r[i].run->ntasks; k++) {
			const char	*key = r[i].run->tasks[k].problem_key;
			json_t		*c = json_object_get(all, key);

			/* [the last run that has it, how many runs have it] */
			if (c == NULL) {
				json_object_set_new(all, key, json_pack("[i, i]", i, 1));
			} else if (json_integer_value(json_array_get(c, 0)) != i) {
				json_array_set_new(c, 0, json_integer(i));
				json_array_set_new(c, 1, json_integer(
					json_integer_value(json_array_get(c, 1)) + 1));
			}
		}
	for (int k = 0; k < r[0].run->ntasks; k++) {
		const char *key = r[0].run->tasks[k].problem_key;

		if (json_object_get(common, key) == NULL &&
		    json_integer_value(json_array_get(json_object_get(all, key), 1)) == n)
			json_object_set_new(common, key, json_integer(index++));
	}
	if (dropped != NULL) {
		const char	*key;
		json_t		*v;

		json_object_foreach(all, key, v)
			if (json_object_get(common, key) == NULL)
				json_array_append_new(dropped, json_string(key));
	}
	json_decref(all);
	return common;
}

/* Per problem of common (by its index), the mean over the problem's samples in run r of
 * the outcome: fast_p (turn 0: the whole task) or fast_p by turn. */
static void
problem_means(const struct cmp_run *r, json_t *common, double p, int turn, double *out)
{
	size_t	np = json_object_size(common);
	int	*count = calloc(np + 1, sizeof(int));

	for (size_t i = 0; i < np; i++)
		out[i] = 0;
	for (int k = 0; count != NULL && k < r->run->ntasks; k++) {
		json_t	*idx = json_object_get(common, r->run->tasks[k].problem_key);
		int	 i;

		if (idx == NULL)
			continue;
		i = (int)json_integer_value(idx);
		out[i] += turn > 0 ? rpt_summary_fast_by(&r->sum[k], turn, p) :
				     rpt_summary_fast(&r->sum[k], p);
		count[i]++;
	}
	for (size_t i = 0; count != NULL && i < np; i++)
		out[i] /= count[i] > 0 ? count[i] : 1;
	free(count);
}

/* ------------------------------------------------------ report RUN_A RUN_B */

/* One compared quantity: fast_p (turn 0) or fast_p by turn, and where the tally keeps
 * it in a report's "overall". */
struct cmp_metric {
	char	name[32];
	double	p;
	int	turn;
};

static int
cmp_metrics(const struct cmp_run *r, int n, struct cmp_metric *m, int max)
{
	int	nm = 0, turns = INT32_MAX;

	snprintf(m[nm].name, sizeof(m[nm].name), "fast_0");
	m[nm].p = 0;
	m[nm++].turn = 0;
	for (int i = 0; i < RPT_N_FAST_P && nm < max; i++) {
		snprintf(m[nm].name, sizeof(m[nm].name), "fast_%g", rpt_fast_p_levels[i]);
		m[nm].p = rpt_fast_p_levels[i];
		m[nm++].turn = 0;
	}
	for (int i = 0; i < n; i++)
		if (r[i].run->cfg->refinement.turns < turns)
			turns = (int)r[i].run->cfg->refinement.turns;
	for (int t = 1; t <= turns && nm < max; t++) {
		snprintf(m[nm].name, sizeof(m[nm].name), "fast_1@turn%d", t);
		m[nm].p = 1.0;
		m[nm++].turn = t;
	}
	return nm;
}

/* The tally's value of metric m in a report restricted to the common problems. */
static double
tally_value(json_t *report, const struct cmp_metric *m)
{
	json_t	*overall = json_object_get(report, "overall");
	char	 key[16];

	if (m->turn > 0)
		return json_real_value(json_array_get(json_object_get(overall, "fast_1_at_turn"),
						      (size_t)m->turn - 1));
	if (m->p <= 0)
		return json_real_value(json_object_get(overall, "fast_0"));
	snprintf(key, sizeof(key), "%g", m->p);
	return json_real_value(json_object_get(json_object_get(overall, "fast_p"), key));
}

/* A run's search where it is not a plain chain without budgets (docs/search.md): runs
 * compared at equal cost say what each searched with. */
static void
search_note(const struct kb_config *c)
{
	const char	*st = c->refinement.strategy != NULL ? c->refinement.strategy : "chain";
	const long	 req = c->refinement.budget.requests, tok = c->refinement.budget.tokens;

	if (strcmp(st, "chain") == 0 && req == 0 && tok == 0 &&
	    c->refinement.budget.cost_usd <= 0 && c->refinement.budget.gpu_s <= 0)
		return;
	printf("  [search %s", st);
	if (req > 0 || tok > 0 || c->refinement.budget.cost_usd > 0 ||
	    c->refinement.budget.gpu_s > 0) {
		const char *sep = "; a task's budget";

		if (req > 0)
			printf("%s %ld requests", sep, req), sep = ",";
		if (tok > 0)
			printf("%s %ld tokens", sep, tok), sep = ",";
		if (c->refinement.budget.cost_usd > 0)
			printf("%s $%g", sep, c->refinement.budget.cost_usd), sep = ",";
		if (c->refinement.budget.gpu_s > 0)
			printf("%s %g execution s", sep, c->refinement.budget.gpu_s);
	}
	printf("]");
}

int
rpt_cmd_compare(const struct rpt_run *runs, int ndirs, bool as_json, const char *const *accept)
{
	struct cmp_run		*r = cmp_runs_load(runs, ndirs, accept);
	struct cmp_metric	 m[RPT_N_FAST_P + 1 + 256];
	json_t			*common, *dropped, *differs, *listed, *rows, *reports;
	double			*a, *b;
	int			 nm, np, rc = 0;

	if (r == NULL)
		return 1;
	dropped = json_array();
	differs = json_array();
	warn_content_differs(r, ndirs, differs);
	/* its fast_p counts what got through the evaluator: not a result to set beside one */
	for (int i = 0; i < ndirs; i++)
		if (r[i].run->cfg->redteam.enabled)
			fprintf(stderr, "kforge: warning: %s is a red-team run: its kernels were asked "
				"to fool the evaluator, so its numbers are not kernels' results\n",
				r[i].run->dir);
	common = common_keys(r, ndirs, dropped);
	np = (int)json_object_size(common);
	if (np == 0) {
		fprintf(stderr, "kforge: the runs have no problem in common\n");
		json_decref(common);
		json_decref(dropped);
		json_decref(differs);
		cmp_runs_clear(r, ndirs);
		return 1;
	}
	nm = cmp_metrics(r, ndirs, m, (int)(sizeof(m) / sizeof(m[0])));
	reports = json_array();
	listed = json_array();
	for (int i = 0; i < ndirs; i++) {
		json_t *rep = rpt_report_json_of(r[i].run, r[i].sum, accept, common);

		json_array_append_new(reports, rep);
		json_array_append_new(listed, json_pack("{s:s, s:s, s:s, s:i, s:O}", "dir",
			r[i].run->dir, "name", r[i].run->cfg->name, "label", r[i].label, "samples",
			r[i].run->cfg->problems.samples, "report", rep));
	}
	a = calloc((size_t)np + 1, sizeof(double));
	b = calloc((size_t)np + 1, sizeof(double));
	rows = json_array();
	for (int k = 0; a != NULL && b != NULL && k < nm; k++) {
		json_t	*values = json_array(), *diffs = json_array();

		problem_means(&r[0], common, m[k].p, m[k].turn, a);
		for (int i = 0; i < ndirs; i++) {
			double			v = tally_value(json_array_get(reports, (size_t)i),
								&m[k]);
			struct rpt_bootstrap	bs;

			json_array_append_new(values, json_real(v));
			if (i == 0)
				continue;
			problem_means(&r[i], common, m[k].p, m[k].turn, b);
			if (rpt_paired_bootstrap(a, b, np, COMPARE_RESAMPLES, COMPARE_SEED,
						  &bs) < 0) {
				json_array_append_new(diffs, json_null());
				continue;
			}
			json_array_append_new(diffs, json_pack("{s:f, s:[f, f], s:b}", "diff",
				v - tally_value(json_array_get(reports, 0), &m[k]), "interval",
				bs.lo, bs.hi, "beyond_noise", bs.beyond_noise));
		}
		json_array_append_new(rows, json_pack("{s:s, s:o, s:o}", "metric", m[k].name,
						      "values", values, "vs_first", diffs));
	}
	if (as_json) {
		json_t *out = json_pack("{s:O, s:i, s:O, s:O, s:O, s:s}", "runs", listed,
			"common_problems", np, "left_out", dropped, "content_differs", differs,
			"comparison", rows, "noise_method", "paired bootstrap over the common "
			"problems (2000 resamples, seed 12) of the per-problem difference from "
			"the first run; beyond noise when its 95% interval leaves out 0");

		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(out);
	} else {
		size_t	 i;
		json_t	*row;

		printf("kforge report: %d runs on their %d common problems", ndirs, np);
		if (json_array_size(dropped) > 0)
			printf(" (%zu left out: not in every run)", json_array_size(dropped));
		printf("\n\n");
		for (int k = 0; k < ndirs; k++) {
			printf("  %c: %s  %s", 'A' + (k % 26), r[k].label, r[k].run->dir);
			search_note(r[k].run->cfg);
			printf("\n");
		}
		printf("\n%-14s", "metric");
		for (int k = 0; k < ndirs; k++)
			printf("  %8c", 'A' + (k % 26));
		for (int k = 1; k < ndirs; k++)
			printf("  %8s%c-A  %17s", "", 'A' + (k % 26), "95% interval");
		printf("\n");
		json_array_foreach(rows, i, row) {
			size_t	 j;
			json_t	*v;

			printf("%-14s", json_string_value(json_object_get(row, "metric")));
			json_array_foreach(json_object_get(row, "values"), j, v)
				printf("  %7.1f%%", 100 * json_real_value(v));
			json_array_foreach(json_object_get(row, "vs_first"), j, v) {
				json_t *iv = json_object_get(v, "interval");

				printf("  %+9.1f%%  [%+6.1f, %+6.1f]%s", 100 * json_real_value(
					json_object_get(v, "diff")), 100 * json_real_value(
					json_array_get(iv, 0)), 100 * json_real_value(
					json_array_get(iv, 1)), json_is_true(json_object_get(v,
					"beyond_noise")) ? " *" : "  ");
			}
			printf("\n");
		}
		printf("\n* beyond the runs' own noise: the 95%% interval of a paired bootstrap "
		       "over the common problems\n  (%d resamples, seed %d) leaves out 0\n",
		       COMPARE_RESAMPLES, COMPARE_SEED);
		if (json_array_size(differs) > 0)
			printf("\nproblems whose content differs between the runs (see the "
			       "warnings): %zu\n", json_array_size(differs));
	}
	if (a == NULL || b == NULL) {
		fprintf(stderr, "kforge: out of memory\n");
		rc = 1;
	}
	free(a);
	free(b);
	json_decref(rows);
	json_decref(listed);
	json_decref(reports);
	json_decref(common);
	json_decref(dropped);
	json_decref(differs);
	cmp_runs_clear(r, ndirs);
	return rc;
}

/* ----------------------------------------------------------------- subset */

/* The quantities a subset must reproduce, per run: fast_0, fast_1 and fast_1 by turn;
 * vals[q][problem] their per-problem means. */
struct subset_target {
	int	  nq;
	char	(*name)[96];
	double	**vals;
	double	 *full;
};

static double
subset_mad(const struct subset_target *t, const int *members, int size, double *dev)
{
	double	total = 0;

	for (int q = 0; q < t->nq; q++) {
		double	s = 0;

		for (int m = 0; m < size; m++)
			s += t->vals[q][members[m]];
		s /= size;
		if (dev != NULL)
			dev[q] = s;
		total += fabs(s - t->full[q]);
	}
	return total / t->nq;
}

/* The result vector of every common problem: per run, per sample and per turn, whether
 * that turn's kernel compiled, whether a correct kernel exists by then and the ln of its
 * best speedup (clipped to [-3, 3]; -3 with none). Rows in the order of common's
 * indices. */
static double *
result_vectors(const struct cmp_run *r, int n, json_t *common, int *dim_out)
{
	int	 np = (int)json_object_size(common), dim = 0, *offset, *samples;
	double	*x;

	offset = calloc((size_t)n + 1, sizeof(int));
	samples = calloc((size_t)n + 1, sizeof(int));
	if (offset == NULL || samples == NULL) {
		free(offset);
		free(samples);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		int	turns = (int)r[i].run->cfg->refinement.turns;

		samples[i] = r[i].run->cfg->problems.samples;
		for (int k = 0; k < r[i].run->ntasks; k++)
			if (r[i].run->tasks[k].sample >= samples[i])
				samples[i] = r[i].run->tasks[k].sample + 1;
		offset[i] = dim;
		dim += samples[i] * 3 * turns;
	}
	if ((x = calloc((size_t)np * (size_t)dim + 1, sizeof(double))) != NULL) {
		for (int i = 0; i < n; i++) {
			int	turns = (int)r[i].run->cfg->refinement.turns;

			for (int k = 0; k < r[i].run->ntasks; k++) {
				const struct rpt_summary *s = &r[i].sum[k];
				json_t	*idx = json_object_get(common, r[i].run->tasks[k].problem_key);
				double	*row;

				if (idx == NULL)
					continue;
				row = x + (size_t)json_integer_value(idx) * dim + offset[i] +
				      (size_t)r[i].run->tasks[k].sample * 3 * turns;
				for (int t = 1; t <= turns && t <= 256; t++) {
					double best = s->nbest == 0 ? -1 :
						s->best_at_turn[t <= s->nbest ? t - 1 : s->nbest - 1];
					double ln = best > 0 ? log(best) : SPEEDUP_LOG_FLOOR;

					row[3 * t - 3] = s->compiled_at_turn[t - 1];
					row[3 * t - 2] = rpt_summary_fast_by(s, t, 0);
					row[3 * t - 1] = fmax(SPEEDUP_LOG_FLOOR, fmin(SPEEDUP_LOG_CEIL, ln));
				}
			}
		}
	}
	free(offset);
	free(samples);
	*dim_out = dim;
	return x;
}

static void
targets_clear(struct subset_target *t)
{
	for (int q = 0; q < t->nq; q++)
		free(t->vals[q]);
	free(t->vals);
	free(t->name);
	free(t->full);
}

static int
targets_make(const struct cmp_run *r, int n, json_t *common, struct subset_target *t)
{
	int	np = (int)json_object_size(common), max = 0;

	memset(t, 0, sizeof(*t));
	for (int i = 0; i < n; i++)
		max += 2 + (int)r[i].run->cfg->refinement.turns;
	t->name = calloc((size_t)max, sizeof(*t->name));
	t->vals = calloc((size_t)max, sizeof(*t->vals));
	t->full = calloc((size_t)max, sizeof(*t->full));
	if (t->name == NULL || t->vals == NULL || t->full == NULL)
		return -KB_ENOMEM;
	for (int i = 0; i < n; i++) {
		int	turns = (int)r[i].run->cfg->refinement.turns;

		for (int q = -1; q <= turns; q++) {
			double *v = calloc((size_t)np + 1, sizeof(double));

			if (v == NULL)
				return -KB_ENOMEM;
			/* q -1: fast_0, 0: fast_1, 1..turns: fast_1 by turn q */
			problem_means(&r[i], common, q < 0 ? 0 : 1.0, q < 0 ? 0 : q, v);
			if (q < 0)
				snprintf(t->name[t->nq], sizeof(t->name[0]), "%c fast_0", 'A' + i % 26);
			else if (q == 0)
				snprintf(t->name[t->nq], sizeof(t->name[0]), "%c fast_1", 'A' + i % 26);
			else
				snprintf(t->name[t->nq], sizeof(t->name[0]), "%c fast_1@turn%d",
					 'A' + i % 26, q);
			for (int p = 0; p < np; p++)
				t->full[t->nq] += v[p] / np;
			t->vals[t->nq++] = v;
		}
	}
	return 0;
}

static int
write_subset(const char *out, const struct cmp_run *r, int ndirs, json_t *common,
	     const int *med, int size, double mad, double random_mean, int beaten, int tied,
	     uint64_t seed)
{
	struct kb_buf	 b = KB_BUF_INIT(0);
	const char	**keys = calloc(json_object_size(common) + 1, sizeof(char *));
	const char	*key;
	json_t		*v;
	int		 rc;

	if (keys == NULL)
		return -KB_ENOMEM;
	json_object_foreach(common, key, v)
		keys[json_integer_value(v)] = key;
	kb_buf_printf(&b, "# Made by kforge subset: %d of %zu problems, the medoids of k-medoids "
		      "(PAM) over their\n# standardized results (compiled, correct and speedup "
		      "by turn and sample) in the runs:\n", size, json_object_size(common));
	for (int i = 0; i < ndirs; i++)
		kb_buf_printf(&b, "#   %s\n", r[i].run->dir);
	kb_buf_printf(&b, "# Mean absolute deviation of fast_0, fast_1 and fast_1 by turn from "
		      "the full set: %.4f\n# (%d random subsets of %d, seed %llu: mean %.4f; "
		      "these medoids beat %d of them and tie %d).\n", mad, SUBSET_RANDOM, size,
		      (unsigned long long)seed, random_mean, beaten, tied);
	for (int m = 0; m < size; m++)
		kb_buf_printf(&b, "%s\n", keys[med[m]]);
	rc = kb_write_atomic(out, b.p, b.len);
	kb_buf_clear(&b);
	free(keys);
	return rc;
}

int
rpt_cmd_subset(const struct rpt_run *runs, int ndirs, int size, const char *out, uint64_t seed)
{
	struct cmp_run		*r = cmp_runs_load(runs, ndirs, NULL);
	struct subset_target	 t = { 0 };
	json_t			*common = NULL, *dropped = json_array();
	double			*x = NULL, *dev = NULL, mad, random_sum = 0, *random_dev = NULL;
	int			*med = NULL, *pick = NULL, np, dim = 0, rc = 1, beaten = 0;
	int			 tied = 0;
	uint64_t		 state = seed;

	if (r == NULL)
		goto out;
	warn_content_differs(r, ndirs, NULL);
	common = common_keys(r, ndirs, dropped);
	np = (int)json_object_size(common);
	if (json_array_size(dropped) > 0) {
		size_t	 i;
		json_t	*k;

		fprintf(stderr, "kforge: %zu problem(s) not in every run left out:",
			json_array_size(dropped));
		json_array_foreach(dropped, i, k)
			fprintf(stderr, " %s", json_string_value(k));
		fprintf(stderr, "\n");
	}
	if (size < 1 || size > np || np > RPT_KMEDOIDS_MAX) {
		fprintf(stderr, "kforge subset: --size %d: the runs have %d problems in common%s\n",
			size, np, np > RPT_KMEDOIDS_MAX ? " (more than k-medoids takes here)" :
			"; the size must be 1 to that");
		goto out;
	}
	med = calloc((size_t)size, sizeof(int));
	pick = calloc((size_t)np, sizeof(int));
	x = result_vectors(r, ndirs, common, &dim);
	if (med == NULL || pick == NULL || x == NULL || targets_make(r, ndirs, common, &t) < 0 ||
	    (dev = calloc((size_t)t.nq + 1, sizeof(double))) == NULL ||
	    (random_dev = calloc((size_t)t.nq + 1, sizeof(double))) == NULL) {
		fprintf(stderr, "kforge: out of memory\n");
		goto out;
	}
	rpt_standardize(x, np, dim);
	if (rpt_kmedoids(x, np, dim, size, med, NULL) < 0) {
		fprintf(stderr, "kforge: k-medoids failed\n");
		goto out;
	}
	mad = subset_mad(&t, med, size, dev);
	for (int s = 0; s < SUBSET_RANDOM; s++) {
		double	rmad, *one = calloc((size_t)t.nq + 1, sizeof(double));

		for (int i = 0; i < np; i++)
			pick[i] = i;
		for (int i = 0; i < size; i++) {	/* a partial Fisher-Yates shuffle */
			int j = i + rpt_rand_below(&state, np - i), tmp = pick[i];

			pick[i] = pick[j];
			pick[j] = tmp;
		}
		rmad = subset_mad(&t, pick, size, one);
		for (int q = 0; one != NULL && q < t.nq; q++)
			random_dev[q] += fabs(one[q] - t.full[q]) / SUBSET_RANDOM;
		free(one);
		random_sum += rmad;
		beaten += mad < rmad - 1e-12;
		tied += fabs(mad - rmad) <= 1e-12;
	}
	printf("kforge subset: %d of %d problems, the medoids of k-medoids (PAM) over %d "
	       "standardized results each from %d run(s)\n\n", size, np, dim, ndirs);
	for (int i = 0; i < ndirs; i++)
		printf("  %c: %s  %s\n", 'A' + i % 26, r[i].label, r[i].run->dir);
	printf("\n%-18s  %7s  %7s  %7s  %13s\n", "metric", "full", "subset", "|dev|",
	       "random |dev|");
	for (int q = 0; q < t.nq; q++)
		printf("%-18s  %6.1f%%  %6.1f%%  %6.1f%%  %12.1f%%\n", t.name[q], 100 * t.full[q],
		       100 * dev[q], 100 * fabs(dev[q] - t.full[q]), 100 * random_dev[q]);
	printf("\nmean absolute deviation: subset %.1f%%, %d random subsets of %d (seed %llu) "
	       "%.1f%% on average;\nthe subset beats %d of them (%.0f%%) and ties %d\n", 100 * mad,
	       SUBSET_RANDOM, size, (unsigned long long)seed, 100 * random_sum / SUBSET_RANDOM,
	       beaten, 100.0 * beaten / SUBSET_RANDOM, tied);
	if (write_subset(out, r, ndirs, common, med, size, mad, random_sum / SUBSET_RANDOM,
			 beaten, tied, seed) < 0) {
		fprintf(stderr, "kforge: cannot write %s: %s\n", out, strerror(errno));
		goto out;
	}
	printf("wrote %s\n", out);
	rc = 0;
out:
	free(x);
	free(dev);
	free(random_dev);
	free(med);
	free(pick);
	targets_clear(&t);
	json_decref(common);
	json_decref(dropped);
	if (r != NULL)
		cmp_runs_clear(r, ndirs);
	return rc;
}
