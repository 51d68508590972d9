/*
 * agent.c: the agent provider — a user's agent program run once per turn in the turn's
 * workspace, with a tool it calls to have kernels evaluated (llm.h states the contract).
 *
 * The program is started as the command provider starts its own (kb_spawn_run: own
 * process group, deadline SIGTERM->SIGKILL, capped output, an environment built here)
 * and, while it runs, this process serves its tool on a Unix socket (kb_spawn_opts'
 * serve): one connection per call, one JSON request line in, one JSON answer out. The
 * evaluation and its record are the caller's (req->tool_eval: the worker's, the
 * trusted side); the agent only sends kernel text and reads answers. The socket lives
 * in a 0700 directory of its own under TMPDIR, short enough for sun_path wherever the
 * run directory is.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <jansson.h>

#include "base/base.h"
#include "llm/llm_int.h"
#include "rundir/rundir.h"
#include "base/banned.h"

#define AGENT_IO_MS		10000	/* a tool call's request or answer, on the wire */
#define AGENT_REQUEST_CAP	(64u << 20)
#define AGENT_ANSWER_CAP	(16u << 20)

int
llm_agent_check(const struct kb_config *cfg, char *err, size_t errlen)
{
	return llm_command_check(cfg, err, errlen);
}

int
llm_agent_init(struct llm_client *c, const struct kb_config *cfg, char *err, size_t errlen)
{
	int	rc;

	if ((rc = llm_command_init(c, cfg, err, errlen)) < 0)
		return rc;
	c->timeout_s = cfg->llm.agent_timeout_s > 0 ? cfg->llm.agent_timeout_s : 1800;
	c->retries = 0;		/* a rerun would spend its tool calls again */
	return 0;
}

/* Reads until a newline or EOF, at most cap bytes, each wait bounded by AGENT_IO_MS. */
static int
read_line(int fd, struct kb_buf *b)
{
	char	chunk[8192];

	for (;;) {
		struct pollfd	p = { .fd = fd, .events = POLLIN };
		ssize_t		n;
		int		rc;

		if ((rc = poll(&p, 1, AGENT_IO_MS)) == 0)
			return -KB_ETIMEDOUT;
		if (rc < 0 && errno != EINTR)
			return -KB_ESYS;
		if (rc < 0)
			continue;
		if ((n = read(fd, chunk, sizeof(chunk))) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -KB_ESYS;
		}
		if (n == 0)
			return 0;
		if (kb_buf_append(b, chunk, (size_t)n) < 0 || b->truncated)
			return -KB_ETOOBIG;
		if (memchr(chunk, '\n', (size_t)n) != NULL)
			return 0;
	}
}

static int
write_all(int fd, const char *p, size_t n, int timeout_ms)
{
	while (n > 0) {
		struct pollfd	pf = { .fd = fd, .events = POLLOUT };
		ssize_t		w;

		if (timeout_ms >= 0 && poll(&pf, 1, timeout_ms) == 0)
			return -KB_ETIMEDOUT;
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -KB_ESYS;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

struct agent_serve {
	const struct llm_request	*req;
	int				 calls;
};

/* One tool call: its request, the caller's evaluation, the answer. A peer that stalls
 * or sends garbage gets an error answer (or none) and costs at most AGENT_IO_MS. */
static void
serve_call(int lfd, void *arg)
{
	struct agent_serve	*sv = arg;
	struct kb_buf		 in = KB_BUF_INIT(AGENT_REQUEST_CAP);
	json_t			*rq = NULL, *answer = NULL;
	const char		*op, *kernel;
	char			*text;
	int			 fd, rc;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) < 0)
		return;
	rc = read_line(fd, &in);
	if (rc == 0)
		rq = json_loadb(in.p != NULL ? in.p : "", in.len, 0, NULL);
	op = json_string_value(json_object_get(rq, "op"));
	kernel = json_string_value(json_object_get(rq, "kernel"));
	if (rc < 0)
		answer = json_pack("{s:s}", "error", rc == -KB_ETOOBIG ? "the request is too large"
				   : "the request did not arrive whole");
	else if (op == NULL || strcmp(op, "eval") != 0 || kernel == NULL)
		answer = json_pack("{s:s}", "error", "unknown request: the tool does eval KERNEL");
	else if (sv->req->tool_eval == NULL)
		answer = json_pack("{s:s}", "error", "this run has no tool");
	else {
		sv->calls++;
		answer = sv->req->tool_eval(sv->req->tool_arg, kernel,
					    json_string_length(json_object_get(rq, "kernel")));
		if (answer == NULL)
			answer = json_pack("{s:s}", "error", "the evaluation failed");
	}
	if (answer != NULL && (text = json_dumps(answer, JSON_COMPACT)) != NULL) {
		(void)write_all(fd, text, strlen(text), AGENT_IO_MS);
		(void)write_all(fd, "\n", 1, AGENT_IO_MS);
		free(text);
	}
	json_decref(answer);
	json_decref(rq);
	kb_buf_clear(&in);
	close(fd);
}

/* The tool's socket, listening, in a fresh 0700 directory (dir); *fd, or < 0 with err. */
static int
tool_socket(char *dir, size_t dirlen, char *path, size_t pathlen, int *fd, char *err,
	    size_t errlen)
{
	struct sockaddr_un	 sa = { .sun_family = AF_UNIX };
	const char		*tmp = getenv("TMPDIR");

	*fd = -1;
	if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > 60)
		tmp = "/tmp";
	snprintf(dir, dirlen, "%s/kforge-agent-XXXXXX", tmp);
	if (mkdtemp(dir) == NULL) {
		snprintf(err, errlen, "agent: cannot make the tool's directory under %s: %s", tmp,
			 strerror(errno));
		dir[0] = '\0';
		return -KB_ESYS;
	}
	snprintf(path, pathlen, "%s/tool.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if ((*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0 ||
	    bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(*fd, 8) < 0) {
		snprintf(err, errlen, "agent: cannot listen on %s: %s", path, strerror(errno));
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -KB_ESYS;
	}
	return 0;
}

/* The program's environment: the command provider's, with the workspace's bin/ first on
 * PATH, the workspace, the tool's socket, the task and the turn. */
static char **
agent_env(const struct llm_client *c, const struct llm_request *req, const char *sock)
{
	size_t	n = 0, e = 0;
	char	**env, bin[PATH_MAX];
	bool	 path_set = false;

	while (c->command_env[n] != NULL)
		n++;
	if ((env = calloc(n + 6, sizeof(*env))) == NULL)
		return NULL;
	if (kb_path_join(bin, sizeof(bin), req->workspace, rd_name(RD_AGENT_BIN_DIR)) < 0)
		bin[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (strncmp(c->command_env[i], "PATH=", 5) == 0) {
			env[e++] = kb_asprintf("PATH=%s:%s", bin, c->command_env[i] + 5);
			path_set = true;
		} else {
			env[e++] = kb_strdup(c->command_env[i]);
		}
	}
	if (!path_set)
		env[e++] = kb_asprintf("PATH=%s:/usr/bin:/bin", bin);
	env[e++] = kb_asprintf("KFORGE_WORKSPACE=%s", req->workspace);
	env[e++] = kb_asprintf("%s=%s", LLM_AGENT_SOCKET_ENV, sock);
	env[e++] = kb_asprintf("KFORGE_TASK=%s", req->task != NULL ? req->task->id : "");
	env[e++] = kb_asprintf("KFORGE_TURN=%d", req->turn);
	return env;
}

/* The agent's argv after the request's confine prefix (the strings borrowed). */
static const char **
agent_argv(const struct llm_client *c, const struct llm_request *req)
{
	size_t		 n = 0, m = 0, k = 0;
	const char	**argv;

	while (req->confine != NULL && req->confine[n] != NULL)
		n++;
	while (c->command[m] != NULL)
		m++;
	if ((argv = calloc(n + m + 1, sizeof(*argv))) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		argv[k++] = req->confine[i];
	for (size_t i = 0; i < m; i++)
		argv[k++] = c->command[i];
	return argv;
}

/* How the program ended, in words for the record and for the reply without code. */
static char *
end_words(const struct llm_client *c, const struct kb_spawn_result *r)
{
	if (r->end == KB_END_TIMEOUT)
		return kb_asprintf("ran past llm.agent.timeout_s (%ld s) and was killed",
				   c->timeout_s);
	if (r->end == KB_END_SIGNALED)
		return kb_asprintf("died of signal %d", r->signo);
	return kb_asprintf("exited with status %d", r->exit_code);
}

/* The reply: the final kernel in a fenced block when the agent exited 0 and left one,
 * else a reply without code saying why. */
static void
make_reply(const struct llm_client *c, const struct llm_request *req,
	   const struct kb_spawn_result *r, struct llm_reply *out)
{
	char	 path[PATH_MAX], *final = NULL;
	size_t	 len = 0;
	int	 rc = -KB_ENOENT;

	out->agent_end = end_words(c, r);
	if (r->end == KB_END_EXITED && r->exit_code == 0 &&
	    kb_path_join(path, sizeof(path), req->workspace, rd_name(RD_AGENT_FINAL_PY)) == 0)
		rc = kb_read_file(path, c->max_response_bytes, &final, &len);
	if (rc == 0 && len > 0) {
		out->content = kb_asprintf("```python\n%s%s```\n", final,
					   final[len - 1] == '\n' ? "" : "\n");
		out->agent_final = true;
	} else if (r->end == KB_END_EXITED && r->exit_code == 0) {
		out->content = kb_asprintf("The agent exited with status 0 and left %s %s.",
					   rc == -KB_ETOOBIG ? "a final kernel over "
					   "llm.max_response_bytes in" : "no final kernel in",
					   rd_name(RD_AGENT_FINAL_PY));
	} else {
		out->content = kb_asprintf("The agent %s; its final kernel, if any, is not "
					   "judged.", out->agent_end);
	}
	free(final);
}

int
llm_agent_complete(struct llm_client *c, const struct llm_request *req,
		   struct llm_reply *out, char *err, size_t errlen)
{
	struct agent_serve	 sv = { req, 0 };
	struct kb_spawn_result	 r;
	char			 dir[PATH_MAX] = "", sock[PATH_MAX], **env = NULL, *input = NULL;
	const char		**argv = NULL;
	int64_t			 t0 = kb_mono_ms();
	int			 lfd = -1, rc;

	memset(&r, 0, sizeof(r));
	if (req->workspace == NULL || req->workspace[0] == '\0') {
		snprintf(err, errlen, "agent: the request has no workspace");
		return -KB_EINVAL;
	}
	if ((input = llm_command_request_json(c, req)) == NULL) {
		snprintf(err, errlen, "agent: cannot encode the request");
		return -KB_ENOMEM;
	}
	if ((rc = tool_socket(dir, sizeof(dir), sock, sizeof(sock), &lfd, err, errlen)) < 0)
		goto out;
	if ((env = agent_env(c, req, sock)) == NULL || (argv = agent_argv(c, req)) == NULL) {
		rc = -KB_ENOMEM;
		goto out;
	}
	{
		struct kb_spawn_opts	o = {
			.argv = argv,
			.envp = (const char *const *)env,
			.cwd = req->workspace,
			.stdin_data = input, .stdin_len = strlen(input),
			.out_cap = c->max_response_bytes, .stderr_apart = true,
			.result_cap = c->max_response_bytes,
			.timeout_ms = c->timeout_s > 86400 ? 86400 * 1000 : (int)c->timeout_s * 1000,
			.should_stop = req->should_stop, .should_stop_arg = req->stop_arg,
			.serve_fd = lfd, .serve = serve_call, .serve_arg = &sv,
			.on_start = req->agent_started, .on_start_arg = req->tool_arg,
		};

		out->attempts = 1;
		rc = kb_spawn_run(&o, &r);
	}
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", c->command[0], rc == -KB_ESTOPPED ?
			 "stop requested while the agent ran" : kb_strerror(rc));
		if (rc != -KB_ESTOPPED)
			rc = -KB_ELLM_REQUEST;
		goto out;
	}
	make_reply(c, req, &r, out);
	out->agent_stdout = kb_buf_steal(&r.out);
	out->agent_stderr = kb_buf_steal(&r.result);
	out->finish_reason = kb_strdup(out->agent_final ? "final" : "no_final");
out:
	out->latency_s = (double)(kb_mono_ms() - t0) / 1000;
	kb_spawn_result_clear(&r);
	if (lfd >= 0)
		close(lfd);
	if (dir[0] != '\0') {
		(void)unlink(sock);
		(void)rmdir(dir);
	}
	llm_strv_free(env);
	free(argv);
	free(input);
	return rc;
}

int
llm_agent_tool_call(const char *op, const char *kernel, size_t n, json_t **answer, char *err,
		    size_t errlen)
{
	struct sockaddr_un	 sa = { .sun_family = AF_UNIX };
	struct kb_buf		 in = KB_BUF_INIT(AGENT_ANSWER_CAP);
	const char		*sock = getenv(LLM_AGENT_SOCKET_ENV);
	json_t			*rq;
	char			*text;
	int			 fd, rc;

	*answer = NULL;
	if (sock == NULL || sock[0] == '\0' || strlen(sock) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s is not set: kforge-tool runs inside an agent's "
			 "workspace (llm.provider agent)", LLM_AGENT_SOCKET_ENV);
		return -KB_ECONFIG;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if ((rq = json_pack("{s:s, s:s%}", "op", op, "kernel", kernel, n)) == NULL ||
	    (text = json_dumps(rq, JSON_COMPACT)) == NULL) {
		json_decref(rq);
		snprintf(err, errlen, "cannot encode the request (is the kernel UTF-8?)");
		return -KB_EINVAL;
	}
	json_decref(rq);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "cannot reach the tool at %s: %s", sock, strerror(errno));
		rc = -KB_ESYS;
		goto out;
	}
	if ((rc = write_all(fd, text, strlen(text), -1)) < 0 ||
	    (rc = write_all(fd, "\n", 1, -1)) < 0) {
		snprintf(err, errlen, "cannot send the request: %s", strerror(errno));
		goto out;
	}
	/* The evaluation takes its time (a build, an execution): wait for the answer as
	 * long as it takes; the agent's own deadline bounds it. */
	for (;;) {
		char	chunk[8192];
		ssize_t	r = read(fd, chunk, sizeof(chunk));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (kb_buf_append(&in, chunk, (size_t)r) < 0 || in.truncated)
			break;
	}
	if ((*answer = json_loadb(in.p != NULL ? in.p : "", in.len, 0, NULL)) == NULL ||
	    !json_is_object(*answer)) {
		json_decref(*answer);
		*answer = NULL;
		snprintf(err, errlen, "the tool gave no answer");
		rc = -KB_ESYS;
	}
out:
	if (fd >= 0)
		close(fd);
	free(text);
	kb_buf_clear(&in);
	return rc;
}
