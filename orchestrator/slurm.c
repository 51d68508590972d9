/*
 * slurm.c: cluster.engine slurm. One run spread over a Slurm job array: `kforge run` (or
 * `resume`) creates the run directory, which every node must see, submits one array with
 * sbatch, records the job in run.json and follows the run as a local run shows it. Each
 * array element runs `kforge shard DIR`: an ordinary supervisor (supervisor.c) on its
 * node's GPUs whose files are under shards/<id>/ and which claims each task before working
 * on it (claims.c). Slurm's SIGTERM (scancel, a time limit's warning, a preemption) stops
 * a shard as it stops a local run, at a turn's boundary; a requeued element takes back its
 * own tasks; an element that died loses its tasks to the others after the claim timeout.
 *
 * The follower holds the run's supervisor lock, so `kforge stop DIR` asks it, and it asks
 * Slurm (scancel); with no follower, stop asks Slurm itself. What Slurm says of the shards
 * comes from squeue while it lists them, and from sacct once they have ended (squeue
 * forgets an ended job after MinJobAge): Slurm's accounting where the cluster keeps it,
 * else its job completion log (sacct -c: jobcomp/filetxt, which tools/slurm/local.sh
 * keeps), else nothing ("ended").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "orchestrator/orch_int.h"
#include "base/banned.h"

extern char **environ;

#define SLURM_OUT_CAP		(4u << 20)	/* squeue of a large array */
#define SLURM_TIMEOUT_MS	60000
#define SLURM_WARN_BEFORE_S	120	/* --signal=B:USR1@: the warning before a time limit */
/* A shard requeues itself at its time limit's warning this many times at most: one whose
 * time limit is shorter than a step would otherwise come back for ever. */
#define SLURM_SELF_REQUEUE_MAX	20
#define FOLLOW_LOOK_MS		5000	/* squeue this often while following */
#define FOLLOW_GONE_LOOKS	2	/* no element for this many looks in a row: ended */

bool
orch_slurm_engine(const struct kb_config *c)
{
	return c->cluster.engine != NULL && strcmp(c->cluster.engine, "slurm") == 0;
}

/* Runs a Slurm command (found on PATH) with kforge's own environment, which sbatch passes
 * on to the shards; 0 with its output in r (clear it), or <0 with a message. */
static int
slurm_cmd(const char *const *args, struct kb_spawn_result *r, char *err, size_t errlen)
{
	char			 path[PATH_MAX];
	const char		*argv[256];
	struct kb_spawn_opts	 o = { 0 };
	size_t			 n = 0;

	memset(r, 0, sizeof(*r));
	if (kb_which(args[0], path, sizeof(path)) < 0) {
		snprintf(err, errlen, "cluster.engine slurm: no %s on PATH (is this a Slurm "
			 "login node? tools/slurm/local.sh starts a one-host Slurm)", args[0]);
		return -KB_ENOENT;
	}
	argv[n++] = path;
	for (size_t i = 1; args[i] != NULL && n < 255; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	o.argv = argv;
	o.envp = (const char *const *)environ;
	o.timeout_ms = SLURM_TIMEOUT_MS;
	o.out_cap = SLURM_OUT_CAP;
	if (kb_spawn_run(&o, r) < 0) {
		snprintf(err, errlen, "cannot run %s", path);
		return -KB_EEXEC;
	}
	if (r->end != KB_END_EXITED || r->exit_code != 0) {
		snprintf(err, errlen, "%s failed (%s %d): %.*s", args[0],
			 r->end == KB_END_EXITED ? "exit" : "signal",
			 r->end == KB_END_EXITED ? r->exit_code : r->signo,
			 (int)strcspn(r->out.p != NULL ? r->out.p : "", "\n"),
			 r->out.p != NULL ? r->out.p : "");
		kb_spawn_result_clear(r);
		return -KB_EEXEC;
	}
	return 0;
}

/* run.json's cluster.jobs: the arrays submitted for the run, oldest first (new ref). */
static json_t *
run_jobs(const char *run_dir)
{
	char	 path[PATH_MAX];
	json_t	*info, *jobs;

	if (rd_run_file(path, sizeof(path), run_dir, RD_RUN_JSON) < 0 ||
	    (info = json_load_file(path, 0, NULL)) == NULL)
		return json_array();
	jobs = json_object_get(json_object_get(info, "cluster"), "jobs");
	jobs = json_is_array(jobs) ? json_incref(jobs) : json_array();
	json_decref(info);
	return jobs;
}

/* Single quotes for sh, around s (a path). */
static int
sh_quote(struct kb_buf *b, const char *s)
{
	int rc = kb_buf_printf(b, "'");

	for (; rc == 0 && *s != '\0'; s++)
		rc = *s == '\'' ? kb_buf_printf(b, "'\\''") : kb_buf_printf(b, "%c", *s);
	return rc == 0 ? kb_buf_printf(b, "'") : rc;
}

int
orch_slurm_submit(struct orch_run *run, int n, char *err, size_t errlen)
{
	const struct kb_config	*c = &run->cfg;
	char			 self[PATH_MAX], out[PATH_MAX], shards[PATH_MAX], array[32],
				 name[96], term[48],
				 opt[6][PATH_MAX + 32] /* one per option below */, ts[32], job[64];
	const char		*args[256] = { "sbatch", "--parsable" };
	struct kb_buf		 wrap = KB_BUF_INIT(1u << 16);
	struct kb_spawn_result	 r;
	size_t			 na = 2, no = 0;
	json_t			*jobs, *fields;
	ssize_t			 len;
	int			 rc;

	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0) {
		snprintf(err, errlen, "cannot find kforge's own path");
		return -KB_ESYS;
	}
	self[len] = '\0';
	if (rd_run_file(shards, sizeof(shards), run->dir, RD_SHARDS_DIR) < 0 ||
	    kb_mkdir_p(shards, 0755) < 0 ||
	    rd_run_file(out, sizeof(out), run->dir, RD_CLAIMS_DIR) < 0 || kb_mkdir_p(out, 0755) < 0 ||
	    snprintf(out, sizeof(out), "--output=%s/slurm-%%A_%%a.out", shards) >= (int)sizeof(out)) {
		snprintf(err, errlen, "cannot create %s", shards);
		return -KB_ESYS;
	}
	snprintf(array, sizeof(array), "--array=0-%d", n - 1);
	snprintf(name, sizeof(name), "--job-name=kforge-%s", c->name);
	/* USR1, not TERM: the shard tells its time limit (stop, then requeue itself) from a
	 * cancel or a preemption (stop, and let its tasks go). */
	snprintf(term, sizeof(term), "--signal=B:USR1@%d", SLURM_WARN_BEFORE_S);
	args[na++] = array;
	args[na++] = name;
	args[na++] = out;
	args[na++] = term;
	args[na++] = c->cluster.requeue ? "--requeue" : "--no-requeue";
	args[na++] = "--open-mode=append";	/* a requeued shard's log follows its first */
#define OPT(flag, value)							\
	do {									\
		if ((value) != NULL && (value)[0] != '\0') {			\
			snprintf(opt[no], sizeof(opt[no]), "%s=%s", flag, value); \
			args[na++] = opt[no++];					\
		}								\
	} while (0)
	OPT("--partition", c->cluster.partition);
	OPT("--account", c->cluster.account);
	OPT("--gres", c->cluster.gres);
	OPT("--mem", c->cluster.mem);
	OPT("--time", c->cluster.time_limit);
#undef OPT
	if (c->cluster.cpus_per_shard > 0) {
		snprintf(opt[no], sizeof(opt[no]), "--cpus-per-task=%ld", c->cluster.cpus_per_shard);
		args[na++] = opt[no++];
	}
	for (char **a = c->cluster.sbatch_args; a != NULL && *a != NULL && na < 240; a++)
		args[na++] = *a;
	/* exec: the batch shell becomes the shard, so that Slurm's B:USR1 reaches it. */
	if (kb_buf_printf(&wrap, "--wrap=exec ") < 0 || sh_quote(&wrap, self) < 0 ||
	    kb_buf_printf(&wrap, " shard ") < 0 || sh_quote(&wrap, run->dir) < 0) {
		kb_buf_clear(&wrap);
		return -KB_ENOMEM;
	}
	args[na++] = wrap.p;
	args[na] = NULL;
	rc = slurm_cmd(args, &r, err, errlen);
	kb_buf_clear(&wrap);
	if (rc < 0)
		return rc;
	/* --parsable: "<job id>[;<cluster>]" */
	snprintf(job, sizeof(job), "%.*s", (int)strcspn(r.out.p != NULL ? r.out.p : "", ";\n"),
		 r.out.p != NULL ? r.out.p : "");
	kb_spawn_result_clear(&r);
	if (job[0] == '\0' || strspn(job, "0123456789") != strlen(job)) {
		snprintf(err, errlen, "sbatch gave no job id");
		return -KB_EEXEC;
	}
	kb_iso8601(kb_now_ms(), ts);
	jobs = run_jobs(run->dir);
	json_array_append_new(jobs, json_pack("{s:s, s:i, s:s}", "job", job, "shards", n,
					      "submitted", ts));
	fields = json_pack("{s:{s:s, s:o}}", "cluster", "engine", "slurm", "jobs", jobs);
	rc = fields != NULL ? orch_run_update(run, fields) : -KB_ENOMEM;
	json_decref(fields);
	log_info("submitted Slurm job %s: %d shard(s) of %ld worker(s) each; their logs in %s",
		 job, n, c->workers, shards);
	return rc;
}

/* The run's array elements Slurm still has pending or running (squeue -r), as
 * [{id: "123_0", state, node, reason}]; NULL (with a message) where squeue failed. */
json_t *
orch_slurm_squeue(const char *run_dir, char *err, size_t errlen)
{
	struct kb_buf		 ids = KB_BUF_INIT(1u << 16);
	struct kb_spawn_result	 r;
	json_t			*jobs = run_jobs(run_dir), *j, *out;
	const char		*args[] = { "squeue", "-h", "-r", "-o", "%i|%T|%N|%r", "-j", NULL,
					    NULL };
	size_t			 i;
	char			*line, *save = NULL;

	json_array_foreach(jobs, i, j)
		(void)kb_buf_printf(&ids, "%s%s", i ? "," : "",
				    json_string_value(json_object_get(j, "job")));
	json_decref(jobs);
	if (ids.p == NULL) {
		kb_buf_clear(&ids);
		return json_array();
	}
	args[6] = ids.p;
	if (slurm_cmd(args, &r, err, errlen) < 0) {
		kb_buf_clear(&ids);
		return NULL;
	}
	kb_buf_clear(&ids);
	out = json_array();
	for (line = strtok_r(r.out.p != NULL ? r.out.p : (char[]){ "" }, "\n", &save);
	     line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = { line, NULL, NULL, NULL };

		for (int k = 1; k < 4 && f[k - 1] != NULL; k++)
			if ((f[k] = strchr(f[k - 1], '|')) != NULL)
				*f[k]++ = '\0';
		if (f[3] == NULL)
			continue;
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s}", "id", f[0], "state",
						     f[1], "node", f[2], "reason", f[3]));
	}
	kb_spawn_result_clear(&r);
	return out;
}

int
orch_slurm_cancel(const char *run_dir, bool hard, char *err, size_t errlen)
{
	json_t			*jobs = run_jobs(run_dir), *j;
	struct kb_spawn_result	 r;
	size_t			 i;
	int			 rc = 0;

	json_array_foreach(jobs, i, j) {
		const char *job = json_string_value(json_object_get(j, "job"));
		/* Elements not started yet go at once; running ones get SIGTERM in their batch
		 * shell (the shard), which stops at a turn's boundary. */
		const char *pending[] = { "scancel", "--state=PENDING", job, NULL };
		const char *term[] = { "scancel", "--full", "--signal=TERM", job, NULL };
		const char *kill9[] = { "scancel", job, NULL };

		if (job == NULL)
			continue;
		if (hard) {
			if (slurm_cmd(kill9, &r, err, errlen) < 0)
				rc = -KB_EEXEC;
			else
				kb_spawn_result_clear(&r);
			continue;
		}
		if (slurm_cmd(pending, &r, err, errlen) == 0)
			kb_spawn_result_clear(&r);
		if (slurm_cmd(term, &r, err, errlen) < 0)
			rc = -KB_EEXEC;
		else
			kb_spawn_result_clear(&r);
	}
	json_decref(jobs);
	return rc;
}

/* The last state Slurm's records give each of the jobs named (the raw ids of array
 * elements, as SLURM_JOB_ID names them, comma-separated): {raw id: state}, from its
 * accounting (sacct -X, where slurmdbd keeps it) or else from its job completion log
 * (sacct -c); empty where neither answers. A requeued element has a line for each life:
 * the last one wins. */
static json_t *
sacct_states(const char *ids)
{
	const char *const	 ways[][12] = {
		{ "sacct", "-X", "-n", "-P", "-o", "JobIDRaw,State", "-j", ids, NULL },
		{ "sacct", "-c", "-n", "-P", "-o", "JobIDRaw,State", "-j", ids, NULL },
	};
	json_t			*out = json_object();
	char			 err[256];

	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]) && json_object_size(out) == 0; w++) {
		struct kb_spawn_result	 r;
		char			*line, *save = NULL;

		if (slurm_cmd((const char *const *)ways[w], &r, err, sizeof(err)) < 0)
			continue;
		/* "<id>|<STATE>[ by <uid>]"; the completion log's reader adds warnings of
		 * its own (fields it does not know), which match no such line. */
		for (line = strtok_r(r.out.p != NULL ? r.out.p : (char[]){ "" }, "\n", &save);
		     line != NULL; line = strtok_r(NULL, "\n", &save)) {
			size_t	 nid = strspn(line, "0123456789");
			char	*state = line + nid + 1;

			if (nid == 0 || line[nid] != '|' || *state < 'A' || *state > 'Z')
				continue;
			line[nid] = '\0';
			state[strcspn(state, " |")] = '\0';
			json_object_set_new(out, line, json_string(state));
		}
		kb_spawn_result_clear(&r);
	}
	return out;
}

/* A shard of orch_slurm_shards' list that squeue no longer lists. */
static bool
shard_ended(json_t *sh)
{
	const char *state = json_string_value(json_object_get(sh, "slurm_state"));

	return state != NULL && strcmp(state, "ended") == 0;
}

/* The ended shards' jobs (their run.json's job: the raw id), as sacct wants them. */
static json_t *
ended_states(json_t *out)
{
	struct kb_buf	 ids = KB_BUF_INIT(1u << 16);
	json_t		*sh, *states;
	size_t		 i;

	json_array_foreach(out, i, sh) {
		const char *job = json_string_value(json_object_get(sh, "job"));

		if (job != NULL && job[0] != '\0' && job[strspn(job, "0123456789")] == '\0' &&
		    shard_ended(sh))
			(void)kb_buf_printf(&ids, "%s%s", ids.p != NULL ? "," : "", job);
	}
	states = ids.p != NULL ? sacct_states(ids.p) : json_object();
	kb_buf_clear(&ids);
	return states;
}

/* Each shard's own record (shards/<id>/run.json) beside what squeue says of its element:
 * [{shard, slurm_state, node, status, host, beat_at, running_workers, restarts, job}]; an
 * element squeue does not list has ended: its state is sacct's where Slurm recorded it,
 * else "ended", or "unknown" where squeue failed (NULL). */
json_t *
orch_slurm_shards(const char *run_dir, json_t *squeue)
{
	char	 dir[PATH_MAX], path[PATH_MAX];
	json_t	*out = json_array(), *seen = json_object(), *e;
	size_t	 i;
	DIR	*d;

	json_array_foreach(squeue, i, e)
		json_object_set(seen, json_string_value(json_object_get(e, "id")), e);
	if (rd_run_file(dir, sizeof(dir), run_dir, RD_SHARDS_DIR) == 0 &&
	    (d = opendir(dir)) != NULL) {
		struct dirent *de;

		while ((de = readdir(d)) != NULL) {
			json_t	*info, *q;

			if (de->d_name[0] == '.' || strchr(de->d_name, '.') != NULL ||
			    rd_shard_file(path, sizeof(path), run_dir, de->d_name, RD_RUN_JSON) < 0 ||
			    (info = json_load_file(path, 0, NULL)) == NULL)
				continue;
			q = json_object_get(seen, de->d_name);
			json_array_append_new(out, json_pack(
				"{s:s, s:s, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "shard", de->d_name,
				"slurm_state", q != NULL ? json_string_value(json_object_get(q, "state")) :
				squeue == NULL ? "unknown" : "ended", "node", json_object_get(q, "node"), "status",
				json_object_get(info, "status"), "host", json_object_get(info, "host"),
				"beat_at", json_object_get(info, "beat_at"), "running_workers",
				json_object_get(info, "running_workers"), "restarts",
				json_object_get(info, "restarts"), "job", json_object_get(info, "job")));
			json_object_del(seen, de->d_name);
			json_decref(info);
		}
		closedir(d);
	}
	/* Those squeue no longer lists: their last state as Slurm recorded it, if it did. */
	if (squeue != NULL) {
		json_t	*states = ended_states(out), *sh;

		json_array_foreach(out, i, sh) {
			const char	*job = json_string_value(json_object_get(sh, "job"));
			json_t		*st = json_object_get(states, job != NULL ? job : "");

			if (st != NULL && shard_ended(sh))
				json_object_set(sh, "slurm_state", st);
		}
		json_decref(states);
	}
	{
		const char *id;

		/* Elements that have not started (pending): no folder yet. */
		json_object_foreach(seen, id, e)
			json_array_append_new(out, json_pack("{s:s, s:O?, s:O?, s:s}", "shard", id,
				"slurm_state", json_object_get(e, "state"), "node",
				json_object_get(e, "node"), "status", "not started"));
	}
	json_decref(seen);
	return out;
}

/* The shards' pool snapshots added up, for the progress display. */
static json_t *
pools_added(const char *run_dir)
{
	char		 dir[PATH_MAX], path[PATH_MAX];
	json_t		*sum = json_object();
	DIR		*d;
	struct dirent	*de;

	if (rd_run_file(dir, sizeof(dir), run_dir, RD_SHARDS_DIR) < 0 || (d = opendir(dir)) == NULL)
		return sum;
	while ((de = readdir(d)) != NULL) {
		json_t		*snap, *cls;
		const char	*key;

		if (de->d_name[0] == '.' ||
		    rd_shard_file(path, sizeof(path), run_dir, de->d_name, RD_POOL_JSON) < 0 ||
		    (snap = json_load_file(path, 0, NULL)) == NULL)
			continue;
		json_object_foreach(snap, key, cls) {
			json_t		*acc, *v;
			const char	*f;

			if (!json_is_object(cls))
				continue;
			if ((acc = json_object_get(sum, key)) == NULL) {
				json_object_set_new(sum, key, json_deep_copy(cls));
				continue;
			}
			json_object_foreach(cls, f, v)
				if (json_is_integer(v) && json_is_integer(json_object_get(acc, f)))
					json_object_set_new(acc, f, json_integer(
						json_integer_value(json_object_get(acc, f)) +
						json_integer_value(v)));
		}
		json_decref(snap);
	}
	closedir(d);
	return sum;
}

/* Tasks a shard holds are the ones with a worker, for the progress display. */
static void
claimed_tasks(const struct orch_run *run, struct orch_progress *progress)
{
	char		 dir[PATH_MAX];
	DIR		*d;
	struct dirent	*de;
	json_t		*held = json_object();

	if (rd_run_file(dir, sizeof(dir), run->dir, RD_CLAIMS_DIR) == 0 &&
	    (d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				json_object_set_new(held, de->d_name, json_true());
		closedir(d);
	}
	for (int i = 0; i < run->ntasks; i++)
		orch_progress_worker(progress, i,
				     json_object_get(held, run->tasks[i].id) != NULL);
	json_decref(held);
}

/* Follows the run until Slurm has none of its elements left: the progress display of a
 * local run, fed by the shards' files. SIGINT, SIGTERM or SIGHUP (and so `kforge stop`)
 * ask Slurm to stop the shards; a second one stops following, the shards going on. */
static int
follow(struct orch_run *run, const struct orch_sup_opts *opts)
{
	struct orch_progress	*progress;
	sigset_t		 mask, orig;
	int			 sfd, signals = 0, gone = 0, left, rc;
	int64_t			 last_look = 0;
	char			 err[512], ts[32];
	json_t			*fields;
	const char		*outcome;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	if ((sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) == -1) {
		log_warn("signalfd");
		return 1;
	}
	progress = orch_progress_start(run, orch_progress_mode_for(opts->quiet, false),
				       opts->progress_interval_s);
	for (;;) {
		struct pollfd			pfd = { sfd, POLLIN, 0 };
		struct signalfd_siginfo		si;
		json_t				*snap;

		if (kb_mono_ms() - last_look >= FOLLOW_LOOK_MS) {
			json_t *q = orch_slurm_squeue(run->dir, err, sizeof(err));

			last_look = kb_mono_ms();
			if (q == NULL)
				log_warnx("%s", err);
			/* A requeued element is briefly in no state squeue lists. */
			gone = q != NULL && json_array_size(q) == 0 ? gone + 1 : 0;
			json_decref(q);
			if (gone >= FOLLOW_GONE_LOOKS)
				break;
			claimed_tasks(run, progress);
		}
		snap = pools_added(run->dir);
		orch_progress_update(progress, snap);
		json_decref(snap);
		if (poll(&pfd, 1, 1000) == -1 && errno != EINTR)
			break;
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (++signals == 1) {
				log_info("stopping: asking Slurm to stop the shards (a second signal "
					 "stops following and leaves them)");
				if (orch_slurm_cancel(run->dir, false, err, sizeof(err)) < 0)
					log_warnx("%s", err);
			}
		}
		if (signals >= 2)
			break;
	}
	left = orch_run_unfinished(run, false);
	outcome = left == 0 ? "finished" : "stopped";
	kb_iso8601(kb_now_ms(), ts);
	fields = json_pack("{s:s, s:s}", "status", signals >= 2 ? "running" : outcome, "stopped",
			   ts);
	orch_run_update(run, fields);
	json_decref(fields);
	orch_progress_finish(progress, signals >= 2 ? "detached" : outcome);
	if (signals >= 2) {
		log_info("no longer following; the shards go on ('kforge status %s')", run->dir);
		rc = 0;
	} else if (left == 0) {
		log_info("all %d tasks finished; 'kforge report %s' for the results", run->ntasks,
			 run->dir);
		rc = 0;
	} else {
		log_warnx("the shards have ended with %d task(s) unfinished; 'kforge resume %s' "
			  "submits shards for them", left, run->dir);
		rc = 1;
	}
	close(sfd);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return rc;
}

int
orch_slurm_launch(struct orch_run *run, const struct orch_sup_opts *opts, int add)
{
	char	 path[PATH_MAX], err[1024], pidtext[32];
	json_t	*q;
	int	 lock_fd, rc, left, n;

	kb_log_init("kforge", 2);
	if (rd_run_file(path, sizeof(path), run->dir, RD_SUPERVISOR_LOCK) < 0 ||
	    (lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) == -1) {
		fprintf(stderr, "kforge: cannot write in the run directory %s\n", run->dir);
		return 1;
	}
	if (flock(lock_fd, LOCK_EX | LOCK_NB) == -1) {
		fprintf(stderr, "kforge: kforge is already following %s\n", run->dir);
		close(lock_fd);
		return 1;
	}
	if ((q = orch_slurm_squeue(run->dir, err, sizeof(err))) == NULL) {
		fprintf(stderr, "kforge: %s\n", err);
		close(lock_fd);
		return 1;
	}
	left = orch_run_unfinished(run, false);
	if (json_array_size(q) == 0 && left > 0) {
		/* No shard alive: nobody holds a claim any more. */
		(void)orch_claims_clear(run->dir);
		add = add > 0 ? add : (int)(run->cfg.cluster.shards < left ? run->cfg.cluster.shards :
					    left);
	} else if (json_array_size(q) > 0 && add == 0) {
		log_info("%zu shard(s) of this run are with Slurm; following them",
			 json_array_size(q));
	}
	json_decref(q);
	n = add;
	if (n > 0 && (rc = orch_slurm_submit(run, n, err, sizeof(err))) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		close(lock_fd);
		return 1;
	}
	if (opts->detach || (n == 0 && left == 0)) {
		if (n > 0)
			printf("kforge: submitted; 'kforge status %s' to watch, 'kforge stop %s' to "
			       "stop\n", run->dir, run->dir);
		else if (left == 0)
			printf("kforge: every task of %s is finished\n", run->dir);
		close(lock_fd);
		return 0;
	}
	snprintf(pidtext, sizeof(pidtext), "%ld\n", (long)getpid());
	if (rd_run_file(path, sizeof(path), run->dir, RD_SUPERVISOR_PID) == 0)
		kb_write_atomic(path, pidtext, strlen(pidtext));
	rc = follow(run, opts);
	if (rd_run_file(path, sizeof(path), run->dir, RD_SUPERVISOR_PID) == 0)
		unlink(path);
	close(lock_fd);
	return rc;
}

/* The GPUs Slurm gave the shard (CUDA_VISIBLE_DEVICES, where it names indices) become
 * gpus.devices; the run's config otherwise. */
static void
slurm_gpus(struct kb_config *c)
{
	const char	*v = getenv("CUDA_VISIBLE_DEVICES");
	int		 n = 0;
	long		 idx;
	char		 buf[256], *tok, *save = NULL;

	if (v == NULL || v[0] == '\0' || strcmp(c->eval.device, "cpu") == 0)
		return;
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ",", &save); tok != NULL && n < KB_MAX_DEVICES;
	     tok = strtok_r(NULL, ",", &save)) {
		if (kb_parse_int(tok, 0, 4096, &idx) < 0)
			return;		/* UUIDs: leave the config's choice */
		c->gpus.devices[n++] = (int)idx;
	}
	c->gpus.all = false;
	c->gpus.ndevices = n;
}

/* A shard stopped on its time limit's warning goes back to Slurm's queue as the same
 * element (scontrol requeue of its own job, the last thing it does: Slurm ends the job
 * at once), where the run allows it and work is left; else it has simply stopped. */
static void
requeue_self(struct orch_run *run, const struct orch_shard *shard)
{
	struct kb_spawn_result	 r;
	const char		*args[] = { "scontrol", "requeue", shard->job, NULL };
	char			 err[512];
	int			 left = orch_run_unfinished(run, false);

	if (!run->cfg.cluster.requeue || shard->job[0] == '\0' || left == 0)
		return;
	if (shard->restarts >= SLURM_SELF_REQUEUE_MAX) {
		log_warnx("shard %s: requeued %d times at its time limit already; not again "
			  "('kforge resume %s' submits shards for what is left)", shard->id,
			  shard->restarts, run->dir);
		return;
	}
	log_info("shard %s: requeueing job %s at its time limit (%d task(s) unfinished)",
		 shard->id, shard->job, left);
	if (slurm_cmd(args, &r, err, sizeof(err)) < 0)
		log_warnx("shard %s: %s", shard->id, err);
	else
		kb_spawn_result_clear(&r);
}

int
orch_shard_main(const char *dir, const char *id, const struct orch_sup_opts *opts)
{
	struct orch_run		run;
	struct orch_shard	shard = { 0 };
	struct orch_sup_opts	sopts = *opts;
	const char		*job = getenv("SLURM_ARRAY_JOB_ID"), *idx = getenv("SLURM_ARRAY_TASK_ID"),
				*restarts = getenv("SLURM_RESTART_COUNT");
	char			 err[1024], path[PATH_MAX];
	json_t			*gpus = NULL;
	sigset_t		 early;
	int			 rc;

	/* Slurm may signal as soon as the job starts (a time limit's warning comes up to a
	 * minute early): held until the supervisor's signalfd takes them. */
	sigemptyset(&early);
	sigaddset(&early, SIGTERM);
	sigaddset(&early, SIGINT);
	sigaddset(&early, SIGHUP);
	sigaddset(&early, SIGUSR1);
	sigprocmask(SIG_BLOCK, &early, NULL);
	if (orch_run_open(&run, dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 2;
	}
	gethostname(shard.host, sizeof(shard.host) - 1);
	snprintf(shard.job, sizeof(shard.job), "%s", getenv("SLURM_JOB_ID") ?: "");
	{
		long v = 0;

		shard.restarts = restarts != NULL && kb_parse_int(restarts, 0, 1 << 20, &v) == 0 ?
				 (int)v : 0;
	}
	if (id != NULL)
		snprintf(shard.id, sizeof(shard.id), "%s", id);
	else if (job != NULL && idx != NULL)
		snprintf(shard.id, sizeof(shard.id), "%s_%s", job, idx);
	else if (shard.job[0] != '\0')
		snprintf(shard.id, sizeof(shard.id), "%s", shard.job);
	else
		snprintf(shard.id, sizeof(shard.id), "%.40s-%ld", shard.host, (long)getpid());
	if (shard.id[strspn(shard.id, "0123456789_-.abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ")] != '\0' || shard.id[0] == '.') {
		fprintf(stderr, "kforge: shard id '%s': letters, digits, '_', '-' and '.' only\n",
			shard.id);
		orch_run_clear(&run);
		return 2;
	}
	if (rd_run_key(run.home, sizeof(run.home), run.dir, RD_SHARDS_DIR, shard.id) < 0 ||
	    kb_mkdir_p(run.home, 0755) < 0 ||
	    rd_run_file(path, sizeof(path), run.dir, RD_CLAIMS_DIR) < 0 || kb_mkdir_p(path, 0755) < 0) {
		fprintf(stderr, "kforge: cannot create this shard's folder under %s\n", run.dir);
		orch_run_clear(&run);
		return 1;
	}
	/* This node's devices, as a local run resolves them at its start. */
	slurm_gpus(&run.cfg);
	if ((rc = orch_resolve_devices(&run.cfg, &gpus, err, sizeof(err))) < 0 ||
	    rd_run_file(path, sizeof(path), run.home, RD_GPUS_JSON) < 0 ||
	    kb_write_atomic_json(path, gpus) < 0) {
		fprintf(stderr, "kforge: shard %s: %s\n", shard.id, rc < 0 ? err :
			"cannot write its gpus.json");
		json_decref(gpus);
		orch_run_clear(&run);
		return 1;
	}
	json_decref(gpus);
	sopts.shard = &shard;
	sopts.detach = false;
	sopts.quiet = true;
	rc = orch_supervise(&run, &sopts);
	if (rc == ORCH_EXIT_TIME_LIMIT) {
		requeue_self(&run, &shard);
		rc = 0;
	}
	orch_run_clear(&run);
	return rc;
}
