/*
 * redteam.c: what a red-team run keeps (redteam.enabled; `kforge redteam`). Its prompt
 * asks for kernels that the evaluator judges correct and faster without being so; every
 * candidate judged correct, and apart from those every one judged suspect, whose speedup
 * is at least redteam.min_speedup is copied under the run's redteam/ folder (rundir.h's
 * RD_FINDING entries): its kernel, its problem, its result.json, and a file ready for the
 * adversarial suite (tests/data/adversarial/<device>/) with the suite's header lines, so
 * that a reviewer can name the rule that should catch it and move it there.
 *
 * The trajectories are the truth: a turn's verdict and speedup are its FEEDBACK record's,
 * as the report reads them. A harvest writes each folder's files atomically and
 * index.json last, then removes folders of an earlier harvest that index.json no longer
 * lists, so the folder holds what index.json says however often it is harvested (at the
 * end of the run, of each resume, and by `kforge redteam --harvest`).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsm/fsm.h"
#include "orchestrator/orch_int.h"
#include "base/banned.h"

#define RT_MAX_TURN	256		/* as the report's turn rows */
#define RT_RESULT_CAP	(16u << 20)	/* a result.json: runner output is capped below it */

/* What a harvest read of one task: its turns' FEEDBACK data, turn k at index k-1. */
struct rt_scan {
	json_t	*turns;
};

static int
take_feedback(const struct kb_tlog_rec *rec, void *arg)
{
	struct rt_scan	*sc = arg;

	if (strcmp(rec->from, fsm_state_name(FSM_ST_FEEDBACK)) != 0 || rec->turn < 1 ||
	    rec->turn > RT_MAX_TURN)
		return 0;
	while ((int)json_array_size(sc->turns) < rec->turn)
		json_array_append_new(sc->turns, json_null());
	/* a FEEDBACK redone after a crash: the later record is the turn's */
	json_array_set(sc->turns, (size_t)rec->turn - 1, rec->data);
	return 0;
}

/* The verdicts a harvest keeps, in the order index.json and the summary list them. */
static const char *const kept_verdicts[] = { RD_VERDICT_CORRECT, RD_VERDICT_SUSPECT };
#define RT_NVERDICTS (sizeof(kept_verdicts) / sizeof(kept_verdicts[0]))

static int
verdict_index(const char *v)
{
	for (size_t i = 0; v != NULL && i < RT_NVERDICTS; i++)
		if (strcmp(v, kept_verdicts[i]) == 0)
			return (int)i;
	return -1;
}

/* The problem as the suite's "# problem:" line names it: its path under the kforge tree
 * where it lies there, else where the reviewer is to copy problem.py (to_add true). */
static void
suite_problem(const struct kb_task *t, char *out, size_t len, bool *to_add)
{
	char	home[PATH_MAX], path[PATH_MAX];
	size_t	hl;

	*to_add = true;
	if (realpath(kb_home(), home) != NULL && realpath(t->problem_path, path) != NULL) {
		hl = strlen(home);
		if (strncmp(path, home, hl) == 0 && path[hl] == '/' &&
		    (size_t)snprintf(out, len, "%s", path + hl + 1) < len) {
			*to_add = false;
			return;
		}
	}
	snprintf(out, len, "tests/data/adversarial/problems/level%d/%s.py", t->level,
		 t->problem_name);
}

/* Whether text opens with a line the suite's header parser would read as one of its own
 * ("# word: ..."), so that the header written above it needs a line to end it. */
static bool
opens_like_header(const char *text)
{
	const char *p = text;

	if (*p++ != '#')
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!((*p >= 'a' && *p <= 'z') || *p == '_'))
		return false;
	while ((*p >= 'a' && *p <= 'z') || *p == '_')
		p++;
	return *p == ':';
}

/* The rules of a FEEDBACK record's reasons, ", "-joined. */
static void
reasons_text(const json_t *data, char *out, size_t len)
{
	size_t	 i, used = 0;
	json_t	*r;

	out[0] = '\0';
	json_array_foreach(json_object_get(data, "reasons"), i, r) {
		int n;

		if (!json_is_string(r))
			continue;
		n = snprintf(out + used, len - used, "%s%s", used > 0 ? ", " : "",
			     json_string_value(r));
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

/* from's bytes to to, atomically; its text kept in *text_out (NUL-ended, *len_out bytes)
 * unless text_out is NULL. */
static int
copy_file(const char *from, const char *to, size_t cap, char **text_out, size_t *len_out,
	  char *err, size_t errlen)
{
	char	*text = NULL;
	size_t	 len = 0;
	int	 rc;

	if ((rc = kb_read_file(from, cap, &text, &len)) < 0) {
		if (rc == -KB_ETOOBIG)
			snprintf(err, errlen, "cannot read %s: larger than %zu MiB", from, cap >> 20);
		else
			snprintf(err, errlen, "cannot read %s: %s", from, kb_strerror(rc));
		return rc;
	}
	if ((rc = kb_write_atomic(to, text, len)) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", to, kb_strerror(rc));
		free(text);
		return rc;
	}
	if (text_out != NULL) {
		*text_out = text;
		*len_out = len;
	} else {
		free(text);
	}
	return 0;
}

/* One candidate kept: its folder's four files, and its entry in index.json. */
static int
keep(const struct orch_run *run, const struct kb_task *t, int turn, const json_t *data,
     const json_t *manifest_sha, json_t **entry, char *err, size_t errlen)
{
	char		 dir[PATH_MAX], from[PATH_MAX], to[PATH_MAX], rel[PATH_MAX];
	char		 problem[PATH_MAX], reasons[512], why[1024], sha[65];
	char		*kernel = NULL, *problem_text = NULL;
	const char	*verdict = json_string_value(json_object_get(data, "verdict"));
	const char	*format = run->cfg.eval.format;
	double		 speedup = json_number_value(json_object_get(data, "speedup"));
	size_t		 kernel_len = 0, problem_len = 0;
	bool		 to_add, changed;
	struct kb_buf	 suite = KB_BUF_INIT(FSM_MAX_SOURCE + 8192);
	int		 rc;

	*entry = NULL;
	if ((rc = rd_finding_dir(dir, sizeof(dir), run->dir, t->id, turn)) < 0 ||
	    (rc = rd_finding_dir(rel, sizeof(rel), NULL, t->id, turn)) < 0) {
		snprintf(err, errlen, "%s turn %d: the finding's path is too long", t->id, turn);
		return rc;
	}
	if ((rc = kb_mkdir_p(dir, 0755)) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return rc;
	}
	(void)kb_sweep_atomic_tmp(dir);
	if ((rc = rd_turn_file(from, sizeof(from), run->dir, t->id, turn, RD_KERNEL_PY)) < 0 ||
	    (rc = rd_finding_file(to, sizeof(to), run->dir, t->id, turn,
				  RD_FINDING_KERNEL_PY)) < 0 ||
	    (rc = copy_file(from, to, FSM_MAX_SOURCE, &kernel, &kernel_len, err, errlen)) < 0)
		goto out;
	if ((rc = rd_turn_file(from, sizeof(from), run->dir, t->id, turn, RD_RESULT_JSON)) < 0 ||
	    (rc = rd_finding_file(to, sizeof(to), run->dir, t->id, turn,
				  RD_FINDING_RESULT_JSON)) < 0 ||
	    (rc = copy_file(from, to, RT_RESULT_CAP, NULL, NULL, err, errlen)) < 0)
		goto out;
	if ((rc = rd_finding_file(to, sizeof(to), run->dir, t->id, turn,
				  RD_FINDING_PROBLEM_PY)) < 0 ||
	    (rc = copy_file(t->problem_path, to, FSM_MAX_SOURCE, &problem_text, &problem_len,
			    err, errlen)) < 0)
		goto out;
	kb_sha256_hex(problem_text, problem_len, sha);
	/* tasks.json has the problem as the run found it; a copy of other content is not
	 * what the candidate was judged against */
	changed = json_is_string(manifest_sha) && strcmp(json_string_value(manifest_sha), sha) != 0;

	suite_problem(t, problem, sizeof(problem), &to_add);
	reasons_text(data, reasons, sizeof(reasons));
	snprintf(why, sizeof(why), "found by kforge redteam in %s (%s), turn %d: judged %s%s%s%s "
		 "at %.2f\xc3\x97", run->cfg.name, t->id, turn, verdict,
		 reasons[0] != '\0' ? " (" : "", reasons, reasons[0] != '\0' ? ")" : "", speedup);
	kb_buf_printf(&suite, "# problem: %s\n# expect: rejected\n# catches: -\n# why: %s\n",
		      problem, why);
	if (format != NULL && strcmp(format, "load_inline") != 0)
		kb_buf_printf(&suite, "# format: %s\n", format);
	if (opens_like_header(kernel))
		kb_buf_printf(&suite, "#\n");
	if ((rc = kb_buf_append(&suite, kernel, kernel_len)) < 0 ||
	    (rc = rd_finding_file(to, sizeof(to), run->dir, t->id, turn,
				  RD_FINDING_SUITE_PY)) < 0 ||
	    (rc = kb_write_atomic(to, suite.p, suite.len)) < 0) {
		snprintf(err, errlen, "cannot write the suite file of %s turn %d: %s", t->id, turn,
			 kb_strerror(rc));
		goto out;
	}

	*entry = json_pack("{s:s, s:s, s:i, s:s, s:O?, s:f, s:O?, s:O?, s:O?, s:s, s:{}, s:s, "
			   "s:b, s:s, s:b}",
			   "task", t->id, "problem", t->problem_key, "turn", turn, "verdict",
			   verdict, "reasons", json_object_get(data, "reasons"), "speedup", speedup,
			   "speedup_ci95", json_object_get(data, "speedup_ci95"),
			   "runtime_ms", json_object_get(data, "runtime_ms"),
			   "ref_runtime_ms", json_object_get(data, "ref_runtime_ms"),
			   "path", rel, "files", "suite_problem", problem, "problem_to_add", to_add,
			   "problem_sha256", sha, "problem_changed", changed);
	if (*entry == NULL) {
		rc = -KB_ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	{
		static const struct {
			const char	*key;
			enum rd_entry	 e;
		} files[] = {
			{ "kernel", RD_FINDING_KERNEL_PY }, { "problem", RD_FINDING_PROBLEM_PY },
			{ "result", RD_FINDING_RESULT_JSON }, { "suite", RD_FINDING_SUITE_PY },
		};
		json_t *f = json_object_get(*entry, "files");

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			if (rd_finding_file(rel, sizeof(rel), NULL, t->id, turn, files[i].e) == 0)
				json_object_set_new(f, files[i].key, json_string(rel));
	}
out:
	kb_buf_clear(&suite);
	free(kernel);
	free(problem_text);
	return rc;
}

/* tasks.json's problem_sha256 of each task, by id (an empty object when unreadable). */
static json_t *
manifest_shas(const char *run_dir)
{
	char	 path[PATH_MAX];
	json_t	*arr = NULL, *out = json_object(), *t;
	size_t	 i;

	if (rd_run_file(path, sizeof(path), run_dir, RD_TASKS_JSON) == 0)
		arr = json_load_file(path, 0, NULL);
	json_array_foreach(arr, i, t)
		if (json_is_string(json_object_get(t, "id")))
			json_object_set(out, json_string_value(json_object_get(t, "id")),
					json_object_get(t, "problem_sha256"));
	json_decref(arr);
	return out;
}

/* Removes the folders under redteam/ shaped as findings (<id>_t<turn>) that the new
 * index does not list: an earlier harvest's, of turns that are no longer judged so. */
static void
remove_unlisted(const char *run_dir, json_t *listed)
{
	char		 dir[PATH_MAX], path[PATH_MAX];
	struct dirent	*de;
	DIR		*d;

	if (rd_run_file(dir, sizeof(dir), run_dir, RD_REDTEAM_DIR) < 0 ||
	    (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		const char	*t = strrchr(de->d_name, '_');
		struct stat	 st;

		if (t == NULL || t[1] != 't' || t[2] == '\0' ||
		    strspn(t + 2, "0123456789") != strlen(t + 2) ||
		    json_object_get(listed, de->d_name) != NULL)
			continue;
		if (kb_path_join(path, sizeof(path), dir, de->d_name) < 0 ||
		    lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		if (kb_rmtree(path) < 0)
			log_warnx("redteam: cannot remove %s, which index.json no longer lists",
				  path);
	}
	closedir(d);
}

int
orch_redteam_harvest(const struct orch_run *run, FILE *out, struct orch_redteam_kept *kept,
		     char *err, size_t errlen)
{
	json_t	*lists[RT_NVERDICTS], *shas = manifest_shas(run->dir), *listed = json_object();
	json_t	*index = NULL, *entry, *data;
	char	 path[PATH_MAX], name[PATH_MAX], ts[32];
	double	 min = run->cfg.redteam.min_speedup;
	int	 judged = 0, unfinished = 0, rc = 0;
	size_t	 i, k;

	memset(kept, 0, sizeof(*kept));
	for (i = 0; i < RT_NVERDICTS; i++)
		lists[i] = json_array();
	if ((rc = rd_run_file(path, sizeof(path), run->dir, RD_REDTEAM_DIR)) < 0 ||
	    (rc = kb_mkdir_p(path, 0755)) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", path,
			 rc == -KB_ETOOBIG ? kb_strerror(rc) : strerror(errno));
		goto out;
	}
	(void)kb_sweep_atomic_tmp(path);
	for (int ti = 0; ti < run->ntasks && rc == 0; ti++) {
		const struct kb_task	*t = &run->tasks[ti];
		struct rt_scan		 sc = { json_array() };
		struct rpt_summary	 sum;

		if (rpt_summarize(run->dir, t->id, &sum) < 0 || !rpt_state_finished(sum.state))
			unfinished++;
		if (rd_task_file(path, sizeof(path), run->dir, t->id, RD_TRAJECTORY) == 0 &&
		    kb_file_exists(path))
			kb_tlog_read(path, take_feedback, &sc);
		json_array_foreach(sc.turns, k, data) {
			const char	*v = json_string_value(json_object_get(data, "verdict"));
			json_t		*sp = json_object_get(data, "speedup");
			int		 vi = verdict_index(v);

			if (v != NULL)
				judged++;
			if (vi < 0 || !json_is_number(sp) || json_number_value(sp) < min)
				continue;
			if ((rc = keep(run, t, (int)k + 1, data, json_object_get(shas, t->id),
				       &entry, err, errlen)) < 0)
				break;
			if (json_is_true(json_object_get(entry, "problem_changed")))
				log_warnx("redteam: %s changed since the run began; %s/problem.py is "
					  "the file as it is now, not the one %s turn %zu was judged "
					  "against", t->problem_path,
					  json_string_value(json_object_get(entry, "path")), t->id,
					  k + 1);
			if (rd_finding_dir(name, sizeof(name), NULL, t->id, (int)k + 1) == 0)
				json_object_set_new(listed, strrchr(name, '/') + 1, json_true());
			json_array_append_new(lists[vi], entry);
		}
		json_decref(sc.turns);
	}
	if (rc < 0)
		goto out;
	kb_iso8601(kb_now_ms(), ts);
	index = json_pack("{s:s, s:s, s:s, s:f, s:s, s:i, s:i, s:i}", "run", run->cfg.name,
			  "device", run->cfg.eval.device, "format", run->cfg.eval.format,
			  "min_speedup", min, "harvested", ts, "tasks", run->ntasks,
			  "tasks_unfinished", unfinished, "turns_judged", judged);
	if (index == NULL) {
		rc = -KB_ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < RT_NVERDICTS; i++)
		json_object_set(index, kept_verdicts[i], lists[i]);
	if ((rc = rd_redteam_file(path, sizeof(path), run->dir, RD_REDTEAM_INDEX_JSON)) < 0 ||
	    (rc = kb_write_atomic_json(path, index)) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, kb_strerror(rc));
		goto out;
	}
	remove_unlisted(run->dir, listed);
	kept->correct = (int)json_array_size(lists[0]);
	kept->suspect = (int)json_array_size(lists[1]);
	kept->unfinished = unfinished;
	{
		char	 rel_index[PATH_MAX];
		json_t	*fields;

		(void)rd_redteam_file(rel_index, sizeof(rel_index), NULL, RD_REDTEAM_INDEX_JSON);
		fields = json_pack("{s:{s:f, s:s, s:i, s:i, s:s}}", "redteam", "min_speedup", min,
				   "index", rel_index, "correct", kept->correct, "suspect",
				   kept->suspect, "harvested", ts);

		if (fields == NULL || orch_run_update(run, fields) < 0)
			log_warnx("redteam: cannot record the harvest in %s", rd_name(RD_RUN_JSON));
		json_decref(fields);
	}
	if (out == NULL)
		goto out;
	if (kept->correct + kept->suspect == 0)
		fprintf(out, "kforge redteam: no candidate judged correct or suspect at %.2fx or "
			"more (%d turns judged); index %s\n", min, judged, path);
	else
		fprintf(out, "kforge redteam: kept %d candidate%s judged correct and %d judged "
			"suspect at %.2fx or more (of %d turns judged); index %s\n", kept->correct,
			kept->correct == 1 ? "" : "s", kept->suspect, min, judged, path);
	for (i = 0; i < RT_NVERDICTS; i++)
		json_array_foreach(lists[i], k, entry) {
			char reasons[512];

			reasons_text(entry, reasons, sizeof(reasons));
			fprintf(out, "  %-24s turn %-3d %-8s %7.2fx  %s/%s%s%s%s\n",
				json_string_value(json_object_get(entry, "task")),
				(int)json_integer_value(json_object_get(entry, "turn")),
				kept_verdicts[i],
				json_number_value(json_object_get(entry, "speedup")), run->dir,
				json_string_value(json_object_get(entry, "path")),
				reasons[0] != '\0' ? "  (" : "", reasons, reasons[0] != '\0' ? ")" : "");
		}
	if (unfinished > 0)
		fprintf(out, "kforge redteam: %d of %d tasks are not finished: 'kforge resume %s' "
			"continues them and harvests again\n", unfinished, run->ntasks, run->dir);
	fflush(out);
out:
	for (i = 0; i < RT_NVERDICTS; i++)
		json_decref(lists[i]);
	json_decref(index);
	json_decref(listed);
	json_decref(shas);
	return rc;
}

int
orch_cmd_redteam_harvest(const char *dir, bool quiet)
{
	struct orch_run		 run;
	struct orch_redteam_kept kept;
	char			 err[1024], path[PATH_MAX];
	int			 lock_fd = -1, rc = 1;

	if (orch_run_open(&run, dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 2;
	}
	if (!run.cfg.redteam.enabled) {
		fprintf(stderr, "kforge: %s is not a red-team run (its %s has redteam.enabled: "
			"false); 'kforge redteam CONFIG' makes one\n", run.dir,
			rd_name(RD_CONFIG_YAML));
		goto out;
	}
	/* The supervisor's lock, held while harvesting: a run that is going on harvests at
	 * its own end, and no resume starts meanwhile. */
	if (rd_run_file(path, sizeof(path), run.dir, RD_SUPERVISOR_LOCK) < 0 ||
	    (lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) == -1) {
		fprintf(stderr, "kforge: cannot write in the run directory %s: %s\n", run.dir,
			strerror(errno));
		goto out;
	}
	if (flock(lock_fd, LOCK_EX | LOCK_NB) == -1) {
		fprintf(stderr, "kforge: a supervisor is running on %s; the run harvests its "
			"findings when it ends\n", run.dir);
		goto out;
	}
	kb_log_init("redteam", 2);
	if (orch_redteam_harvest(&run, quiet ? NULL : stdout, &kept, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		goto out;
	}
	rc = 0;
out:
	if (lock_fd >= 0)
		close(lock_fd);
	orch_run_clear(&run);
	return rc;
}
