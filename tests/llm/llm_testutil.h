/*
 * llm_testutil.h: helpers for the llm tests: checks, scratch directories, test
 * configs, and the mock OpenAI server (tests/llm/mock_llm_server.py) run as a child of the
 * test with posix_spawnp (test code only; kforge itself spawns with kb_spawn_run).
 * Header-only: each test is one file plus this.
 */
#ifndef KFORGE_LLM_TESTUTIL_H
#define KFORGE_LLM_TESTUTIL_H

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

/* A bound on waiting for a condition (the mock server up, a request logged): never a
 * measurement, so generous for a loaded machine. */
#define TU_WAIT_BOUND_S	300

#include "base/base.h"

extern char **environ;


#include "kb_check.h"

#define CHECK_RC(expr, want)						\
	do {								\
		int rc_ = (expr);					\
		if (rc_ != (want)) {					\
			fprintf(stderr, "%s:%d: %s = %d (%s), want %d (%s)\n", \
			    __FILE__, __LINE__, #expr, rc_, kb_strerror(rc_), \
			    (want), kb_strerror(want));			\
			failures++;					\
		}							\
	} while (0)

#define CHECK_HAS(hay, needle)						\
	do {								\
		const char *h_ = (hay), *n_ = (needle);			\
		if (h_ == NULL || strstr(h_, n_) == NULL) {		\
			fprintf(stderr, "%s:%d: \"%s\" not found in: %.400s\n", \
			    __FILE__, __LINE__, n_, h_ ? h_ : "(null)");	\
			failures++;					\
		}							\
	} while (0)

#define CHECK_LACKS(hay, needle)					\
	do {								\
		const char *h_ = (hay), *n_ = (needle);			\
		if (h_ != NULL && strstr(h_, n_) != NULL) {		\
			fprintf(stderr, "%s:%d: \"%s\" unexpectedly found\n", \
			    __FILE__, __LINE__, n_);			\
			failures++;					\
		}							\
	} while (0)

static inline double
tu_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A fresh directory under $KFORGE_TEST_TMP (or /tmp); caller frees. */
static inline char *
tu_tmpdir(const char *tag)
{
	const char	*base = getenv("KFORGE_TEST_TMP");
	char		*path;

	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	kb_mkdir_p(base, 0755);
	path = kb_asprintf("%s/%s.XXXXXX", base, tag);
	if (mkdtemp(path) == NULL) {
		perror(path);
		exit(1);
	}
	return path;
}

/* Writes text to dir/rel, creating the directories on the way. */
static inline void
tu_write(const char *dir, const char *rel, const char *text)
{
	char	*path = kb_asprintf("%s/%s", dir, rel);
	char	*slash = strrchr(path, '/');

	*slash = '\0';
	kb_mkdir_p(path, 0755);
	*slash = '/';
	if (kb_write_atomic(path, text, strlen(text)) < 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
	free(path);
}

static inline int
tu_rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path);
}

static inline void
tu_rm_rf(const char *dir)
{
	nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A minimal resolved config; kb_config_clear() frees it. */
static inline void
tu_config(struct kb_config *c, const char *provider, const char *base_url)
{
	memset(c, 0, sizeof(*c));
	c->name = kb_strdup("llm-test");
	c->llm.provider = kb_strdup(provider);
	c->llm.base_url = kb_strdup(base_url ? base_url : "");
	c->llm.model = kb_strdup("mock-model");
	c->llm.api_key_env = kb_strdup("");
	c->llm.replay_dir = kb_strdup("");
	c->llm.anthropic_version = kb_strdup("2023-06-01");
	c->llm.reasoning_effort = kb_strdup("default");
	c->llm.temperature = 0.0;
	c->llm.max_tokens = 1024;
	c->llm.timeout_s = 10;
	c->llm.retries = 3;
	c->llm.concurrency = 4;
	c->llm.max_response_bytes = 1 << 20;
	c->refinement.turns = 3;
	c->refinement.feedback_g = c->refinement.feedback_e = c->refinement.feedback_p = true;
	c->refinement.prompt = kb_strdup("one_shot");
	c->refinement.prompts_dir = kb_strdup("");
	c->refinement.examples = 2;
	c->refinement.feedback_max_chars = 4000;
	c->refinement.profile_metrics = true;
	c->refinement.profile_metrics_top = 3;
	c->eval.device = kb_strdup("cuda");
	c->eval.precision = kb_strdup("fp32");
	c->eval.arch_list = kb_strdup("");
	c->eval.backend = kb_strdup("cuda");
	c->runner.python = kb_strdup("");
}

static inline void
tu_set(char **field, const char *value)
{
	free(*field);
	*field = kb_strdup(value);
}

static inline void
tu_task(struct kb_task *t)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->id, sizeof(t->id), "L1_19_ReLU_s0");
	snprintf(t->problem_key, sizeof(t->problem_key), "L1_19_ReLU");
	snprintf(t->problem_name, sizeof(t->problem_name), "19_ReLU");
	t->level = 1;
	t->problem_id = 19;
}

/* ------------------------------------------------------------ mock server */

struct tu_mock {
	pid_t	pid;
	int	port;
	char	*dir;
	char	*log;
	char	url[128];	/* http://127.0.0.1:PORT/v1 */
};

/* Starts the mock with script (JSON text). 0, or 77 when python3 cannot run it. */
static inline int
tu_mock_start(struct tu_mock *m, const char *script)
{
	char	*server = kb_asprintf("%s/tests/llm/mock_llm_server.py", kb_home());
	char	*script_path, *port_path, *text = NULL;
	double	 deadline = tu_now() + TU_WAIT_BOUND_S;
	int	 st, rc;

	memset(m, 0, sizeof(*m));
	m->dir = tu_tmpdir("llm-mock");
	tu_write(m->dir, "script.json", script);
	script_path = kb_asprintf("%s/script.json", m->dir);
	port_path = kb_asprintf("%s/port", m->dir);
	m->log = kb_asprintf("%s/log.jsonl", m->dir);
	char *const argv[] = { (char *)"python3", server, (char *)"--port", (char *)"0",
	    (char *)"--port-file", port_path, (char *)"--script", script_path,
	    (char *)"--log", m->log, NULL };

	if ((rc = posix_spawnp(&m->pid, "python3", NULL, NULL, argv, environ)) != 0) {
		fprintf(stderr, "cannot run python3: %s\n", strerror(rc));
		return 77;
	}
	for (;;) {
		if (kb_read_file(port_path, 64, &text, NULL) == 0) {
			m->port = atoi(text);
			free(text);
			break;
		}
		if (waitpid(m->pid, &st, WNOHANG) == m->pid) {
			fprintf(stderr, "mock server exited before listening (status %d)\n", st);
			m->pid = 0;
			return 77;
		}
		if (tu_now() > deadline) {
			fprintf(stderr, "mock server did not start\n");
			exit(1);
		}
		usleep(20000);
	}
	snprintf(m->url, sizeof(m->url), "http://127.0.0.1:%d/v1", m->port);
	free(server);
	free(script_path);
	free(port_path);
	return 0;
}

static inline void
tu_mock_stop(struct tu_mock *m)
{
	int	st;

	if (m->pid > 0) {
		kill(m->pid, SIGTERM);
		waitpid(m->pid, &st, 0);
		m->pid = 0;
	}
	if (m->dir != NULL && getenv("KFORGE_TEST_KEEP") == NULL)
		tu_rm_rf(m->dir);
	free(m->dir);
	free(m->log);
	m->dir = m->log = NULL;
}

/* The mock's requests whose last user message contains needle, in order (JSON
 * array, caller decrefs). */
static inline json_t *
tu_mock_requests(const struct tu_mock *m, const char *needle)
{
	json_t	*all = json_array(), *rec, *msgs, *last;
	char	*text, *line, *save = NULL;

	if (kb_read_file(m->log, 64u << 20, &text, NULL) < 0)
		return all;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if ((rec = json_loads(line, 0, NULL)) == NULL)
			continue;
		msgs = json_object_get(json_object_get(rec, "body"), "messages");
		last = json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "content");
		if (json_is_string(last) && strstr(json_string_value(last), needle) != NULL)
			json_array_append(all, rec);
		json_decref(rec);
	}
	free(text);
	return all;
}

static inline size_t
tu_mock_count(const struct tu_mock *m, const char *needle)
{
	json_t	*a = tu_mock_requests(m, needle);
	size_t	 n = json_array_size(a);

	json_decref(a);
	return n;
}

/* The count once it reaches want (or TU_WAIT_BOUND_S passed): a request the client gave
 * up on (a timeout) is logged when the server's thread gets to it, which on a loaded
 * machine may be after the client returned. The server logs before it answers, so a
 * request that got its reply is always counted at once. */
static inline size_t
tu_mock_count_reaches(const struct tu_mock *m, const char *needle, size_t want)
{
	double	deadline = tu_now() + TU_WAIT_BOUND_S;
	size_t	n;

	while ((n = tu_mock_count(m, needle)) < want && tu_now() < deadline)
		usleep(20000);
	return n;
}

#endif /* KFORGE_LLM_TESTUTIL_H */
