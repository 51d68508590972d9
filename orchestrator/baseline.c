/* baseline.c: `kforge baseline CONFIG`: every problem of a config's problem set timed
 * alone (the reference, as a run's baseline step does) into the cache that runs share,
 * ahead of a run, on each GPU model the config uses (or the CPU). A problem whose timings
 * are already there for this environment and these settings is not timed again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback.h"
#include "orchestrator/orch_int.h"
#include "orchestrator/orchestrator.h"
#include "base/banned.h"

/* One problem on one device through the baseline step a run's EXECUTE takes
 * (fb_eval_baseline, with no run of its own: the shared cache's entry under its lock,
 * else measured and kept there, so two commands or runs never both measure it). 0 when
 * the cache holds good timings. */
static int
one(const struct kb_config *cfg, const struct kb_task *t, int device, const char *devname,
    const char *work)
{
	struct fb_request	 req = { 0 };
	struct fb_baseline	 b = { 0 };
	char			 path[PATH_MAX];
	json_t			*rec;
	double			 eager = -1, compiled = -1;
	int			 rc;

	if ((rc = fb_baseline_path(cfg, t->problem_path, devname, path, sizeof(path))) < 0) {
		printf("%-32s %-24s error: no cache (%s)\n", t->problem_key, devname, kb_strerror(rc));
		return rc;
	}
	req.mode = FB_BASELINE;
	req.problem_path = t->problem_path;
	req.work_dir = work;
	req.device_index = device;
	/* The first problem's runner is a fork of the server too (fb_run forks one for this
	 * GPU where the one waiting sees none); the later ones are started as each step
	 * ends. Only where a problem is to be measured: a config whose baselines are all
	 * cached starts no Python. */
	if (!kb_file_exists(path))
		fb_warm_start(cfg);
	rc = fb_eval_baseline(cfg, &req, t->problem_key, devname, NULL, &b);
	/* The shared cache is the only record here: one measured but not kept failed. */
	if (rc == 0 && !b.cache_hit && fb_baseline_ok(&b) && b.shared_rc < 0)
		rc = b.shared_rc;
	rec = b.record;
	if (json_is_object(json_object_get(rec, "eager")))
		eager = json_number_value(json_object_get(json_object_get(rec, "eager"), "mean_ms"));
	if (json_is_object(json_object_get(rec, "compile")))
		compiled = json_number_value(json_object_get(json_object_get(rec, "compile"),
							     "mean_ms"));
	if (rc < 0 || eager <= 0) {
		printf("%-32s %-24s failed: %s\n", t->problem_key, devname,
		       rc < 0 ? kb_strerror(rc) :
		       json_string_value(json_object_get(rec, "message")) ?: "no timing");
		rc = rc < 0 ? rc : -KB_EINVAL;
	} else {
		char	c[32] = "-";

		if (compiled > 0)
			snprintf(c, sizeof(c), "%.4f ms", compiled);
		printf("%-32s %-24s %10.4f ms %13s  %s\n", t->problem_key, devname, eager, c,
		       b.cache_hit ? "cached" : "measured");
	}
	fb_baseline_clear(&b);
	return rc;
}

int
orch_cmd_baseline(const char *config, const char *const *sets, int nsets)
{
	struct kb_config	 cfg;
	struct kb_task		*tasks = NULL;
	char			 err[1024], tmpl[PATH_MAX], work[PATH_MAX];
	json_t			*gpus = NULL, *g, *seen = json_object();
	size_t			 i;
	int			 n = 0, failed = 0, code = 2;

	if (orch_config_load(config, sets, nsets, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		json_decref(seen);
		return 2;
	}
	if (orch_resolve_devices(&cfg, &gpus, err, sizeof(err)) < 0 ||
	    orch_tasks_list(&cfg, &tasks, &n, err, sizeof(err)) < 0 ||
	    fb_contain_setup(&cfg, err, sizeof(err)) < 0 ||
	    fb_contain_sandbox_ready(err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		goto out;
	}
	if (fb_stage_scratch("baseline", tmpl, sizeof(tmpl), err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		goto out;
	}
	fb_stage_work_dir(tmpl, "baseline", work, sizeof(work));
	/* Each problem's runner started ahead, the next one while this one's results are
	 * written: a fork of one server that imported torch once (feedback/warm.c, warm
	 * runners), the one an eval left where there is one, and left for the next. */
	fb_warm_share(&cfg);
	printf("%-32s %-24s %13s %13s\n", "problem", "device", "eager", "compile");
	/* Each device model once: timings belong to the model, not to one GPU. */
	json_array_foreach(json_object_get(gpus, "devices"), i, g) {
		const char	*name = json_string_value(json_object_get(g, "name"));
		int		 index = (int)json_integer_value(json_object_get(g, "index"));

		if (name == NULL || json_object_get(seen, name) != NULL)
			continue;
		json_object_set_new(seen, name, json_true());
		for (int k = 0; k < n; k++)
			if (tasks[k].sample == 0 &&
			    one(&cfg, &tasks[k], strcmp(cfg.eval.device, "cuda") == 0 ? index : -1,
				name, work) < 0)
				failed++;
	}
	fb_warm_end();
	(void)fb_stage_close(true);
	code = failed > 0 ? 1 : 0;
out:
	free(tasks);
	json_decref(gpus);
	json_decref(seen);
	kb_config_clear(&cfg);
	return code;
}
