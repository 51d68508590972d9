/* test_base.c: base pieces — error table, bounded buffers, atomic writes, and the
 * trajectory log (append, replay, a torn tail dropped and truncated, corrupt records,
 * a seq gap, the read-only reader, dropped bytes kept aside), the crash-point hook and
 * the log's writer hook and the PATH search. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

#include "kb_check.h"

struct seen {
	int	n;
	int64_t	last_seq;
	char	last_event[32];
};

static int
count_cb(const struct kb_tlog_rec *r, void *arg)
{
	struct seen *s = arg;

	s->n++;
	s->last_seq = r->seq;
	snprintf(s->last_event, sizeof(s->last_event), "%s", r->event);
	return 0;
}

static void
append_raw(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	CHECKM(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "raw append");
	close(fd);
}

static off_t
size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void
test_tlog(const char *dir)
{
	char		 path[512];
	struct kb_tlog	*log;
	struct seen	 s = { 0 };
	int64_t		 dropped = -1;
	json_t		*data = json_pack("{s:s, s:i}", "status", "ok", "n", 3);
	off_t		 good;

	snprintf(path, sizeof(path), "%s/t.jsonl", dir);
	CHECKM(kb_tlog_open(&log, path, count_cb, &s, &dropped) == 0, "open new log");
	CHECKM(s.n == 0 && dropped == 0, "new log replays nothing");
	for (int i = 0; i < 5; i++)
		CHECKM(kb_tlog_append(log, "T", i, "GENERATE", "ok", "PRECOMPILE", data) == 0,
		      "append %d", i);
	CHECKM(kb_tlog_append(log, "T", 5, "FEEDBACK", "budget_spent", "DONE", NULL) == 0,
	      "append with NULL data");
	CHECKM(kb_tlog_last_seq(log) == 6, "seq counts appends");
	kb_tlog_close(log);
	good = size_of(path);

	/* A torn tail (a crash mid-write) is dropped and cut off on open. */
	append_raw(path, "{\"seq\":7,\"ts\":\"x\",\"task\":\"T\",\"tu");
	memset(&s, 0, sizeof(s));
	CHECKM(kb_tlog_read(path, count_cb, &s) == 6 && s.n == 6, "reader skips the torn tail");
	CHECKM(size_of(path) > good, "the reader never truncates");
	memset(&s, 0, sizeof(s));
	CHECKM(kb_tlog_open(&log, path, count_cb, &s, &dropped) == 0, "reopen");
	CHECKM(s.n == 6 && s.last_seq == 6 && strcmp(s.last_event, "budget_spent") == 0,
	      "replay sees 6 whole records (saw %d)", s.n);
	CHECKM(dropped > 0 && size_of(path) == good, "torn tail truncated (dropped %lld)",
	      (long long)dropped);
	CHECKM(kb_tlog_append(log, "T", 6, "GENERATE", "ok", "PRECOMPILE", NULL) == 0 &&
	      kb_tlog_last_seq(log) == 7, "append continues the sequence after repair");
	kb_tlog_close(log);

	/* A whole but corrupt line, and a seq gap, end the good prefix too. */
	good = size_of(path);
	append_raw(path, "this is not json\n");
	CHECKM(kb_tlog_open(&log, path, NULL, NULL, &dropped) == 0 && size_of(path) == good &&
	      dropped == 17, "corrupt line dropped");
	kb_tlog_close(log);
	{
		/* What a repair cuts off is kept aside, whole records after a corrupt one too. */
		char	 kept[600], *text = NULL;
		char	 rec8[] = "{\"seq\":8,\"ts\":\"x\",\"task\":\"T\",\"turn\":1,\"from\":\"A\","
				  "\"event\":\"b\",\"to\":\"C\",\"data\":{}}\n";

		snprintf(kept, sizeof(kept), "%s.dropped", path);
		CHECKM(kb_read_file(kept, 1 << 20, &text, NULL) == 0 &&
		      strcmp(text + strlen(text) - 17, "this is not json\n") == 0, "dropped bytes kept");
		free(text);
		unlink(kept);
		append_raw(path, "{\"seq\":8,\"ts\":\"x\",\"task\":\"T\",\"tu\x01rn\":1}\n");
		append_raw(path, rec8);
		CHECKM(kb_tlog_open(&log, path, NULL, NULL, &dropped) == 0 && size_of(path) == good &&
		      kb_tlog_last_seq(log) == 7, "a corrupt record ends the log before whole ones");
		kb_tlog_close(log);
		CHECKM(kb_read_file(kept, 1 << 20, &text, NULL) == 0 && dropped == (int64_t)strlen(text) &&
		      strstr(text, rec8) != NULL, "the whole records after it are kept aside");
		free(text);
	}
	append_raw(path, "{\"seq\":9,\"ts\":\"x\",\"task\":\"T\",\"turn\":1,\"from\":\"A\","
			 "\"event\":\"b\",\"to\":\"C\",\"data\":{}}\n");
	memset(&s, 0, sizeof(s));
	CHECKM(kb_tlog_open(&log, path, count_cb, &s, &dropped) == 0 && s.n == 7 && dropped > 0,
	      "a seq gap ends the log");
	kb_tlog_close(log);

	/* Records round-trip. */
	{
		struct kb_tlog_rec	r;
		const char		*line = "{\"seq\":1,\"ts\":\"2026-11-22T01:02:03.456Z\",\"task\":"
			"\"L1_19_ReLU_s0\",\"turn\":2,\"from\":\"EXECUTE\",\"event\":\"correct\","
			"\"to\":\"PROFILE\",\"data\":{\"speedup\":1.5}}";

		CHECKM(kb_tlog_parse_line(line, strlen(line), &r) == 0, "parse a record");
		CHECKM(r.seq == 1 && r.turn == 2 && strcmp(r.to, "PROFILE") == 0 &&
		      json_real_value(json_object_get(r.data, "speedup")) == 1.5, "fields");
		kb_tlog_rec_clear(&r);
		CHECKM(kb_tlog_parse_line("{\"seq\":0}", 9, &r) < 0, "seq 0 refused");
		CHECKM(kb_tlog_parse_line("[]", 2, &r) < 0, "non-object refused");
	}
	json_decref(data);
}

static void
test_buf(void)
{
	struct kb_buf	b = KB_BUF_INIT(10);
	char		*p;

	CHECKM(kb_buf_append(&b, "12345", 5) == 0 && b.len == 5, "append");
	CHECKM(kb_buf_append(&b, "678901", 6) == -KB_ETOOBIG && b.len == 5, "cap refuses");
	kb_buf_append_trunc(&b, "678901", 6);
	CHECKM(b.len == 10 && b.truncated && strcmp(b.p, "1234567890") == 0, "trunc keeps what fits");
	p = kb_buf_steal(&b);
	CHECKM(b.p == NULL && b.len == 0 && strcmp(p, "1234567890") == 0, "steal");
	free(p);
	CHECKM(kb_buf_printf(&b, "%d-%s", 42, "x") == 0 && strcmp(b.p, "42-x") == 0, "printf");
	CHECKM(kb_buf_printf(&b, "%s", "too long for it") == -KB_ETOOBIG, "printf over cap");
	kb_buf_clear(&b);
}

static void
test_files(const char *dir)
{
	char	path[512], *text = NULL, sha[65];
	size_t	len = 0;

	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	CHECKM(kb_mkdir_p(path, 0755) == 0 && kb_mkdir_p(path, 0755) == 0, "mkdir -p twice");
	snprintf(path, sizeof(path), "%s/a/b/c/file.txt", dir);
	CHECKM(kb_write_atomic(path, "hello", 5) == 0, "atomic write");
	CHECKM(kb_read_file(path, 100, &text, &len) == 0 && len == 5 && strcmp(text, "hello") == 0,
	      "read back");
	free(text);
	CHECKM(kb_read_file(path, 3, &text, &len) == -KB_ETOOBIG, "read cap");
	snprintf(path, sizeof(path), "%s/nope/file", dir);
	CHECKM(kb_write_atomic(path, "x", 1) == -KB_ENOENT, "missing dir is ENOENT");
	/* Debris of writes killed before their rename goes; our own, and look-alikes, stay. */
	{
		const char *const stale[] = { "r.json.tmp.999999", "x.tmp.1" };
		const char *const keep[] = { "file.txt", "y.tmp.", "z.tmp.12a", "w.tmp" };
		char	own[64];
		int	fd;

		snprintf(own, sizeof(own), "v.tmp.%ld", (long)getpid());
		for (size_t i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "%s/a/b/c/%s", dir, stale[i]);
			CHECK((fd = open(path, O_WRONLY | O_CREAT, 0644)) >= 0 && close(fd) == 0);
		}
		for (size_t i = 0; i < 4; i++) {
			snprintf(path, sizeof(path), "%s/a/b/c/%s", dir, i == 0 ? own : keep[i]);
			CHECK((fd = open(path, O_WRONLY | O_CREAT, 0644)) >= 0 && close(fd) == 0);
		}
		snprintf(path, sizeof(path), "%s/a/b/c", dir);
		CHECKM(kb_sweep_atomic_tmp(path) == 2, "two stale temporary files swept");
		for (size_t i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "%s/a/b/c/%s", dir, stale[i]);
			CHECKM(access(path, F_OK) == -1, "%s removed", stale[i]);
		}
		for (size_t i = 0; i < 4; i++) {
			snprintf(path, sizeof(path), "%s/a/b/c/%s", dir, i == 0 ? own : keep[i]);
			CHECKM(access(path, F_OK) == 0, "%s kept", i == 0 ? own : keep[i]);
		}
		snprintf(path, sizeof(path), "%s/missing", dir);
		CHECK(kb_sweep_atomic_tmp(path) == 0);
	}
	kb_sha256_hex("abc", 3, sha);
	CHECKM(strcmp(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
	      "sha256");
	/* FNV-1a: chained pieces hash as their concatenation; the empty one leaves h */
	CHECK(kb_fnv1a(kb_fnv1a(KB_FNV1A_START, "ab", 2), "c", 1) ==
	      kb_fnv1a(KB_FNV1A_START, "abc", 3));
	CHECK(kb_fnv1a(KB_FNV1A_START, "abc", 3) != kb_fnv1a(KB_FNV1A_START, "abd", 3));
	CHECK(kb_fnv1a(42, "", 0) == 42);
	CHECK(kb_fnv1a(0, "a", 1) == (0 ^ (uint64_t)'a') * 1099511628211ULL);
}

static void
test_errors(void)
{
	CHECKM(strcmp(kb_strerror(-KB_ENOSPC), "no space left on device") == 0, "strerror");
	CHECKM(kb_err_transient(-KB_ELLM_HTTP) && kb_err_transient(KB_ETIMEDOUT), "transient");
	CHECKM(!kb_err_transient(-KB_ELLM_AUTH) && !kb_err_transient(-KB_ECONFIG), "permanent");
	CHECKM(strcmp(kb_strerror(9999), "unknown error") == 0, "out of range");
	{
		char ts[32];

		kb_iso8601(1795309323456LL, ts);
		CHECKM(strcmp(ts, "2026-11-22T01:02:03.456Z") == 0, "iso8601 %s", ts);
	}
}

/* Runs kb_crashpoint("p") `hits` times in a child with the given environment; returns
 * the hit it died at (1-based), or 0 when it never died. */
static int
crash_child(const char *const *env, const char *task, int hits)
{
	pid_t	pid;
	int	status;

	if ((pid = fork()) == 0) {
		for (const char *const *e = env; *e != NULL; e += 2)
			setenv(e[0], e[1], 1);
		kb_crashpoint_task(task);
		for (int i = 1; i <= hits; i++) {
			kb_crashpoint("other");
			if (kb_crashpoint_due("p"))
				_exit(100 + i);	/* die here, saying where */
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) > 100 ? WEXITSTATUS(status) - 100 : WEXITSTATUS(status);
}

static void
test_crashpoint(const char *dir)
{
	char	 once[512];
	const char *plain[] = { "KFORGE_CRASHPOINT", "p", NULL };
	const char *skip[] = { "KFORGE_CRASHPOINT", "p", "KFORGE_CRASHSKIP", "2", NULL };
	const char *task[] = { "KFORGE_CRASHPOINT", "p", "KFORGE_CRASHTASK", "T1", NULL };
	const char *oncev[] = { "KFORGE_CRASHPOINT", "p", "KFORGE_CRASHONCE", once, NULL };
	pid_t	 self;
	char	*text = NULL;

	snprintf(once, sizeof(once), "%s/crashed", dir);
	CHECKM(crash_child(plain, NULL, 3) == 1, "fires at the first hit");
	CHECKM(crash_child(skip, NULL, 5) == 3, "KFORGE_CRASHSKIP=2 passes two hits");
	CHECKM(crash_child(task, "T2", 3) == 0 && crash_child(task, NULL, 3) == 0,
	      "KFORGE_CRASHTASK spares other processes");
	CHECKM(crash_child(task, "T1", 3) == 1, "KFORGE_CRASHTASK names the worker");
	CHECKM(crash_child(oncev, NULL, 3) == 1, "KFORGE_CRASHONCE: the first process dies");
	CHECKM(kb_read_file(once, 64, &text, NULL) == 0 && atol(text) > 0, "the token holds its pid");
	free(text);
	CHECKM(crash_child(oncev, NULL, 3) == 0, "KFORGE_CRASHONCE: later processes go on");
	self = getpid();
	kb_crashpoint("p");	/* not armed here */
	CHECKM(getpid() == self, "unarmed point");
}

struct captured {
	char	text[512];
	int	lines;
};

static void
capture_line(const char *line, size_t n, void *arg)
{
	struct captured	*c = arg;
	size_t		 have = strlen(c->text);

	snprintf(c->text + have, sizeof(c->text) - have, "%.*s", (int)n, line);
	c->lines++;
}

/* The writer hook gets each whole line and replaces the plain write; kb_log_init (what
 * a forked worker calls) drops it, and the tee still gets every line. */
static void
test_log_writer(const char *dir)
{
	struct captured	 c = { "", 0 };
	char		 path[PATH_MAX], *text = NULL;
	size_t		 len;
	int		 tee, out;

	snprintf(path, sizeof(path), "%s/tee.log", dir);
	tee = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	snprintf(path, sizeof(path), "%s/out.log", dir);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(tee >= 0 && out >= 0);
	kb_log_init("hooked", out);
	kb_log_tee(tee);
	kb_log_set_writer(capture_line, &c);
	log_info("first %d", 1);
	log_warnx("second");
	CHECKM(c.lines == 2, "writer got %d lines", c.lines);
	CHECKM(strstr(c.text, "[hooked] first 1\n") != NULL &&
	       strstr(c.text, "[hooked] warning: second\n") != NULL, "writer got: %s", c.text);
	kb_log_init("plain", out);
	log_info("third");
	CHECKM(c.lines == 2, "kb_log_init left the writer in place");
	kb_log_tee(-1);
	close(tee);
	close(out);
	snprintf(path, sizeof(path), "%s/out.log", dir);
	CHECK(kb_read_file(path, 4096, &text, &len) == 0 && strstr(text, "[plain] third\n") != NULL &&
	      strstr(text, "first") == NULL);
	free(text);
	snprintf(path, sizeof(path), "%s/tee.log", dir);
	CHECK(kb_read_file(path, 4096, &text, &len) == 0 && strstr(text, "first 1") != NULL &&
	      strstr(text, "second") != NULL && strstr(text, "third") != NULL);
	free(text);
	kb_log_init("test", 2);
}

/* PATH is searched in order, skipping entries that are not absolute and files that are
 * not executable; a name found nowhere is -KB_ENOENT. */
static void
test_which(const char *dir)
{
	char	bin1[512], bin2[512], tool[600], path[2048], found[600];
	char	*saved = kb_strdup(getenv("PATH"));
	int	fd;

	snprintf(bin1, sizeof(bin1), "%s/bin1", dir);
	snprintf(bin2, sizeof(bin2), "%s/bin2", dir);
	CHECK(kb_mkdir_p(bin1, 0755) == 0 && kb_mkdir_p(bin2, 0755) == 0);
	snprintf(tool, sizeof(tool), "%s/kbtool", bin1);	/* not executable */
	CHECK((fd = open(tool, O_WRONLY | O_CREAT, 0644)) >= 0 && close(fd) == 0);
	snprintf(tool, sizeof(tool), "%s/kbtool", bin2);
	CHECK((fd = open(tool, O_WRONLY | O_CREAT, 0755)) >= 0 && close(fd) == 0);
	snprintf(path, sizeof(path), "relative:%s::%s", bin1, bin2);
	setenv("PATH", path, 1);
	CHECKM(kb_which("kbtool", found, sizeof(found)) == 0 && strcmp(found, tool) == 0,
	       "kb_which found '%s', want the executable %s", found, tool);
	CHECKM(kb_which("kbtool-missing", found, sizeof(found)) == -KB_ENOENT, "missing tool");
	unsetenv("PATH");
	CHECKM(kb_which("kbtool", found, sizeof(found)) == -KB_ENOENT, "no PATH");
	if (saved != NULL)
		setenv("PATH", saved, 1);
	free(saved);
}

int
main(void)
{
	/* Under the suite's scratch (build/test-tmp, which the build tree holds), not /tmp,
	 * where each run would leave one more directory. */
	const char	*base = getenv("KFORGE_TEST_TMP");
	char		 tmpl[PATH_MAX];

	snprintf(tmpl, sizeof(tmpl), "%s/kforge-test-base-XXXXXX", base != NULL ? base : "/tmp");
	if (base != NULL)
		(void)mkdir(base, 0755);
	if (mkdtemp(tmpl) == NULL)
		return 1;
	kb_log_init("test", 2);
	test_errors();
	test_buf();
	test_files(tmpl);
	test_tlog(tmpl);
	test_crashpoint(tmpl);
	test_log_writer(tmpl);
	test_which(tmpl);
	if (failures == 0)
		printf("ok\n");
	return failures == 0 ? 0 : 1;
}
