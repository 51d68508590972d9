/*
 * evaluate.c: the one evaluation of a candidate (feedback.h, "the evaluation"): its
 * build through the build cache, the reference alone through the baseline cache, and
 * fb_evaluate, which takes a candidate through every step in a row as `kforge eval`
 * does. A run's turn takes the same steps, each in the state and slot it belongs to
 * (fsm/actions.c: PRECOMPILE holds a compile slot, EXECUTE a GPU), so a file gets the
 * same build, the same reference and the same verdict in both.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "feedback/feedback.h"
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
					(void)kb_write_atomic_json(shared, b);
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

/*
 * The PROFILE step of a run's turn, for `kforge eval --profile`: the reference's profile
 * and the candidate's (fb_profile: CUPTI on a GPU, torch.profiler elsewhere), then the
 * profile rule on the judged result, as fsm/actions.c does after a turn's EXECUTE.
 */
static int
eval_profile(const struct kb_config *cfg, const struct fb_request *req,
	     struct fb_evaluation *ev)
{
	struct fb_request	 r = *req;
	struct fb_outcome	 o = { 0 };
	char			*code = NULL;
	int			 rc;

	r.mode = FB_PROFILE;
	r.time_reference = false;
	r.profile_reference = true;
	if ((rc = fb_profile(cfg, &r, "reference", &o)) < 0)
		goto out;
	if (o.status == FB_ST_OK)
		ev->reference_profile = json_incref(json_object_get(o.result, "profile"));
	ev->profile_wall_ms = o.wall_ms;
	fb_outcome_clear(&o);
	r.profile_reference = false;
	if ((rc = fb_profile(cfg, &r, "candidate", &o)) < 0)
		goto out;
	ev->profile_wall_ms += o.wall_ms;
	ev->profile = json_incref(json_object_get(o.result, "profile"));
	if (ev->profile != NULL &&
	    kb_read_file(req->candidate_path, FB_BUILD_KEY_CAP, &code, NULL) == 0)
		ev->verdict = fb_judge_profile(ev->result, ev->profile, ev->reference_profile,
					       code);
out:
	fb_outcome_clear(&o);
	free(code);
	return rc;
}

int
fb_evaluate(const struct kb_config *cfg, const struct fb_request *req,
	    const char *device_name, struct fb_evaluation *ev, char *err, size_t errlen)
{
	struct fb_request	 r = *req;
	json_t			*findings = NULL;
	int			 rc;

	memset(ev, 0, sizeof(*ev));
	ev->verdict = FB_VERDICT_INCORRECT;
	/* The static checks first, as a run's PRECOMPILE does: a rejected kernel is not
	 * built. */
	if ((rc = fb_static_check(cfg, req->problem_path, req->candidate_path, &findings, err,
				  errlen)) < 0)
		return rc;
	if (fb_findings_reject(findings)) {
		ev->result = fb_rejection(findings);	/* judged there */
		ev->verdict = FB_VERDICT_REJECTED;
		ev->rejected = true;
		json_decref(findings);
		return 0;
	}
	r.mode = FB_PRECOMPILE;
	r.device_index = -1;
	r.time_reference = false;
	if ((rc = fb_eval_build(cfg, &r, NULL, NULL, &ev->build)) < 0)
		goto out;
	if (fb_status_parse(json_string_value(json_object_get(ev->build.result, "status")),
			    &ev->status) < 0)
		ev->status = FB_ST_CRASHED;
	if (ev->status != FB_ST_OK) {
		ev->result = json_incref(ev->build.result);
		goto judge;
	}
	ev->compiled = true;
	/* The reference alone, from the cache that runs share, else measured (and kept
	 * there); a reference that fails by itself is the environment's error. */
	r = *req;
	if ((rc = fb_eval_baseline(cfg, &r, req->problem_path, device_name, NULL,
				   &ev->baseline)) < 0)
		goto out;
	if (!fb_baseline_ok(&ev->baseline)) {
		char *msg = fb_reference_failure(ev->baseline.record);

		ev->status = FB_ST_ENV_ERROR;
		ev->result = json_pack("{s:s, s:b, s:b, s:O, s:{s:s}}", "status",
				       fb_status_name(FB_ST_ENV_ERROR), "compiled", 1, "correct", 0,
				       "baseline", ev->baseline.record, "details", "message", msg);
		free(msg);
		goto judge;
	}
	r.mode = FB_EXECUTE;
	r.time_reference = true;
	r.reference_clean = json_object_get(ev->baseline.record, "eager");
	if ((rc = fb_run(cfg, &r, &ev->executed)) < 0)
		goto out;
	ev->status = ev->executed.status;
	ev->result = json_incref(ev->executed.result);
judge:
	ev->verdict = fb_judge(ev->result, findings, ev->baseline.record);
	if (cfg->refinement.feedback_p && ev->executed.result != NULL &&
	    (ev->verdict == FB_VERDICT_CORRECT || ev->verdict == FB_VERDICT_SUSPECT))
		rc = eval_profile(cfg, req, ev);
	ev->correct = json_is_true(json_object_get(ev->result, "correct"));
out:
	json_decref(findings);
	return rc;
}

void
fb_outcome_of_judged(json_t *result, bool executed, struct fb_outcome *o)
{
	json_t	*v;

	memset(o, 0, sizeof(*o));
	o->runtime_ms = o->ref_runtime_ms = o->speedup = -1;
	o->result = result;
	if (fb_status_parse(json_string_value(json_object_get(result, "status")), &o->status) < 0)
		o->status = FB_ST_CRASHED;
	o->compiled = executed || o->status == FB_ST_OK;
	o->correct = json_is_true(json_object_get(result, "correct"));
	if (json_is_number(v = json_object_get(result, "speedup")))
		o->speedup = json_number_value(v);
	if (json_is_number(v = json_object_get(result, "ref_runtime_ms")))
		o->ref_runtime_ms = json_number_value(v);
	/* runtime_ms is fb_judge's; a result judged before it set one has the mean. */
	if (json_is_number(v = json_object_get(result, "runtime_ms")) ||
	    json_is_number(v = json_object_get(json_object_get(json_object_get(result, "timing"),
							       "candidate"), "mean_ms")))
		o->runtime_ms = json_number_value(v);
}

void
fb_evaluation_clear(struct fb_evaluation *ev)
{
	json_decref(ev->result);
	json_decref(ev->profile);
	json_decref(ev->reference_profile);
	fb_build_clear(&ev->build);
	fb_baseline_clear(&ev->baseline);
	fb_outcome_clear(&ev->executed);
	memset(ev, 0, sizeof(*ev));
}
