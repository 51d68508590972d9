/*
 * test_sandbox.c: sandbox/ on this kernel, in forked children (a sandbox cannot be left):
 *
 * - the probe names the layers, and what it lacks says why;
 * - a policy applied: a hidden directory unreadable (a file in it, a listing), a file
 *   shown back inside it readable, the writable scratch written, a file anywhere else not
 *   written; another process's /proc/<pid>/environ unreadable, its own readable; no signal
 *   to its parent, one to its own child; no ptrace; no TCP or UDP socket, a Unix one
 *   made; no new user namespace;
 * - the judge's policy (no signal scope) may signal its parent;
 * - strict with more than one thread refuses, and says why;
 * - kforge_sandbox_apply (ctypes' entry) refuses a spec line it does not know.
 * Skips (77) where the kernel lacks a layer.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb_check.h"
#include "sandbox/sandbox.h"

static char	root[256], hidden[300], shown[320], scratch[300], outside[300];

static void
write_file(const char *path, const char *text)
{
	FILE	*f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static int
open_errno(const char *path, int flags)
{
	int	fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

/* Runs fn in a forked child; its exit status is the number of failed checks there. */
static void
in_child(const char *what, void (*fn)(void))
{
	pid_t	pid = fork();
	int	st;

	if (pid == 0) {
		fn();
		_exit(failures > 255 ? 255 : failures);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECKM(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %d failure(s) in the child", what,
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void
confined(void)
{
	const char	*w[] = { scratch, NULL }, *h[] = { hidden, NULL }, *v[] = { shown, NULL };
	struct kb_sbx_policy p = { w, h, v, true, true, false };
	char		 applied[256], err[256], path[400];
	pid_t		 parent = getppid(), kid;
	int		 fd, st;

	CHECKM(kb_sbx_apply(&p, applied, sizeof(applied), err, sizeof(err)) == 0, "apply: %s", err);
	CHECKM(strstr(applied, "scope=1 seccomp=1 threads=1") != NULL, "applied: %s", applied);
	snprintf(path, sizeof(path), "%s/secret", hidden);
	CHECK(open_errno(path, O_RDONLY) == EACCES);
	CHECK(open_errno(hidden, O_RDONLY | O_DIRECTORY) == EACCES);
	snprintf(path, sizeof(path), "%s/ok", shown);
	CHECK(open_errno(path, O_RDONLY) == 0);
	CHECK(open_errno(path, O_WRONLY) == EACCES);
	snprintf(path, sizeof(path), "%s/new", scratch);
	CHECK(open_errno(path, O_WRONLY | O_CREAT) == 0);
	snprintf(path, sizeof(path), "%s/new", outside);
	CHECK(open_errno(path, O_WRONLY | O_CREAT) == EACCES);
	CHECK(open_errno("/etc/hostname", O_RDONLY) == 0 || errno == ENOENT);
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)parent);
	CHECK(open_errno(path, O_RDONLY) == EACCES);
	CHECK(open_errno("/proc/self/environ", O_RDONLY) == 0);
	CHECK(kill(parent, 0) == -1 && errno == EPERM);
	if ((kid = fork()) == 0) {
		pause();
		_exit(0);
	}
	CHECK(kid > 0 && kill(kid, SIGKILL) == 0 && waitpid(kid, &st, 0) == kid);
	CHECK(ptrace(PTRACE_ATTACH, parent, NULL, NULL) == -1 && errno == EPERM);
	CHECK(socket(AF_INET, SOCK_STREAM, 0) == -1 && errno == EAFNOSUPPORT);
	CHECK(socket(AF_INET6, SOCK_DGRAM, 0) == -1 && errno == EAFNOSUPPORT);
	CHECK((fd = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	if (fd >= 0)
		close(fd);
	CHECK(unshare(CLONE_NEWUSER) == -1 && errno == EPERM);
}

static void
judge(void)
{
	const char	*w[] = { scratch, NULL }, *h[] = { hidden, NULL };
	struct kb_sbx_policy p = { w, h, NULL, false, true, false };
	char		 applied[256], err[256];

	CHECKM(kb_sbx_apply(&p, applied, sizeof(applied), err, sizeof(err)) == 0, "apply: %s", err);
	CHECKM(strstr(applied, "scope=0") != NULL, "applied: %s", applied);
	CHECK(kill(getppid(), 0) == 0);
}

static void *
idle_thread(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static void
threaded(void)
{
	const char	*w[] = { scratch, NULL };
	struct kb_sbx_policy p = { w, NULL, NULL, true, true, false };
	char		 applied[256], err[256];
	pthread_t	 t;

	CHECK(pthread_create(&t, NULL, idle_thread, NULL) == 0);
	CHECK(kb_sbx_apply(&p, applied, sizeof(applied), err, sizeof(err)) == -1);
	CHECKM(strstr(err, "has 2") != NULL, "err: %s", err);
}

static void
bad_spec(void)
{
	char	report[256];

	CHECK(kforge_sandbox_apply("writable /tmp\nwritable_all /\n", report, sizeof(report)) == -1);
	CHECKM(strstr(report, "not understood: writable_all /") != NULL, "report: %s", report);
}

int
main(void)
{
	struct kb_sbx_caps	c;
	char			line[512];

	kb_sbx_probe(&c);
	kforge_sandbox_probe(line, sizeof(line));
	CHECKM(strncmp(line, "landlock=", 9) == 0, "probe: %s", line);
	for (int l = 0; l < KB_SBX__LAYERS; l++) {
		CHECK(c.have[l] || c.why[l][0] != '\0');
		if (!c.have[l]) {
			printf("SKIP: no %s: %s\n", kb_sbx_layer_name(l), c.why[l]);
			return 77;
		}
	}
	snprintf(root, sizeof(root), "%s/sbx-XXXXXX", getenv("KFORGE_TEST_TMP") != NULL ?
		 getenv("KFORGE_TEST_TMP") : "/tmp");
	mkdir(getenv("KFORGE_TEST_TMP") != NULL ? getenv("KFORGE_TEST_TMP") : "/tmp", 0755);
	if (mkdtemp(root) == NULL) {
		perror(root);
		return 1;
	}
	snprintf(hidden, sizeof(hidden), "%s/hidden", root);
	snprintf(shown, sizeof(shown), "%s/shown", hidden);
	snprintf(scratch, sizeof(scratch), "%s/scratch", root);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	CHECK(mkdir(hidden, 0755) == 0 && mkdir(shown, 0755) == 0 && mkdir(scratch, 0755) == 0 &&
	      mkdir(outside, 0755) == 0);
	snprintf(line, sizeof(line), "%s/secret", hidden);
	write_file(line, "secret");
	snprintf(line, sizeof(line), "%s/ok", shown);
	write_file(line, "ok");
	in_child("confined", confined);
	in_child("judge", judge);
	in_child("threaded", threaded);
	in_child("bad spec", bad_spec);
	snprintf(line, sizeof(line), "rm -rf '%s'", root);
	if (system(line) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
	printf("%s\n", failures ? "FAIL" : "ok: sandbox");
	return failures ? 1 : 0;
}
