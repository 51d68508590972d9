/*
 * claims.c: which shard works on which task, for a run spread over Slurm shards
 * (orchestrator/slurm.c). Work is claimed, not split ahead: a shard that has a free
 * worker claims the next task nobody holds, so uneven tasks balance and a shard added
 * later simply takes work.
 *
 * A claim is the file claims/<task id> naming its shard. It is made the way that holds on
 * NFS: the claim is written to a file of its own, then hard-linked to the claim's name; a
 * link is atomic on the server, and one whose reply was lost shows as a link count of 2.
 * A shard's liveness is its heartbeat, a counter in shards/<id>/run.json it rewrites every
 * few seconds. Another shard takes a claim only from a shard whose counter it has seen
 * unchanged for cluster.claim_timeout_s by its own monotonic clock (no two hosts' clocks
 * are compared) or that says it has ended; it moves the claim aside with rename (atomic:
 * one taker wins) before making its own. A requeued array element has the same shard id
 * as before and takes back its own claims at once.
 *
 * Claims only spread the work: two workers never write one task even when a claim goes
 * wrong, because each holds the task's lock (fsm/worker.c; flock, which Linux's NFS client
 * carries to the server).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/orch_int.h"
#include "base/banned.h"

#define CLAIM_MAX	4096		/* a claim file's most bytes */

struct shard_seen {
	char		 id[ORCH_SHARD_ID_MAX];
	long long	 beat;		/* the counter as last read; -1: no heartbeat yet */
	int64_t		 changed_ms;	/* our monotonic clock when it last changed */
	bool		 ended;		/* its run.json says it is no longer running */
	bool		 present;	/* seen in the last look */
};

struct orch_shard_watch {
	char			 run_dir[PATH_MAX];
	char			 self[ORCH_SHARD_ID_MAX];
	int64_t			 timeout_ms;
	struct shard_seen	*seen;
	size_t			 n, cap;
};

static int
claim_path(char *out, size_t n, const char *run_dir, const char *task_id)
{
	return rd_run_key(out, n, run_dir, RD_CLAIMS_DIR, task_id);
}

static void
random_tag(char out[17])
{
	unsigned char	b[8] = { 0 };

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		memcpy(b, &(uint64_t){ (uint64_t)kb_mono_ms() ^ (uint64_t)getpid() }, sizeof(b));
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* A unique name beside the claims: claims/.<what>-<task>-<random>. */
static int
side_path(char *out, size_t n, const char *run_dir, const char *what, const char *task_id)
{
	char	dir[PATH_MAX], tag[17];

	random_tag(tag);
	if (rd_run_file(dir, sizeof(dir), run_dir, RD_CLAIMS_DIR) < 0 ||
	    snprintf(out, n, "%s/.%s-%s-%s", dir, what, task_id, tag) >= (int)n)
		return -KB_ETOOBIG;
	return 0;
}

static int
read_owner(const char *path, char *shard, size_t n)
{
	char	*text = NULL;
	json_t	*j;
	int	 rc;

	if ((rc = kb_read_file(path, CLAIM_MAX, &text, NULL)) < 0)
		return rc;
	j = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_string(json_object_get(j, "shard"))) {
		json_decref(j);
		return -KB_ECORRUPT;
	}
	snprintf(shard, n, "%s", json_string_value(json_object_get(j, "shard")));
	json_decref(j);
	return 0;
}

int
orch_claim_owner(const char *run_dir, const char *task_id, char *shard, size_t n)
{
	char	path[PATH_MAX];
	int	rc;

	if ((rc = claim_path(path, sizeof(path), run_dir, task_id)) < 0)
		return rc;
	return read_owner(path, shard, n);
}

int
orch_claim_take(const char *run_dir, const char *task_id, const char *shard, const char *host)
{
	char		 path[PATH_MAX], tmp[PATH_MAX], owner[ORCH_SHARD_ID_MAX], ts[32], *text;
	struct stat	 st;
	json_t		*j;
	int		 fd, rc, linked;

	if ((rc = claim_path(path, sizeof(path), run_dir, task_id)) < 0 ||
	    (rc = side_path(tmp, sizeof(tmp), run_dir, "claim", task_id)) < 0)
		return rc;
	kb_iso8601(kb_now_ms(), ts);
	j = json_pack("{s:s, s:s, s:i, s:s}", "shard", shard, "host", host, "pid", (int)getpid(),
		      "since", ts);
	text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (text == NULL)
		return -KB_ENOMEM;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) == -1) {
		rc = -kb_errno_to_err(errno);
		free(text);
		return rc;
	}
	rc = write(fd, text, strlen(text)) != (ssize_t)strlen(text) || fsync(fd) == -1 ?
	     -KB_ESYS : 0;
	free(text);
	(void)close(fd);
	if (rc < 0) {
		(void)unlink(tmp);
		return rc;
	}
	linked = link(tmp, path) == 0 ||
		 (errno != EEXIST && stat(tmp, &st) == 0 && st.st_nlink == 2);
	(void)unlink(tmp);
	if (linked)
		return 1;
	/* Held already: ours when it names this shard (an earlier life of a requeued one). */
	if ((rc = read_owner(path, owner, sizeof(owner))) == 0)
		return strcmp(owner, shard) == 0 ? 1 : 0;
	return rc == -KB_ENOENT ? 0 : rc;	/* released meanwhile: the next look takes it */
}

int
orch_claim_steal(const char *run_dir, const char *task_id, const char *dead, const char *shard,
		 const char *host)
{
	char	path[PATH_MAX], aside[PATH_MAX], owner[ORCH_SHARD_ID_MAX];
	int	rc;

	if ((rc = claim_path(path, sizeof(path), run_dir, task_id)) < 0 ||
	    (rc = side_path(aside, sizeof(aside), run_dir, "taken", task_id)) < 0)
		return rc;
	if (rename(path, aside) == -1)
		return errno == ENOENT ? 0 : -kb_errno_to_err(errno);
	/* Between our look and the rename the claim may have changed hands: give a live
	 * shard's back. */
	if (read_owner(aside, owner, sizeof(owner)) == 0 && strcmp(owner, dead) != 0) {
		if (link(aside, path) == -1)
			log_warn("cannot give back the claim %s", path);
		(void)unlink(aside);
		return 0;
	}
	(void)unlink(aside);
	return orch_claim_take(run_dir, task_id, shard, host);
}

int
orch_claim_release(const char *run_dir, const char *task_id, const char *shard)
{
	char	path[PATH_MAX], owner[ORCH_SHARD_ID_MAX];
	int	rc;

	if ((rc = claim_path(path, sizeof(path), run_dir, task_id)) < 0)
		return rc;
	if (read_owner(path, owner, sizeof(owner)) < 0 || strcmp(owner, shard) != 0)
		return 0;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -kb_errno_to_err(errno);
}

int
orch_claims_clear(const char *run_dir)
{
	char		 dir[PATH_MAX], path[PATH_MAX];
	DIR		*d;
	struct dirent	*e;
	int		 n = 0;

	if (rd_run_file(dir, sizeof(dir), run_dir, RD_CLAIMS_DIR) < 0 || (d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (unlink(path) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* ------------------------------------------------------------- liveness */

struct orch_shard_watch *
orch_shard_watch_new(const char *run_dir, const char *self, long timeout_s)
{
	struct orch_shard_watch *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	snprintf(w->run_dir, sizeof(w->run_dir), "%s", run_dir);
	snprintf(w->self, sizeof(w->self), "%s", self);
	w->timeout_ms = (int64_t)timeout_s * 1000;
	return w;
}

void
orch_shard_watch_free(struct orch_shard_watch *w)
{
	if (w == NULL)
		return;
	free(w->seen);
	free(w);
}

static struct shard_seen *
seen_of(struct orch_shard_watch *w, const char *id, int64_t now)
{
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->seen[i].id, id) == 0)
			return &w->seen[i];
	if (w->n == w->cap) {
		size_t		   cap = w->cap ? w->cap * 2 : 16;
		struct shard_seen *s = realloc(w->seen, cap * sizeof(*s));

		if (s == NULL)
			return NULL;
		w->seen = s;
		w->cap = cap;
	}
	memset(&w->seen[w->n], 0, sizeof(w->seen[0]));
	snprintf(w->seen[w->n].id, sizeof(w->seen[0].id), "%s", id);
	w->seen[w->n].beat = -2;	/* not read yet: the first read counts as a change */
	w->seen[w->n].changed_ms = now;
	return &w->seen[w->n++];
}

int
orch_shard_watch_look(struct orch_shard_watch *w)
{
	char		 dir[PATH_MAX], path[PATH_MAX];
	DIR		*d;
	struct dirent	*e;
	int64_t		 now = kb_mono_ms();

	if (rd_run_file(dir, sizeof(dir), w->run_dir, RD_SHARDS_DIR) < 0 || (d = opendir(dir)) == NULL)
		return 0;
	for (size_t i = 0; i < w->n; i++)
		w->seen[i].present = false;
	while ((e = readdir(d)) != NULL) {
		struct shard_seen	*s;
		json_t			*info;
		long long		 beat;
		const char		*status;

		if (e->d_name[0] == '.' || strcmp(e->d_name, w->self) == 0 ||
		    strlen(e->d_name) >= ORCH_SHARD_ID_MAX ||
		    rd_shard_file(path, sizeof(path), w->run_dir, e->d_name, RD_RUN_JSON) < 0 ||
		    (s = seen_of(w, e->d_name, now)) == NULL)
			continue;
		s->present = true;
		info = json_load_file(path, 0, NULL);
		beat = json_is_integer(json_object_get(info, "beat")) ?
		       (long long)json_integer_value(json_object_get(info, "beat")) : -1;
		status = json_string_value(json_object_get(info, "status"));
		s->ended = status != NULL && strcmp(status, "running") != 0;
		if (beat != s->beat) {
			s->beat = beat;
			s->changed_ms = now;
		}
		json_decref(info);
	}
	closedir(d);
	return 0;
}

bool
orch_shard_watch_dead(struct orch_shard_watch *w, const char *id)
{
	int64_t now = kb_mono_ms();

	if (strcmp(id, w->self) == 0)
		return false;
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->seen[i].id, id) == 0)
			return w->seen[i].ended || now - w->seen[i].changed_ms >= w->timeout_ms;
	/* A claim of a shard with no folder at all: watched from now on. */
	(void)seen_of(w, id, now);
	return false;
}

int
orch_shard_watch_ndead(struct orch_shard_watch *w)
{
	int n = 0;

	for (size_t i = 0; i < w->n; i++)
		n += orch_shard_watch_dead(w, w->seen[i].id);
	return n;
}
