/* views.c: the read-only commands over a run directory — status, tail, report. They
 * never map the pool or touch a log for writing: the supervisor publishes pool.json and
 * run.json, the trajectories are the truth, each read once per command. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "report/report_int.h"
#include "base/banned.h"

static json_t *
load_json_in(const char *dir, enum rd_entry file)
{
	char	path[PATH_MAX];

	if (rd_run_file(path, sizeof(path), dir, file) < 0)
		return NULL;
	return json_load_file(path, 0, NULL);
}

/* --------------------------------------------------------------- status */

/*
 * Stage times: where each stage's time went, waiting for a slot apart from holding it.
 * This is the one definition (tools/stage_times.py prints it from `kforge status --json`,
 * key "stages"). It reads the lease record that lease_give (fsm/actions.c) writes into a
 * step's data, {"lease": {"class", "slot", "wait_ms", "acquired_ms", "released_ms"}}:
 *   wait = wait_ms, from asking for the slot to getting it;
 *   hold = released_ms - acquired_ms, from getting the slot to giving it back.
 * A step is a record that leaves the stage (its "from"; the "start" record is none). A
 * step without a lease took no slot (a build found in the cache before asking, a static
 * rejection, a saved reply reused): it counts in "steps" and "no_slot" and holds
 * nothing, so it is left out of the wait and hold statistics rather than pulling them
 * to zero. Statistics: median (the mean of the middle two for an even count), p90
 * (nearest rank), max and total, in ms.
 *
 * Beside the stages, a row for the time a step spends in no slot before asking for one:
 * "runner start" (rundir.h's RD_STEP_RUNNER_START_ROW), from the step data's
 * runner_start_ms (a PRECOMPILE's worker starting its runner; on its first step the
 * fork server imports torch). Its time is a wait (for the runner, not a slot): its
 * steps are the steps that started one, none holds a slot, and hold_ms is null.
 */

#define STAGE_MS_MAX (INT64_C(1) << 40)
#define STAGE_RUNNER_START	RPT_ST__N	/* the row after the stages' */
#define STAGE_ROWS		(RPT_ST__N + 1)

struct stage_times {
	int	 steps;		/* records leaving the stage */
	int	 n, cap;	/* steps that held a slot: wait[i], hold[i] */
	int64_t	*wait, *hold;
};

/* One step's wait and hold, kept for the statistics. */
static int
stage_times_push(struct stage_times *s, int64_t wait, int64_t hold)
{
	if (s->n == s->cap) {
		int	 cap = s->cap > 0 ? 2 * s->cap : 64;
		int64_t	*nw = realloc(s->wait, (size_t)cap * sizeof(*nw)), *nh;

		if (nw == NULL)
			return -KB_ENOMEM;
		s->wait = nw;
		if ((nh = realloc(s->hold, (size_t)cap * sizeof(*nh))) == NULL)
			return -KB_ENOMEM;
		s->hold = nh;
		s->cap = cap;
	}
	s->wait[s->n] = wait;
	s->hold[s->n] = hold;
	s->n++;
	return 0;
}

/* Every row's arrays freed, the rows emptied. */
static void
stage_times_free(struct stage_times st[STAGE_ROWS])
{
	for (int k = 0; k < STAGE_ROWS; k++) {
		free(st[k].wait);
		free(st[k].hold);
	}
	memset(st, 0, STAGE_ROWS * sizeof(*st));
}

/* from's steps added to to's (a task's to a share's, a share's to the command's), from
 * freed; < 0 without memory (the pushes stop, from is freed all the same). */
static int
stage_times_merge(struct stage_times to[STAGE_ROWS], struct stage_times from[STAGE_ROWS])
{
	int	rc = 0;

	for (int k = 0; k < STAGE_ROWS; k++) {
		to[k].steps += from[k].steps;
		for (int j = 0; j < from[k].n && rc == 0; j++)
			rc = stage_times_push(&to[k], from[k].wait[j], from[k].hold[j]);
	}
	stage_times_free(from);
	return rc;
}

static int
stage_times_add(const struct kb_tlog_rec *rec, void *arg)
{
	struct stage_times	*st = arg, *s;
	enum rpt_state		 from;
	json_t			*lease = json_object_get(rec->data, "lease");
	json_t			*w = json_object_get(lease, "wait_ms");
	json_t			*a = json_object_get(lease, "acquired_ms");
	json_t			*r = json_object_get(lease, "released_ms");
	json_t			*rs = json_object_get(rec->data, RD_STEP_RUNNER_START_MS);

	/* An agent's tool call is a node of its turn's GENERATE, not a step of the stage. */
	if (rpt_state_parse(rec->from, &from) < 0 || strcmp(rec->event, "start") == 0 ||
	    strcmp(rec->event, "tool_call") == 0)
		return 0;
	if (json_is_integer(rs) && json_integer_value(rs) >= 0 &&
	    json_integer_value(rs) <= STAGE_MS_MAX) {
		st[STAGE_RUNNER_START].steps++;
		if (stage_times_push(&st[STAGE_RUNNER_START], json_integer_value(rs), 0) < 0)
			return -KB_ENOMEM;
	}
	s = &st[from];
	s->steps++;
	/* A value no run can reach (over 2^40 ms, decades) is a damaged record: skipped, so
	 * that no sum overflows. */
	if (!json_is_integer(w) || !json_is_integer(a) || !json_is_integer(r) ||
	    json_integer_value(w) < 0 || json_integer_value(w) > STAGE_MS_MAX ||
	    json_integer_value(r) < json_integer_value(a) ||
	    json_integer_value(a) < 0 ||
	    json_integer_value(r) - json_integer_value(a) > STAGE_MS_MAX)
		return 0;
	return stage_times_push(s, json_integer_value(w),
				json_integer_value(r) - json_integer_value(a));
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* {"median", "p90", "max", "total"} of n values (sorted here), or null for none. */
static json_t *
ms_stats(int64_t *v, int n)
{
	int64_t	total = 0;

	if (n == 0)
		return json_null();
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	for (int i = 0; i < n; i++)
		total += v[i];
	return json_pack("{s:f, s:I, s:I, s:I}", "median",
			 n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0, "p90",
			 (json_int_t)v[(9 * n + 9) / 10 - 1], "max", (json_int_t)v[n - 1], "total",
			 (json_int_t)total);
}

/* The "stages" object of status --json: per timed stage with any step, its counts and
 * the wait and hold statistics. */
static json_t *
stage_times_json(struct stage_times st[STAGE_ROWS])
{
	json_t	*out = json_object();

	for (size_t k = 0; k < rpt_nstages; k++) {
		struct stage_times *s = &st[rpt_stages[k].state];

		if (rpt_stages[k].slot && s->steps > 0)
			json_object_set_new(out, rpt_state_name(rpt_stages[k].state),
				json_pack("{s:i, s:i, s:i, s:o, s:o}", "steps", s->steps,
					  "held_slot", s->n, "no_slot", s->steps - s->n, "wait_ms",
					  ms_stats(s->wait, s->n), "hold_ms",
					  ms_stats(s->hold, s->n)));
	}
	if (st[STAGE_RUNNER_START].steps > 0)
		json_object_set_new(out, RD_STEP_RUNNER_START_ROW,
			json_pack("{s:i, s:i, s:i, s:o, s:n}", "steps",
				  st[STAGE_RUNNER_START].steps, "held_slot", 0, "no_slot",
				  st[STAGE_RUNNER_START].steps, "wait_ms",
				  ms_stats(st[STAGE_RUNNER_START].wait, st[STAGE_RUNNER_START].n),
				  "hold_ms"));
	stage_times_free(st);
	return out;
}

static void
print_ms(json_t *v)
{
	double	ms = json_number_value(v);

	if (ms < 1000)
		printf(" %8.0f ms", ms);
	else
		printf(" %9.1f s", ms / 1000);
}

static void
print_stage_row(const char *name, json_t *s)
{
	json_t	*w = json_object_get(s, "wait_ms"), *h = json_object_get(s, "hold_ms");

	if (s == NULL)
		return;
	printf("  %-12s %5lld %5lld %7lld ", name,
	       (long long)json_integer_value(json_object_get(s, "steps")),
	       (long long)json_integer_value(json_object_get(s, "held_slot")),
	       (long long)json_integer_value(json_object_get(s, "no_slot")));
	if (json_is_object(w)) {
		print_ms(json_object_get(w, "median"));
		print_ms(json_object_get(w, "p90"));
		printf(" ");
	}
	if (json_is_object(h)) {
		print_ms(json_object_get(h, "median"));
		print_ms(json_object_get(h, "p90"));
	}
	printf("\n");
}

static void
print_stage_times(json_t *stages)
{
	if (json_object_size(stages) == 0)
		return;
	printf("stage times: waiting for a slot, then holding it (a step that took no slot,\n"
	       "such as a cache hit, holds nothing and is left out of the times; runner start:\n"
	       "waiting for the worker's runner, torch imported, before asking for a slot):\n");
	printf("  %-12s %5s %5s %7s  %11s %11s  %11s %11s\n", "STAGE", "steps", "slot",
	       "no slot", "wait median", "p90", "hold median", "p90");
	for (size_t k = 0; k < rpt_nstages; k++)
		print_stage_row(rpt_state_name(rpt_stages[k].state),
				json_object_get(stages, rpt_state_name(rpt_stages[k].state)));
	print_stage_row(RD_STEP_RUNNER_START_ROW,
			json_object_get(stages, RD_STEP_RUNNER_START_ROW));
}

static void
print_resource(const char *label, json_t *r)
{
	if (!json_is_object(r))
		return;
	printf("  %-8s %3lld/%-3lld busy  %3lld waiting  %5.1f%% utilised",
	       label, (long long)json_integer_value(json_object_get(r, "used")),
	       (long long)json_integer_value(json_object_get(r, "total")),
	       (long long)json_integer_value(json_object_get(r, "waiting")),
	       100.0 * json_number_value(json_object_get(r, "utilisation")));
	if (json_integer_value(json_object_get(r, "quarantined")) > 0)
		printf("  %lld quarantined",
		       (long long)json_integer_value(json_object_get(r, "quarantined")));
	printf("\n");
}

/* Workers starting their runner before a build asks for its slot (the pool's
 * "runner_start"): on a worker's first step its fork server imports torch, seconds that
 * no slot shows. */
static void
print_runner_starts(json_t *r)
{
	json_int_t	n = json_integer_value(json_object_get(r, "starting"));

	if (n > 0)
		printf("  %-8s %3lld starting (importing torch), in no slot\n", "runners",
		       (long long)n);
}

/* The quarantined GPUs: run.json's list, which the supervisor rewrites on every change;
 * pool.json's slots for a run directory written before run.json kept one. */
static json_t *
quarantined_gpus(json_t *info, json_t *pool)
{
	json_t	*list = json_object_get(info, "quarantined"), *slot;
	size_t	 i;

	if (json_is_array(list))
		return json_incref(list);
	list = json_array();
	json_array_foreach(json_object_get(json_object_get(pool, "exec"), "slots"), i, slot)
		if (json_is_true(json_object_get(slot, "quarantined")))
			json_array_append_new(list, json_pack("{s:i, s:O, s:O}", "slot", (int)i,
				"device", json_object_get(slot, "device"), "reason",
				json_object_get(slot, "reason")));
	return list;
}

/* What a run is doing now: "running" while a supervisor holds its lock, else what
 * run.json recorded when the supervisor ended ("finished", "paused", "stopped", or
 * "created" for one never started), except that a run.json still saying "running"
 * without a live supervisor means the supervisor died without closing the run:
 * "interrupted". */
/* A Slurm run's shards, a line each: Slurm's state of its element beside its own. */
static void
print_shards(json_t *shards)
{
	size_t	 i;
	json_t	*sh;

	printf("shards (Slurm):\n");
	json_array_foreach(shards, i, sh) {
		const char *host = json_string_value(json_object_get(sh, "host"));

		if (host == NULL)
			host = json_string_value(json_object_get(sh, "node"));
		printf("  %-16s %-11s %-16s %-12s %lld worker(s)  heartbeat %s\n",
		       json_string_value(json_object_get(sh, "shard")),
		       json_string_value(json_object_get(sh, "slurm_state")) ?: "-",
		       host != NULL && host[0] != '\0' ? host : "-",
		       json_string_value(json_object_get(sh, "status")) ?: "-",
		       (long long)json_integer_value(json_object_get(sh, "running_workers")),
		       json_string_value(json_object_get(sh, "beat_at")) ?: "-");
	}
}

/* Every task's summary and, for status, the stage times, each log read once, the logs
 * shared out among up to SUMMARY_THREADS threads (a 10,000-task run is 160,000 records
 * to parse). */
#define SUMMARY_THREADS	8

struct summary_share {
	const struct rpt_run	*run;
	const char *const	*accept;
	struct rpt_summary	*sums;
	int			 first, step;
	bool			 timed;		/* stage times wanted */
	struct rpt_statcache	*cache;		/* status's (statcache.c), or NULL */
	struct stage_times	 st[STAGE_ROWS];
	int			 rc;
};

/*
 * What status keeps of a task in the status cache: the summary's fields status shows and
 * the task's stage times, {"s": [state, turn, turns_done, best_speedup, best_turn, depth,
 * requests, prompt_tokens, completion_tokens, reasoning_tokens, cost_usd], "ls":
 * last_status, "fr": fail_reason, "ee": env_error, "st": [[row, steps, wait, hold, wait,
 * hold, ...] for each row with steps]}. status_of reads one back whole or not at all.
 */
static json_t *
status_entry(const struct rpt_summary *s, struct stage_times st[STAGE_ROWS])
{
	json_t	*rows = json_array(), *v;

	for (int k = 0; k < STAGE_ROWS && rows != NULL; k++) {
		json_t *row = st[k].steps > 0 ? json_pack("[i, i]", k, st[k].steps) : NULL;

		for (int j = 0; row != NULL && j < st[k].n; j++) {
			json_array_append_new(row, json_integer(st[k].wait[j]));
			json_array_append_new(row, json_integer(st[k].hold[j]));
		}
		if (row != NULL)
			json_array_append_new(rows, row);
	}
	v = json_pack("{s:[i, i, i, f, i, i, I, I, I, I, f], s:s, s:s, s:s, s:o*}", "s",
		      (int)s->state, s->turn, s->turns_done, s->best_speedup, s->best_turn,
		      s->depth, (json_int_t)s->llm_requests, (json_int_t)s->prompt_tokens,
		      (json_int_t)s->completion_tokens, (json_int_t)s->reasoning_tokens,
		      s->cost_usd, "ls", s->last_status, "fr", s->fail_reason, "ee", s->env_error,
		      "st", rows);
	return v;
}

static int
status_of(json_t *v, struct rpt_summary *s, struct stage_times st[STAGE_ROWS])
{
	json_t		*f = json_object_get(v, "s"), *row;
	json_int_t	 state = json_integer_value(json_array_get(f, 0));
	const char	*ls = json_string_value(json_object_get(v, "ls"));
	const char	*fr = json_string_value(json_object_get(v, "fr"));
	const char	*ee = json_string_value(json_object_get(v, "ee"));
	size_t		 i;

	if (json_array_size(f) != 11 || state < 0 || state >= RPT_ST__N || ls == NULL ||
	    fr == NULL || ee == NULL || !json_is_array(json_object_get(v, "st")))
		return -KB_EINVAL;
	for (i = 0; i < 11; i++)
		if (!json_is_number(json_array_get(f, i)))
			return -KB_EINVAL;
	memset(s, 0, sizeof(*s));
	s->state = (enum rpt_state)state;
	s->turn = (int)json_integer_value(json_array_get(f, 1));
	s->turns_done = (int)json_integer_value(json_array_get(f, 2));
	s->best_speedup = json_number_value(json_array_get(f, 3));
	s->best_turn = (int)json_integer_value(json_array_get(f, 4));
	s->depth = (int)json_integer_value(json_array_get(f, 5));
	s->llm_requests = (long)json_integer_value(json_array_get(f, 6));
	s->prompt_tokens = (long)json_integer_value(json_array_get(f, 7));
	s->completion_tokens = (long)json_integer_value(json_array_get(f, 8));
	s->reasoning_tokens = (long)json_integer_value(json_array_get(f, 9));
	s->cost_usd = json_number_value(json_array_get(f, 10));
	snprintf(s->last_status, sizeof(s->last_status), "%s", ls);
	snprintf(s->fail_reason, sizeof(s->fail_reason), "%s", fr);
	snprintf(s->env_error, sizeof(s->env_error), "%s", ee);
	json_array_foreach(json_object_get(v, "st"), i, row) {
		json_int_t	k = json_integer_value(json_array_get(row, 0));
		size_t		n = json_array_size(row);

		if (k < 0 || k >= STAGE_ROWS || n < 2 || n % 2 != 0)
			return -KB_EINVAL;
		st[k].steps += (int)json_integer_value(json_array_get(row, 1));
		for (size_t j = 2; j + 1 < n; j += 2)
			if (stage_times_push(&st[k], json_integer_value(json_array_get(row, j)),
					     json_integer_value(json_array_get(row, j + 1))) < 0)
				return -KB_ENOMEM;
	}
	return 0;
}

/* Task i's summary (and stage times), from the status cache where its entry still holds,
 * else from its log (and then kept in the cache). */
static int
summarize_cached(struct summary_share *sh, int i)
{
	struct stage_times	 st[STAGE_ROWS];
	json_t			*ident = NULL, *v = rpt_statcache_get(sh->cache, i, &ident);
	int			 rc;

	memset(st, 0, sizeof(st));
	if (v == NULL || (rc = status_of(v, &sh->sums[i], st)) < 0) {
		stage_times_free(st);	/* a partial read discarded */
		rc = rpt_summarize_with(sh->run->dir, sh->run->tasks[i].id, NULL, &sh->sums[i],
					stage_times_add, st);
		if (rc == 0) {
			json_t *entry = status_entry(&sh->sums[i], st);

			rpt_statcache_put(sh->cache, i, ident, entry);
			json_decref(entry);
		}
	}
	json_decref(v);
	json_decref(ident);
	return stage_times_merge(sh->st, st) < 0 ? -KB_ENOMEM : rc;
}

static void *
summarize_share(void *arg)
{
	struct summary_share *sh = arg;

	for (int i = sh->first; i < sh->run->ntasks; i += sh->step)
		if ((sh->cache != NULL ? summarize_cached(sh, i) :
		     rpt_summarize_with(sh->run->dir, sh->run->tasks[i].id, sh->accept,
					&sh->sums[i], sh->timed ? stage_times_add : NULL,
					sh->st)) == -KB_ENOMEM)
			sh->rc = -KB_ENOMEM;
	return NULL;
}

/* accept: as rpt_summarize_accepting's; st: the stage times gathered too, or NULL. */
static struct rpt_summary *
summarize_all(const struct rpt_run *run, const char *const *accept,
	      struct stage_times st[STAGE_ROWS])
{
	struct summary_share	 sh[SUMMARY_THREADS];
	pthread_t		 th[SUMMARY_THREADS];
	struct rpt_summary	*sums = calloc((size_t)run->ntasks + 1, sizeof(*sums));
	long			 cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int			 n = cpus < 1 ? 1 : cpus > SUMMARY_THREADS ? SUMMARY_THREADS : (int)cpus;
	bool			 failed = sums == NULL;
	bool			 started[SUMMARY_THREADS] = { false };
	struct rpt_statcache	*cache = NULL;

	if (run->ntasks < 256)
		n = 1;
	json_object_seed(0);	/* before threads make objects: jansson's one shared seed */
	/* status's summaries (all of them, every turn as judged: no --accept) are kept. */
	if (st != NULL && accept == NULL && !failed)
		cache = rpt_statcache_open(run);
	for (int t = 0; t < n && !failed; t++) {
		sh[t] = (struct summary_share){ .run = run, .accept = accept, .sums = sums,
						.first = t, .step = n, .timed = st != NULL,
						.cache = cache };
		started[t] = t > 0 && pthread_create(&th[t], NULL, summarize_share, &sh[t]) == 0;
	}
	/* Shares no thread took (and the first) are this thread's. */
	for (int t = 0; t < n && !failed; t++)
		if (!started[t])
			summarize_share(&sh[t]);
	for (int t = 1; t < n && !failed; t++)
		if (started[t])
			pthread_join(th[t], NULL);
	/* The shares' stage times, put together. */
	for (int t = 0; t < n && !failed; t++) {
		if (st != NULL)
			failed = stage_times_merge(st, sh[t].st) < 0;
		failed = failed || sh[t].rc < 0;
	}
	rpt_statcache_close(cache, !failed);
	if (failed) {
		free(sums);
		return NULL;
	}
	return sums;
}

void
rpt_status_cache_fill(const struct rpt_run *run)
{
	struct stage_times	st[STAGE_ROWS];

	memset(st, 0, sizeof(st));
	free(summarize_all(run, NULL, st));
	stage_times_free(st);
}

static const char *
run_state(json_t *info, bool alive)
{
	const char	*recorded = json_string_value(json_object_get(info, "status"));

	if (alive)
		return "running";
	if (recorded == NULL)
		return "unknown";
	return strcmp(recorded, "running") == 0 ? "interrupted" : recorded;
}

/* A task's or a run's model use: requests, tokens and, when the run is priced, cost. */
static json_t *
llm_use_json(long reqs, long ptok, long ctok, long rtok, double cost, bool priced)
{
	json_t	*o = json_pack("{s:I, s:I, s:I, s:I}", "requests", (json_int_t)reqs,
			       "prompt_tokens", (json_int_t)ptok, "completion_tokens",
			       (json_int_t)ctok, "reasoning_tokens", (json_int_t)rtok);

	if (o != NULL && priced)
		json_object_set_new(o, "cost_usd", json_real(cost));
	return o;
}

/* "  [P+C tokens, $X]" (no cost unless priced) for a task's line of status. */
static void
llm_use_text(json_t *use, bool priced, char *out, size_t outlen)
{
	long long	p = json_integer_value(json_object_get(use, "prompt_tokens"));
	long long	c = json_integer_value(json_object_get(use, "completion_tokens"));

	if (priced)
		snprintf(out, outlen, "  [%lld+%lld tokens, $%.4f]", p, c,
			 json_number_value(json_object_get(use, "cost_usd")));
	else
		snprintf(out, outlen, "  [%lld+%lld tokens]", p, c);
}

/* "  [4 nodes, depth 3, best node 2]" for a task's line of status in a search. */
static void
search_text(json_t *search, char *out, size_t outlen)
{
	json_t	*best = json_object_get(search, "best_node");

	snprintf(out, outlen, "  [%lld node%s, depth %lld", (long long)json_integer_value(
		 json_object_get(search, "nodes")), json_integer_value(json_object_get(search,
		 "nodes")) == 1 ? "" : "s", (long long)json_integer_value(json_object_get(search,
		 "depth")));
	if (json_is_integer(best))
		snprintf(out + strlen(out), outlen - strlen(out), ", best node %lld",
			 (long long)json_integer_value(best));
	snprintf(out + strlen(out), outlen - strlen(out), "]");
}

static bool
run_priced(const struct kb_config *c)
{
	return c->llm.price_input_per_mtok > 0 || c->llm.price_output_per_mtok > 0;
}

int
rpt_cmd_status(const struct rpt_run *run, const struct rpt_supervision *sup, bool as_json)
{
	json_t		*info, *pool, *tasks = json_array(), *out, *quarantined, *stages;
	const char	*paused, *llm_paused, *env_paused, *state;
	char		 resume[PATH_MAX + 32] = "";
	int		 counts[RPT_ST__N] = { 0 }, unfinished;
	struct stage_times st[STAGE_ROWS];
	struct rpt_summary *sums;
	long		 reqs = 0, ptok = 0, ctok = 0, rtok = 0;
	bool		 search;
	double		 cost = 0;
	bool		 priced, alive = sup->alive;

	info = load_json_in(run->dir, RD_RUN_JSON);
	pool = load_json_in(run->dir, RD_POOL_JSON);
	state = run_state(info, alive);
	quarantined = quarantined_gpus(info, pool);
	/* run.json has it from the moment the supervisor saw it; pool.json as a fallback. */
	llm_paused = json_string_value(json_object_get(info, "llm_paused"));
	if (llm_paused == NULL)
		llm_paused = json_string_value(json_object_get(json_object_get(pool, "llm_paused"),
							       "reason"));
	env_paused = json_string_value(json_object_get(info, "env_error"));
	paused = env_paused != NULL ? env_paused : llm_paused != NULL ? llm_paused :
		 json_string_value(json_object_get(json_object_get(pool, "paused"), "reason"));
	priced = run_priced(run->cfg);
	search = run->cfg->refinement.strategy != NULL &&
		 strcmp(run->cfg->refinement.strategy, "chain") != 0;
	memset(st, 0, sizeof(st));
	if ((sums = summarize_all(run, NULL, st)) == NULL) {
		fprintf(stderr, "kforge: out of memory\n");
		return 1;
	}
	for (int i = 0; i < run->ntasks; i++) {
		const struct rpt_summary s = sums[i];

		counts[s.state]++;
		reqs += s.llm_requests;
		ptok += s.prompt_tokens;
		ctok += s.completion_tokens;
		rtok += s.reasoning_tokens;
		cost += s.cost_usd;
		json_array_append_new(tasks, json_pack("{s:s, s:s, s:i, s:i, s:o, s:s, s:s, s:s, "
			"s:o, s:{s:i, s:i, s:o}}", "id", run->tasks[i].id, "state",
			rpt_state_name(s.state), "turn", s.turn, "turns",
			(int)run->cfg->refinement.turns, "best_speedup",
			s.best_speedup >= 0 ? json_real(s.best_speedup) : json_null(),
			"last_status", s.last_status, "fail_reason", s.fail_reason,
			"env_error", s.env_error, "llm", llm_use_json(s.llm_requests,
			s.prompt_tokens, s.completion_tokens, s.reasoning_tokens, s.cost_usd,
			priced), "search", "nodes", s.turns_done, "depth", s.depth, "best_node",
			s.best_speedup >= 0 ? json_integer(s.best_turn) : json_null()));
	}
	unfinished = run->ntasks - counts[RPT_ST_DONE] - counts[RPT_ST_FAILED];
	/* Whatever stopped it, a run with work left and no supervisor continues on resume. */
	if (!alive && unfinished > 0)
		snprintf(resume, sizeof(resume), "kforge resume %s", run->dir);
	stages = stage_times_json(st);
	if (as_json) {
		out = json_pack("{s:o, s:O?, s:O, s:{s:s?, s:s, s:b, s:i, s:s?, s:s?}, "
				"s:{s:I, s:I, s:I}, s:O}",
				"tasks", tasks, "resources", pool, "quarantined", quarantined, "run",
				"status", json_string_value(json_object_get(info, "status")),
				"state", state, "supervisor_alive", alive, "supervisor_pid",
				sup->pid > 0 ? (int)sup->pid : 0, "stop_reason",
				json_string_value(json_object_get(info, "stop_reason")),
				"resume_command", resume[0] ? resume : NULL, "llm",
				"requests", (json_int_t)reqs, "prompt_tokens", (json_int_t)ptok,
				"completion_tokens", (json_int_t)ctok, "stages", stages);
		if (out == NULL) {
			fprintf(stderr, "kforge: out of memory\n");
			return 1;
		}
		if (!json_is_object(json_object_get(out, "resources")))
			json_object_set_new(out, "resources", json_object());
		json_object_set_new(json_object_get(out, "run"), "llm_paused",
				    llm_paused != NULL ? json_string(llm_paused) : json_null());
		json_object_set_new(json_object_get(out, "run"), "env_error",
				    env_paused != NULL ? json_string(env_paused) : json_null());
		json_object_set_new(json_object_get(out, "llm"), "reasoning_tokens",
				    json_integer(rtok));
		if (priced)
			json_object_set_new(json_object_get(out, "llm"), "cost_usd",
					    json_real(cost));
		if (sup->shards != NULL)
			json_object_set(out, "shards", sup->shards);
		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(out);
	} else {
		size_t	 i;
		json_t	*t;

		printf("run %s: %s, %d tasks: %d done, %d failed, %d in progress\n",
		       run->cfg->name, state, run->ntasks, counts[RPT_ST_DONE],
		       counts[RPT_ST_FAILED], unfinished);
		printf("%-32s %-11s %7s %8s  %s\n", "TASK", "STATE", search ? "NODES" : "TURN",
		       "BEST", "LAST");
		json_array_foreach(tasks, i, t) {
			char		 best[32] = "-";
			json_t		*b = json_object_get(t, "best_speedup");
			const char	*env = json_string_value(json_object_get(t, "env_error"));
			json_t		*use = json_object_get(t, "llm");
			char		 spent[96] = "", tree[80] = "";

			if (json_is_number(b))
				snprintf(best, sizeof(best), "%.2fx", json_number_value(b));
			if (json_integer_value(json_object_get(use, "requests")) > 0)
				llm_use_text(use, priced, spent, sizeof(spent));
			if (search)
				search_text(json_object_get(t, "search"), tree, sizeof(tree));
			printf("%-32s %-11s %3lld/%-3lld %8s  %s%s%s%s%s%s%s%s\n",
			       json_string_value(json_object_get(t, "id")),
			       json_string_value(json_object_get(t, "state")),
			       (long long)json_integer_value(json_object_get(t, "turn")),
			       (long long)run->cfg->refinement.turns, best,
			       *env ? "paused on env_error — " : "", env, *env ? "; " : "",
			       json_string_value(json_object_get(t, "last_status")),
			       *json_string_value(json_object_get(t, "fail_reason")) ? " — " : "",
			       json_string_value(json_object_get(t, "fail_reason")), tree, spent);
		}
		if (json_is_object(pool)) {
			printf("resources%s:\n", alive ? "" : " (at the last update)");
			print_resource(strcmp(run->cfg->eval.device, "cpu") == 0 ? "cpu-exec" : "gpu",
				       json_object_get(pool, "exec"));
			print_resource("compile", json_object_get(pool, "compile"));
			print_resource("llm", json_object_get(pool, "llm"));
			print_runner_starts(json_object_get(pool, "runner_start"));
		}
		print_stage_times(stages);
		if (sup->shards != NULL)
			print_shards(sup->shards);
		json_array_foreach(quarantined, i, t)
			printf("GPU %lld quarantined: %s\n",
			       (long long)json_integer_value(json_object_get(t, "device")),
			       json_string_value(json_object_get(t, "reason")) ?: "no reason given");
		if (alive && paused != NULL)	/* once stopped, stop_reason says it */
			printf("%s\n", paused);
		if (!alive && json_is_string(json_object_get(info, "stop_reason")))
			printf("stopped: %s\n",
			       json_string_value(json_object_get(info, "stop_reason")));
		printf("llm: %ld requests, %ld prompt tokens, %ld completion tokens", reqs, ptok,
		       ctok);
		if (rtok > 0)
			printf(" (%ld reasoning)", rtok);
		if (priced)
			printf(", $%.4f", cost);
		printf("\n");
		if (strcmp(state, "interrupted") == 0)
			printf("interrupted: run.json says running, but no supervisor is alive (it "
			       "was killed, or its machine restarted)\n");
		if (resume[0])
			printf("not running, %d task%s unfinished: '%s' continues %s\n", unfinished,
			       unfinished == 1 ? "" : "s", resume, unfinished == 1 ? "it" : "them");
		json_decref(tasks);
	}
	free(sums);
	json_decref(stages);
	json_decref(quarantined);
	json_decref(info);
	json_decref(pool);
	return 0;
}

/* ----------------------------------------------------------------- tail */

/*
 * tail prints the transitions of the trajectories and, in time order among them, what
 * the supervisor log says happened to the run from outside the tasks: each start of a
 * supervisor after the first (a resume) and each worker it restarted. Retries inside a
 * task are its "transient" transitions, shown with their failed attempts. With -f, what
 * arrives in one polling round is sorted the same way before it is printed.
 */

struct tail_file {
	char	 path[PATH_MAX];
	off_t	 off;
};

/* supervisor.log as far as it has been read, and how many supervisors started in it. */
struct sup_log {
	char	 path[PATH_MAX];
	off_t	 off;
	int	 starts;
	const char *const *tasks;	/* restarts of these tasks only (ntasks of them) */
	int	 ntasks;
};

static bool
sup_log_follows(const struct sup_log *sl, const char *task)
{
	for (int i = 0; i < sl->ntasks; i++)
		if (strcmp(sl->tasks[i], task) == 0)
			return true;
	return false;
}

struct tail_line {
	char	 ts[32];
	long	 order;		/* arrival, to keep equal timestamps in their order */
	char	*text;
};

struct tail_lines {
	struct tail_line	*v;
	size_t			 n, cap;
	long			 next;
};

static void
lines_add(struct tail_lines *l, const char *ts, char *text)
{
	if (l->n == l->cap) {
		size_t			 cap = l->cap > 0 ? 2 * l->cap : 256;
		struct tail_line	*v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL) {
			free(text);
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	snprintf(l->v[l->n].ts, sizeof(l->v[l->n].ts), "%s", ts);
	l->v[l->n].order = l->next++;
	l->v[l->n].text = text;
	l->n++;
}

static int
by_time(const void *a, const void *b)
{
	const struct tail_line	*x = a, *y = b;
	int			 c = strcmp(x->ts, y->ts);

	return c != 0 ? c : (x->order > y->order) - (x->order < y->order);
}

static void
lines_flush(struct tail_lines *l)
{
	qsort(l->v, l->n, sizeof(*l->v), by_time);
	for (size_t i = 0; i < l->n; i++) {
		fputs(l->v[i].text, stdout);
		free(l->v[i].text);
	}
	l->n = 0;
	fflush(stdout);
}

/* "01:02:03.456" of an ISO-8601 timestamp (the whole of anything else). */
static const char *
clock_of(const char *ts)
{
	const char	*t = strchr(ts, 'T');

	return t != NULL ? t + 1 : ts;
}

static char *
format_record(const struct kb_tlog_rec *r)
{
	json_t		*d = r->data, *v;
	char		 extra[1024] = "";
	size_t		 n = 0;

#define ADD(...) (n += (size_t)snprintf(extra + n, n < sizeof(extra) ? sizeof(extra) - n : 0, __VA_ARGS__))
	if (strcmp(r->event, "transient") == 0) {
		ADD("  retry");
		if (json_is_integer(v = json_object_get(d, "attempts")) && json_integer_value(v) > 0)
			ADD(" after %lld failed attempt%s", (long long)json_integer_value(v),
			    json_integer_value(v) == 1 ? "" : "s");
	}
	/* A node of a search that grew from another than the turn before (docs/search.md);
	 * a second parent (evolve) beside it. */
	if (strcmp(r->from, rpt_state_name(RPT_ST_GENERATE)) == 0 &&
	    strcmp(r->event, "tool_call") != 0) {
		int p = rd_node_named(d, RD_NODE_PARENT, r->turn, r->turn - 1);
		int p2 = rd_node_named(d, RD_NODE_PARENT2, r->turn, 0);

		if (p != r->turn - 1 || p2 > 0)
			ADD("  from node %d", p);
		if (p2 > 0)	/* evolve's second parent, beside the first */
			ADD(" and %d", p2);
	}
	if (strcmp(r->event, "tool_call") == 0)
		ADD("  tool call %lld under node %lld: %s",
		    (long long)json_integer_value(json_object_get(d, RD_NODE_CALL)),
		    (long long)json_integer_value(json_object_get(d, RD_NODE_PARENT)),
		    json_string_value(json_object_get(d, "verdict")) ?: "?");
	if (json_is_string(v = json_object_get(d, "status")))
		ADD("  %s", json_string_value(v));
	if (json_is_object(v = json_object_get(d, "agent"))) {
		ADD("  agent %s, %lld tool call%s",
		    json_string_value(json_object_get(v, "end")) ?: "ended",
		    (long long)json_integer_value(json_object_get(v, "tool_calls")),
		    json_integer_value(json_object_get(v, "tool_calls")) == 1 ? "" : "s");
		if (json_is_string(json_object_get(json_object_get(d, "agent_stdout"), "path")))
			ADD(", transcript %s", json_string_value(json_object_get(
			    json_object_get(d, "agent_stdout"), "path")));
	}
	if (json_is_number(v = json_object_get(d, "runtime_ms")))
		ADD("  %.3f ms", json_number_value(v));
	if (json_is_number(v = json_object_get(d, "speedup")))
		ADD("  speedup %.2fx", json_number_value(v));
	if (json_is_number(v = json_object_get(d, "best_speedup")))
		ADD("  best %.2fx", json_number_value(v));
	if (json_is_true(json_object_get(d, "cache_hit")))
		ADD("  (cached build)");
	if (json_is_true(json_object_get(d, "reused_response")))
		ADD("  (saved reply reused)");
	if (json_is_integer(v = json_object_get(d, "completion_tokens")) && json_integer_value(v))
		ADD("  %lld tokens", (long long)json_integer_value(v));
	if (json_is_number(v = json_object_get(d, "cost_usd")))
		ADD("  $%.4f", json_number_value(v));
	if (json_is_string(v = json_object_get(d, "reason")))
		ADD("  %s", json_string_value(v));
	if (json_is_string(v = json_object_get(d, "error")))
		ADD("  %s", json_string_value(v));
#undef ADD
	return kb_asprintf("%.12s %-24s turn %-2d %-10s --%s--> %s%s\n", clock_of(r->ts), r->task,
			   r->turn, r->from, r->event, r->to, extra);
}

/* Adds the whole records that appeared after f->off. A line without its newline is a
 * write in progress: it is left for the next round. */
static void
tail_new(struct tail_file *f, struct tail_lines *out, bool *terminal)
{
	FILE	*fp = fopen(f->path, "r");
	char	*line = NULL;
	size_t	 cap = 0;
	ssize_t	 n;

	if (fp == NULL)
		return;
	fseeko(fp, f->off, SEEK_SET);
	while ((n = getline(&line, &cap, fp)) > 0 && line[n - 1] == '\n') {
		struct kb_tlog_rec	rec;
		enum rpt_state		to;

		f->off += n;
		if (kb_tlog_parse_line(line, (size_t)n - 1, &rec) < 0)
			continue;
		lines_add(out, rec.ts, format_record(&rec));
		*terminal = rpt_state_parse(rec.to, &to) == 0 && rpt_state_finished(to);
		kb_tlog_rec_clear(&rec);
	}
	free(line);
	fclose(fp);
}

/*
 * Whether msg is a line written with the printf format fmt, whose conversions are %s
 * (any text, at least one character) and %d (digits). The literal pieces are found
 * leftmost, the last at the very end, so it is linear in the line. *first, when not
 * NULL, receives the text of the first conversion.
 */
static bool
log_line_is(const char *msg, const char *fmt, char *first, size_t firstlen)
{
	const char	*m = msg, *end = msg + strlen(msg), *conv = NULL;
	bool		 captured = false;

	for (;;) {
		const char	*pct = strchr(fmt, '%');
		size_t		 lit = pct != NULL ? (size_t)(pct - fmt) : strlen(fmt);
		const char	*at;

		/* fmt[0..lit) must come next: right here after no conversion, else somewhere
		 * after at least one character, or at the very end for the last piece. */
		if (conv == NULL)
			at = strncmp(m, fmt, lit) == 0 ? m : NULL;
		else if (pct == NULL)
			at = (size_t)(end - m) >= lit + 1 && strncmp(end - lit, fmt, lit) == 0 ?
			     end - lit : NULL;
		else if (m >= end)
			at = NULL;
		else
			at = lit == 0 ? m + 1 : memmem(m + 1, (size_t)(end - m - 1), fmt, lit);
		if (at == NULL)
			return false;
		if (conv != NULL) {
			if (conv[1] == 'd')
				for (const char *c = m; c < at; c++)
					if (*c < '0' || *c > '9')
						return false;
			if (!captured && first != NULL)
				snprintf(first, firstlen, "%.*s", (int)(at - m), m);
			captured = true;
		}
		m = at + lit;
		if (pct == NULL)
			return m == end;
		if (pct[1] != 's' && pct[1] != 'd')
			return false;
		conv = pct;
		fmt = pct + 2;
	}
}

/* One line of supervisor.log: "TS [sup] [warning: ]MESSAGE". A resume (a supervisor
 * start after the first) or a restart of a followed task becomes a tail line. */
static void
sup_log_line(struct sup_log *sl, char *line, struct tail_lines *out)
{
	static const char	 sup_tag[] = " [sup] ", warn_tag[] = "warning: ";
	char			*sp = strchr(line, ' '), *msg, task[256];
	char			 ts[32];

	if (sp == NULL || (size_t)(sp - line) >= sizeof(ts) || strncmp(sp, sup_tag,
	    sizeof(sup_tag) - 1) != 0)
		return;
	snprintf(ts, sizeof(ts), "%.*s", (int)(sp - line), line);
	msg = sp + sizeof(sup_tag) - 1;
	if (strncmp(msg, warn_tag, sizeof(warn_tag) - 1) == 0)
		msg += sizeof(warn_tag) - 1;
	if (log_line_is(msg, RD_LOG_SUP_START, NULL, 0)) {
		if (++sl->starts > 1)
			lines_add(out, ts, kb_asprintf("%.12s %-24s resumed: supervisor start %d of "
				"this run\n", clock_of(ts), "(run)", sl->starts));
	} else if (log_line_is(msg, RD_LOG_WORKER_RESTART, task, sizeof(task)) &&
		   sup_log_follows(sl, task)) {
		lines_add(out, ts, kb_asprintf("%.12s %-24s restart: %s\n", clock_of(ts), task,
					       msg + strlen(task) + 2));
	}
}

/* Adds what supervisor.log gained since the last call: whole lines only; one longer
 * than any the log writes is skipped. */
static void
sup_log_new(struct sup_log *sl, struct tail_lines *out)
{
	FILE	*fp = fopen(sl->path, "r");
	char	 line[8192];

	if (fp == NULL)
		return;
	fseeko(fp, sl->off, SEEK_SET);
	while (fgets(line, sizeof(line), fp) != NULL) {
		size_t	n = strlen(line);

		if (line[n - 1] != '\n') {
			int c;

			if (feof(fp))
				break;	/* a line being written: next round */
			while ((c = fgetc(fp)) != EOF && c != '\n')
				n++;
			if (c == EOF)
				break;
			sl->off += (off_t)n + 1;
			continue;
		}
		sl->off += (off_t)n;
		line[n - 1] = '\0';
		sup_log_line(sl, line, out);
	}
	fclose(fp);
}

int
rpt_cmd_tail(const struct rpt_run *run, const char *task, bool follow,
	     pid_t (*supervisor_pid)(const char *dir))
{
	struct tail_file	*files;
	struct tail_lines	 lines = { 0 };
	struct sup_log		 sl = { 0 };
	const char		**ids;
	bool			*done;
	int			 nfiles = 0;

	files = calloc((size_t)run->ntasks + 1, sizeof(*files));
	done = calloc((size_t)run->ntasks + 1, sizeof(*done));
	ids = calloc((size_t)run->ntasks + 1, sizeof(*ids));
	for (int i = 0; i < run->ntasks; i++) {
		if (task != NULL && strcmp(task, run->tasks[i].id) != 0 &&
		    strcmp(task, run->tasks[i].problem_key) != 0)
			continue;
		ids[nfiles] = run->tasks[i].id;
		(void)rd_task_file(files[nfiles].path, sizeof(files[nfiles].path), run->dir,
				   run->tasks[i].id, RD_TRAJECTORY);
		nfiles++;
	}
	if (nfiles == 0) {
		fprintf(stderr, "kforge: no task '%s' in %s (see 'kforge status %s')\n", task,
			run->dir, run->dir);
		free(files);
		free(done);
		free(ids);
		return 1;
	}
	sl.tasks = ids;
	sl.ntasks = nfiles;
	(void)rd_run_file(sl.path, sizeof(sl.path), run->dir, RD_SUPERVISOR_LOG);
	for (;;) {
		bool all = true;

		for (int i = 0; i < nfiles; i++) {
			tail_new(&files[i], &lines, &done[i]);
			all = all && done[i];
		}
		sup_log_new(&sl, &lines);
		lines_flush(&lines);
		if (!follow)
			break;
		/* Follow until every followed task is finished, or the run is not going
		 * anywhere (no supervisor) and nothing more arrives. */
		if (all || supervisor_pid(run->dir) == 0) {
			if (!all)
				fprintf(stderr, "kforge: no supervisor is running on %s\n", run->dir);
			break;
		}
		struct timespec ts = { 0, 200 * 1000000L };
		nanosleep(&ts, NULL);
	}
	free(lines.v);
	free(files);
	free(done);
	free(ids);
	return 0;
}

/* --------------------------------------------------------------- report */

bool
rpt_summary_fast(const struct rpt_summary *s, double p)
{
	return s->any_correct && (p <= 0 || s->best_speedup > p);
}

bool
rpt_summary_fast_by(const struct rpt_summary *s, int turn, double p)
{
	/* A task that ended before the turn keeps its best from its last turn. */
	double best = s->nbest == 0 || turn < 1 ? -1 :
		      s->best_at_turn[turn <= s->nbest ? turn - 1 : s->nbest - 1];

	/* best is -1 before a correct turn, 0 for one correct at an unknown speed */
	return p <= 0 ? best >= 0 : best > p;
}

struct tally {
	int	 tasks, compiled, correct;
	int	 fast[RPT_N_FAST_P];
	/* Tasks whose best interval's lower end (certain) or upper end (possible) is
	 * above p: the range fast_p spans within the timing's 95% intervals. */
	int	 fast_lo[RPT_N_FAST_P], fast_hi[RPT_N_FAST_P];
	int	*fast1_at;	/* per turn */
	int	 nturns;
	double	 log_speedup_sum;
	json_t	*statuses;
};

static void
tally_init(struct tally *t, int nturns)
{
	memset(t, 0, sizeof(*t));
	t->nturns = nturns;
	t->fast1_at = calloc((size_t)nturns + 1, sizeof(int));
	t->statuses = json_object();
}

static void
tally_add(struct tally *t, const struct rpt_summary *s)
{
	const char	*st = s->state == RPT_ST_FAILED ? "failed" :
			  s->last_status[0] ? s->last_status : "not_started";
	json_t		*c = json_object_get(t->statuses, st);

	t->tasks++;
	t->compiled += s->any_compiled;
	if (s->any_correct) {
		t->correct++;
		if (s->best_speedup > 0)
			t->log_speedup_sum += log(s->best_speedup);
	}
	for (size_t i = 0; i < RPT_N_FAST_P; i++) {
		t->fast[i] += rpt_summary_fast(s, rpt_fast_p_levels[i]);
		t->fast_lo[i] += s->any_correct && s->best_lo > rpt_fast_p_levels[i];
		t->fast_hi[i] += s->any_correct && s->best_hi > rpt_fast_p_levels[i];
	}
	for (int k = 0; k < t->nturns; k++)
		t->fast1_at[k] += rpt_summary_fast_by(s, k + 1, 1.0);
	json_object_set_new(t->statuses, st, json_integer(json_integer_value(c) + 1));
}

static json_t *
tally_json(const struct tally *t)
{
	double	 n = t->tasks > 0 ? t->tasks : 1;
	json_t	*fp = json_object(), *fpi = json_object(), *at = json_array(), *out;
	char	 key[16];

	for (size_t i = 0; i < RPT_N_FAST_P; i++) {
		snprintf(key, sizeof(key), "%g", rpt_fast_p_levels[i]);
		json_object_set_new(fp, key, json_real(t->fast[i] / n));
		json_object_set_new(fpi, key, json_pack("[f, f]", t->fast_lo[i] / n,
							t->fast_hi[i] / n));
	}
	for (int k = 0; k < t->nturns; k++)
		json_array_append_new(at, json_real(t->fast1_at[k] / n));
	out = json_pack("{s:i, s:f, s:f, s:o, s:o, s:{s:i, s:i}, s:o, s:O}", "tasks", t->tasks,
			"compiled", t->compiled / n, "fast_0", t->correct / n, "fast_p", fp,
			"fast_1_at_turn", at, "counts", "compiled", t->compiled, "correct",
			t->correct, "geomean_speedup_correct",
			t->correct > 0 ? json_real(exp(t->log_speedup_sum / t->correct)) :
					 json_null(),
			"last_status", t->statuses);
	json_object_set_new(out, "fast_p_interval", fpi);
	return out;
}

static void
tally_print(const char *label, const struct tally *t)
{
	double	n = t->tasks > 0 ? t->tasks : 1;

	printf("%-8s %5d  %8.1f%%  %8.1f%%", label, t->tasks, 100.0 * t->compiled / n,
	       100.0 * t->correct / n);
	for (size_t i = 0; i < RPT_N_FAST_P; i++)
		printf("  %7.1f%%", 100.0 * t->fast[i] / n);
	printf("\n");
}

static void
tally_clear(struct tally *t)
{
	free(t->fast1_at);
	json_decref(t->statuses);
}

/* A task's turns judged rejected or suspect, for the report: [{id, turn, verdict,
 * reasons}]. */
static void
add_flagged(json_t *list, const char *id, const struct rpt_summary *s)
{
	for (int k = 0; k < s->nflagged; k++) {
		const struct rpt_flagged	*f = &s->flagged[k];
		json_t				*reasons = json_array();
		char				 rules[sizeof(f->reasons)], *save = NULL;

		snprintf(rules, sizeof(rules), "%s", f->reasons);
		for (char *r = strtok_r(rules, ",", &save); r != NULL; r = strtok_r(NULL, ",", &save))
			json_array_append_new(reasons, json_string(r));
		json_array_append_new(list, json_pack("{s:s, s:i, s:s, s:o}", "id", id, "turn",
						      f->turn, "verdict", f->verdict, "reasons",
						      reasons));
	}
}

/* One task's fast flags, kept for the estimators over a problem's samples: fast[0] is
 * fast_0, fast[1 + i] fast_p at rpt_fast_p_levels[i]; fast1_by[k] fast_1 by turn k+1. */
struct task_fast {
	const char	*key;
	bool		 fast[1 + RPT_N_FAST_P];
	bool		*fast1_by;
};

/* What report counts over a run's tasks: the one tally that the text, --json, --csv, the
 * plots and the HTML page all read (through rpt_report_json). */
struct report {
	struct tally	 all, lv[KB_MAX_LEVELS + 1];
	struct task_fast *tf;		/* the tasks counted, in task order */
	int		 ntf;
	bool		 seen[KB_MAX_LEVELS + 1];
	int		 nturns, env_errors;	/* env_errors: never in the rates */
	int		 rejected, suspect, accepted;
	json_t		*failed;	/* [{id, reason}]: a FAILED task says why */
	json_t		*flagged;
	json_t		*degenerate;	/* problem keys, once each */
	/* Model use, summed over the tasks; llm_tasks: [{id, requests, tokens, cost}]. */
	long		 llm_requests, prompt_tokens, completion_tokens, reasoning_tokens;
	double		 cost_usd;
	bool		 priced;
	json_t		*llm_tasks;
	json_t		*by_spend;	/* by_spend_json's */
};

_Static_assert(RPT_SPEND_LEVELS == 1 + RPT_N_FAST_P, "fast_0 and every fast_p by spend");

static const char *const spend_measures[] = {
#define SPEND_NAME_(m) #m,
	RD_SPEND_MEASURES(SPEND_NAME_)
#undef SPEND_NAME_
};
#define NSPEND_MEASURES (sizeof(spend_measures) / sizeof(spend_measures[0]))

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* fast_p against budget spent (docs/search.md): for each measure of rd_spend, the most a
 * task spent ("max") and for fast_0 and each fast_p the steps [spent, share] where the
 * share of the n tasks whose best was fast_p within that spend rises: a task counts from
 * the spend at which its search first found such a kernel. */
static json_t *
by_spend_json(const struct rpt_summary *const *sums, int n)
{
	json_t	*out = json_object();
	double	*v = calloc((size_t)n + 1, sizeof(double));
	char	 key[16];

	for (size_t m = 0; v != NULL && m < NSPEND_MEASURES; m++) {
		json_t	*one = json_object();
		double	 most = 0;

		for (int i = 0; i < n; i++)
			if (rd_spend_get(&sums[i]->spent, spend_measures[m]) > most)
				most = rd_spend_get(&sums[i]->spent, spend_measures[m]);
		json_object_set_new(one, "max", json_real(most));
		for (int k = 0; k < RPT_SPEND_LEVELS; k++) {
			json_t	*steps = json_array();
			int	 c = 0;

			for (int i = 0; i < n; i++)
				if (sums[i]->fast_reached[k])
					v[c++] = rd_spend_get(&sums[i]->fast_spent[k], spend_measures[m]);
			qsort(v, (size_t)c, sizeof(double), cmp_double);
			for (int j = 0; j < c; j++)
				if (j + 1 == c || v[j + 1] != v[j])
					json_array_append_new(steps, json_pack("[f, f]", v[j],
							      (double)(j + 1) / n));
			if (k == 0)
				snprintf(key, sizeof(key), "fast_0");
			else
				snprintf(key, sizeof(key), "fast_%g", rpt_fast_p_levels[k - 1]);
			json_object_set_new(one, key, steps);
		}
		json_object_set_new(out, spend_measures[m], one);
	}
	free(v);
	return out;
}

/* The share of the tasks whose best was fast_1 within spend x of measure, from
 * by_spend_json's steps. */
static double
fast1_within(const json_t *by_spend, const char *measure, double x)
{
	json_t	*steps = json_object_get(json_object_get(by_spend, measure), "fast_1"), *st;
	double	 share = 0;
	size_t	 i;

	json_array_foreach(steps, i, st)
		if (json_number_value(json_array_get(st, 0)) <= x + 1e-9)
			share = json_number_value(json_array_get(st, 1));
	return share;
}

/* sums: every task's summary, in task order; keep: a JSON object whose keys are the
 * problem keys to count, NULL: every task. */
static void
report_build(const struct rpt_run *run, const struct rpt_summary *sums, const json_t *keep,
	     struct report *r)
{
	const struct rpt_summary	**counted;
	int				  ncounted = 0;

	memset(r, 0, sizeof(*r));
	r->tf = calloc((size_t)run->ntasks + 1, sizeof(*r->tf));
	r->failed = json_array();
	r->flagged = json_array();
	r->degenerate = json_array();
	r->llm_tasks = json_array();
	r->priced = run_priced(run->cfg);
	r->nturns = (int)run->cfg->refinement.turns;
	tally_init(&r->all, r->nturns);
	for (int l = 0; l <= KB_MAX_LEVELS; l++)
		tally_init(&r->lv[l], r->nturns);
	counted = calloc((size_t)run->ntasks + 1, sizeof(*counted));
	for (int i = 0; i < run->ntasks; i++) {
		const struct rpt_summary	*s = &sums[i];
		int				 l = run->tasks[i].level;

		if (l < 0 || l > KB_MAX_LEVELS)
			l = 0;
		if (keep != NULL && json_object_get(keep, run->tasks[i].problem_key) == NULL)
			continue;
		if (counted != NULL)
			counted[ncounted++] = s;
		if (r->tf != NULL) {
			struct task_fast *f = &r->tf[r->ntf++];

			f->key = run->tasks[i].problem_key;
			f->fast[0] = rpt_summary_fast(s, 0);
			for (size_t p = 0; p < RPT_N_FAST_P; p++)
				f->fast[1 + p] = rpt_summary_fast(s, rpt_fast_p_levels[p]);
			f->fast1_by = calloc((size_t)r->nturns + 1, sizeof(bool));
			for (int k = 0; f->fast1_by != NULL && k < r->nturns; k++)
				f->fast1_by[k] = rpt_summary_fast_by(s, k + 1, 1.0);
		}
		r->env_errors += s->env_errors;
		r->rejected += s->rejected;
		r->suspect += s->suspect;
		r->accepted += s->accepted;
		add_flagged(r->flagged, run->tasks[i].id, s);
		if (s->degenerate_reference && !kb_json_has_string(r->degenerate,
								      run->tasks[i].problem_key))
			json_array_append_new(r->degenerate, json_string(run->tasks[i].problem_key));
		tally_add(&r->all, s);
		tally_add(&r->lv[l], s);
		r->seen[l] = true;
		r->llm_requests += s->llm_requests;
		r->prompt_tokens += s->prompt_tokens;
		r->completion_tokens += s->completion_tokens;
		r->reasoning_tokens += s->reasoning_tokens;
		r->cost_usd += s->cost_usd;
		{
			json_t *use = llm_use_json(s->llm_requests, s->prompt_tokens,
						   s->completion_tokens, s->reasoning_tokens,
						   s->cost_usd, r->priced);

			json_object_set_new(use, "id", json_string(run->tasks[i].id));
			json_array_append_new(r->llm_tasks, use);
		}
		if (s->state == RPT_ST_FAILED)
			json_array_append_new(r->failed, json_pack("{s:s, s:s}", "id",
				run->tasks[i].id, "reason",
				s->fail_reason[0] ? s->fail_reason : "no reason recorded"));
	}
	r->by_spend = by_spend_json(counted, ncounted);
	free(counted);
}

static void
report_clear(struct report *r)
{
	for (int i = 0; i < r->ntf; i++)
		free(r->tf[i].fast1_by);
	free(r->tf);
	json_decref(r->failed);
	json_decref(r->flagged);
	json_decref(r->degenerate);
	json_decref(r->llm_tasks);
	json_decref(r->by_spend);
	tally_clear(&r->all);
	for (int l = 0; l <= KB_MAX_LEVELS; l++)
		tally_clear(&r->lv[l]);
}

/* The fewest samples any counted problem has (its tasks are consecutive). */
static int
min_samples(const struct report *r, int *nproblems)
{
	int	least = 0, np = 0;

	for (int i = 0, j; i < r->ntf; i = j) {
		for (j = i; j < r->ntf && strcmp(r->tf[j].key, r->tf[i].key) == 0; j++)
			;
		if (np++ == 0 || j - i < least)
			least = j - i;
	}
	*nproblems = np;
	return least;
}

/* The mean over problems of fast@k, the flag being tf's fast[which] (which >= 0) or
 * fast1_by[turn - 1]. */
static double
mean_at_k(const struct report *r, int which, int turn, int k)
{
	double	sum = 0;
	int	np = 0;

	for (int i = 0, j; i < r->ntf; i = j) {
		int	c = 0;

		for (j = i; j < r->ntf && strcmp(r->tf[j].key, r->tf[i].key) == 0; j++)
			c += which >= 0 ? r->tf[j].fast[which] :
			     r->tf[j].fast1_by != NULL && r->tf[j].fast1_by[turn - 1];
		sum += rpt_fast_at_k(j - i, c, k);
		np++;
	}
	return np > 0 ? sum / np : 0;
}

/* With several samples a problem: fast_p@k and fast_1@k by turn, k = 1..the fewest
 * samples of a problem, by the unbiased estimator; NULL with one sample. */
static json_t *
at_k_json(const struct report *r)
{
	int	 np, kmax = min_samples(r, &np);
	json_t	*out, *fp, *by_turn = json_array(), *ks = json_array();
	char	 key[16];

	if (kmax < 2) {
		json_decref(by_turn);
		json_decref(ks);
		return NULL;
	}
	fp = json_object();
	for (int k = 1; k <= kmax; k++)
		json_array_append_new(ks, json_integer(k));
	for (size_t w = 0; w <= RPT_N_FAST_P; w++) {
		json_t *v = json_array();

		for (int k = 1; k <= kmax; k++)
			json_array_append_new(v, json_real(mean_at_k(r, (int)w, 0, k)));
		if (w == 0)
			snprintf(key, sizeof(key), "0");
		else
			snprintf(key, sizeof(key), "%g", rpt_fast_p_levels[w - 1]);
		json_object_set_new(fp, key, v);
	}
	for (int t = 1; t <= r->nturns; t++) {
		json_t *v = json_array();

		for (int k = 1; k <= kmax; k++)
			json_array_append_new(v, json_real(mean_at_k(r, -1, t, k)));
		json_array_append_new(by_turn, v);
	}
	out = json_pack("{s:i, s:i, s:o, s:o, s:o}", "problems", np, "samples", kmax, "k", ks,
			"fast_p_at_k", fp, "fast_1_at_k_by_turn", by_turn);
	return out;
}

static void
at_k_print(const struct report *r)
{
	json_t		*ak = at_k_json(r), *fp, *v;
	const char	*key;
	int		 kmax;

	if (ak == NULL)
		return;
	kmax = (int)json_integer_value(json_object_get(ak, "samples"));
	fp = json_object_get(ak, "fast_p_at_k");
	printf("\nfast_p@k over %d problems, k of %d samples each (unbiased estimator):\n",
	       (int)json_integer_value(json_object_get(ak, "problems")), kmax);
	printf("  %3s", "k");
	json_object_foreach(fp, key, v) {
		char	label[32];

		snprintf(label, sizeof(label), "fast_%s", key);
		printf("  %9s", label);
	}
	printf("\n");
	for (int k = 0; k < kmax; k++) {
		printf("  %3d", k + 1);
		json_object_foreach(fp, key, v)
			printf("  %8.1f%%", 100 * json_real_value(json_array_get(v, (size_t)k)));
		printf("\n");
	}
	printf("\nfast_1@k by turn (best kernel up to turn N):\n");
	for (int k = 0; k < kmax; k++) {
		printf("  k=%d:", k + 1);
		for (int t = 0; t < r->nturns; t++)
			printf(" %d:%.1f%%", t + 1, 100 * json_real_value(json_array_get(
				json_array_get(json_object_get(ak, "fast_1_at_k_by_turn"),
					       (size_t)t), (size_t)k)));
		printf("\n");
	}
	json_decref(ak);
}

/* How the run's speeds were measured (eval.timing_preset, as the caller describes it) and
 * whether its GPUs' clocks were held (run.json's "clocks", which the supervisor records). */
static json_t *
timing_json(const struct rpt_run *run)
{
	char	 path[PATH_MAX];
	json_t	*info = NULL, *out;

	if (rd_run_file(path, sizeof(path), run->dir, RD_RUN_JSON) == 0)
		info = json_load_file(path, 0, NULL);
	out = json_pack("{s:s, s:s, s:O?}", "preset", run->timing_preset, "method",
			run->timing_method, "clocks", json_object_get(info, "clocks"));
	json_decref(info);
	return out;
}

static void
timing_print(const struct rpt_run *run)
{
	json_t		*t = timing_json(run), *c = json_object_get(t, "clocks");

	printf("timing: %s\n", json_string_value(json_object_get(t, "method")));
	if (json_is_true(json_object_get(c, "locked")))
		printf("clocks: locked at each GPU's maximum SM clock (gpus.lock_clocks)\n\n");
	else if (json_is_object(c))
		printf("clocks: not locked (%s)\n\n", json_string_value(json_object_get(c, "why")));
	else
		printf("\n");
	json_decref(t);
}

/* What the report says of a red-team run (redteam.enabled): {min_speedup, index (relative
 * path, or null before a harvest), correct, suspect (counts kept, or null)}, from the
 * redteam/index.json its harvest wrote; NULL for any other run. */
static json_t *
redteam_json(const struct rpt_run *run)
{
	char	 path[PATH_MAX];
	json_t	*index = NULL, *out;

	if (!run->cfg->redteam.enabled)
		return NULL;
	if (rd_redteam_file(path, sizeof(path), run->dir, RD_REDTEAM_INDEX_JSON) == 0)
		index = json_load_file(path, 0, NULL);
	out = json_pack("{s:f, s:o, s:o, s:o}", "min_speedup", run->cfg->redteam.min_speedup,
			"index", index != NULL && rd_redteam_file(path, sizeof(path), NULL,
				RD_REDTEAM_INDEX_JSON) == 0 ? json_string(path) : json_null(),
			"correct", json_is_array(json_object_get(index, RD_VERDICT_CORRECT)) ?
				json_integer((json_int_t)json_array_size(
					json_object_get(index, RD_VERDICT_CORRECT))) : json_null(),
			"suspect", json_is_array(json_object_get(index, RD_VERDICT_SUSPECT)) ?
				json_integer((json_int_t)json_array_size(
					json_object_get(index, RD_VERDICT_SUSPECT))) : json_null());
	json_decref(index);
	return out;
}

/* The run's search and budgets, as its config set them (docs/search.md). */
static json_t *
search_json(const struct kb_config *c)
{
	return json_pack("{s:s?, s:i, s:i, s:i, s:f, s:{s:I, s:I, s:f, s:f}}", "strategy",
			 c->refinement.strategy, "turns", (int)c->refinement.turns, "width",
			 (int)c->refinement.width, "keep", (int)c->refinement.keep, "explore",
			 c->refinement.explore, "budget", "requests",
			 (json_int_t)c->refinement.budget.requests, "tokens",
			 (json_int_t)c->refinement.budget.tokens, "cost_usd",
			 c->refinement.budget.cost_usd, "gpu_s", c->refinement.budget.gpu_s);
}

static json_t *
report_json(const struct rpt_run *run, const struct report *r, const char *const *accept)
{
	json_t	*levels = json_object(), *acc = json_array(), *out;
	char	 key[8];

	for (int l = 0; l <= KB_MAX_LEVELS; l++) {
		if (!r->seen[l])
			continue;
		snprintf(key, sizeof(key), "%d", l);
		json_object_set_new(levels, key, tally_json(&r->lv[l]));
	}
	for (int a = 0; accept != NULL && accept[a] != NULL; a++)
		json_array_append_new(acc, json_string(accept[a]));
	out = json_pack("{s:s, s:s, s:i, s:o, s:o, s:O, s:i, s:{s:i, s:i, s:i, s:o, s:O}}",
			"run", run->cfg->name, "device", run->cfg->eval.device, "turns",
			r->nturns, "overall", tally_json(&r->all), "levels", levels, "failed",
			r->failed, "env_errors", r->env_errors, "verdicts", "rejected",
			r->rejected, "suspect", r->suspect, "accepted", r->accepted, "accept", acc,
			"flagged", r->flagged);
	if (out != NULL) {
		json_t *ak = at_k_json(r), *rt = redteam_json(run);

		json_object_set(out, "degenerate_problems", r->degenerate);
		json_object_set(out, "by_spend", r->by_spend);
		json_object_set_new(out, "search", search_json(run->cfg));
		json_object_set_new(out, "timing", timing_json(run));
		if (ak != NULL)
			json_object_set_new(out, "at_k", ak);
		if (rt != NULL)
			json_object_set_new(out, "redteam", rt);
	}
	if (out != NULL) {
		json_t *llm = llm_use_json(r->llm_requests, r->prompt_tokens, r->completion_tokens,
					   r->reasoning_tokens, r->cost_usd, r->priced);

		json_object_set(llm, "tasks", r->llm_tasks);
		json_object_set_new(out, "llm", llm);
	}
	return out;
}

/* Model use: the run's sums, then each task that sent a request. */
static void
report_llm_print(const struct report *r)
{
	size_t	 i;
	json_t	*t;
	char	 spent[96];

	printf("\nllm: %ld requests, %ld prompt tokens, %ld completion tokens", r->llm_requests,
	       r->prompt_tokens, r->completion_tokens);
	if (r->reasoning_tokens > 0)
		printf(" (%ld reasoning)", r->reasoning_tokens);
	if (r->priced)
		printf(", $%.4f", r->cost_usd);
	printf("\n");
	json_array_foreach(r->llm_tasks, i, t) {
		if (json_integer_value(json_object_get(t, "requests")) <= 0)
			continue;
		llm_use_text(t, r->priced, spent, sizeof(spent));
		printf("  %s%s\n", json_string_value(json_object_get(t, "id")), spent);
	}
}

json_t *
rpt_report_json(const struct rpt_run *run, const struct rpt_summary *sums,
		 const char *const *accept)
{
	return rpt_report_json_of(run, sums, accept, NULL);
}

json_t *
rpt_report_json_of(const struct rpt_run *run, const struct rpt_summary *sums,
		    const char *const *accept, const json_t *keep)
{
	struct report	 r;
	json_t		*out;

	report_build(run, sums, keep, &r);
	out = report_json(run, &r, accept);
	report_clear(&r);
	return out;
}

/* A red-team run's numbers are the evaluator's blind spots, not kernels: said first, so
 * that nobody takes its fast_p for a result. */
static void
redteam_mark(const struct rpt_run *run)
{
	json_t	*rt = redteam_json(run);
	json_t	*c = json_object_get(rt, "correct"), *sp = json_object_get(rt, "suspect");

	if (rt == NULL)
		return;
	printf("RED-TEAM RUN: the model was asked for kernels that the evaluator judges correct "
	       "and faster\nwithout being so; fast_p below counts what got through the "
	       "evaluator, not kernels.\n");
	if (json_is_integer(c) && json_is_integer(sp))
		printf("Kept for review at %.2fx or more: %lld judged correct, %lld judged suspect "
		       "(%s).\n\n", run->cfg->redteam.min_speedup, (long long)json_integer_value(c),
		       (long long)json_integer_value(sp),
		       json_string_value(json_object_get(rt, "index")));
	else
		printf("Nothing kept yet: the run keeps its findings when it finishes ('kforge "
		       "redteam --harvest %s'\nkeeps them while no supervisor runs).\n\n", run->dir);
	json_decref(rt);
}

/* fast_1 against the LLM requests spent, a column per request (at most 64). */
static void
by_spend_print(const struct rpt_run *run, const struct report *r)
{
	double	most = json_number_value(json_object_get(json_object_get(r->by_spend,
							"requests"), "max"));

	printf("\nfast_1 by LLM requests spent (search %s; best kernel within N requests):\n ",
	       run->cfg->refinement.strategy != NULL ? run->cfg->refinement.strategy : "chain");
	for (int k = 1; k <= (int)most && k <= 64; k++)
		printf(" %d:%.1f%%", k, 100.0 * fast1_within(r->by_spend, "requests", k));
	printf("\n");
}

int
rpt_cmd_report(const struct rpt_run *run, bool as_json, const char *const *accept)
{
	struct report		 r;
	struct tally		*all = &r.all;
	struct rpt_summary	*sums;
	int			 nturns;

	if ((sums = summarize_all(run, accept, NULL)) == NULL) {
		fprintf(stderr, "kforge: out of memory\n");
		return 1;
	}
	report_build(run, sums, NULL, &r);
	nturns = r.nturns;
	if (as_json) {
		json_t *out = report_json(run, &r, accept);

		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(out);
	} else {
		printf("kforge report: %s (%d tasks, %d turns, device %s)\n\n", run->cfg->name,
		       run->ntasks, nturns, run->cfg->eval.device);
		redteam_mark(run);
		timing_print(run);
		printf("%-8s %5s  %9s  %9s  %8s  %8s  %8s  %8s\n", "level", "tasks", "compiled",
		       "fast_0", "fast_0.5", "fast_1", "fast_1.5", "fast_2");
		for (int l = 0; l <= KB_MAX_LEVELS; l++) {
			char label[16];

			if (!r.seen[l])
				continue;
			snprintf(label, sizeof(label), "L%d", l);
			tally_print(label, &r.lv[l]);
		}
		tally_print("overall", all);
		printf("\nfast_p within the timing's 95%% intervals (overall; certain-possible):\n ");
		for (size_t i = 0; i < RPT_N_FAST_P; i++)
			printf(" fast_%g %.1f-%.1f%%", rpt_fast_p_levels[i],
			       100.0 * all->fast_lo[i] / (all->tasks > 0 ? all->tasks : 1),
			       100.0 * all->fast_hi[i] / (all->tasks > 0 ? all->tasks : 1));
		printf("\n\nfast_1 by turn (best kernel up to turn N):\n ");
		for (int k = 0; k < nturns; k++)
			printf(" %d:%.1f%%", k + 1,
			       100.0 * all->fast1_at[k] / (all->tasks > 0 ? all->tasks : 1));
		printf("\n");
		by_spend_print(run, &r);
		at_k_print(&r);
		printf("\nlast status of each task:");
		{
			const char	*key;
			json_t		*v;

			json_object_foreach(all->statuses, key, v)
				printf("  %s %lld", key, (long long)json_integer_value(v));
		}
		printf("\n");
		report_llm_print(&r);
		if (r.env_errors > 0)
			printf("\nenvironment errors: %d step(s) failed for a reason no candidate "
			       "can cause; not scored, each redone on resume\n", r.env_errors);
		if (r.rejected + r.suspect > 0) {
			size_t	 i, j;
			json_t	*f, *rs;

			printf("\nturns that do not count: %d rejected (a rule broken), %d suspect "
			       "(flagged for review)", r.rejected, r.suspect);
			if (r.accepted > 0)
				printf("; %d suspect turn(s) counted by --accept", r.accepted);
			printf("\n");
			json_array_foreach(r.flagged, i, f) {
				printf("  %s turn %d: %s:", json_string_value(json_object_get(f, "id")),
				       (int)json_integer_value(json_object_get(f, "turn")),
				       json_string_value(json_object_get(f, "verdict")));
				json_array_foreach(json_object_get(f, "reasons"), j, rs)
					printf("%s%s", j > 0 ? ", " : " ", json_string_value(rs));
				printf("\n");
			}
		}
		if (json_array_size(r.degenerate) > 0) {
			size_t	 i;
			json_t	*p;

			printf("\nproblems whose reference output is near zero or constant on their "
			       "inputs (a constant kernel could pass; checked again on scaled "
			       "inputs):");
			json_array_foreach(r.degenerate, i, p)
				printf(" %s", json_string_value(p));
			printf("\n");
		}
		if (json_array_size(r.failed) > 0) {
			size_t	 i;
			json_t	*f;

			printf("\nfailed tasks:\n");
			json_array_foreach(r.failed, i, f)
				printf("  %s: %s\n", json_string_value(json_object_get(f, "id")),
				       json_string_value(json_object_get(f, "reason")));
		}
	}
	report_clear(&r);
	free(sums);
	return 0;
}
