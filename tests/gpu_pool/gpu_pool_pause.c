/*
 * gpu_pool_pause.c: the run-wide pause (gpu_pool/pause.c), llm_auth and env — clear
 * in a new pool, set by the first caller only (the first reason stands), seen by other
 * processes of the mapping, in the snapshot, and ending an LLM-slot wait that polls it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "gpu_pool/gpu_pool.h"

#include "kb_check.h"

static struct gpool *
make_pool(void)
{
	static const int	 cpu[1] = { -1 };
	struct gpool_spec	 spec = { .exec_devices = cpu, .nexec = 1, .ncompile = 1, .nllm = 1 };
	struct gpool		*p = NULL;

	if (gpool_create(&p, &spec) != 0)
		abort();
	return p;
}

static bool
paused_stop(void *pool)
{
	return gpool_paused(pool, NULL, 0) != GPOOL_PAUSE_NONE;
}

int
main(void)
{
	struct gpool	*p = make_pool();
	char		 reason[600] = "untouched", longer[2000];
	json_t		*snap, *lp;
	pid_t		 pid;
	int		 status, slot;

	/* A new pool is not paused, and says so in the snapshot. */
	CHECK(gpool_paused(p, reason, sizeof(reason)) == GPOOL_PAUSE_NONE);
	CHECK(strcmp(reason, "untouched") == 0);
	snap = gpool_snapshot_json(p);
	CHECK(snap != NULL && json_is_null(json_object_get(snap, "llm_paused")));
	json_decref(snap);
	CHECK(gpool_pause(NULL, GPOOL_PAUSE_LLM_AUTH, "t", "r") < 0);
	CHECK(gpool_pause(p, GPOOL_PAUSE_LLM_AUTH, "t", NULL) < 0);

	/* A worker holding the only LLM slot; another waits for it, polling the flag. */
	CHECK(gpool_acquire(p, GPOOL_LLM, "holder", 0, NULL, NULL, &slot) == 0);
	if ((pid = fork()) == 0) {
		int s;

		/* The pause, not the timeout, must end the wait: the timeout is generous. */
		_exit(gpool_acquire(p, GPOOL_LLM, "waiter", 300000, paused_stop, p, &s) ==
		      -KB_ESTOPPED ? 0 : 1);
	}
	usleep(300 * 1000);	/* usually paused while it waits; if not yet, it stops at once */
	/* A child process pauses it: the mapping is shared, the first reason stands. */
	if (fork() == 0)
		_exit(gpool_pause(p, GPOOL_PAUSE_LLM_AUTH, "L1_1_ReLU_s0", "HTTP 401 from http://x/v1") == 1 ? 0 : 1);
	while (wait(&status) > 0)
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(gpool_pause(p, GPOOL_PAUSE_LLM_AUTH, "L1_2_Other_s0", "HTTP 403 later") == 0);
	CHECK(gpool_paused(p, NULL, 0) == GPOOL_PAUSE_LLM_AUTH);
	CHECK(gpool_paused(p, reason, sizeof(reason)) == GPOOL_PAUSE_LLM_AUTH);
	CHECK(strcmp(reason, "HTTP 401 from http://x/v1") == 0);
	CHECK(gpool_paused(p, reason, 5) && strcmp(reason, "HTTP") == 0);
	snap = gpool_snapshot_json(p);
	lp = json_object_get(snap, "llm_paused");
	CHECK(json_is_object(lp));
	CHECK(strcmp(json_string_value(json_object_get(lp, "reason")) ?: "", "HTTP 401 from http://x/v1") == 0);
	CHECK(strcmp(json_string_value(json_object_get(lp, "task")) ?: "", "L1_1_ReLU_s0") == 0);
	CHECK(json_integer_value(json_object_get(lp, "since_ms")) > 0);
	CHECK(json_integer_value(json_object_get(json_object_get(snap, "llm"), "used")) == 1);
	CHECK(json_equal(json_object_get(snap, "paused"), lp));
	CHECK(strcmp(json_string_value(json_object_get(lp, "kind")) ?: "", "llm_auth") == 0);
	json_decref(snap);
	/* An environment failure stops more than generation: it replaces the llm_auth
	 * pause (reason, kind and all), and then stands against both kinds. */
	CHECK(gpool_pause(p, GPOOL_PAUSE_NONE, "t", "r") == -KB_EINVAL);
	CHECK(gpool_pause(p, GPOOL_PAUSE_ENV, "L1_3_Env_s0", "headers: torch/extension.h "
			  "missing") == 1);
	CHECK(gpool_paused(p, reason, sizeof(reason)) == GPOOL_PAUSE_ENV);
	CHECK(strcmp(reason, "headers: torch/extension.h missing") == 0);
	CHECK(gpool_pause(p, GPOOL_PAUSE_ENV, "x", "later") == 0);
	CHECK(gpool_pause(p, GPOOL_PAUSE_LLM_AUTH, "x", "HTTP 401 again") == 0);
	CHECK(gpool_paused(p, reason, sizeof(reason)) == GPOOL_PAUSE_ENV);
	CHECK(strcmp(reason, "headers: torch/extension.h missing") == 0);
	snap = gpool_snapshot_json(p);
	CHECK(json_is_null(json_object_get(snap, "llm_paused")));
	lp = json_object_get(snap, "paused");
	CHECK(strcmp(json_string_value(json_object_get(lp, "kind")) ?: "", "env") == 0);
	CHECK(strcmp(json_string_value(json_object_get(lp, "task")) ?: "", "L1_3_Env_s0") == 0);
	json_decref(snap);
	CHECK(gpool_release(p, GPOOL_LLM, slot) == 0);
	gpool_destroy(p);

	/* A reason longer than the field is cut, never overrun. */
	p = make_pool();
	memset(longer, 'r', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	CHECK(gpool_pause(p, GPOOL_PAUSE_LLM_AUTH, "t", longer) == 1);
	CHECK(gpool_paused(p, reason, sizeof(reason)) == GPOOL_PAUSE_LLM_AUTH);
	CHECK(strlen(reason) > 100 && strlen(reason) < sizeof(reason) && reason[0] == 'r');
	gpool_destroy(p);
	return failures ? 1 : 0;
}
