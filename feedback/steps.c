/*
 * steps.c: the three steps every candidate takes (feedback.h, "the steps"), in a run's
 * turn, in `kforge eval` and, for the baseline, in `kforge baseline` alike: precompile
 * (the static checks, then the build through the build cache), execute (the reference
 * alone through the baseline cache, the execution with the reference timed beside the
 * candidate, the verdict) and the GPU health probes after a runner's fault. The caller
 * gives the resources through hooks (the compile slot, the execution lease, the pool's
 * health rule, fault injection) and maps what a step found to its own ends (a run's
 * events, eval's report); nothing here knows of a pool or a state.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "rundir/rundir.h"
#include "base/banned.h"

/* An exclusive flock on path (created), or -1: the caller goes on unlocked. */
static int
lock_file(const char *path)
{
	int	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	if (fd != -1)
		while (flock(fd, LOCK_EX) == -1 && errno == EINTR)
			;
	return fd;
}

bool
fb_runner_hit_full_disk(const struct fb_outcome *o, const char *run_dir)
{
	char		*text, cache[PATH_MAX];
	const char	*full;
	bool		 said;

	if (o->status == FB_ST_OK)
		return false;
	said = o->log != NULL && strstr(o->log, "No space left on device") != NULL;
	if (!said && (text = json_dumps(o->result, JSON_COMPACT)) != NULL) {
		said = strstr(text, "No space left on device") != NULL;
		free(text);
	}
	/* The runner writes where runners work, which may be a staging directory, and
	 * builds in the cache that runs share. */
	full = run_dir != NULL && kb_fs_nearly_full(run_dir) ? run_dir :
	       fb_stage_dir() != NULL && kb_fs_nearly_full(fb_stage_dir()) ? fb_stage_dir() :
	       fb_cache_dir("builds", NULL, cache, sizeof(cache)) == 0 &&
	       kb_fs_nearly_full(cache) ? cache : NULL;
	if (!said || full == NULL)
		return false;
	log_warnx("the runner failed for want of disk space under %s: no space left on device",
		  full);
	return true;
}

int
fb_eval_build(const struct kb_config *cfg, const struct fb_request *req, const char *run_dir,
	      const struct fb_slot *slot, struct fb_build *out)
{
	char			 cache[PATH_MAX];
	int			 rc;

	memset(out, 0, sizeof(*out));
	out->ran.runtime_ms = out->ran.ref_runtime_ms = out->ran.speedup = -1;
	snprintf(cache, sizeof(cache), "%s/compile.json", req->build_dir);
	if ((out->result = json_load_file(cache, 0, NULL)) != NULL) {
		out->cache_hit = true;
		fb_warm_built(cfg, req);
		return 0;
	}
	/* Where warm runners are on (a worker has one started already; kforge eval starts
	 * its first here), the precompile's runner imports torch while the slot is awaited. */
	fb_warm_start(cfg);
	if (slot != NULL && slot->take != NULL && (rc = slot->take(slot->arg)) < 0)
		return rc;
	/* Another task may have built the same code while this one waited. */
	if ((out->result = json_load_file(cache, 0, NULL)) != NULL) {
		out->cache_hit = true;
		fb_warm_built(cfg, req);
		rc = 0;
		goto out_give;
	}
	if (slot != NULL && slot->ready != NULL)
		slot->ready(slot->arg);
	rc = fb_run(cfg, req, &out->ran);
	if (rc == 0 && fb_runner_hit_full_disk(&out->ran, run_dir))
		rc = -KB_ENOSPC;
	/* Deterministic outcomes are cached for every task that writes the same code,
	 * before the slot is given back: a task waiting for it with the same code then
	 * finds the build instead of compiling it again. */
	if (rc == 0 && fb_build_cacheable(out->ran.status) &&
	    kb_write_atomic_json(cache, out->ran.result) == -KB_ENOSPC)
		rc = -KB_ENOSPC;
	if (rc == 0)
		out->result = json_incref(out->ran.result);
out_give:
	if (slot != NULL && slot->give != NULL)
		slot->give(slot->arg);
	return rc;
}

void
fb_build_clear(struct fb_build *b)
{
	json_decref(b->result);
	fb_outcome_clear(&b->ran);
	memset(b, 0, sizeof(*b));
}

int
fb_eval_baseline(const struct kb_config *cfg, const struct fb_request *req,
		 const char *problem_key, const char *device_name, const char *run_dir,
		 struct fb_baseline *out)
{
	struct fb_request	 breq = *req;
	struct fb_outcome	 o = { 0 };
	char			 dir[PATH_MAX] = "", path[PATH_MAX] = "", lock[PATH_MAX];
	char			 shared[PATH_MAX] = "", shared_lock[PATH_MAX];
	json_t			*b = NULL;
	int			 fd = -1, sfd = -1, rc = 0;

	memset(out, 0, sizeof(*out));
	if (run_dir != NULL) {
		if ((rc = rd_baseline_dir(dir, sizeof(dir), run_dir, device_name)) < 0 ||
		    (rc = rd_baseline_file(path, sizeof(path), run_dir, device_name, problem_key,
					   RD_BASELINE_JSON)) < 0 ||
		    (rc = rd_baseline_file(lock, sizeof(lock), run_dir, device_name, problem_key,
					   RD_BASELINE_LOCK)) < 0 ||
		    (rc = kb_mkdir_p(dir, 0755)) < 0)
			return rc;
		if ((fd = lock_file(lock)) == -1)
			return -kb_errno_to_err(errno);
		b = json_load_file(path, 0, NULL);
	}
	/* The run's own record first (a resumed run compares against what it began with),
	 * then the cache shared by runs, then a measurement that fills both. */
	if (b == NULL && fb_baseline_path(cfg, req->problem_path, device_name, shared,
					  sizeof(shared)) == 0) {
		snprintf(shared_lock, sizeof(shared_lock), "%.*s.lock",
			 (int)(strlen(shared) - 5), shared);
		sfd = lock_file(shared_lock);
		if ((b = json_load_file(shared, 0, NULL)) != NULL) {
			json_object_set_new(b, "cache", json_string(shared));
			json_object_set_new(b, "problem", json_string(problem_key));
			if (path[0] != '\0')
				rc = kb_write_atomic_json(path, b);
		}
	}
	if (b != NULL) {
		out->cache_hit = true;
	} else if (rc == 0) {
		breq.mode = FB_BASELINE;
		breq.candidate_path = NULL;
		breq.build_dir = NULL;
		breq.time_reference = false;
		if ((rc = fb_run(cfg, &breq, &o)) == 0) {
			out->wall_ms = o.wall_ms;
			b = fb_baseline_record(problem_key, device_name, &o);
			if (o.status == FB_ST_OK) {
				if (path[0] != '\0')
					rc = kb_write_atomic_json(path, b);
				if (rc == 0 && shared[0] != '\0')
					out->shared_rc = kb_write_atomic_json(shared, b);
			}
		}
		fb_outcome_clear(&o);
	}
	if (sfd != -1)
		close(sfd);
	if (fd != -1)
		close(fd);
	if (rc < 0) {
		json_decref(b);
		return rc;
	}
	out->record = b;
	return 0;
}

bool
fb_baseline_ok(const struct fb_baseline *b)
{
	const char	*st = json_string_value(json_object_get(b->record, "status"));

	return st != NULL && strcmp(st, fb_status_name(FB_ST_OK)) == 0;
}

char *
fb_reference_failure(const json_t *record)
{
	return kb_asprintf("the reference problem itself fails on this device (%s: %s)",
			   json_string_value(json_object_get(record, "status")) ?: "no status",
			   json_string_value(json_object_get(record, "message")) ?: "no message");
}

void
fb_baseline_clear(struct fb_baseline *b)
{
	json_decref(b->record);
	memset(b, 0, sizeof(*b));
}


/* ------------------------------------------------------------------ hooks */

/* A runner's start, told to the caller with the step's mode (fb_step_hooks). */
struct started {
	const struct fb_step_hooks	*hooks;
	enum fb_mode			 mode;
};

static void
started_runner(pid_t pid, void *arg)
{
	struct started	*s = arg;

	s->hooks->runner_started(pid, s->mode, false, s->hooks->arg);
}

static void
started_judge(pid_t pid, void *arg)
{
	struct started	*s = arg;

	s->hooks->runner_started(pid, s->mode, true, s->hooks->arg);
}

/* r run as mode, its runners told to the hooks (s must outlive r's use). */
static void
step_request(struct fb_request *r, enum fb_mode mode, const struct fb_step_hooks *hooks,
	     struct started *s)
{
	r->mode = mode;
	if (hooks == NULL || hooks->runner_started == NULL)
		return;
	s->hooks = hooks;
	s->mode = mode;
	r->on_start = started_runner;
	r->on_judge_start = started_judge;
	r->on_start_arg = s;
}

static void
step_fault(const struct fb_step_hooks *hooks, const char *point)
{
	if (hooks != NULL && hooks->fault != NULL)
		hooks->fault(point, hooks->arg);
}

/* ------------------------------------------------------------- GPU health */

bool
fb_runner_faulted(enum fb_status st)
{
	return st == FB_ST_CUDA_ERROR || st == FB_ST_CRASHED || st == FB_ST_TIMEOUT;
}

int
fb_probe_health(const struct kb_config *cfg, const struct fb_request *req,
		enum fb_status fault, const struct fb_step_hooks *hooks, struct fb_health *out)
{
	struct fb_request	 r;
	struct fb_outcome	 o = { 0 };
	struct started		 s;
	enum fb_status		 st;
	const char		*msg;
	int			 rc;

	memset(out, 0, sizeof(*out));
	out->next = FB_HEALTH_REPROBE;
	while (out->next == FB_HEALTH_REPROBE) {
		r = *req;
		r.candidate_path = NULL;
		r.build_dir = NULL;
		r.time_reference = false;
		r.reference_clean = NULL;
		r.profile_reference = false;
		r.kprof_lib = r.kprof_out = r.kprof_mode = r.kprof_targets = NULL;
		r.cold = false;
		r.timeout_s = FB_PROBE_TIMEOUT_S;
		step_request(&r, FB_PROBE, hooks, &s);
		if ((rc = fb_run(cfg, &r, &o)) == -KB_ESTOPPED) {
			fb_outcome_clear(&o);
			return rc;
		}
		/* A probe that could not even start proves nothing good about the GPU. */
		st = rc < 0 ? FB_ST_CRASHED : o.status;
		if (st != FB_ST_OK) {
			msg = rc < 0 ? kb_strerror(rc) : json_string_value(json_object_get(
				json_object_get(o.result, "details"), "message"));
			snprintf(out->last, sizeof(out->last), "%s: %s", fb_status_name(st),
				 msg ? msg : "?");
			log_warnx("GPU %d failed health probe %d of %d after a %s: %s",
				  req->device_index, out->failures + 1, hooks->health_failures,
				  fb_status_name(fault), out->last);
		}
		out->next = hooks->health_decide(out->failures, st == FB_ST_OK, hooks->arg);
		out->failures += st != FB_ST_OK;
		fb_outcome_clear(&o);
	}
	if (out->next != FB_HEALTH_QUARANTINE && out->failures > 0)
		log_info("GPU %d passed its second health probe; it stays in the pool",
			 req->device_index);
	return 0;
}

/* After a runner's fault on a GPU, with the lease held: the probes, and what they found
 * told to the caller while it still holds the GPU. Nothing where no one probes (eval),
 * on the CPU, or for a status that cannot be the GPU's. */
static int
after_fault(const struct kb_config *cfg, const struct fb_request *req, enum fb_status st,
	    const struct fb_step_hooks *hooks, struct fb_health *h, bool *probed)
{
	int	rc;

	if (hooks == NULL || hooks->health_decide == NULL || req->device_index < 0 ||
	    !fb_runner_faulted(st))
		return 0;
	if ((rc = fb_probe_health(cfg, req, st, hooks, h)) < 0)
		return rc;
	*probed = true;
	if (hooks->health_settled != NULL)
		hooks->health_settled(h, st, hooks->arg);
	return 0;
}

/* ------------------------------------------------------------------ steps */

/* The precompile's warm runner, started where none waits: the hooks are told while it
 * starts (a worker's first start imports torch, seconds in no slot) and out gets how
 * long it took (-1: none was started). */
static void
warm_start_timed(const struct kb_config *cfg, const struct fb_step_hooks *hooks,
		 struct fb_precompiled *out)
{
	bool	tell = hooks != NULL && hooks->runner_starting != NULL;
	int64_t	asked_ms;

	out->runner_start_ms = -1;
	if (!cfg->runner.warm || fb_warm_pid() != 0) {
		fb_warm_start(cfg);
		return;
	}
	asked_ms = kb_mono_ms();
	if (tell)
		hooks->runner_starting(true, hooks->arg);
	fb_warm_start(cfg);
	if (tell)
		hooks->runner_starting(false, hooks->arg);
	if (fb_warm_pid() != 0)
		out->runner_start_ms = kb_mono_ms() - asked_ms;
}

int
fb_step_precompile(const struct kb_config *cfg, const struct fb_request *req,
		   const char *run_dir, const struct fb_step_hooks *hooks,
		   struct fb_precompiled *out, char *err, size_t errlen)
{
	struct fb_request	 r = *req;
	struct started		 s;
	int			 rc;

	memset(out, 0, sizeof(*out));
	out->runner_start_ms = -1;
	/* The static checks, a gate before a compile slot is spent: a rejected kernel is
	 * not built. */
	if ((rc = fb_static_check(cfg, req->problem_path, req->candidate_path, &out->findings,
				  err, errlen)) < 0) {
		out->checks_failed = true;
		return rc;
	}
	if (hooks != NULL && hooks->checked != NULL &&
	    (rc = hooks->checked(out->findings, hooks->arg)) < 0)
		return rc;
	if (fb_findings_reject(out->findings)) {
		out->rejected = true;
		out->result = fb_rejection(out->findings);	/* judged there */
		return 0;
	}
	if ((req->build_dir != NULL && (rc = fb_stage_mkdir(req->build_dir)) < 0) ||
	    (req->work_dir != NULL && (rc = fb_stage_mkdir(req->work_dir)) < 0))
		return rc;
	/* The next runner imports torch (or is forked) while the build cache is looked up
	 * and a compile slot awaited; not before the static checks, whose rejections would
	 * leave it unused (20 of the CPU adversarial suite's 53 tasks, one import each). */
	warm_start_timed(cfg, hooks, out);
	step_request(&r, FB_PRECOMPILE, hooks, &s);
	r.device_index = -1;
	r.time_reference = false;
	r.reference_clean = NULL;
	rc = fb_eval_build(cfg, &r, run_dir, hooks != NULL ? &hooks->compile : NULL,
			   &out->build);
	if (rc == 0)
		out->result = json_incref(out->build.result);
	return rc;
}

void
fb_precompiled_clear(struct fb_precompiled *p)
{
	json_decref(p->findings);
	json_decref(p->result);
	fb_build_clear(&p->build);
	memset(p, 0, sizeof(*p));
}

int
fb_step_execute(const struct kb_config *cfg, const struct fb_request *req,
		const char *problem_key, const char *device_name, const char *run_dir,
		const json_t *findings, const struct fb_step_hooks *hooks,
		struct fb_executed *out)
{
	struct fb_request	 r = *req;
	struct started		 s;
	char			 name[256];
	enum fb_status		 bst = FB_ST_CRASHED;
	int			 rc;

	memset(out, 0, sizeof(*out));
	snprintf(name, sizeof(name), "%s", device_name != NULL ? device_name : "cpu");
	if (hooks != NULL && hooks->lease_take != NULL &&
	    (rc = hooks->lease_take(hooks->arg, &r.device_index, name, sizeof(name))) < 0)
		return rc;
	out->device = r.device_index;
	/* The reference alone on this device model, from the run's record, the cache that
	 * runs share, else measured (and kept in both): a reference that fails by itself
	 * is the problem's fault or the machine's, never the candidate's. */
	step_request(&r, FB_BASELINE, hooks, &s);
	r.time_reference = false;
	rc = fb_eval_baseline(cfg, &r, problem_key, name, run_dir, &out->baseline);
	if (rc == 0)
		(void)fb_status_parse(json_string_value(json_object_get(out->baseline.record,
									 "status")), &bst);
	if (rc == 0 && bst != FB_ST_OK) {
		rc = after_fault(cfg, &r, bst, hooks, &out->health, &out->probed);
	} else if (rc == 0) {
		r = *req;
		r.device_index = out->device;
		step_request(&r, FB_EXECUTE, hooks, &s);
		r.time_reference = true;
		r.reference_clean = json_object_get(out->baseline.record, "eager");
		step_fault(hooks, "execute-before-runner");
		if ((rc = fb_run(cfg, &r, &out->run)) == 0) {
			out->executed = true;
			rc = after_fault(cfg, &r, out->run.status, hooks, &out->health,
					 &out->probed);
		}
	}
	if (hooks != NULL && hooks->lease_give != NULL)
		hooks->lease_give(hooks->arg);
	if (rc == 0 && fb_runner_hit_full_disk(&out->run, run_dir))
		rc = -KB_ENOSPC;
	/* The verdict with its speedup; an env_error is no result about the kernel. */
	if (rc == 0 && out->executed && out->run.status != FB_ST_ENV_ERROR) {
		out->verdict = fb_judge(out->run.result, findings, out->baseline.record);
		out->judged = true;
	}
	return rc;
}

void
fb_executed_clear(struct fb_executed *e)
{
	fb_baseline_clear(&e->baseline);
	fb_outcome_clear(&e->run);
	memset(e, 0, sizeof(*e));
}

int
fb_step_profile(const struct kb_config *cfg, const struct fb_request *req,
		const struct fb_profile_ask *ask, const struct fb_step_hooks *hooks,
		struct fb_profiled *out)
{
	struct fb_request	 r = *req, rr;
	struct started		 s;
	char			 name[256] = "";
	const json_t		*profile, *reference = ask->reference_profile;
	const char		*source;
	int			 rc;

	memset(out, 0, sizeof(*out));
	if (hooks != NULL && hooks->lease_take != NULL &&
	    (rc = hooks->lease_take(hooks->arg, &r.device_index, name, sizeof(name))) < 0)
		return rc;
	out->device = r.device_index;
	r.time_reference = false;
	r.reference_clean = NULL;
	rc = 0;
	/* The reference's profile, in a runner of its own (the library writes one profile
	 * per process), under the same lease as the candidate's. */
	if (ask->reference != FB_REF_PROFILE_NONE) {
		rr = r;
		rr.candidate_path = NULL;
		rr.build_dir = NULL;
		rr.profile_reference = true;
		step_request(&rr, FB_PROFILE, hooks, &s);
		rc = fb_profile(cfg, &rr, "reference", &out->reference);
		if (rc < 0 && ask->reference == FB_REF_PROFILE_TRY && rc != -KB_ESTOPPED &&
		    rc != -KB_ENOSPC) {
			rc = 0;	/* no comparison this time */
			fb_outcome_clear(&out->reference);
		} else if (rc == 0) {
			out->reference_ran = true;
			reference = json_object_get(out->reference.result, "profile");
			if (hooks != NULL && hooks->reference_profiled != NULL)
				rc = hooks->reference_profiled(&out->reference, hooks->arg);
		}
	}
	if (rc == 0) {
		r.profile_reference = false;
		step_request(&r, FB_PROFILE, hooks, &s);
		if ((rc = fb_profile(cfg, &r, ask->tag, &out->run)) == 0)
			rc = after_fault(cfg, &r, out->run.status, hooks, &out->health,
					 &out->probed);
	}
	if (hooks != NULL && hooks->lease_give != NULL)
		hooks->lease_give(hooks->arg);
	/* The profile rule on the judged result, where the profile is evidence. */
	profile = json_object_get(out->run.result, "profile");
	source = json_string_value(json_object_get(profile, "source"));
	if (rc == 0 && ask->judged != NULL && ask->source != NULL && profile != NULL &&
	    out->run.status != FB_ST_ENV_ERROR &&
	    (!ask->cupti_only || (source != NULL && strcmp(source, "cupti") == 0))) {
		out->verdict = fb_judge_profile(ask->judged, profile, reference, ask->source);
		out->judged = true;
	}
	return rc;
}

void
fb_profiled_clear(struct fb_profiled *p)
{
	fb_outcome_clear(&p->reference);
	fb_outcome_clear(&p->run);
	memset(p, 0, sizeof(*p));
}
