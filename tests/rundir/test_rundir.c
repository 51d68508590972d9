/* test_rundir.c: the run directory's layout (rundir/): every entry of the table builds
 * the path runs have always had (the list below is written out by hand from docs/DESIGN.md §1
 * and the files a run leaves, so a changed name fails here), task ids and turn numbers
 * appear as given, a path one byte too long is an error that leaves no partial path, and
 * names of the wrong level, ids that are not one path component and turns below 1 are
 * refused. */
#include <stdio.h>
#include <string.h>

#include "rundir/rundir.h"

#include "kb_check.h"

static const struct {
	enum rd_entry	 e;
	enum rd_level	 level;
	const char	*name;
} expected[] = {
	{ RD_CONFIG_YAML, RD_LEVEL_RUN, "config.yaml" },
	{ RD_RUN_JSON, RD_LEVEL_RUN, "run.json" },
	{ RD_TASKS_JSON, RD_LEVEL_RUN, "tasks.json" },
	{ RD_GPUS_JSON, RD_LEVEL_RUN, "gpus.json" },
	{ RD_POOL_JSON, RD_LEVEL_RUN, "pool.json" },
	{ RD_SUPERVISOR_LOG, RD_LEVEL_RUN, "supervisor.log" },
	{ RD_SUPERVISOR_LOCK, RD_LEVEL_RUN, "supervisor.lock" },
	{ RD_SUPERVISOR_PID, RD_LEVEL_RUN, "supervisor.pid" },
	{ RD_SUPERVISOR_RESERVE, RD_LEVEL_RUN, "supervisor.reserve" },
	{ RD_TASKS_DIR, RD_LEVEL_RUN, "tasks" },
	{ RD_BASELINES_DIR, RD_LEVEL_RUN, "baselines" },
	{ RD_BUILD_DIR, RD_LEVEL_RUN, "build" },
	{ RD_INPUTS_DIR, RD_LEVEL_RUN, "inputs" },
	{ RD_REDTEAM_DIR, RD_LEVEL_RUN, "redteam" },
	{ RD_SHARDS_DIR, RD_LEVEL_RUN, "shards" },
	{ RD_CLAIMS_DIR, RD_LEVEL_RUN, "claims" },
	{ RD_STATUS_CACHE, RD_LEVEL_RUN, "status.cache" },
	{ RD_TRAJECTORY, RD_LEVEL_TASK, "trajectory.jsonl" },
	{ RD_TASK_LOCK, RD_LEVEL_TASK, "lock" },
	{ RD_TURNS_DIR, RD_LEVEL_TASK, "turns" },
	{ RD_WORK_DIR, RD_LEVEL_TASK, "work" },
	{ RD_REFERENCE_PROFILE_JSON, RD_LEVEL_TASK, "reference_profile.json" },
	{ RD_PROMPT_MD, RD_LEVEL_TURN, "prompt.md" },
	{ RD_RESPONSE_MD, RD_LEVEL_TURN, "response.md" },
	{ RD_RESPONSE_JSON, RD_LEVEL_TURN, "response.json" },
	{ RD_RESPONSE_RAW_JSON, RD_LEVEL_TURN, "response.raw.json" },
	{ RD_REPLY_REFUSED_MD, RD_LEVEL_TURN, "reply_refused.md" },
	{ RD_KERNEL_PY, RD_LEVEL_TURN, "kernel.py" },
	{ RD_STATIC_JSON, RD_LEVEL_TURN, "static.json" },
	{ RD_COMPILE_JSON, RD_LEVEL_TURN, "compile.json" },
	{ RD_COMPILE_LOG, RD_LEVEL_TURN, "compile.log" },
	{ RD_EXECUTE_LOG, RD_LEVEL_TURN, "execute.log" },
	{ RD_RESULT_JSON, RD_LEVEL_TURN, "result.json" },
	{ RD_PROFILE_JSON, RD_LEVEL_TURN, "profile.json" },
	{ RD_PROFILE_FEEDBACK_MD, RD_LEVEL_TURN, "profile_feedback.md" },
	{ RD_FEEDBACK_MD, RD_LEVEL_TURN, "feedback.md" },
	{ RD_ENV_ERROR_JSON, RD_LEVEL_TURN, "env_error.json" },
	{ RD_AGENT_DIR, RD_LEVEL_TURN, "agent" },
	{ RD_AGENT_STDOUT, RD_LEVEL_TURN, "agent_stdout.txt" },
	{ RD_AGENT_STDERR, RD_LEVEL_TURN, "agent_stderr.txt" },
	{ RD_TOOL_CALLS_DIR, RD_LEVEL_TURN, "tool_calls" },
	{ RD_AGENT_PROBLEM_PY, RD_LEVEL_AGENT, "problem.py" },
	{ RD_AGENT_PROMPT_MD, RD_LEVEL_AGENT, "prompt.md" },
	{ RD_AGENT_FINAL_PY, RD_LEVEL_AGENT, "final.py" },
	{ RD_AGENT_BIN_DIR, RD_LEVEL_AGENT, "bin" },
	{ RD_AGENT_TOOL, RD_LEVEL_AGENT, "bin/kforge-tool" },
	{ RD_TOOL_KERNEL_PY, RD_LEVEL_TOOL_CALL, "kernel.py" },
	{ RD_TOOL_RESULT_JSON, RD_LEVEL_TOOL_CALL, "result.json" },
	{ RD_TOOL_LOG, RD_LEVEL_TOOL_CALL, "run.log" },
	{ RD_BASELINE_JSON, RD_LEVEL_BASELINE, ".json" },
	{ RD_BASELINE_LOCK, RD_LEVEL_BASELINE, ".lock" },
	{ RD_REDTEAM_INDEX_JSON, RD_LEVEL_REDTEAM, "index.json" },
	{ RD_FINDING_KERNEL_PY, RD_LEVEL_FINDING, "kernel.py" },
	{ RD_FINDING_PROBLEM_PY, RD_LEVEL_FINDING, "problem.py" },
	{ RD_FINDING_RESULT_JSON, RD_LEVEL_FINDING, "result.json" },
	{ RD_FINDING_SUITE_PY, RD_LEVEL_FINDING, "suite.py" },
};
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

#define RUN	"/runs/demo"
#define TASK	"L1_19_ReLU_s0"

/* rc == 0 and out == want, or rc == err and out empty. */
#define CHECK_PATH(call, out, want)						\
	do {									\
		int rc_ = (call);						\
		CHECKM(rc_ == 0 && strcmp((out), (want)) == 0,			\
		       "%s: rc %d, '%s', want '%s'", #call, rc_, (out), (want));	\
	} while (0)
#define CHECK_FAILS(call, out, err)						\
	do {									\
		int rc_ = (call);						\
		CHECKM(rc_ == (err) && (out)[0] == '\0', "%s: rc %d, '%s', want %d",	\
		       #call, rc_, (out), (err));				\
	} while (0)

static void
test_table(void)
{
	char	out[512], want[512];

	CHECKM(NEXPECTED == RD_ENTRY__N, "the test lists %zu entries, the table has %d: list "
	       "the new one here", NEXPECTED, RD_ENTRY__N);
	for (size_t i = 0; i < NEXPECTED; i++) {
		enum rd_entry	e = expected[i].e;
		const char	*name = expected[i].name;

		CHECKM(rd_name(e) != NULL && strcmp(rd_name(e), name) == 0, "entry %zu: '%s'", i,
		       name);
		CHECK(rd_level(e) == (int)expected[i].level);
		switch (expected[i].level) {
		case RD_LEVEL_RUN:
			snprintf(want, sizeof(want), RUN "/%s", name);
			CHECK_PATH(rd_run_file(out, sizeof(out), RUN, e), out, want);
			CHECK_PATH(rd_run_file(out, sizeof(out), NULL, e), out, name);
			/* A Slurm shard keeps its own copy of each (a supervisor's files). */
			snprintf(want, sizeof(want), RUN "/shards/3_1/%s", name);
			CHECK_PATH(rd_shard_file(out, sizeof(out), RUN, "3_1", e), out, want);
			break;
		case RD_LEVEL_TASK:
			snprintf(want, sizeof(want), RUN "/tasks/" TASK "/%s", name);
			CHECK_PATH(rd_task_file(out, sizeof(out), RUN, TASK, e), out, want);
			break;
		case RD_LEVEL_TURN:
			snprintf(want, sizeof(want), RUN "/tasks/" TASK "/turns/3/%s", name);
			CHECK_PATH(rd_turn_file(out, sizeof(out), RUN, TASK, 3, e), out, want);
			break;
		case RD_LEVEL_BASELINE:
			snprintf(want, sizeof(want), RUN "/baselines/cpu/L1_19_ReLU%s", name);
			CHECK_PATH(rd_baseline_file(out, sizeof(out), RUN, "cpu", "L1_19_ReLU", e),
				   out, want);
			break;
		case RD_LEVEL_REDTEAM:
			snprintf(want, sizeof(want), RUN "/redteam/%s", name);
			CHECK_PATH(rd_redteam_file(out, sizeof(out), RUN, e), out, want);
			break;
		case RD_LEVEL_FINDING:
			snprintf(want, sizeof(want), RUN "/redteam/" TASK "_t3/%s", name);
			CHECK_PATH(rd_finding_file(out, sizeof(out), RUN, TASK, 3, e), out, want);
			break;
		case RD_LEVEL_AGENT:
			snprintf(want, sizeof(want), RUN "/tasks/" TASK "/turns/3/agent/%s", name);
			CHECK_PATH(rd_agent_file(out, sizeof(out), RUN, TASK, 3, e), out, want);
			break;
		case RD_LEVEL_TOOL_CALL:
			snprintf(want, sizeof(want), RUN "/tasks/" TASK "/turns/3/tool_calls/2/%s",
				 name);
			CHECK_PATH(rd_tool_call_file(out, sizeof(out), RUN, TASK, 3, 2, e), out, want);
			CHECK_FAILS(rd_tool_call_file(out, sizeof(out), RUN, TASK, 3, 0, e), out,
				    -KB_EINVAL);
			break;
		}
	}
	CHECK(rd_name(RD_ENTRY__N) == NULL && rd_level(RD_ENTRY__N) == -1);
	CHECK(rd_name((enum rd_entry)-1) == NULL);
}

static void
test_levels(void)
{
	char	out[512];

	CHECK_PATH(rd_task_dir(out, sizeof(out), RUN, TASK), out, RUN "/tasks/" TASK);
	CHECK_PATH(rd_task_dir(out, sizeof(out), NULL, TASK), out, "tasks/" TASK);
	CHECK_PATH(rd_turn_dir(out, sizeof(out), RUN, TASK, 1), out, RUN "/tasks/" TASK "/turns/1");
	/* Turn numbers in plain decimal, no padding: turns/10 follows turns/9. */
	CHECK_PATH(rd_turn_dir(out, sizeof(out), RUN, TASK, 10), out,
		   RUN "/tasks/" TASK "/turns/10");
	CHECK_PATH(rd_turn_file(out, sizeof(out), RUN, "L3_1_MLP_s12", 123, RD_RESULT_JSON), out,
		   RUN "/tasks/L3_1_MLP_s12/turns/123/result.json");
	CHECK_PATH(rd_turn_file(out, sizeof(out), NULL, TASK, 2, RD_KERNEL_PY), out,
		   "tasks/" TASK "/turns/2/kernel.py");
	CHECK_PATH(rd_run_key(out, sizeof(out), RUN, RD_BUILD_DIR, "0123abcd"), out,
		   RUN "/build/0123abcd");
	CHECK_PATH(rd_run_key(out, sizeof(out), RUN, RD_INPUTS_DIR, "feedbeef"), out,
		   RUN "/inputs/feedbeef");
	CHECK_PATH(rd_task_file(out, sizeof(out), "/var/tmp/kforge-stage-x", "eval", RD_WORK_DIR),
		   out, "/var/tmp/kforge-stage-x/tasks/eval/work");
	/* A device name becomes one component: anything but [A-Za-z0-9.-] is '_'. */
	CHECK_PATH(rd_baseline_dir(out, sizeof(out), RUN, "NVIDIA H100 80GB HBM3"), out,
		   RUN "/baselines/NVIDIA_H100_80GB_HBM3");
	CHECK_PATH(rd_baseline_file(out, sizeof(out), RUN, "a/b c.d-e", "L2_7_Conv", RD_BASELINE_LOCK),
		   out, RUN "/baselines/a_b_c.d-e/L2_7_Conv.lock");
	/* A red-team finding: the task's id and its turn, one folder per candidate kept. */
	CHECK_PATH(rd_finding_dir(out, sizeof(out), RUN, TASK, 12), out,
		   RUN "/redteam/" TASK "_t12");
	CHECK_PATH(rd_finding_dir(out, sizeof(out), NULL, TASK, 1), out, "redteam/" TASK "_t1");
	CHECK_PATH(rd_redteam_file(out, sizeof(out), NULL, RD_REDTEAM_INDEX_JSON), out,
		   "redteam/index.json");
}

static void
test_overflow(void)
{
	const char	*want = RUN "/tasks/" TASK "/turns/7/profile_feedback.md";
	size_t		 len = strlen(want);
	char		 out[512];

	/* Exactly fits (with its NUL); one byte less is an error with nothing half-built. */
	CHECK_PATH(rd_turn_file(out, len + 1, RUN, TASK, 7, RD_PROFILE_FEEDBACK_MD), out, want);
	memset(out, 'x', sizeof(out));
	CHECK_FAILS(rd_turn_file(out, len, RUN, TASK, 7, RD_PROFILE_FEEDBACK_MD), out, -KB_ETOOBIG);
	memset(out, 'x', sizeof(out));
	CHECK_FAILS(rd_run_file(out, 4, RUN, RD_RUN_JSON), out, -KB_ETOOBIG);
	memset(out, 'x', sizeof(out));
	CHECK_FAILS(rd_task_dir(out, 1, RUN, TASK), out, -KB_ETOOBIG);
	CHECK(rd_run_file(out, 0, RUN, RD_RUN_JSON) == -KB_ETOOBIG);
	/* The run directory alone fits, its entry does not. */
	memset(out, 'x', sizeof(out));
	CHECK_FAILS(rd_run_file(out, sizeof(RUN) + 1, RUN, RD_RUN_JSON), out, -KB_ETOOBIG);
	/* Baseline: the directory fits, the file does not. */
	want = RUN "/baselines/cpu/L1_19_ReLU.json";
	memset(out, 'x', sizeof(out));
	CHECK_FAILS(rd_baseline_file(out, strlen(want), RUN, "cpu", "L1_19_ReLU", RD_BASELINE_JSON),
		    out, -KB_ETOOBIG);
	CHECK_PATH(rd_baseline_file(out, strlen(want) + 1, RUN, "cpu", "L1_19_ReLU",
				    RD_BASELINE_JSON), out, want);
	{
		char	 long_name[400];

		memset(long_name, 'g', sizeof(long_name) - 1);
		long_name[sizeof(long_name) - 1] = '\0';
		CHECK_FAILS(rd_baseline_dir(out, sizeof(out), RUN, long_name), out, -KB_ETOOBIG);
	}
}

static void
test_refused(void)
{
	static const char *const bad[] = { "", ".", "..", "a/b", "/abs", "x/" };
	char	out[512];

	/* An entry of another level. */
	CHECK_FAILS(rd_run_file(out, sizeof(out), RUN, RD_RESULT_JSON), out, -KB_EINVAL);
	CHECK_FAILS(rd_run_file(out, sizeof(out), RUN, RD_TRAJECTORY), out, -KB_EINVAL);
	CHECK_FAILS(rd_task_file(out, sizeof(out), RUN, TASK, RD_RUN_JSON), out, -KB_EINVAL);
	CHECK_FAILS(rd_task_file(out, sizeof(out), RUN, TASK, RD_KERNEL_PY), out, -KB_EINVAL);
	CHECK_FAILS(rd_turn_file(out, sizeof(out), RUN, TASK, 1, RD_TRAJECTORY), out, -KB_EINVAL);
	CHECK_FAILS(rd_shard_file(out, sizeof(out), RUN, "3_1", RD_TRAJECTORY), out, -KB_EINVAL);
	CHECK_FAILS(rd_shard_file(out, sizeof(out), RUN, "..", RD_RUN_JSON), out, -KB_EINVAL);
	CHECK_FAILS(rd_turn_file(out, sizeof(out), RUN, TASK, 1, RD_BASELINE_JSON), out, -KB_EINVAL);
	CHECK_FAILS(rd_baseline_file(out, sizeof(out), RUN, "cpu", "k", RD_RESULT_JSON), out,
		    -KB_EINVAL);
	CHECK_FAILS(rd_run_file(out, sizeof(out), RUN, RD_ENTRY__N), out, -KB_EINVAL);
	CHECK_FAILS(rd_redteam_file(out, sizeof(out), RUN, RD_FINDING_SUITE_PY), out, -KB_EINVAL);
	CHECK_FAILS(rd_finding_file(out, sizeof(out), RUN, TASK, 1, RD_RESULT_JSON), out,
		    -KB_EINVAL);
	CHECK_FAILS(rd_finding_file(out, sizeof(out), RUN, TASK, 1, RD_REDTEAM_INDEX_JSON), out,
		    -KB_EINVAL);
	/* Ids and keys that are not one plain component. */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_FAILS(rd_task_dir(out, sizeof(out), RUN, bad[i]), out, -KB_EINVAL);
		CHECK_FAILS(rd_task_file(out, sizeof(out), RUN, bad[i], RD_TRAJECTORY), out,
			    -KB_EINVAL);
		CHECK_FAILS(rd_turn_dir(out, sizeof(out), RUN, bad[i], 1), out, -KB_EINVAL);
		CHECK_FAILS(rd_turn_file(out, sizeof(out), RUN, bad[i], 1, RD_KERNEL_PY), out,
			    -KB_EINVAL);
		CHECK_FAILS(rd_run_key(out, sizeof(out), RUN, RD_BUILD_DIR, bad[i]), out,
			    -KB_EINVAL);
		CHECK_FAILS(rd_baseline_file(out, sizeof(out), RUN, "cpu", bad[i], RD_BASELINE_JSON),
			    out, -KB_EINVAL);
		CHECK_FAILS(rd_finding_dir(out, sizeof(out), RUN, bad[i], 1), out, -KB_EINVAL);
		CHECK_FAILS(rd_finding_file(out, sizeof(out), RUN, bad[i], 1, RD_FINDING_KERNEL_PY),
			    out, -KB_EINVAL);
	}
	CHECK_FAILS(rd_task_dir(out, sizeof(out), RUN, NULL), out, -KB_EINVAL);
	CHECK_FAILS(rd_baseline_dir(out, sizeof(out), RUN, ".."), out, -KB_EINVAL);
	CHECK_FAILS(rd_baseline_dir(out, sizeof(out), RUN, ""), out, -KB_EINVAL);
	CHECK_FAILS(rd_baseline_dir(out, sizeof(out), RUN, NULL), out, -KB_EINVAL);
	/* Turns count from 1. */
	CHECK_FAILS(rd_turn_dir(out, sizeof(out), RUN, TASK, 0), out, -KB_EINVAL);
	CHECK_FAILS(rd_turn_file(out, sizeof(out), RUN, TASK, -1, RD_RESULT_JSON), out, -KB_EINVAL);
	CHECK_FAILS(rd_finding_dir(out, sizeof(out), RUN, TASK, 0), out, -KB_EINVAL);
	CHECK_FAILS(rd_finding_file(out, sizeof(out), RUN, TASK, 0, RD_FINDING_SUITE_PY), out,
		    -KB_EINVAL);
}

/* rd_node_named: an earlier node as named, else what a log naming none means. */
static void
test_node_named(void)
{
	json_t	*d = json_pack("{s:i, s:i, s:i, s:s, s:f}", RD_NODE_PARENT, 2, RD_NODE_PARENT2, 0,
			       RD_NEXT_PARENT, 5, "bad", "1", "real", 1.0);

	CHECK(rd_node_named(d, RD_NODE_PARENT, 4, 3) == 2);	/* named, earlier */
	CHECK(rd_node_named(d, RD_NODE_PARENT, 3, 2) == 2);	/* the node just before */
	CHECK(rd_node_named(d, RD_NODE_PARENT, 2, 1) == 1);	/* not earlier than 2: none */
	CHECK(rd_node_named(d, RD_NODE_PARENT2, 4, 0) == 0);	/* 0 is the problem */
	CHECK(rd_node_named(d, RD_NEXT_PARENT, 6, 5) == 5);	/* next_turn: up to its turn */
	CHECK(rd_node_named(d, RD_NEXT_PARENT2, 6, 0) == 0);	/* absent */
	CHECK(rd_node_named(d, "bad", 4, 3) == 3);		/* not an integer */
	CHECK(rd_node_named(d, "real", 4, 3) == 3);
	CHECK(rd_node_named(NULL, RD_NODE_PARENT, 4, 3) == 3);
	json_decref(d);
	d = json_pack("{s:i}", RD_NODE_PARENT, -1);
	CHECK(rd_node_named(d, RD_NODE_PARENT, 4, 3) == 3);	/* below the problem */
	json_decref(d);
}

int
main(void)
{
	test_table();
	test_node_named();
	test_levels();
	test_overflow();
	test_refused();
	if (failures == 0)
		printf("unit_rundir: ok\n");
	return failures ? 1 : 0;
}
