/*
 * statcache.c: what `kforge status` took from each task's trajectory, kept in the run's
 * status.cache for the next status, so that a status reads only the logs that changed
 * since the last one. At 10,000 tasks every status parsed 160,000 records (0.9-1.3 s on
 * the 2-core machine, 85% of it in jansson and malloc); a finished run's logs no longer
 * change, and a running one's mostly do not between two looks.
 *
 * The logs stay the truth: an entry holds for as long as its task's trajectory.jsonl is
 * the same file (device and inode) of the same size and modification time, stat'ed
 * before the log was read (a record appended while it was read makes the entry stale,
 * never wrong), and the cache as a whole for as long as the kforge that wrote it runs
 * (the executable's build id: a kforge that summarises differently finds none of its
 * entries). What an entry holds is the caller's (views.c): a JSON value per task.
 *
 * The file: a header line {"status_cache": 1, "build": HEX, "tasks": N}, then one line a
 * task in the run's task order, {"id", "log": [dev, ino, size, mtime_s, mtime_ns], "v"}.
 * Written whole (kb_write_atomic) when an entry changed, by whoever may write the run
 * directory; anything unreadable in it is as if absent. Entries are looked up by index,
 * each by one thread: the lines are found before the threads start and parsed by the
 * thread that needs them.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report_int.h"
#include "base/banned.h"

#define STATCACHE_FORMAT	1
#define STATCACHE_CAP		(1u << 30)	/* 100,000 tasks are about 40 MB */

struct statcache_slot {
	const char	*line;		/* in the loaded file; NULL: none */
	size_t		 len;
	char		*fresh;		/* a line made by this status, or NULL */
};

struct rpt_statcache {
	const struct rpt_run	*run;
	char			 build[129];
	char			*text;		/* the loaded file */
	struct statcache_slot	*slots;		/* run->ntasks of them */
	atomic_bool		 changed;
	bool			 usable;	/* a build id to key the file by */
};

/* The header names this build and the run's task count, or the file is not ours. */
static bool
header_matches(const struct rpt_statcache *c, const char *line, size_t len)
{
	json_t	*h = json_loadb(line, len, 0, NULL);
	bool	 ok = json_integer_value(json_object_get(h, "status_cache")) == STATCACHE_FORMAT &&
		      json_integer_value(json_object_get(h, "tasks")) == c->run->ntasks &&
		      json_is_string(json_object_get(h, "build")) &&
		      strcmp(json_string_value(json_object_get(h, "build")), c->build) == 0;

	json_decref(h);
	return ok;
}

static void
load(struct rpt_statcache *c)
{
	char	 path[PATH_MAX];
	size_t	 len;
	char	*p, *end, *nl;
	int	 i = 0;

	if (rd_run_file(path, sizeof(path), c->run->dir, RD_STATUS_CACHE) < 0 ||
	    kb_read_file(path, STATCACHE_CAP, &c->text, &len) < 0)
		return;
	end = c->text + len;
	if ((nl = memchr(c->text, '\n', len)) == NULL ||
	    !header_matches(c, c->text, (size_t)(nl - c->text)))
		return;
	for (p = nl + 1; p < end && i < c->run->ntasks; p = nl + 1, i++) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			break;	/* a last line without its end: not written whole */
		c->slots[i].line = p;
		c->slots[i].len = (size_t)(nl - p);
	}
}

struct rpt_statcache *
rpt_statcache_open(const struct rpt_run *run)
{
	struct rpt_statcache	*c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->run = run;
	if ((c->slots = calloc((size_t)run->ntasks + 1, sizeof(*c->slots))) == NULL) {
		free(c);
		return NULL;
	}
	atomic_init(&c->changed, false);
	c->usable = kb_self_build_id(c->build, sizeof(c->build)) == 0;
	if (c->usable)
		load(c);
	return c;
}

/* [dev, ino, size, mtime_s, mtime_ns] of task i's log as it is now; NULL where it has
 * none (a task not begun: nothing to keep). */
static json_t *
log_identity(const struct rpt_statcache *c, int i)
{
	char		path[PATH_MAX];
	struct stat	st;

	if (rd_task_file(path, sizeof(path), c->run->dir, c->run->tasks[i].id,
			 RD_TRAJECTORY) < 0 || stat(path, &st) == -1)
		return NULL;
	return json_pack("[I, I, I, I, I]", (json_int_t)st.st_dev, (json_int_t)st.st_ino,
			 (json_int_t)st.st_size, (json_int_t)st.st_mtim.tv_sec,
			 (json_int_t)st.st_mtim.tv_nsec);
}

json_t *
rpt_statcache_get(struct rpt_statcache *c, int i, json_t **ident)
{
	struct statcache_slot	*s = &c->slots[i];
	json_t			*entry, *v = NULL;

	*ident = c->usable ? log_identity(c, i) : NULL;
	if (*ident == NULL || s->line == NULL)
		return NULL;
	entry = json_loadb(s->line, s->len, 0, NULL);
	if (json_is_string(json_object_get(entry, "id")) &&
	    strcmp(json_string_value(json_object_get(entry, "id")), c->run->tasks[i].id) == 0 &&
	    json_equal(json_object_get(entry, "log"), *ident))
		v = json_incref(json_object_get(entry, "v"));
	json_decref(entry);
	return v;
}

void
rpt_statcache_put(struct rpt_statcache *c, int i, json_t *ident, json_t *value)
{
	json_t	*entry;

	if (ident == NULL || value == NULL)
		return;
	entry = json_pack("{s:s, s:O, s:O}", "id", c->run->tasks[i].id, "log", ident, "v",
			  value);
	free(c->slots[i].fresh);
	c->slots[i].fresh = entry != NULL ? json_dumps(entry, JSON_COMPACT) : NULL;
	json_decref(entry);
	if (c->slots[i].fresh != NULL)
		atomic_store(&c->changed, true);
}

/* The whole file anew: the header, then each task's line, this status's or the one
 * loaded ("{}" for a task with neither, which no lookup matches). */
static void
save(struct rpt_statcache *c)
{
	struct kb_buf	 b = KB_BUF_INIT(STATCACHE_CAP);
	char		 path[PATH_MAX];
	int		 rc;

	rc = kb_buf_printf(&b, "{\"status_cache\": %d, \"build\": \"%s\", \"tasks\": %d}\n",
			   STATCACHE_FORMAT, c->build, c->run->ntasks);
	for (int i = 0; rc == 0 && i < c->run->ntasks; i++) {
		const struct statcache_slot *s = &c->slots[i];

		if (s->fresh != NULL)
			rc = kb_buf_append(&b, s->fresh, strlen(s->fresh));
		else if (s->line != NULL)
			rc = kb_buf_append(&b, s->line, s->len);
		else
			rc = kb_buf_append(&b, "{}", 2);
		if (rc == 0)
			rc = kb_buf_append(&b, "\n", 1);
	}
	/* A run directory this user may not write (another's run) keeps no cache. */
	if (rc == 0 && rd_run_file(path, sizeof(path), c->run->dir, RD_STATUS_CACHE) == 0 &&
	    access(c->run->dir, W_OK) == 0)
		(void)kb_write_atomic(path, b.p, b.len);
	kb_buf_clear(&b);
}

void
rpt_statcache_close(struct rpt_statcache *c, bool keep)
{
	if (c == NULL)
		return;
	if (keep && c->usable && atomic_load(&c->changed))
		save(c);
	for (int i = 0; i < c->run->ntasks; i++)
		free(c->slots[i].fresh);
	free(c->slots);
	free(c->text);
	free(c);
}
