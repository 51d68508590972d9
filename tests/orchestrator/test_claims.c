/* orchestrator/claims.c: a Slurm run's claims and the shards' heartbeats, in a scratch run
 * directory. One claim per task however many processes race for it; a claim is its
 * shard's again after a restart, taken only from the shard named dead, let go only by its
 * own; a heartbeat unchanged for the timeout (or a shard that says it ended) is dead, one
 * that moves is not. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/orch_int.h"
#include "kb_check.h"

#define RACERS	8
#define TASKS	40

static char run_dir[PATH_MAX];

static void
write_beat(const char *shard, long beat, const char *status)
{
	char	 path[PATH_MAX];
	json_t	*j = json_pack("{s:I, s:s}", "beat", (json_int_t)beat, "status", status);

	CHECK(rd_run_key(path, sizeof(path), run_dir, RD_SHARDS_DIR, shard) == 0);
	CHECK(kb_mkdir_p(path, 0755) == 0);
	CHECK(rd_shard_file(path, sizeof(path), run_dir, shard, RD_RUN_JSON) == 0);
	CHECK(kb_write_atomic_json(path, j) == 0);
	json_decref(j);
}

static void
test_take_steal_release(void)
{
	char owner[ORCH_SHARD_ID_MAX];

	CHECK(orch_claim_owner(run_dir, "L1_1_ReLU_s0", owner, sizeof(owner)) == -KB_ENOENT);
	CHECK(orch_claim_take(run_dir, "L1_1_ReLU_s0", "7_0", "hostA") == 1);
	CHECK(orch_claim_take(run_dir, "L1_1_ReLU_s0", "7_1", "hostB") == 0);
	/* a requeued shard (same id, another host and pid) has it back */
	CHECK(orch_claim_take(run_dir, "L1_1_ReLU_s0", "7_0", "hostC") == 1);
	CHECK(orch_claim_owner(run_dir, "L1_1_ReLU_s0", owner, sizeof(owner)) == 0 &&
	      strcmp(owner, "7_0") == 0);
	/* taken only from the shard found dead */
	CHECK(orch_claim_steal(run_dir, "L1_1_ReLU_s0", "7_2", "7_1", "hostB") == 0);
	CHECK(orch_claim_owner(run_dir, "L1_1_ReLU_s0", owner, sizeof(owner)) == 0 &&
	      strcmp(owner, "7_0") == 0);
	CHECK(orch_claim_steal(run_dir, "L1_1_ReLU_s0", "7_0", "7_1", "hostB") == 1);
	CHECK(orch_claim_owner(run_dir, "L1_1_ReLU_s0", owner, sizeof(owner)) == 0 &&
	      strcmp(owner, "7_1") == 0);
	CHECK(orch_claim_steal(run_dir, "L1_9_None_s0", "7_0", "7_1", "hostB") == 0);
	/* let go only by its own shard */
	CHECK(orch_claim_release(run_dir, "L1_1_ReLU_s0", "7_0") == 0);
	CHECK(orch_claim_owner(run_dir, "L1_1_ReLU_s0", owner, sizeof(owner)) == 0 &&
	      strcmp(owner, "7_1") == 0);
	CHECK(orch_claim_release(run_dir, "L1_1_ReLU_s0", "7_1") == 0);
	CHECK(orch_claim_owner(run_dir, "L1_1_ReLU_s0", owner, sizeof(owner)) == -KB_ENOENT);
	CHECK(orch_claim_take(run_dir, "../x", "7_0", "h") == -KB_EINVAL);
}

/* RACERS processes claim the same TASKS tasks at once: each task has one owner, and the
 * racers that were told "yours" are exactly its owners. */
static void
test_race(void)
{
	int	wins[RACERS][TASKS], fds[RACERS][2];
	pid_t	pids[RACERS];

	for (int r = 0; r < RACERS; r++) {
		CHECK(pipe(fds[r]) == 0);
		if ((pids[r] = fork()) == 0) {
			unsigned char got[TASKS];
			char	      task[32], shard[16];

			snprintf(shard, sizeof(shard), "9_%d", r);
			for (int t = 0; t < TASKS; t++) {
				snprintf(task, sizeof(task), "L1_%d_T_s0", t);
				got[t] = (unsigned char)orch_claim_take(run_dir, task, shard, "h");
			}
			_exit(write(fds[r][1], got, sizeof(got)) == (ssize_t)sizeof(got) ? 0 : 1);
		}
		close(fds[r][1]);
	}
	for (int r = 0; r < RACERS; r++) {
		unsigned char	got[TASKS];
		int		st;

		CHECK(read(fds[r][0], got, sizeof(got)) == (ssize_t)sizeof(got));
		CHECK(waitpid(pids[r], &st, 0) == pids[r] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		close(fds[r][0]);
		for (int t = 0; t < TASKS; t++)
			wins[r][t] = got[t];
	}
	for (int t = 0; t < TASKS; t++) {
		char	task[32], owner[ORCH_SHARD_ID_MAX], want[16];
		int	winners = 0, who = -1;

		snprintf(task, sizeof(task), "L1_%d_T_s0", t);
		for (int r = 0; r < RACERS; r++)
			if (wins[r][t] == 1) {
				winners++;
				who = r;
			}
		CHECKM(winners == 1, "task %d: %d racers were told it is theirs", t, winners);
		snprintf(want, sizeof(want), "9_%d", who);
		CHECK(orch_claim_owner(run_dir, task, owner, sizeof(owner)) == 0);
		CHECKM(strcmp(owner, want) == 0, "task %d: claim names %s, the winner was %s", t,
		       owner, want);
	}
}

static void
test_watch(void)
{
	struct orch_shard_watch	*patient, *hasty;
	struct timespec		 pause = { 1, 300 * 1000000L };

	write_beat("5_0", 1, "running");
	write_beat("5_1", 1, "running");
	write_beat("5_2", 4, "finished");
	/* one that waits a minute before calling a shard dead, one a second */
	CHECK((patient = orch_shard_watch_new(run_dir, "5_1", 60)) != NULL);
	CHECK((hasty = orch_shard_watch_new(run_dir, "5_1", 1)) != NULL);
	CHECK(orch_shard_watch_look(patient) == 0 && orch_shard_watch_look(hasty) == 0);
	CHECK(!orch_shard_watch_dead(patient, "5_0"));
	CHECK(orch_shard_watch_dead(patient, "5_2"));	/* it said it ended */
	CHECK(!orch_shard_watch_dead(patient, "5_1"));	/* never itself */
	CHECK(orch_shard_watch_ndead(patient) == 1);
	nanosleep(&pause, NULL);
	CHECK(orch_shard_watch_look(hasty) == 0);
	CHECK(orch_shard_watch_dead(hasty, "5_0"));	/* unchanged for more than a second */
	CHECK(!orch_shard_watch_dead(patient, "5_0"));
	write_beat("5_0", 2, "running");		/* it moves again: alive */
	CHECK(orch_shard_watch_look(hasty) == 0);
	CHECK(!orch_shard_watch_dead(hasty, "5_0"));
	/* a claim's shard with no folder yet is watched from the first ask, not dead */
	CHECK(!orch_shard_watch_dead(patient, "6_0"));
	orch_shard_watch_free(patient);
	orch_shard_watch_free(hasty);
}

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int
main(void)
{
	char	tmpl[] = "/tmp/kf-claims-XXXXXX", path[PATH_MAX];

	CHECK(mkdtemp(tmpl) != NULL);
	snprintf(run_dir, sizeof(run_dir), "%s", tmpl);
	CHECK(rd_run_file(path, sizeof(path), run_dir, RD_CLAIMS_DIR) == 0 &&
	      kb_mkdir_p(path, 0755) == 0);
	test_take_steal_release();
	test_race();
	test_watch();
	CHECK(nftw(tmpl, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
	printf("unit_claims: ok\n");
	return 0;
}
