/*
 * orchestrator_progress.c: what the progress display prints, from a filled-in
 * struct orch_progress_stats: durations, the estimate of what is left, the block and
 * its cut to the terminal's width, the one-line summary, the final summary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/orch_int.h"
#include "kb_check.h"

#define HAS(text, want) CHECKM(strstr((text), (want)) != NULL, "no '%s' in:\n%s", (want), (text))

static void
test_duration(void)
{
	static const struct { int64_t ms; const char *want; } cases[] = {
		{ -5, "0s" }, { 0, "0s" }, { 999, "0s" }, { 12000, "12s" }, { 59999, "59s" },
		{ 60000, "1m00s" }, { 185000, "3m05s" }, { 3599000, "59m59s" },
		{ 3600000, "1h00m" }, { 3720000, "1h02m" }, { 86399000, "23h59m" },
		{ 86400000LL * 2 + 3600000LL * 3, "2d03h" },
	};
	char	out[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		orch_fmt_duration(cases[i].ms, out, sizeof(out));
		CHECKM(strcmp(out, cases[i].want) == 0, "%lld ms: '%s', want '%s'",
		       (long long)cases[i].ms, out, cases[i].want);
	}
}

static void
test_eta(void)
{
	CHECK(orch_eta_ms(0, 10, 60000) == -1);		/* nothing done yet: no rate */
	CHECK(orch_eta_ms(3, 10, 0) == -1);
	CHECK(orch_eta_ms(-1, 10, 60000) == -1);
	CHECK(orch_eta_ms(4, 0, 60000) == 0);		/* nothing left */
	CHECK(orch_eta_ms(2, 6, 60000) == 180000);	/* 30 s a turn, 6 to go */
	CHECK(orch_eta_ms(3, 1, 1000) == 333);
	/* a big run does not overflow */
	CHECK(orch_eta_ms(1, 100000, 86400000LL * 30) == 86400000LL * 30 * 100000);
}

/* One look of the display: seconds elapsed, turns done, turns left, tasks finished. */
struct look {
	int	s;
	long	done, left;
	int	finished;
};

/* The looks of the CPU demo (8 tasks, 3 turns each, finished at 45 s), a second apart,
 * as its progress lines had them: a turn done at 1 s, then little until 13 s (the
 * start-up: the selftest, the baselines), then bursts as tasks' turns end together. */
static const struct look demo_looks[] = {
	{ 0, 0, 24, 0 }, { 1, 1, 23, 0 }, { 2, 1, 23, 0 }, { 3, 1, 23, 0 }, { 4, 1, 23, 0 },
	{ 5, 1, 23, 0 }, { 6, 1, 23, 0 }, { 7, 2, 22, 0 }, { 8, 2, 22, 0 }, { 9, 3, 21, 0 },
	{ 10, 3, 21, 0 }, { 11, 3, 21, 0 }, { 12, 4, 20, 0 }, { 13, 7, 17, 0 },
	{ 14, 7, 17, 0 }, { 15, 7, 17, 0 }, { 16, 7, 17, 0 }, { 17, 7, 17, 0 },
	{ 18, 7, 17, 0 }, { 19, 7, 17, 0 }, { 20, 7, 17, 0 }, { 21, 7, 17, 0 },
	{ 22, 9, 15, 0 }, { 23, 9, 15, 0 }, { 24, 9, 15, 0 }, { 25, 9, 15, 0 },
	{ 26, 9, 15, 0 }, { 27, 9, 15, 0 }, { 28, 9, 15, 0 }, { 29, 9, 15, 0 },
	{ 30, 9, 15, 0 }, { 31, 12, 12, 0 }, { 32, 12, 12, 0 }, { 33, 12, 12, 0 },
	{ 34, 16, 8, 2 }, { 35, 16, 8, 2 }, { 36, 16, 8, 2 }, { 37, 16, 8, 2 },
	{ 38, 16, 8, 2 }, { 39, 17, 7, 2 }, { 40, 18, 6, 2 }, { 41, 20, 4, 4 },
	{ 42, 20, 4, 4 }, { 43, 20, 4, 4 }, { 44, 21, 3, 5 }, { 45, 24, 0, 8 },
};
#define N_DEMO_LOOKS (sizeof(demo_looks) / sizeof(demo_looks[0]))

/* The largest rise of an estimate from one look to the next, as a share of the earlier. */
static double
largest_rise(const int64_t *eta, size_t n)
{
	double	worst = 0;

	for (size_t i = 1; i < n; i++)
		if (eta[i - 1] > 0 && eta[i] > eta[i - 1] &&
		    (double)(eta[i] - eta[i - 1]) / (double)eta[i - 1] > worst)
			worst = (double)(eta[i] - eta[i - 1]) / (double)eta[i - 1];
	return worst;
}

static void
test_eta_shown(void)
{
	struct orch_eta	 e = ORCH_ETA_INIT;
	int64_t		 shown[N_DEMO_LOOKS], raw[N_DEMO_LOOKS];
	size_t		 first = 0;

	for (size_t i = 0; i < N_DEMO_LOOKS; i++) {
		const struct look *l = &demo_looks[i];

		shown[i] = orch_eta_next(&e, l->done, l->left, l->finished, l->s * 1000LL);
		raw[i] = orch_eta_ms(l->done, l->left, l->s * 1000LL);
		if (first == 0 && shown[i] >= 0)
			first = i;
	}
	/* "—" until a tenth of the turns are done (3 of 24, at 9 s), then an estimate at
	 * every look, 0 at the end */
	CHECKM(demo_looks[first].s == 9, "the first estimate at %d s, want 9 s", demo_looks[first].s);
	for (size_t i = first; i < N_DEMO_LOOKS; i++)
		CHECKM(shown[i] >= 0, "no estimate at %d s after one at 9 s", demo_looks[i].s);
	CHECK(shown[N_DEMO_LOOKS - 1] == 0);
	/* the rate's own swings (23 s, 47 s, ... 2m20s, 1m18s in the first seconds; up by
	 * half within the run); the estimate shown rises by no more than a tenth */
	CHECKM(largest_rise(raw + 1, N_DEMO_LOOKS - 1) > 0.5, "the demo's rate no longer swings "
	       "(%.2f): the test says nothing", largest_rise(raw + 1, N_DEMO_LOOKS - 1));
	CHECKM(largest_rise(shown + first, N_DEMO_LOOKS - first) <= 0.1,
	       "the estimate rose by %.0f%% from one look to the next",
	       100 * largest_rise(shown + first, N_DEMO_LOOKS - first));
	/* it counts down: ten seconds later it is lower, whatever finished in between */
	for (size_t i = first; i + 10 < N_DEMO_LOOKS; i++)
		CHECKM(shown[i + 10] < shown[i], "%d s: %lld ms left, %d s: %lld ms",
		       demo_looks[i].s, (long long)shown[i], demo_looks[i + 10].s,
		       (long long)shown[i + 10]);

	/* A task finished opens it before a tenth is done. */
	e = (struct orch_eta)ORCH_ETA_INIT;
	CHECK(orch_eta_next(&e, 2, 98, 0, 10000) == -1);
	CHECK(orch_eta_next(&e, 3, 97, 1, 15000) == 15000 * 97 / 3);
	/* ... and once open it stays open. */
	CHECK(orch_eta_next(&e, 3, 97, 1, 16000) > 0);

	/* Steady work, a turn every 2 s, looked at every second or every 30 s: near the
	 * truth either way once open, and alike. */
	for (int every = 1; every <= 30; every += 29) {
		struct orch_eta	steady = ORCH_ETA_INIT;

		for (int s = every; s <= 200; s += every) {
			int64_t	got = orch_eta_next(&steady, s / 2, 100 - s / 2, 0, s * 1000LL);
			int64_t	truth = (200 - s) * 1000LL;

			if (s < 20)
				CHECKM(got == -1, "every %d s: an estimate at %d s", every, s);
			else
				CHECKM(got >= 0 && llabs(got - truth) <= 4000 + truth / 10,
				       "every %d s, at %d s: %lld ms left, truly %lld", every, s,
				       (long long)got, (long long)truth);
		}
	}

	/* Work stalled past the smoothed finish: the rate's estimate, never "0s" with work
	 * left. */
	e = (struct orch_eta)ORCH_ETA_INIT;
	CHECK(orch_eta_next(&e, 10, 10, 1, 10000) == 10000);
	CHECK(orch_eta_next(&e, 10, 10, 1, 60000) == 60000);
	/* The same look twice: the same answer. */
	CHECK(orch_eta_next(&e, 10, 10, 1, 60000) == 60000);
}

static struct orch_progress_stats
sample_stats(void)
{
	struct orch_progress_stats st;

	memset(&st, 0, sizeof(st));
	st.run_name = "demo";
	st.ntasks = 8;
	st.in_state[RPT_ST_GENERATE] = 1;
	st.in_state[RPT_ST_PRECOMPILE] = 2;
	st.in_state[RPT_ST_EXECUTE] = 1;
	st.in_state[RPT_ST_DONE] = 2;
	st.in_state[RPT_ST_FAILED] = 1;
	st.pending = 1;
	st.turns_done = 9;
	st.turns_total = 24;
	st.build_busy = 1;
	st.build_total = 1;
	st.build_waiting = 2;
	st.exec_busy = 1;
	st.exec_total = 2;
	st.llm_busy = 1;
	st.llm_done = 10;
	st.prompt_tokens = 1200;
	st.completion_tokens = 345;
	st.ncorrect = 3;
	st.best[0].task = "L1_19_ReLU_s0";
	st.best[0].speedup = 2.104;
	st.best[1].task = "L1_2_LeakyReLU_s0";
	st.best[1].speedup = 1.3;
	st.nbest = 2;
	st.elapsed_ms = 133000;
	st.eta_ms = 220000;
	return st;
}

static int
count(const char *s, char c)
{
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static void
test_block(void)
{
	struct orch_progress_stats	st = sample_stats();
	struct kb_buf			b = KB_BUF_INIT(0);

	orch_progress_render(&st, true, 0, &b);
	CHECKM(count(b.p, '\n') == 7 && b.p[b.len - 1] == '\n', "7 whole lines:\n%s", b.p);
	HAS(b.p, "kforge run demo: elapsed 2m13s, left ~3m40s\n");
	HAS(b.p, "tasks       8: GENERATE 1, PRECOMPILE 2, EXECUTE 1, PROFILE 0, FEEDBACK 0, "
		 "DONE 2, FAILED 1, pending 1\n");
	HAS(b.p, "turns       9/24\n");
	HAS(b.p, "builds      1/1 busy, 2 waiting\n");
	HAS(b.p, "executions  1/2 busy, 0 waiting\n");
	HAS(b.p, "llm         1 in flight, 0 waiting, 10 done, 1545 tokens (1200 prompt + 345 "
		 "completion)\n");
	HAS(b.p, "best        2.10x L1_19_ReLU_s0, 1.30x L1_2_LeakyReLU_s0; correct kernels in "
		 "3/8 tasks\n");
	CHECK(strchr(b.p, '\033') == NULL);	/* the escapes are the drawing's, not the text's */
	kb_buf_clear(&b);

	/* Until a turn is done there is no rate: the estimate says so. */
	st.eta_ms = -1;
	st.nbest = 0;
	st.ncorrect = 0;
	orch_progress_render(&st, true, 0, &b);
	HAS(b.p, "left \xe2\x80\x94\n");
	HAS(b.p, "best        none yet; correct kernels in 0/8 tasks\n");
	CHECK(strstr(b.p, "runners") == NULL);	/* none starting: no line */
	kb_buf_clear(&b);

	/* Workers waiting for their runner's start (torch's import) are named beside the
	 * builds, though they hold no slot. */
	st.runners_starting = 3;
	orch_progress_render(&st, true, 0, &b);
	HAS(b.p, "builds      1/1 busy, 2 waiting\n"
		 "  runners     3 starting (importing torch), in no slot\n"
		 "  executions");
	kb_buf_clear(&b);
	orch_progress_render(&st, false, 0, &b);
	HAS(b.p, "; builds 1/1 busy, 2 waiting; runners 3 starting (importing torch), in no slot; "
		 "executions");
	kb_buf_clear(&b);
}

/* Each line cut to width - 1 columns; "—" (3 bytes) is one column and is never split. */
static void
test_block_width(void)
{
	struct orch_progress_stats	st = sample_stats();
	struct kb_buf			b = KB_BUF_INIT(0);
	const char			*line, *end;

	st.eta_ms = -1;
	for (int width = 2; width <= 120; width++) {
		orch_progress_render(&st, true, width, &b);
		CHECKM(count(b.p, '\n') == 7, "width %d: %d lines", width, count(b.p, '\n'));
		for (line = b.p; (end = strchr(line, '\n')) != NULL; line = end + 1) {
			int cols = 0;

			for (const char *c = line; c < end; c++)
				cols += ((unsigned char)*c & 0xC0) != 0x80;
			CHECKM(cols <= width - 1, "width %d: a line of %d columns: %.*s", width,
			       cols, (int)(end - line), line);
			/* no character cut in two: a line never ends in a lead or middle byte */
			CHECKM(end == line || ((unsigned char)end[-1] & 0x80) == 0 ||
			       (unsigned char)end[-1] == 0x94, "width %d: a split character", width);
		}
		b.len = 0;
	}
	orch_progress_render(&st, true, 46, &b);
	HAS(b.p, "kforge run demo: elapsed 2m13s, left \xe2\x80\x94\n");	/* 38 columns */
	HAS(b.p, "  tasks       8: GENERATE 1, PRECOMPILE 2, EX\n");	/* cut at 45 */
	kb_buf_clear(&b);
}

static void
test_line(void)
{
	struct orch_progress_stats	st = sample_stats();
	struct kb_buf			b = KB_BUF_INIT(0);

	orch_progress_render(&st, false, 0, &b);
	CHECKM(count(b.p, '\n') == 1 && b.p[b.len - 1] == '\n', "one line: %s", b.p);
	CHECK(strchr(b.p, '\033') == NULL);
	HAS(b.p, "kforge run demo: elapsed 2m13s, left ~3m40s; tasks 8: GENERATE 1, ");
	HAS(b.p, "; turns 9/24; builds 1/1 busy, 2 waiting; executions 1/2 busy, 0 waiting; "
		 "llm 1 in flight, 0 waiting, 10 done, 1545 tokens");
	HAS(b.p, "; best 2.10x L1_19_ReLU_s0, 1.30x L1_2_LeakyReLU_s0; correct kernels in 3/8 "
		 "tasks\n");
	kb_buf_clear(&b);
}

static void
test_final(void)
{
	struct orch_progress_stats	st = sample_stats();
	struct kb_buf			b = KB_BUF_INIT(0);

	orch_progress_render_final(&st, "stopped", &b);
	HAS(b.p, "kforge run demo stopped in 2m13s\n");
	HAS(b.p, "  tasks       8: 2 done, 1 failed, 5 unfinished\n");
	HAS(b.p, "  turns       9/24\n");
	HAS(b.p, "  llm         10 requests, 1545 tokens (1200 prompt + 345 completion)\n");
	HAS(b.p, "  best        2.10x L1_19_ReLU_s0, 1.30x L1_2_LeakyReLU_s0; correct kernels "
		 "in 3/8 tasks\n");
	CHECK(count(b.p, '\n') == 5 && strchr(b.p, '\033') == NULL);
	kb_buf_clear(&b);
}

int
main(void)
{
	test_duration();
	test_eta();
	test_eta_shown();
	test_block();
	test_block_width();
	test_line();
	test_final();
	if (failures == 0)
		printf("ok\n");
	return failures == 0 ? 0 : 1;
}
