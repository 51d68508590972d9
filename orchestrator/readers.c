/* readers.c: the runs that report/'s commands read (status, tail, report, view, subset),
 * opened here — the frozen config and the task list, which only the config loader reads —
 * with what report/ cannot learn from the files: how the speeds are timed (feedback/'s
 * timing presets), whether a supervisor holds the run (its lock, run.c) and, for a Slurm
 * run, its shards (squeue, slurm.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback.h"
#include "orchestrator/orch_int.h"
#include "base/banned.h"

/* A run opened for report/: the run, and the view of it report/ reads. */
struct opened {
	struct orch_run	run;
	char		timing_method[1024];
	struct rpt_run	view;
};

static int
open_run(struct opened *o, const char *dir)
{
	char	err[1024];

	if (orch_run_open(&o->run, dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return -1;
	}
	fb_timing_describe(&o->run.cfg, o->timing_method, sizeof(o->timing_method));
	o->view = (struct rpt_run){
		.dir = o->run.dir,
		.named = dir,
		.cfg = &o->run.cfg,
		.tasks = o->run.tasks,
		.ntasks = o->run.ntasks,
		.timing_preset = fb_timing_preset(&o->run.cfg)->name,
		.timing_method = o->timing_method,
	};
	return 0;
}

/* The runs of dirs, opened in order, and their views side by side (report/ takes an
 * array of them); NULL when one cannot be opened (said) or on OOM. */
struct opened_runs {
	struct opened	*runs;
	struct rpt_run	*views;
	int		 n;
};

static void
close_runs(struct opened_runs *r)
{
	for (int i = 0; i < r->n; i++)
		orch_run_clear(&r->runs[i].run);
	free(r->runs);
	free(r->views);
}

static int
open_runs(struct opened_runs *r, const char *const *dirs, int ndirs)
{
	r->n = 0;
	r->runs = calloc((size_t)ndirs + 1, sizeof(*r->runs));
	r->views = calloc((size_t)ndirs + 1, sizeof(*r->views));
	if (r->runs == NULL || r->views == NULL) {
		fprintf(stderr, "kforge: out of memory\n");
		close_runs(r);
		return -1;
	}
	for (; r->n < ndirs; r->n++) {
		if (open_run(&r->runs[r->n], dirs[r->n]) < 0) {
			close_runs(r);
			return -1;
		}
		r->views[r->n] = r->runs[r->n].view;
	}
	return 0;
}

int
orch_cmd_status(const char *dir, bool json)
{
	struct opened		o;
	struct rpt_supervision	sup = { 0 };
	int			rc;

	if (open_run(&o, dir) < 0)
		return 1;
	sup.pid = orch_run_supervisor_pid(o.run.dir);
	sup.alive = sup.pid != 0;	/* -1: locked, its pid file unreadable */
	if (orch_slurm_engine(&o.run.cfg)) {
		char	 err[512];
		json_t	*q = orch_slurm_squeue(o.run.dir, err, sizeof(err));

		/* A Slurm run lives while Slurm has one of its shards, followed or not. */
		if (q == NULL)
			fprintf(stderr, "kforge: %s\n", err);
		sup.alive = sup.alive || json_array_size(q) > 0;
		sup.shards = orch_slurm_shards(o.run.dir, q);
		json_decref(q);
	}
	rc = rpt_cmd_status(&o.view, &sup, json);
	json_decref(sup.shards);
	orch_run_clear(&o.run);
	return rc;
}

void
orch_status_cache_fill(const struct orch_run *run)
{
	const struct rpt_run	view = { .dir = run->dir, .named = run->dir, .cfg = &run->cfg,
					 .tasks = run->tasks, .ntasks = run->ntasks };

	rpt_status_cache_fill(&view);
}

int
orch_cmd_tail(const char *dir, const char *task, bool follow)
{
	struct opened	o;
	int		rc;

	if (open_run(&o, dir) < 0)
		return 1;
	rc = rpt_cmd_tail(&o.view, task, follow, orch_run_supervisor_pid);
	orch_run_clear(&o.run);
	return rc;
}

int
orch_cmd_report(const char *dir, bool json, const char *const *accept)
{
	struct opened	o;
	int		rc;

	if (open_run(&o, dir) < 0)
		return 1;
	rc = rpt_cmd_report(&o.view, json, accept);
	orch_run_clear(&o.run);
	return rc;
}

int
orch_cmd_report_files(const char *const *dirs, int ndirs, const char *const *accept,
		      const struct rpt_files *files)
{
	struct opened_runs	r;
	int			rc;

	if (open_runs(&r, dirs, ndirs) < 0)
		return 1;
	rc = rpt_cmd_report_files(r.views, r.n, accept, files);
	close_runs(&r);
	return rc;
}

int
orch_cmd_compare(const char *const *dirs, int ndirs, bool json, const char *const *accept)
{
	struct opened_runs	r;
	int			rc;

	if (open_runs(&r, dirs, ndirs) < 0)
		return 1;
	rc = rpt_cmd_compare(r.views, r.n, json, accept);
	close_runs(&r);
	return rc;
}

int
orch_cmd_subset(const char *const *dirs, int ndirs, int size, const char *out, uint64_t seed)
{
	struct opened_runs	r;
	int			rc;

	if (open_runs(&r, dirs, ndirs) < 0)
		return 1;
	rc = rpt_cmd_subset(r.views, r.n, size, out, seed);
	close_runs(&r);
	return rc;
}

int
orch_cmd_viewer(const char *dir, const char *addr, int port)
{
	struct opened	o;
	int		rc;

	if (open_run(&o, dir) < 0)
		return 1;
	rc = rpt_cmd_viewer(&o.view, addr, port);
	orch_run_clear(&o.run);
	return rc;
}
