/* llm_replay.c: the replay provider's lookup order, its misses and its size cap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "llm/llm.h"
#include "llm_testutil.h"

static struct kb_task	task;

static int
replay(struct llm_client *c, int turn, char **content, char *err, size_t errlen)
{
	struct llm_request	req = { .prompt = "ignored", .task = &task, .turn = turn };
	struct llm_reply	r;
	int			rc;

	*content = NULL;
	rc = llm_complete(c, &req, &r, err, errlen);
	if (rc == 0) {
		CHECK(r.attempts == 1 && r.http_status == 0 && r.raw == NULL);
		*content = r.content;
		r.content = NULL;
	}
	llm_reply_clear(&r);
	return rc;
}

static void
expect(struct llm_client *c, int turn, const char *want)
{
	char	*got, err[512];

	CHECK_RC(replay(c, turn, &got, err, sizeof(err)), 0);
	if (got == NULL || strcmp(got, want) != 0) {
		fprintf(stderr, "turn %d: got '%s', want '%s'\n", turn, got ? got : "(null)", want);
		failures++;
	}
	free(got);
}

static void
test_lookup_order(void)
{
	struct kb_config	 cfg;
	struct llm_client	*c;
	char			*dir = tu_tmpdir("llm-replay"), err[1024], *got, want[1200];

	tu_config(&cfg, "replay", NULL);
	tu_set(&cfg.llm.replay_dir, dir);
	tu_set(&cfg.eval.device, "cpu");
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), 0);

	/* Each file added is earlier in the order than the previous one. */
	tu_write(dir, "L1_19_ReLU/1.md", "by problem");
	expect(c, 1, "by problem");
	tu_write(dir, "L1_19_ReLU_s0/1.md", "by task");
	expect(c, 1, "by task");
	tu_write(dir, "cpu/L1_19_ReLU/1.md", "by device and problem");
	expect(c, 1, "by device and problem");
	tu_write(dir, "cpu/L1_19_ReLU_s0/1.md", "by device and task");
	expect(c, 1, "by device and task");
	tu_write(dir, "tasks/L1_19_ReLU_s0/turns/1/response.md", "from a run");
	expect(c, 1, "from a run");

	/* Turns are separate; another device's files are not ours. */
	tu_write(dir, "L1_19_ReLU/2.md", "turn two");
	expect(c, 2, "turn two");
	tu_write(dir, "cuda/L1_19_ReLU_s0/3.md", "cuda only");
	CHECK_RC(replay(c, 3, &got, err, sizeof(err)), -KB_ENOENT);
	snprintf(want, sizeof(want), "replay: no response for task L1_19_ReLU_s0 turn 3 under %s",
	    dir);
	CHECK(strcmp(err, want) == 0);
	llm_client_destroy(c);

	/* Over the cap. */
	cfg.llm.max_response_bytes = 16;
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), 0);
	tu_write(dir, "L1_19_ReLU/4.md", "far more than sixteen bytes of response");
	CHECK_RC(replay(c, 4, &got, err, sizeof(err)), -KB_ETOOBIG);
	CHECK_HAS(err, "max_response_bytes");
	llm_client_destroy(c);

	tu_rm_rf(dir);
	free(dir);
	kb_config_clear(&cfg);
}

static void
test_bad_dir(void)
{
	struct kb_config	 cfg;
	struct llm_client	*c = NULL;
	char			 err[512];

	tu_config(&cfg, "replay", NULL);
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "llm.replay_dir");
	tu_set(&cfg.llm.replay_dir, "/nonexistent/kforge-replay");
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "/nonexistent/kforge-replay");
	CHECK(c == NULL);
	kb_config_clear(&cfg);
}

int
main(void)
{
	tu_task(&task);
	test_lookup_order();
	test_bad_dir();
	if (failures > 0) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("llm_replay: all checks passed\n");
	return 0;
}
