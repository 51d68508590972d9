/*
 * base_spawn.c: kb_spawn_run against real processes. Shell scripts are fine here (the
 * production code never uses a shell). The test binary re-executes itself with
 * "--helper <what>" when a child must report on itself exactly (fds, signal state,
 * rlimits) without a shell's own fds or signal handling in the way.
 *
 * The test process makes itself a child subreaper, as the supervisor is, so that it
 * can reap grandchildren and see which signal killed them.
 *
 * "base_spawn contain" runs the containment steps instead (network namespace, uid
 * drop and their named failures); it exits 77 where the host allows neither.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

static char	self_exe[4096];

#include "kb_check.h"

static const char *const test_env[] = { "PATH=/usr/bin:/bin", NULL };

/* ------------------------------------------------------------------ helpers */

static int
helper_main(const char *what)
{
	char		 line[256];
	struct rlimit	 rl;
	struct dirent	*de;
	DIR		*d;
	FILE		*fp;
	static const struct { const char *name; int res; } lims[] = {
		{ "fsize", RLIMIT_FSIZE }, { "cpu", RLIMIT_CPU },
		{ "nofile", RLIMIT_NOFILE }, { "core", RLIMIT_CORE },
	};

	if (strcmp(what, "fds") == 0) {
		if ((d = opendir("/proc/self/fd")) == NULL)
			return 2;
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.' && strtol(de->d_name, NULL, 10) != dirfd(d))
				printf("%s\n", de->d_name);
		closedir(d);
		return 0;
	}
	if (strcmp(what, "sigs") == 0) {
		if ((fp = fopen("/proc/self/status", "r")) == NULL)
			return 2;
		while (fgets(line, sizeof(line), fp) != NULL)
			if (strncmp(line, "SigBlk:", 7) == 0 || strncmp(line, "SigIgn:", 7) == 0)
				fputs(line, stdout);
		fclose(fp);
		return 0;
	}
	if (strcmp(what, "ids") == 0) {
		gid_t	groups[64];
		int	n = getgroups(64, groups);

		printf("uid %d %d gid %d %d pdeathsig ", (int)getuid(), (int)geteuid(),
		       (int)getgid(), (int)getegid());
		if (prctl(PR_GET_PDEATHSIG, &n) == 0)
			printf("%d", n);
		n = getgroups(64, groups);
		printf(" groups");
		for (int i = 0; i < n; i++)
			printf(" %d", (int)groups[i]);
		printf("\n");
		return 0;
	}
	if (strcmp(what, "netns") == 0) {
		char	ns[128] = "";
		int	nif = 0;

		if (readlink("/proc/self/ns/net", ns, sizeof(ns) - 1) < 0)
			return 2;
		if ((fp = fopen("/proc/net/dev", "r")) == NULL)
			return 2;
		while (fgets(line, sizeof(line), fp) != NULL)
			nif += strchr(line, ':') != NULL;
		fclose(fp);
		printf("%s interfaces %d\n", ns, nif);
		return 0;
	}
	if (strncmp(what, "connect:", 8) == 0) {
		struct sockaddr_in	sa = { .sin_family = AF_INET };
		int			fd = socket(AF_INET, SOCK_STREAM, 0);

		sa.sin_port = htons((uint16_t)strtol(what + 8, NULL, 10));
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			printf("connected\n");
			return 0;
		}
		printf("connect: %s\n", strerror(errno));
		return 1;
	}
	if (strcmp(what, "netns-unprivileged") == 0) {
		/* Already dropped to an unprivileged uid by our parent: a plain netns
		 * must fail at its named step. */
		const char		*argv[] = { "/bin/true", NULL };
		struct kb_spawn_opts	 o = { .argv = argv, .envp = test_env,
					       .netns = KB_NETNS_NEW };
		struct kb_spawn_result	 r;
		char			 why[256];

		kb_log_init("helper", 1);
		printf("rc %d\n", kb_spawn_run(&o, &r));
		kb_spawn_result_clear(&r);
		printf("probe %d\n", (int)kb_netns_probe(why, sizeof(why)));
		return 0;
	}
	if (strcmp(what, "limits") == 0) {
		for (size_t i = 0; i < sizeof(lims) / sizeof(lims[0]); i++) {
			getrlimit(lims[i].res, &rl);
			printf("%s %lld %lld\n", lims[i].name,
			    rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur,
			    rl.rlim_max == RLIM_INFINITY ? -1LL : (long long)rl.rlim_max);
		}
		return 0;
	}
	return 2;
}

static int
run_sh(const char *script, struct kb_spawn_opts *o, struct kb_spawn_result *r)
{
	const char	*argv[] = { "/bin/sh", "-c", script, NULL };

	o->argv = argv;
	if (o->envp == NULL)
		o->envp = test_env;
	return kb_spawn_run(o, r);
}

static int
run_helper(const char *what, struct kb_spawn_opts *o, struct kb_spawn_result *r)
{
	const char	*argv[] = { self_exe, "--helper", what, NULL };

	o->argv = argv;
	o->envp = test_env;
	return kb_spawn_run(o, r);
}

/* Waits (we are the subreaper) for a grandchild; returns its wait status or -1. ms is a
 * bound on waiting for a condition (a killed process exiting), so callers give it room
 * for a loaded machine. */
static int
reap_within(pid_t pid, int ms)
{
	int	st;

	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(10000);
	}
	return -1;
}

static int
parse_pids(const char *s, pid_t *out, int max)
{
	int	n = 0;
	long	v;
	char	*end;

	while (n < max && *s != '\0') {
		v = strtol(s, &end, 10);
		if (end == s) {
			s++;
			continue;
		}
		out[n++] = (pid_t)v;
		s = end;
	}
	return n;
}

/* -------------------------------------------------------------------- tests */

static void
test_exit_codes(void)
{
	struct kb_spawn_opts	o = { 0 };
	struct kb_spawn_result	r;

	CHECK(run_sh("exit 3", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 3 && r.pid > 0);
	CHECK(r.out.p != NULL && r.out.len == 0);
	kb_spawn_result_clear(&r);

	CHECK(run_sh("echo hello; echo err >&2; exit 0", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 0);
	CHECK(strcmp(r.out.p, "hello\nerr\n") == 0);
	CHECK(!r.out.truncated);
	kb_spawn_result_clear(&r);
}

static void
test_signal_death(void)
{
	struct kb_spawn_opts	o = { 0 };
	struct kb_spawn_result	r;

	CHECK(run_sh("kill -SEGV $$", &o, &r) == 0);
	CHECK(r.end == KB_END_SIGNALED && r.signo == SIGSEGV);
	kb_spawn_result_clear(&r);
}

static void
must_not_start(pid_t pid, void *arg)
{
	(void)pid;
	*(bool *)arg = true;
}

static void
test_exec_failure(void)
{
	const char		*argv[] = { "/nonexistent/kforge-no-such-program", NULL };
	const char		*sh[] = { "/bin/sh", "-c", "exit 0", NULL };
	const char		*noargv[] = { NULL };
	struct kb_spawn_opts	o = { .argv = argv, .envp = test_env };
	struct kb_spawn_result	r;
	bool			called = false;

	CHECK(kb_spawn_run(&o, &r) == -KB_EEXEC);
	CHECK(r.pid > 0 && r.end == KB_END_EXITED && r.exit_code == 127);
	CHECK(waitpid(r.pid, NULL, WNOHANG) == -1 && errno == ECHILD);	/* reaped */
	kb_spawn_result_clear(&r);

	o.argv = sh;
	o.cwd = "/nonexistent/dir";
	o.on_start = must_not_start;
	o.on_start_arg = &called;
	CHECK(kb_spawn_run(&o, &r) == -KB_EEXEC);
	CHECK(!called);
	kb_spawn_result_clear(&r);

	o.argv = noargv;
	o.on_start = NULL;
	CHECK(kb_spawn_run(&o, &r) == -KB_EINVAL);
	kb_spawn_result_clear(&r);
}

static void
test_env_exact(void)
{
	const char		*env[] = { "A=1", "B=two words", NULL };
	const char		*argv[] = { "/usr/bin/env", NULL };
	struct kb_spawn_opts	o = { .argv = argv, .envp = env };
	struct kb_spawn_result	r;

	setenv("KFORGE_TEST_LEAK", "1", 1);
	CHECK(kb_spawn_run(&o, &r) == 0);
	CHECK(r.exit_code == 0 && strcmp(r.out.p, "A=1\nB=two words\n") == 0);
	kb_spawn_result_clear(&r);

	o.envp = NULL;
	CHECK(kb_spawn_run(&o, &r) == 0);
	CHECK(r.exit_code == 0 && r.out.len == 0);
	kb_spawn_result_clear(&r);

	o.envp = env;
	o.cwd = "/proc";
	argv[0] = "/bin/pwd";
	CHECK(kb_spawn_run(&o, &r) == 0);
	CHECK(strcmp(r.out.p, "/proc\n") == 0);
	kb_spawn_result_clear(&r);
}

static void
test_stdin(void)
{
	const char		*argv[] = { "/bin/cat", NULL };
	struct kb_spawn_opts	o = { .argv = argv, .envp = test_env };
	struct kb_spawn_result	r;
	size_t			n = 3u << 20;
	char			*data = malloc(n);

	for (size_t i = 0; i < n; i++)
		data[i] = (char)('a' + (i * 7 + i / 4096) % 26);
	o.stdin_data = data;
	o.stdin_len = n;
	o.out_cap = 4u << 20;
	CHECK(kb_spawn_run(&o, &r) == 0);
	CHECK(r.exit_code == 0 && r.out.len == n && memcmp(r.out.p, data, n) == 0);
	kb_spawn_result_clear(&r);

	o.stdin_data = NULL;	/* /dev/null */
	CHECK(kb_spawn_run(&o, &r) == 0);
	CHECK(r.exit_code == 0 && r.out.len == 0);
	kb_spawn_result_clear(&r);

	o.stdin_data = "";
	o.stdin_len = 0;
	CHECK(kb_spawn_run(&o, &r) == 0);
	CHECK(r.exit_code == 0 && r.out.len == 0);
	kb_spawn_result_clear(&r);
	free(data);
}

/* A child started ahead of its work: it runs (and may write) before its stdin comes,
 * the deadline and wall time count from the hand-over, and a child that died or was
 * stopped while it waited is reported or resumed, never waited for. */
static void
test_start_then_finish(void)
{
	const char		*argv[] = { "/bin/sh", "-c",
					    "echo ready; read line; echo \"got $line\" >&3; "
					    "sleep \"${line#nap }\" 2>/dev/null; exit 5", NULL };
	struct kb_spawn_opts	o = { .argv = argv, .envp = test_env, .stdin_data = "",
				      .want_result = true };
	struct kb_spawn		*s;
	struct kb_spawn_result	r;
	int64_t			t0;
	pid_t			pid;

	CHECK(kb_spawn_start(&o, &s) == 0);
	pid = kb_spawn_pid(s);
	usleep(300 * 1000);
	CHECK(!kb_spawn_exited(s));
	o.stdin_data = "hello\n";
	o.stdin_len = 6;
	o.timeout_ms = 5000;
	CHECK(kb_spawn_finish(s, &o, &r) == 0);
	CHECK(r.pid == pid && r.end == KB_END_EXITED && r.exit_code == 5);
	CHECK(strcmp(r.out.p, "ready\n") == 0 && strcmp(r.result.p, "got hello\n") == 0);
	kb_spawn_result_clear(&r);

	/* The deadline starts at the hand-over: a 1.5 s nap within a 1 s deadline dies. */
	o.stdin_data = "";
	o.stdin_len = 0;
	CHECK(kb_spawn_start(&o, &s) == 0);
	usleep(1200 * 1000);
	o.stdin_data = "nap 1.5\n";
	o.stdin_len = 8;
	o.timeout_ms = 1000;
	o.grace_ms = 100;
	t0 = kb_mono_ms();
	CHECK(kb_spawn_finish(s, &o, &r) == 0);
	CHECK(r.end == KB_END_TIMEOUT && kb_mono_ms() - t0 >= 1000);
	kb_spawn_result_clear(&r);

	/* Killed while it waited: seen at once, and its finish reports the signal. */
	o.stdin_data = "";
	o.stdin_len = 0;
	o.timeout_ms = 0;
	CHECK(kb_spawn_start(&o, &s) == 0);
	CHECK(kill(kb_spawn_pid(s), SIGKILL) == 0);
	for (int i = 0; i < 200 && !kb_spawn_exited(s); i++)
		usleep(10 * 1000);
	CHECK(kb_spawn_exited(s));
	o.stdin_data = "late\n";
	o.stdin_len = 5;
	CHECK(kb_spawn_finish(s, &o, &r) == 0);
	CHECK(r.end == KB_END_SIGNALED && r.signo == SIGKILL && r.result.len == 0);
	kb_spawn_result_clear(&r);

	/* Stopped while it waited: the hand-over resumes it. */
	o.stdin_data = "";
	o.stdin_len = 0;
	o.timeout_ms = 5000;
	CHECK(kb_spawn_start(&o, &s) == 0);
	usleep(100 * 1000);
	CHECK(kill(kb_spawn_pid(s), SIGSTOP) == 0);
	o.stdin_data = "again\n";
	o.stdin_len = 6;
	CHECK(kb_spawn_finish(s, &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 5 &&
	      strcmp(r.result.p, "got again\n") == 0);
	kb_spawn_result_clear(&r);

	/* Discarded unused: killed and reaped. */
	o.stdin_data = "";
	CHECK(kb_spawn_start(&o, &s) == 0);
	pid = kb_spawn_pid(s);
	kb_spawn_discard(s);
	CHECK(kill(pid, 0) == -1 && errno == ESRCH);
}

static void
test_stdin_epipe(void)
{
	struct kb_spawn_opts	o = { 0 };
	struct kb_spawn_result	r;
	struct sigaction	sa;
	sigset_t		pending;
	size_t			n = 8u << 20;
	char			*data = calloc(1, n);

	/* SIGPIPE keeps its default (fatal) disposition: the library must cope. */
	sigaction(SIGPIPE, NULL, &sa);
	CHECK(sa.sa_handler == SIG_DFL);
	o.stdin_data = data;
	o.stdin_len = n;
	CHECK(run_sh("exec 0<&-; echo closed; exit 4", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 4);
	CHECK(strcmp(r.out.p, "closed\n") == 0);
	kb_spawn_result_clear(&r);
	sigpending(&pending);
	CHECK(!sigismember(&pending, SIGPIPE));
	free(data);
}

static void
test_output_cap(void)
{
	struct kb_spawn_opts	o = { .out_cap = 65536, .timeout_ms = 300000 };
	struct kb_spawn_result	r;

	/* Past the cap the output is still drained: the writer exits on its own (a stalled
	 * pipe would hold it until the deadline, ending it as a timeout). */
	CHECK(run_sh("yes | head -c 10000000; echo done >&2", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 0);
	CHECK(r.out.truncated && r.out.len == 65536 && strlen(r.out.p) == 65536);
	kb_spawn_result_clear(&r);
}

static void
test_result_pipe(void)
{
	struct kb_spawn_opts	o = { .want_result = true };
	struct kb_spawn_result	r;

	CHECK(run_sh("echo x >&3; echo out", &o, &r) == 0);
	CHECK(r.exit_code == 0 && strcmp(r.result.p, "x\n") == 0 && strcmp(r.out.p, "out\n") == 0);
	kb_spawn_result_clear(&r);

	o.result_cap = 100;
	CHECK(run_sh("head -c 100000 /dev/zero >&3; echo ok", &o, &r) == 0);
	CHECK(r.exit_code == 0 && r.result.len == 100 && r.result.truncated);
	CHECK(strcmp(r.out.p, "ok\n") == 0);
	kb_spawn_result_clear(&r);

	o.want_result = false;
	CHECK(run_sh("echo x >&3", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code != 0 && r.result.len == 0);
	kb_spawn_result_clear(&r);
}

/* pass_fd: the descriptor is the child's fd 4 (the same pipe), nothing above it is
 * open, and the caller's own stays where it was, open. */
static void
test_pass_fd(void)
{
	struct kb_spawn_opts	o = { .want_result = true };
	struct kb_spawn_result	r;
	char			line[64];
	int			p[2];
	ssize_t			n;

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	o.pass_fd = p[1];
	CHECK(run_sh("echo through4 >&4 && ! ls /proc/self/fd/5 2>/dev/null && echo ok", &o,
		     &r) == 0);
	CHECK(r.exit_code == 0 && strcmp(r.out.p, "ok\n") == 0);
	kb_spawn_result_clear(&r);
	CHECK(fcntl(p[1], F_GETFD) != -1);
	(void)close(p[1]);
	n = read(p[0], line, sizeof(line) - 1);
	CHECK(n == 9 && memcmp(line, "through4\n", 9) == 0);
	(void)close(p[0]);

	o.pass_fd = 0;
	CHECK(run_sh("echo x >&4", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code != 0);
	kb_spawn_result_clear(&r);
}

/* detach: a session of its own, stdout on /dev/null, and still running once the process
 * that started it and let go of it (kb_spawn_release) has exited: no PDEATHSIG. */
static void
test_detach(void)
{
	const char	*argv[] = { "/bin/sh", "-c", "echo $$ $(cut -d' ' -f6 /proc/$$/stat) >&4; "
				    "exec sleep 60 4>&-",
				    NULL };
	char		 buf[512], link[64];
	size_t		 got = 0;
	ssize_t		 n;
	long		 pid = 0, sid = -1;
	pid_t		 mid;
	int		 p[2], st;

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	if ((mid = fork()) == 0) {
		struct kb_spawn_opts	 o = { .detach = true };
		struct kb_spawn		*s;

		o.argv = argv;
		o.envp = test_env;
		o.pass_fd = p[1];
		if (kb_spawn_start(&o, &s) < 0)
			_exit(1);
		kb_spawn_release(s);
		_exit(0);
	}
	(void)close(p[1]);
	CHECK(waitpid(mid, &st, 0) == mid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	while (got < sizeof(buf) - 1 && (n = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	(void)close(p[0]);
	CHECK(sscanf(buf, "%ld %ld", &pid, &sid) == 2 && pid > 0 && sid == pid);
	if (pid <= 0)
		return;
	snprintf(buf, sizeof(buf), "/proc/%ld/fd/1", pid);
	n = readlink(buf, link, sizeof(link) - 1);
	CHECK(n == 9 && memcmp(link, "/dev/null", 9) == 0);
	usleep(200 * 1000);	/* a PDEATHSIG, had it been armed, would have killed it by now */
	CHECK(waitpid((pid_t)pid, &st, WNOHANG) == 0);
	(void)kill((pid_t)pid, SIGKILL);
	(void)waitpid((pid_t)pid, &st, 0);
}

/* stderr_apart: stdout alone in out, stderr in result, and no fd 3 in the child. */
static void
test_stderr_apart(void)
{
	struct kb_spawn_opts	o = { .stderr_apart = true };
	struct kb_spawn_result	r;

	CHECK(run_sh("echo answer; echo noise >&2; echo more", &o, &r) == 0);
	CHECK(r.exit_code == 0 && strcmp(r.out.p, "answer\nmore\n") == 0);
	CHECK(r.result.p != NULL && strcmp(r.result.p, "noise\n") == 0);
	kb_spawn_result_clear(&r);

	CHECK(run_sh("echo x >&3", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code != 0 && r.out.len == 0);
	kb_spawn_result_clear(&r);
}

static void
test_deadline(void)
{
	const char		*argv[] = { "/bin/sleep", "100", NULL };
	struct kb_spawn_opts	o = { .argv = argv, .envp = test_env, .timeout_ms = 300,
				      .grace_ms = 60000 };
	struct kb_spawn_result	r;

	/* Never before the deadline, and ended by it: the sleep alone would last 100 s.
	 * The grace is generous so that SIGTERM, not SIGKILL, ends it however loaded the
	 * machine (a sleep dies of SIGTERM as soon as it runs). */
	CHECK(kb_spawn_run(&o, &r) == 0);
	CHECK(r.end == KB_END_TIMEOUT && r.signo == SIGTERM);
	CHECK(r.wall_ms >= 300 && r.wall_ms < 100000);
	kb_spawn_result_clear(&r);
}

static void
test_sigterm_trapped(void)
{
	/* The shell must have set its trap before the deadline: a deadline of seconds for
	 * a few microseconds of work, so a loaded machine still gets there. */
	struct kb_spawn_opts	o = { .timeout_ms = 5000, .grace_ms = 400 };
	struct kb_spawn_result	r;

	CHECK(run_sh("trap '' TERM; echo ready; sleep 100; echo survived", &o, &r) == 0);
	CHECK(r.end == KB_END_TIMEOUT && r.signo == SIGKILL);
	CHECK(r.wall_ms >= 5400 && r.wall_ms < 100000);	/* deadline + grace; not the sleep */
	CHECK(strcmp(r.out.p, "ready\n") == 0);
	kb_spawn_result_clear(&r);
}

static void
test_grandchildren(void)
{
	/* The deadline leaves the shell seconds to start both sleeps and say so. */
	struct kb_spawn_opts	o = { .timeout_ms = 5000, .grace_ms = 300 };
	struct kb_spawn_result	r;
	pid_t			pids[4];
	int			st;

	/* Deadline: the group gets SIGTERM, the sleeps die with the shell. */
	CHECK(run_sh("sleep 100 & echo $!; sleep 100 & echo $!; wait", &o, &r) == 0);
	CHECK(r.end == KB_END_TIMEOUT);
	CHECK(parse_pids(r.out.p, pids, 4) == 2);
	for (int i = 0; i < 2; i++) {
		st = reap_within(pids[i], 60000);
		CHECK(st != -1 && WIFSIGNALED(st));
	}
	kb_spawn_result_clear(&r);

	/* The shell exits normally; its background sleep is killed with the group (by
	 * SIGKILL: nothing else would end it before its 100 s). */
	o.timeout_ms = 300000;
	CHECK(run_sh("sleep 100 & echo $!; exit 0", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 0);
	CHECK(parse_pids(r.out.p, pids, 4) == 1);
	st = reap_within(pids[0], 60000);
	CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	kb_spawn_result_clear(&r);
}

static void
test_daemon_in_group(void)
{
	struct kb_spawn_opts	o = { .timeout_ms = 300000 };
	struct kb_spawn_result	r;
	pid_t			pid;
	int			st;

	/* Double fork: the sleep is orphaned but stays in the child's process group. */
	CHECK(run_sh("(sleep 100 & echo $!); exit 0", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 0);
	CHECK(parse_pids(r.out.p, &pid, 1) == 1);
	st = reap_within(pid, 60000);
	CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	kb_spawn_result_clear(&r);
}

static char
proc_state(pid_t pid)
{
	char	path[64], buf[512], *rp;
	FILE	*fp;
	size_t	n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fp = fopen(path, "r")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	if ((rp = strrchr(buf, ')')) == NULL || rp[1] == '\0')
		return 0;
	return rp[2];
}

static void
test_escaped_grandchild(void)
{
	struct kb_spawn_opts	o = { .timeout_ms = 300000 };
	struct kb_spawn_result	r;
	pid_t			pid = 0;
	int64_t			t0 = kb_mono_ms(), took;

	/* setsid leaves the group but keeps the output pipe open: the drain after the
	 * reap is bounded (~1 s; without the bound the call would last the sleep's 100 s),
	 * and the escaped process is left alone. */
	CHECK(run_sh("setsid sleep 100 & p=$!;"
	    " while [ \"$(cut -d' ' -f6 /proc/$p/stat)\" != $p ]; do sleep 0.01; done;"
	    " echo $p; exit 5", &o, &r) == 0);
	took = kb_mono_ms() - t0;
	CHECK(r.end == KB_END_EXITED && r.exit_code == 5);
	CHECK(took >= 900 && took < 100000);
	CHECK(r.wall_ms < took);
	CHECK(parse_pids(r.out.p, &pid, 1) == 1);
	if (pid > 0) {
		CHECK(proc_state(pid) != 0 && proc_state(pid) != 'Z');	/* still running */
		kill(pid, SIGKILL);
		CHECK(reap_within(pid, 60000) != -1);
	}
	kb_spawn_result_clear(&r);
}

static bool
stop_after(void *arg)
{
	int64_t	*t = arg;

	return kb_mono_ms() >= *t;
}

static void
test_should_stop(void)
{
	const char		*argv[] = { "/bin/sleep", "100", NULL };
	int64_t			t = kb_mono_ms() + 300;
	struct kb_spawn_opts	o = { .argv = argv, .envp = test_env, .grace_ms = 60000,
				      .should_stop = stop_after, .should_stop_arg = &t };
	struct kb_spawn_result	r;

	/* Stopped when asked (not before; not at the sleep's own end), by SIGTERM. */
	CHECK(kb_spawn_run(&o, &r) == -KB_ESTOPPED);
	CHECK(kb_mono_ms() >= t);
	CHECK(r.end == KB_END_SIGNALED && r.signo == SIGTERM);
	CHECK(r.wall_ms < 100000);
	kb_spawn_result_clear(&r);
}

static void
test_signal_state(void)
{
	struct kb_spawn_opts	o = { 0 };
	struct kb_spawn_result	r;
	sigset_t		set, old;
	struct sigaction	ign = { .sa_handler = SIG_IGN }, old_usr2;

	/* As the supervisor does for signalfd: block, and ignore one more. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);
	sigaction(SIGUSR2, &ign, &old_usr2);

	CHECK(run_helper("sigs", &o, &r) == 0);
	CHECK(r.exit_code == 0);
	CHECK(strstr(r.out.p, "SigBlk:\t0000000000000000\n") != NULL);
	CHECK(strstr(r.out.p, "SigIgn:\t0000000000000000\n") != NULL);
	if (failures)
		fprintf(stderr, "child reported:\n%s", r.out.p);
	kb_spawn_result_clear(&r);

	sigaction(SIGUSR2, &old_usr2, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void
test_rlimits(void)
{
	struct kb_spawn_opts	o = { .rlimit_fsize = 1 << 20, .rlimit_cpu_s = 7,
				      .rlimit_nofile = 64 };
	struct kb_spawn_result	r;

	CHECK(run_helper("limits", &o, &r) == 0);
	CHECK(strstr(r.out.p, "fsize 1048576 1048576\n") != NULL);
	CHECK(strstr(r.out.p, "cpu 7 8\n") != NULL);
	CHECK(strstr(r.out.p, "nofile 64 64\n") != NULL);
	CHECK(strstr(r.out.p, "core 0 0\n") != NULL);
	kb_spawn_result_clear(&r);

	/* dash reports 512-byte blocks, bash 1024-byte blocks. */
	CHECK(run_sh("ulimit -f", &o, &r) == 0);
	CHECK(strcmp(r.out.p, "2048\n") == 0 || strcmp(r.out.p, "1024\n") == 0);
	kb_spawn_result_clear(&r);

	/* Writing past RLIMIT_FSIZE kills with SIGXFSZ. */
	o.rlimit_fsize = 4096;
	o.cwd = getenv("KFORGE_TEST_TMP") && kb_mkdir_p(getenv("KFORGE_TEST_TMP"), 0755) == 0
	    ? getenv("KFORGE_TEST_TMP") : "/tmp";
	CHECK(run_sh("head -c 100000 /dev/zero > kb_spawn_fsize.tmp; s=$?; rm -f kb_spawn_fsize.tmp;"
	    " exit $s", &o, &r) == 0);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 128 + SIGXFSZ);
	kb_spawn_result_clear(&r);
}

/* The child starts on the cores asked for, the last one of those this test may use, and
 * on the parent's cores when none are asked for. */
static void
test_cpus(void)
{
	struct kb_spawn_opts	o = { 0 };
	struct kb_spawn_result	r;
	cpu_set_t		mine;
	char			want[32];
	int			last = -1, n = 0;

	CHECK(sched_getaffinity(0, sizeof(mine), &mine) == 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mine)) {
			last = c;
			n++;
		}
	CHECK(last >= 0);
	o.cpu_first = last;
	o.cpu_last = last + 1;
	CHECK(run_sh("grep '^Cpus_allowed_list:' /proc/self/status | tr -d ' \t'", &o, &r) == 0);
	snprintf(want, sizeof(want), "Cpus_allowed_list:%d\n", last);
	CHECK(strcmp(r.out.p, want) == 0);
	if (strcmp(r.out.p, want) != 0)
		fprintf(stderr, "child cpus: %s (want %s)", r.out.p, want);
	kb_spawn_result_clear(&r);

	o.cpu_first = o.cpu_last = 0;
	CHECK(run_sh("nproc", &o, &r) == 0);
	CHECK(atoi(r.out.p) == n);
	kb_spawn_result_clear(&r);
}

static void
test_no_fd_leak(void)
{
	struct kb_spawn_opts	o = { 0 };
	struct kb_spawn_result	r;
	int			a, b, c;

	/* Descriptors without FD_CLOEXEC, as careless library code might leave. */
	a = open("/dev/null", O_RDONLY);
	b = dup2(a, 10);
	c = dup2(a, 200);
	CHECK(a >= 0 && b == 10 && c == 200);

	CHECK(run_helper("fds", &o, &r) == 0);
	CHECK(strcmp(r.out.p, "0\n1\n2\n") == 0);
	if (strcmp(r.out.p, "0\n1\n2\n") != 0)
		fprintf(stderr, "child fds:\n%s", r.out.p);
	kb_spawn_result_clear(&r);

	o.want_result = true;
	CHECK(run_helper("fds", &o, &r) == 0);
	CHECK(strcmp(r.out.p, "0\n1\n2\n3\n") == 0);
	kb_spawn_result_clear(&r);
	close(a);
	close(b);
	close(c);
}

static void
record_start(pid_t pid, void *arg)
{
	pid_t	*seen = arg;

	seen[0] = pid;
	seen[1] = getpgid(pid);
}

static void
test_on_start_and_pgid(void)
{
	pid_t			seen[2] = { 0, 0 };
	struct kb_spawn_opts	o = { .on_start = record_start, .on_start_arg = seen };
	struct kb_spawn_result	r;

	CHECK(run_sh("cut -d' ' -f5 /proc/$$/stat", &o, &r) == 0);
	CHECK(seen[0] == r.pid && seen[1] == r.pid);
	CHECK(strtol(r.out.p, NULL, 10) == r.pid);
	kb_spawn_result_clear(&r);
}

static void
test_low_fds_closed(void)
{
	const char		*argv[] = { "/bin/cat", NULL };
	struct kb_spawn_opts	o = { .argv = argv, .envp = test_env, .stdin_data = "low fds\n",
				      .stdin_len = 8, .want_result = true };
	struct kb_spawn_result	r;
	int			save0 = dup(0), save1 = dup(1);

	/* Our pipes will be created on 0 and 1: the child's dup2 must not clobber them. */
	close(0);
	close(1);
	CHECK(kb_spawn_run(&o, &r) == 0);
	dup2(save0, 0);
	dup2(save1, 1);
	close(save0);
	close(save1);
	CHECK(r.exit_code == 0 && strcmp(r.out.p, "low fds\n") == 0);
	kb_spawn_result_clear(&r);
}

/* ------------------------------------------------------------ containment */

static int
loopback_listener(int *port)
{
	struct sockaddr_in	sa = { .sin_family = AF_INET };
	socklen_t		len = sizeof(sa);
	int			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

static void
test_netns(enum kb_netns how)
{
	struct kb_spawn_opts	 o = { 0 };
	struct kb_spawn_result	 r;
	char			 ours[128] = "", what[32];
	int			 lfd, port = 0;

	CHECK(readlink("/proc/self/ns/net", ours, sizeof(ours) - 1) > 0);
	o.netns = how;
	CHECK(run_helper("netns", &o, &r) == 0);
	CHECK(r.exit_code == 0);
	CHECKM(strncmp(r.out.p, ours, strlen(ours)) != 0, "child in our netns: %s", r.out.p);
	CHECKM(strstr(r.out.p, "interfaces 1\n") != NULL, "not only a loopback: %s", r.out.p);
	kb_spawn_result_clear(&r);

	/* A listener on our loopback: reachable from a child that shares our network
	 * (so the check below can fail), unreachable from one in its own namespace. */
	CHECK((lfd = loopback_listener(&port)) >= 0);
	snprintf(what, sizeof(what), "connect:%d", port);
	o.netns = KB_NETNS_SHARED;
	CHECK(run_helper(what, &o, &r) == 0);
	CHECKM(strcmp(r.out.p, "connected\n") == 0, "shared netns: %s", r.out.p);
	kb_spawn_result_clear(&r);
	o.netns = how;
	CHECK(run_helper(what, &o, &r) == 0);
	CHECKM(r.exit_code == 1 && strncmp(r.out.p, "connect: ", 9) == 0, "own netns: %s", r.out.p);
	kb_spawn_result_clear(&r);
	close(lfd);
}

static void
test_drop_user(void)
{
	struct kb_spawn_opts	 o = { .drop_user = true, .uid = 65534, .gid = 65534,
				       .netns = KB_NETNS_NEW };
	struct kb_spawn_result	 r;
	char			 dir[4096];
	const char		*tmp = getenv("KFORGE_TEST_TMP");

	/* The uid switch clears PDEATHSIG: it must be armed after it (9 = SIGKILL). */
	CHECK(run_helper("ids", &o, &r) == 0);
	CHECKM(strcmp(r.out.p, "uid 65534 65534 gid 65534 65534 pdeathsig 9 groups 65534\n") == 0,
	       "child ids: %s", r.out.p);
	kb_spawn_result_clear(&r);

	/* As that user, a plain netns is refused, at the step the message names. */
	o.netns = KB_NETNS_SHARED;
	CHECK(run_helper("netns-unprivileged", &o, &r) == 0);
	CHECKM(strstr(r.out.p, "rc -") != NULL && strstr(r.out.p,
	       "cannot run '/bin/true': unshare(CLONE_NEWNET): Operation not permitted") != NULL,
	       "unprivileged netns: %s", r.out.p);
	CHECK(strstr(r.out.p, "probe 0\n") == NULL);	/* never KB_NETNS_NEW for nobody */
	kb_spawn_result_clear(&r);

	/* A cwd the user cannot enter fails at chdir, after the switch. */
	snprintf(dir, sizeof(dir), "%s/kb_spawn_private.XXXXXX", tmp != NULL ? tmp : "/tmp");
	if (tmp != NULL)
		kb_mkdir_p(tmp, 0755);
	CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 0700);
	o.cwd = dir;
	CHECK(run_sh("true", &o, &r) == -KB_EEXEC);
	CHECK(r.end == KB_END_EXITED && r.exit_code == 127);
	kb_spawn_result_clear(&r);
	rmdir(dir);
}

static int
contain_main(void)
{
	char		why[256];
	enum kb_netns	how = kb_netns_probe(why, sizeof(why));
	bool		root = geteuid() == 0;

	if (how == KB_NETNS_SHARED && !root) {
		printf("SKIP: not root and no network namespace (%s)\n", why);
		return 77;
	}
	if (root)
		CHECKM(how == KB_NETNS_NEW, "root, yet the probe says %d (%s)", (int)how, why);
	if (how != KB_NETNS_SHARED)
		test_netns(how);
	if (root)
		test_drop_user();
	else
		printf("skipped: the uid drop needs root\n");
	if (failures) {
		fprintf(stderr, "base_spawn contain: %d check(s) failed\n", failures);
		return 1;
	}
	printf("base_spawn contain: ok (netns %s%s)\n",
	       how == KB_NETNS_NEW ? "plain" : how == KB_NETNS_USERNS ? "via a user namespace" :
	       "not available", root ? ", uid drop" : "");
	return 0;
}

int
main(int argc, char **argv)
{
	ssize_t	n;

	if (argc == 3 && strcmp(argv[1], "--helper") == 0)
		return helper_main(argv[2]);

	kb_log_init("test", 2);
	if ((n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1)) <= 0)
		return 1;
	self_exe[n] = '\0';
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		return 1;
	if (argc == 2 && strcmp(argv[1], "contain") == 0)
		return contain_main();

	test_exit_codes();
	test_signal_death();
	test_exec_failure();
	test_env_exact();
	test_stdin();
	test_stdin_epipe();
	test_start_then_finish();
	test_output_cap();
	test_result_pipe();
	test_stderr_apart();
	test_deadline();
	test_sigterm_trapped();
	test_grandchildren();
	test_daemon_in_group();
	test_escaped_grandchild();
	test_should_stop();
	test_signal_state();
	test_rlimits();
	test_cpus();
	test_pass_fd();
	test_detach();
	test_no_fd_leak();
	test_on_start_and_pgid();
	test_low_fds_closed();

	/* Reap what was reparented to us (subshells of the scripts above). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (failures) {
		fprintf(stderr, "base_spawn: %d check(s) failed\n", failures);
		return 1;
	}
	printf("base_spawn: ok\n");
	return 0;
}
