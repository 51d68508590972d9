/*
 * tasks.c: the task list of a config: every problem file level{N}/{id}_{Name}.py under
 * problems.dir whose level and id are selected, times problems.samples, in (level, id,
 * sample) order. Files that do not look like {id}_{Name}.py (README, __init__.py) are
 * not problems and are passed over.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "orchestrator/config_int.h"
#include "orchestrator/orchestrator.h"
#include "base/banned.h"

#define TASKS_MAX	100000	/* problems x samples; a kb_task is ~4.5 KiB */
#define STEM_MAX	(sizeof(((struct kb_task *)0)->problem_name) - 1)
#define LEVELS_LISTED_MAX 16	/* level directories named in a message */
#define NAME_CHARS	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define KEY_FILE_MAX	(4u << 20)	/* largest problems.subset or problems.exclude file */
#define KEY_MAX		(sizeof(((struct kb_task *)0)->problem_key) - 1)

struct problem {
	int	 level;
	long	 id;
	char	 stem[STEM_MAX + 1];	/* file name without ".py" */
};

struct problem_list {
	struct problem	*v;
	int		 n, alloc;
	/* what the selected levels hold, whatever the ids: for saying why none matched */
	int		 level_dirs, files;
	long		 min_id, max_id;
};

static int __attribute__((format(printf, 3, 4)))
tasks_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	for (char *p = err; errlen > 0 && *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return -KB_ECONFIG;
}

/* An error about a config key: "x.yaml:2:14: problems.dir: ...", named where the loader
 * says the key was set (at is NULL in a hand-made config). */
static int
key_verr(char *err, size_t errlen, const char *at, const char *key, const char *fmt,
	 va_list ap)
{
	char	msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	return tasks_err(err, errlen, "%s%s%s: %s", at != NULL ? at : "", at != NULL ? ": " : "",
			 key, msg);
}

static int __attribute__((format(printf, 5, 6)))
key_err(char *err, size_t errlen, const char *at, const char *key, const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = key_verr(err, errlen, at, key, fmt, ap);
	va_end(ap);
	return rc;
}

static int __attribute__((format(printf, 4, 5)))
dir_err(const struct kb_config *c, char *err, size_t errlen, const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = key_verr(err, errlen, c->problems.dir_at, "problems.dir", fmt, ap);
	va_end(ap);
	return rc;
}

bool
orch_problem_key_valid(const char *s)
{
	size_t	level = s[0] == 'L' ? strspn(s + 1, "0123456789") : 0, id;

	if (level == 0 || level > 9 || s[1 + level] != '_')
		return false;
	s += 2 + level;
	id = strspn(s, "0123456789");
	return id > 0 && id <= 9 && s[id] == '_' && s[id + 1] != '\0' &&
	       strspn(s, NAME_CHARS) == strlen(s) && strlen(s) + 2 + level <= KEY_MAX;
}

/* For {id}_{Name}.py, the length of the leading id; 0 when name is not a problem file. */
static size_t
problem_id_digits(const char *name)
{
	size_t	digits = strspn(name, "0123456789"), len = strlen(name);

	if (digits == 0 || name[digits] != '_' || len < digits + 5 ||
	    strcmp(name + len - 3, ".py") != 0)
		return 0;
	return digits;
}

static int
problem_cmp(const void *a, const void *b)
{
	const struct problem *x = a, *y = b;

	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return strcmp(x->stem, y->stem);
}

/* Checks one candidate file of a level directory and adds it when it is selected. */
static int
add_problem(const struct kb_config *c, int level, const char *dir, int dfd, const char *name,
	    struct problem_list *l, char *err, size_t errlen)
{
	size_t		digits = problem_id_digits(name), stemlen;
	struct stat	st;
	long		id;

	if (digits == 0)
		return 0;
	if (digits > 9)
		return dir_err(c, err, errlen, "'%s/%s': problem id has more than 9 digits",
			       dir, name);
	id = strtol(name, NULL, 10);
	if (l->files++ == 0 || id < l->min_id)
		l->min_id = id;
	if (id > l->max_id)
		l->max_id = id;
	if (!orch_config_id_selected(c, id))
		return 0;
	stemlen = strlen(name) - 3;
	if (stemlen > STEM_MAX)
		return dir_err(c, err, errlen, "'%s/%s': problem name longer than %zu characters",
			       dir, name, STEM_MAX);
	if (strspn(name, NAME_CHARS) < stemlen)
		return dir_err(c, err, errlen, "'%s/%s': problem names may only hold "
			       "A-Z a-z 0-9 . _ -", dir, name);
	if (fstatat(dfd, name, &st, 0) == -1)
		return dir_err(c, err, errlen, "cannot stat '%s/%s': %s", dir, name,
			       strerror(errno));
	if (!S_ISREG(st.st_mode))
		return dir_err(c, err, errlen, "'%s/%s': not a regular file", dir, name);
	if (l->n == TASKS_MAX)
		return dir_err(c, err, errlen, "more than %d problems selected", TASKS_MAX);
	if (l->n == l->alloc) {
		int		 alloc = l->alloc ? 2 * l->alloc : 64;
		struct problem	*v = realloc(l->v, (size_t)alloc * sizeof(*v));

		if (v == NULL) {
			snprintf(err, errlen, "out of memory");
			return -KB_ENOMEM;
		}
		l->v = v;
		l->alloc = alloc;
	}
	l->v[l->n].level = level;
	l->v[l->n].id = id;
	memcpy(l->v[l->n].stem, name, stemlen);
	l->v[l->n].stem[stemlen] = '\0';
	l->n++;
	return 0;
}

static int
scan_level(const struct kb_config *c, int level, struct problem_list *l, char *err,
	   size_t errlen)
{
	char		 dir[4096], sub[16];
	struct dirent	*de;
	DIR		*d;
	int		 rc = 0;

	snprintf(sub, sizeof(sub), "level%d", level);
	if (kb_path_join(dir, sizeof(dir), c->problems.dir, sub) < 0)
		return dir_err(c, err, errlen, "'%s': path too long", c->problems.dir);
	if ((d = opendir(dir)) == NULL) {
		if (errno == ENOENT)	/* a level this problem set does not have */
			return 0;
		return dir_err(c, err, errlen, "cannot open '%s': %s", dir, strerror(errno));
	}
	l->level_dirs++;
	for (;;) {
		errno = 0;
		if ((de = readdir(d)) == NULL) {
			if (errno != 0)
				rc = dir_err(c, err, errlen, "cannot read '%s': %s", dir,
					     strerror(errno));
			break;
		}
		if ((rc = add_problem(c, level, dir, dirfd(d), de->d_name, l, err, errlen)) < 0)
			break;
	}
	closedir(d);
	return rc;
}

/* Fills the tasks of l (sorted, without duplicate ids) into a new array. The paths live
 * in the same allocation, after the array: one free() releases everything, and the table
 * stays small, since every forked worker maps all of it. */
static int
make_tasks(const struct kb_config *c, const struct problem_list *l, struct kb_task **out,
	   char *err, size_t errlen)
{
	struct kb_task	*t;
	int		 samples = c->problems.samples, k = 0;
	size_t		 ntasks, pool = 0;
	char		*next, *end;

	if (samples < 1 || (long)l->n * samples > TASKS_MAX)
		return tasks_err(err, errlen, "problems: %d problems x %d samples is not in "
				 "1..%d tasks", l->n, samples, TASKS_MAX);
	ntasks = (size_t)l->n * (size_t)samples;
	for (int i = 0; i < l->n; i++) {
		int m = snprintf(NULL, 0, "%s/level%d/%s.py", c->problems.dir, l->v[i].level,
				 l->v[i].stem);

		if (m < 0 || m >= PATH_MAX)
			return dir_err(c, err, errlen, "'%s/level%d/%s.py': path too long",
				       c->problems.dir, l->v[i].level, l->v[i].stem);
		pool += ((size_t)m + 1) * (size_t)samples;
	}
	if ((t = calloc(1, ntasks * sizeof(*t) + pool)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -KB_ENOMEM;
	}
	next = (char *)(t + ntasks);
	end = next + pool;
	for (int i = 0; i < l->n; i++) {
		const struct problem *p = &l->v[i];

		for (int s = 0; s < samples; s++, k++) {
			int	m;

			snprintf(t[k].problem_name, sizeof(t[k].problem_name), "%s", p->stem);
			snprintf(t[k].problem_key, sizeof(t[k].problem_key), "L%d_%s", p->level,
				 p->stem);
			snprintf(t[k].id, sizeof(t[k].id), "L%d_%s_s%d", p->level, p->stem, s);
			/* The exact room left (not PATH_MAX): the paths were sized above,
			 * and _FORTIFY_SOURCE checks the bound against the allocation. */
			m = snprintf(next, (size_t)(end - next), "%s/level%d/%s.py",
				     c->problems.dir, p->level, p->stem);
			t[k].problem_path = next;
			next += m + 1;
			t[k].level = p->level;
			t[k].problem_id = p->id;
			t[k].sample = s;
		}
	}
	*out = t;
	return 0;
}

/* ------------------------------------------------- problems.subset, .exclude */

/* A set of problem keys, each with where it was named ("subset.txt:3", or the config's
 * place for problems.exclude's list), sorted for lookup. */
struct key_entry {
	char	key[KEY_MAX + 1];
	char	at[PATH_MAX + 24];
	bool	used;
};

struct key_set {
	struct key_entry	*v;
	int			 n, alloc;
};

static int
key_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct key_entry *)a)->key, ((const struct key_entry *)b)->key);
}

static struct key_entry *
key_find(const struct key_set *ks, const char *key)
{
	struct key_entry	probe;

	if (ks->n == 0 || strlen(key) > KEY_MAX)
		return NULL;
	snprintf(probe.key, sizeof(probe.key), "%s", key);
	return bsearch(&probe, ks->v, (size_t)ks->n, sizeof(*ks->v), key_entry_cmp);
}

/* Adds key, named at `at`: a key must have the form of one and name a problem file of
 * problems.dir; one named twice is kept once. */
static int
key_add(const struct kb_config *c, struct key_set *ks, const char *key, const char *at,
	char *err, size_t errlen)
{
	char		 path[PATH_MAX];
	const char	*stem;
	long		 level;
	struct stat	 st;

	if (!orch_problem_key_valid(key))
		return tasks_err(err, errlen, "%s: '%.*s' is not a problem key (L{level}_{id}_"
				 "{Name}, like L1_1_ReLU)", at, 160, key);
	level = strtol(key + 1, NULL, 10);
	stem = strchr(key, '_') + 1;
	if (level < 1 || level > KB_MAX_LEVELS ||
	    snprintf(path, sizeof(path), "%s/level%ld/%s.py", c->problems.dir, level, stem) >=
	    (int)sizeof(path) || stat(path, &st) == -1 || !S_ISREG(st.st_mode))
		return tasks_err(err, errlen, "%s: unknown problem key %s: '%s' has no file "
				 "level%ld/%s.py", at, key, c->problems.dir, level, stem);
	for (int i = 0; i < ks->n; i++)
		if (strcmp(ks->v[i].key, key) == 0)
			return 0;
	if (ks->n == ks->alloc) {
		int			 alloc = ks->alloc ? 2 * ks->alloc : 64;
		struct key_entry	*v = realloc(ks->v, (size_t)alloc * sizeof(*v));

		if (v == NULL || alloc > TASKS_MAX) {
			free(v == ks->v ? NULL : v);
			return tasks_err(err, errlen, "%s: more than %d keys", at, TASKS_MAX);
		}
		ks->v = v;
		ks->alloc = alloc;
	}
	snprintf(ks->v[ks->n].key, sizeof(ks->v[ks->n].key), "%s", key);
	snprintf(ks->v[ks->n].at, sizeof(ks->v[ks->n].at), "%s", at);
	ks->v[ks->n++].used = false;
	return 0;
}

/* Calls fn on every key of a key file: one a line, '#' starts a comment, blank lines
 * and surrounding white space are ignored; at is "FILE:LINE". */
static int
keys_file_read(const char *path, int (*fn)(const char *key, const char *at, void *arg),
		    void *arg, char *err, size_t errlen)
{
	char	*text, *line, at[PATH_MAX + 24];
	size_t	 len;
	int	 rc, lineno = 0;

	if ((rc = kb_read_file(path, KEY_FILE_MAX, &text, &len)) < 0)
		return tasks_err(err, errlen, "cannot read '%s': %s", path,
				 rc == -KB_ETOOBIG ? "larger than 4 MiB" : strerror(errno));
	if (strlen(text) != len) {
		free(text);
		return tasks_err(err, errlen, "%s: holds a NUL byte: not a list of problem keys",
				 path);
	}
	rc = 0;
	for (char *p = text; rc == 0 && p != NULL; p = line) {
		char	*end;

		lineno++;
		if ((line = strchr(p, '\n')) != NULL)
			*line++ = '\0';
		if ((end = strchr(p, '#')) != NULL)	/* a comment */
			*end = '\0';
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		for (end = p + strlen(p); end > p && (end[-1] == ' ' || end[-1] == '\t' ||
						       end[-1] == '\r'); end--)
			end[-1] = '\0';
		if (*p == '\0')
			continue;
		snprintf(at, sizeof(at), "%s:%d", path, lineno);
		rc = fn(p, at, arg);
	}
	free(text);
	return rc;
}

struct key_load {
	const struct kb_config	*c;
	struct key_set		*ks;
	char			*err;
	size_t			 errlen;
};

static int
key_load_one(const char *key, const char *at, void *arg)
{
	struct key_load	*kl = arg;

	return key_add(kl->c, kl->ks, key, at, kl->err, kl->errlen);
}

/* The keys of problems.subset (a file) or problems.exclude (a file, or keys joined by
 * ','), sorted. */
static int
keys_load(const struct kb_config *c, const char *value, const char *at, const char *name,
	  struct key_set *ks, char *err, size_t errlen)
{
	struct key_load	 kl = { c, ks, err, errlen };
	char		 where[PATH_MAX + 24], *copy, *save = NULL;
	int		 rc = 0;

	if (value[0] == '/') {
		rc = keys_file_read(value, key_load_one, &kl, err, errlen);
		if (rc == 0 && ks->n == 0)
			return key_err(err, errlen, at, name, "'%s' names no problem key", value);
	} else {
		snprintf(where, sizeof(where), "%s%s%s", at != NULL ? at : "", at != NULL ?
			 ": " : "", name);
		copy = kb_strdup(value);
		for (char *k = strtok_r(copy, ",", &save); k != NULL && rc == 0;
		     k = strtok_r(NULL, ",", &save))
			rc = key_add(c, ks, k, where, err, errlen);
		free(copy);
	}
	if (rc == 0 && ks->n > 1)
		qsort(ks->v, (size_t)ks->n, sizeof(*ks->v), key_entry_cmp);
	return rc;
}

/* Keeps the problems of l that problems.subset names (when set) and problems.exclude
 * does not. A subset key that problems.levels or problems.ids leaves out is an error,
 * so that a subset never shrinks without a word. */
static int
select_keys(const struct kb_config *c, struct problem_list *l, char *err, size_t errlen)
{
	struct key_set	 subset = { 0 }, exclude = { 0 };
	char		 key[KEY_MAX + 32], levels[64];
	int		 rc = 0, kept = 0;
	bool		 has_subset = c->problems.subset != NULL && c->problems.subset[0] != '\0';

	if (has_subset && (rc = keys_load(c, c->problems.subset, c->problems.subset_at,
					  "problems.subset", &subset, err, errlen)) < 0)
		goto out;
	if (c->problems.exclude != NULL && c->problems.exclude[0] != '\0' &&
	    (rc = keys_load(c, c->problems.exclude, c->problems.exclude_at, "problems.exclude",
			    &exclude, err, errlen)) < 0)
		goto out;
	for (int i = 0; i < l->n; i++) {
		struct key_entry	*e;

		snprintf(key, sizeof(key), "L%d_%s", l->v[i].level, l->v[i].stem);
		if (has_subset && (e = key_find(&subset, key)) == NULL)
			continue;
		if (has_subset)
			e->used = true;
		if (key_find(&exclude, key) != NULL)
			continue;
		l->v[kept++] = l->v[i];
	}
	for (int i = 0; i < subset.n; i++)
		if (!subset.v[i].used) {
			orch_config_levels_text(c, levels, sizeof(levels));
			rc = tasks_err(err, errlen, "%s: %s is not selected by problems.levels %s "
				       "and problems.ids", subset.v[i].at, subset.v[i].key, levels);
			goto out;
		}
	l->n = kept;
	if (kept == 0)
		rc = key_err(err, errlen, c->problems.exclude_at, "problems.exclude",
			     "excludes every selected problem");
out:
	free(subset.v);
	free(exclude.v);
	return rc;
}

static int
level_cmp(const void *a, const void *b)
{
	long	x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* "level1/, level2/": the level directories problems.dir has ("" when none). */
static void
level_dirs_text(const struct kb_config *c, char *out, size_t len)
{
	long		 found[LEVELS_LISTED_MAX];
	struct dirent	*de;
	struct stat	 st;
	size_t		 used = 0;
	int		 n = 0;
	DIR		*d;

	out[0] = '\0';
	if ((d = opendir(c->problems.dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL && n < LEVELS_LISTED_MAX) {
		const char	*digits = de->d_name + strlen("level");
		long		 level;

		if (strncmp(de->d_name, "level", strlen("level")) != 0 ||
		    kb_parse_int(digits, 0, 999999999, &level) < 0 ||
		    strspn(digits, "0123456789") != strlen(digits) ||
		    fstatat(dirfd(d), de->d_name, &st, 0) == -1 || !S_ISDIR(st.st_mode))
			continue;
		found[n++] = level;
	}
	closedir(d);
	qsort(found, (size_t)n, sizeof(found[0]), level_cmp);
	for (int i = 0; i < n && used < len; i++) {
		int	m = snprintf(out + used, len - used, "%slevel%ld/", i ? ", " : "", found[i]);

		used += m > 0 ? (size_t)m : 0;
	}
}

/* Why nothing was selected, said of the key most likely wrong: problems.ids when the
 * selected levels hold problems, problems.levels when problems.dir has other levels,
 * else problems.dir. */
static int
none_selected(const struct kb_config *c, const struct problem_list *l, char *err,
	      size_t errlen)
{
	char	levels[64], ids[KB_MAX_RANGES * 24 + 8], others[LEVELS_LISTED_MAX * 24];

	orch_config_levels_text(c, levels, sizeof(levels));
	if (l->files > 0) {
		orch_config_ids_text(c, ids, sizeof(ids));
		return key_err(err, errlen, c->problems.ids_at, "problems.ids", "no problem at "
			       "levels %s in '%s' has an id in %s (the ids there run from %ld to "
			       "%ld)", levels, c->problems.dir, ids, l->min_id, l->max_id);
	}
	if (l->level_dirs > 0)
		return dir_err(c, err, errlen, "no problem files ({id}_{Name}.py) in '%s' at "
			       "levels %s", c->problems.dir, levels);
	level_dirs_text(c, others, sizeof(others));
	if (others[0] != '\0')
		return key_err(err, errlen, c->problems.levels_at, "problems.levels", "'%s' has "
			       "no directory for levels %s (it has %s)", c->problems.dir, levels,
			       others);
	return dir_err(c, err, errlen, "'%s' has no level directories (level1/, level2/, ...): "
		       "name the root of a KernelBench-format problem set (KernelBench/"
		       "KernelBench in a KernelBench checkout)", c->problems.dir);
}

int
orch_tasks_list(const struct kb_config *c, struct kb_task **out, int *n, char *err,
		size_t errlen)
{
	struct problem_list	 l = { 0 };
	DIR			*root;
	int			 rc = 0;

	*out = NULL;
	*n = 0;
	if ((root = opendir(c->problems.dir)) == NULL)
		return dir_err(c, err, errlen, "cannot open '%s': %s", c->problems.dir,
			       strerror(errno));
	closedir(root);
	for (int i = 0; i < c->problems.nlevels && rc == 0; i++)
		rc = scan_level(c, c->problems.levels[i], &l, err, errlen);
	if (rc < 0)
		goto out;
	if (l.n > 1)
		qsort(l.v, (size_t)l.n, sizeof(*l.v), problem_cmp);
	for (int i = 1; i < l.n; i++)
		if (l.v[i].level == l.v[i - 1].level && l.v[i].id == l.v[i - 1].id) {
			rc = dir_err(c, err, errlen, "two problems with id %ld in '%s/level%d': "
				     "'%s.py' and '%s.py'", l.v[i].id, c->problems.dir,
				     l.v[i].level, l.v[i - 1].stem, l.v[i].stem);
			goto out;
		}
	if (l.n == 0) {
		rc = none_selected(c, &l, err, errlen);
		goto out;
	}
	if ((rc = select_keys(c, &l, err, errlen)) < 0)
		goto out;
	if ((rc = make_tasks(c, &l, out, err, errlen)) == 0)
		*n = l.n * c->problems.samples;
out:
	free(l.v);
	return rc;
}
