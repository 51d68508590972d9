/* util.c: time, hashing, small strings, durable file writes, the data home. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <elf.h>
#include <ftw.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/base.h"
#include "base/banned.h"

int64_t
kb_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
kb_mono_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
kb_iso8601(int64_t ms, char out[32])
{
	time_t		secs = (time_t)(ms / 1000);
	struct tm	tm;
	size_t	n;

	gmtime_r(&secs, &tm);
	n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(((ms % 1000) + 1000) % 1000) % 1000u);
}

void
kb_sha256_hex(const void *data, size_t n, char out[65])
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	mdlen = 0;
	static const char hex[] = "0123456789abcdef";

	EVP_Digest(data, n, md, &mdlen, EVP_sha256(), NULL);
	for (unsigned int i = 0; i < mdlen && i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

/* dl_iterate_phdr's first object is the executable: its PT_NOTE segments, searched for
 * the GNU build id (name "GNU", type NT_GNU_BUILD_ID), written out as hex. */
struct build_id_search {
	char	*out;
	size_t	 n;
	int	 rc;
};

static int
build_id_of_executable(struct dl_phdr_info *info, size_t size, void *arg)
{
	static const char	 hex[] = "0123456789abcdef";
	struct build_id_search	*b = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
			const unsigned char *name = p + sizeof(*nh);
			const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);

			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz > 0 &&
			    2 * (size_t)nh->n_descsz < b->n) {
				for (unsigned k = 0; k < nh->n_descsz; k++) {
					b->out[2 * k] = hex[desc[k] >> 4];
					b->out[2 * k + 1] = hex[desc[k] & 15];
				}
				b->out[2 * nh->n_descsz] = '\0';
				b->rc = 0;
				return 1;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1;	/* the executable alone */
}

int
kb_self_build_id(char *out, size_t n)
{
	struct build_id_search	b = { out, n, -KB_ENOENT };

	(void)dl_iterate_phdr(build_id_of_executable, &b);
	return b.rc;
}

uint64_t
kb_fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char	*p = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

char *
kb_strdup(const char *s)
{
	char	*p;

	if (s == NULL)
		return NULL;
	if ((p = strdup(s)) == NULL)
		abort();
	return p;
}

char *
kb_asprintf(const char *fmt, ...)
{
	va_list	ap;
	char	*p;
	int	n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return p;
}

int
kb_parse_int(const char *s, long lo, long hi, long *out)
{
	char	*end;
	long	 v;

	if (s == NULL || *s == '\0')
		return -KB_EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -KB_EINVAL;
	*out = v;
	return 0;
}

/* ---------------------------------------------------------------- files */

int
kb_mkdir_p(const char *path, mode_t mode)
{
	char	tmp[PATH_MAX];
	size_t	len = strlen(path);

	if (len == 0 || len >= sizeof(tmp))
		return -KB_EINVAL;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) == -1 && errno != EEXIST)
			return -kb_errno_to_err(errno);
		*p = '/';
	}
	if (mkdir(tmp, mode) == -1 && errno != EEXIST)
		return -kb_errno_to_err(errno);
	return 0;
}

/* nftw has no argument pointer: the first failure of this thread's walk. */
static _Thread_local int	rmtree_err;

static int
rmtree_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) == -1 && errno != ENOENT &&
	    rmtree_err == 0)
		rmtree_err = errno;
	return 0;
}

int
kb_rmtree(const char *path)
{
	rmtree_err = 0;
	if (nftw(path, rmtree_one, 16, FTW_DEPTH | FTW_PHYS) == -1 && errno != ENOENT &&
	    rmtree_err == 0)
		rmtree_err = errno;
	return rmtree_err != 0 ? -kb_errno_to_err(rmtree_err) : 0;
}

int
kb_write_all(int fd, const void *data, size_t n)
{
	const char	*p = data;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
fsync_dir_of(const char *path)
{
	char	tmp[PATH_MAX];
	int	fd, rc = 0;
	size_t	len = strlen(path);

	if (len >= sizeof(tmp))
		return -KB_EINVAL;
	memcpy(tmp, path, len + 1);
	if ((fd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -kb_errno_to_err(errno);
	if (fsync(fd) == -1 && errno != EINVAL)
		rc = -kb_errno_to_err(errno);
	close(fd);
	return rc;
}

/* "x.tmp.<digits>" with a pid other than ours. */
static bool
stale_atomic_tmp(const char *name)
{
	const char	*p = strstr(name, ".tmp.");
	char		*end;
	long		 pid;

	while (p != NULL && strstr(p + 1, ".tmp.") != NULL)
		p = strstr(p + 1, ".tmp.");
	if (p == NULL || p == name || p[5] == '\0')
		return false;
	pid = strtol(p + 5, &end, 10);
	return *end == '\0' && pid > 0 && pid != (long)getpid();
}

int
kb_sweep_atomic_tmp(const char *dir)
{
	DIR		*d;
	struct dirent	*e;
	int		 n = 0;

	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -kb_errno_to_err(errno);
	while ((e = readdir(d)) != NULL) {
		if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
			continue;
		if (!stale_atomic_tmp(e->d_name))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int
kb_write_atomic(const char *path, const void *data, size_t n)
{
	char	tmp[PATH_MAX];
	int	fd, saved, rc;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return -KB_EINVAL;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1)
		return -kb_errno_to_err(errno);
	if (kb_write_all(fd, data, n) == -1 || fsync(fd) == -1)
		goto out_unlink;
	if (close(fd) == -1) {
		fd = -1;
		goto out_unlink;
	}
	fd = -1;
	kb_crashpoint("atomic-before-rename");
	if (rename(tmp, path) == -1)
		goto out_unlink;
	return fsync_dir_of(path);

out_unlink:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlink(tmp);
	rc = -kb_errno_to_err(saved);
	errno = saved;
	return rc;
}

int
kb_write_atomic_json(const char *path, json_t *obj)
{
	char	*text;
	int	 rc;

	if ((text = json_dumps(obj, JSON_INDENT(2) | JSON_SORT_KEYS)) == NULL)
		return -KB_ENOMEM;
	{
		size_t	n = strlen(text);
		char	*withnl = malloc(n + 2);

		if (withnl == NULL) {
			free(text);
			return -KB_ENOMEM;
		}
		memcpy(withnl, text, n);
		withnl[n] = '\n';
		withnl[n + 1] = '\0';
		rc = kb_write_atomic(path, withnl, n + 1);
		free(withnl);
	}
	free(text);
	return rc;
}

int
kb_read_file(const char *path, size_t cap, char **out, size_t *len)
{
	struct kb_buf	b = KB_BUF_INIT(cap);
	char		chunk[65536];
	int		fd, rc = 0;
	ssize_t		n;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -kb_errno_to_err(errno);
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -kb_errno_to_err(errno);
			break;
		}
		if (n == 0)
			break;
		if ((rc = kb_buf_append(&b, chunk, (size_t)n)) < 0)
			break;
	}
	close(fd);
	if (rc < 0) {
		kb_buf_clear(&b);
		return rc;
	}
	if (len != NULL)
		*len = b.len;
	*out = kb_buf_steal(&b);
	return 0;
}

int
kb_proc_stat(pid_t pid, struct kb_proc_stat *out)
{
	char		 path[64], buf[1024], *p, *end;
	long long	 f[21];	/* fields 4 (ppid) .. 24 (rss) */
	ssize_t		 n;
	int		 fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) S ppid ...": comm may hold spaces and parens; skip to the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0')
		return -1;
	out->pid = pid;
	out->state = p[2];
	p += 3;
	for (i = 0; i < 21; i++) {
		f[i] = strtoll(p, &end, 10);
		if (end == p)
			return -1;
		p = end;
	}
	out->ppid = (pid_t)f[0];
	out->pgrp = (pid_t)f[1];
	out->start = (uint64_t)f[18];
	out->rss_pages = f[20] > 0 ? f[20] : 0;
	return 0;
}

bool
kb_file_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

bool
kb_fs_nearly_full(const char *path)
{
	struct statvfs	sv;
	unsigned long long avail;

	if (statvfs(path, &sv) == -1)
		return false;
	avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
	return avail < (16ull << 20) || sv.f_bavail < sv.f_blocks / 100;
}

int
kb_path_join(char *out, size_t outlen, const char *a, const char *b)
{
	int	n;

	if (b[0] == '/')
		n = snprintf(out, outlen, "%s", b);
	else
		n = snprintf(out, outlen, "%s%s%s", a, (a[0] && a[strlen(a) - 1] == '/') ? "" : "/", b);
	return n < 0 || (size_t)n >= outlen ? -KB_ETOOBIG : 0;
}

int
kb_which(const char *name, char *out, size_t outlen)
{
	const char	*path = getenv("PATH");
	char		 dir[PATH_MAX];

	for (const char *p = path != NULL ? path : ""; *p != '\0';) {
		size_t n = strcspn(p, ":");

		if (n > 0 && n < sizeof(dir) && p[0] == '/') {
			memcpy(dir, p, n);
			dir[n] = '\0';
			if (kb_path_join(out, outlen, dir, name) == 0 && access(out, X_OK) == 0)
				return 0;
		}
		p += n + (p[n] == ':');
	}
	return -KB_ENOENT;
}

const char *
kb_home(void)
{
	const char *h = getenv("KFORGE_HOME");

	return h != NULL && *h != '\0' ? h : KFORGE_SOURCE_DIR;
}

void
kb_config_clear(struct kb_config *c)
{
	char **strings[] = {
		&c->name, &c->problems.dir, &c->problems.dir_at, &c->problems.levels_at,
		&c->problems.ids_at, &c->problems.subset, &c->problems.exclude,
		&c->problems.subset_at, &c->problems.exclude_at, &c->llm.provider, &c->llm.base_url, &c->llm.model,
		&c->llm.api_key_env, &c->llm.replay_dir, &c->refinement.prompt,
		&c->refinement.prompts_dir, &c->refinement.strategy, &c->eval.device, &c->eval.precision,
		&c->eval.arch_list, &c->eval.inputs, &c->eval.format, &c->eval.torch_ops,
		&c->eval.timing, &c->eval.backend, &c->eval.speedup, &c->eval.timing_preset,
		&c->runner.python,
		&c->runner.user, &c->runner.sandbox,
		&c->llm.anthropic_version, &c->llm.reasoning_effort, &c->cluster.engine,
		&c->cluster.partition, &c->cluster.account, &c->cluster.gres, &c->cluster.mem,
		&c->cluster.time_limit, &c->cache.dir,
	};

	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		free(*strings[i]);
		*strings[i] = NULL;
	}
	for (char **a = c->llm.command; a != NULL && *a != NULL; a++)
		free(*a);
	free(c->llm.command);
	for (char **a = c->cluster.sbatch_args; a != NULL && *a != NULL; a++)
		free(*a);
	free(c->cluster.sbatch_args);
	memset(c, 0, sizeof(*c));
}

bool
kb_json_has_string(const json_t *array, const char *s)
{
	size_t	 i;
	json_t	*v;

	json_array_foreach(array, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}
