/*
 * fuzz_tlog.c: libFuzzer target for the trajectory log reader (base/tlog.c: replay and
 * torn-tail repair) and its main consumer, the task summary (report/summary.c). The input
 * is the bytes of a tasks/T/trajectory.jsonl, written under a scratch directory in
 * /dev/shm where there is one (every input costs several fsyncs, free on tmpfs), else
 * $KFORGE_TEST_TMP, else /tmp. Properties checked, abort() on failure:
 *  - kb_tlog_read replays records seq 1, 2, ... with every field set (turn 0..100000,
 *    data an object, ts terminated) and returns their count; it never changes the file;
 *  - rpt_summarize of the same log stays in range: last_seq <= that count, turns and
 *    nbest 0..256, best_speedup -1 or >= 0, every best_at_turn -1 or >= 0;
 *  - kb_tlog_open replays the same records, cuts the file to the good prefix (the input
 *    up to a newline), says how many bytes it dropped, keeps exactly those in
 *    trajectory.jsonl.dropped, and warns exactly when it drops: one line that names the
 *    line and the problem;
 *  - opening again drops nothing; an append continues the sequence and reads back.
 * tests/orchestrator/orchestrator_config_corpus.c replays files through the same function without
 * libFuzzer (test base_tlog_corpus); the libFuzzer build needs -DKB_FUZZ=ON and clang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "report/report.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char	scratch[4096], task_dir[4200], log_path[4300], kept_path[4400];
static int	log_capture = -1;

static void
fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_tlog: %s: %s\n", what, detail != NULL ? detail : "");
	abort();
}

static void
remove_scratch(void)
{
	char	path[4300];

	unlink(log_path);
	unlink(kept_path);
	rmdir(task_dir);
	snprintf(path, sizeof(path), "%s/tasks", scratch);
	rmdir(path);
	rmdir(scratch);
}

static void
setup_once(void)
{
	const char	*base = getenv("KFORGE_TEST_TMP");
	struct stat	 st;

	if (scratch[0] != '\0')
		return;
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
		base = "/dev/shm";
	else if (base == NULL || base[0] == '\0')
		base = "/tmp";
	if (kb_mkdir_p(base, 0755) < 0)
		fail("cannot create", base);
	snprintf(scratch, sizeof(scratch), "%s/fuzz_tlog.XXXXXX", base);
	if (mkdtemp(scratch) == NULL)
		fail("mkdtemp", scratch);
	snprintf(task_dir, sizeof(task_dir), "%s/tasks/T", scratch);
	if (kb_mkdir_p(task_dir, 0755) < 0)
		fail("cannot create", task_dir);
	snprintf(log_path, sizeof(log_path), "%s/trajectory.jsonl", task_dir);
	snprintf(kept_path, sizeof(kept_path), "%s.dropped", log_path);
	atexit(remove_scratch);
	/* The operational log goes to a memory file, so each input's warnings can be read. */
	if ((log_capture = memfd_create("fuzz_tlog_log", MFD_CLOEXEC)) < 0)
		fail("memfd_create", NULL);
	kb_log_init("fuzz", log_capture);
}

static void
write_input(const uint8_t *data, size_t size)
{
	FILE	*fp = fopen(log_path, "w");

	if (fp == NULL || (size > 0 && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0)
		fail("cannot write", log_path);
}

static char *
read_back(const char *path, size_t *len)
{
	char	*text;

	if (kb_read_file(path, 1 << 24, &text, len) < 0)
		fail("cannot read back", path);
	return text;
}

/* The repair keeps what it cut, and nothing else, beside the log. */
static void
check_kept(const uint8_t *data, size_t size, size_t good)
{
	char	*text;
	size_t	 len;

	if (good == size) {
		if (access(kept_path, F_OK) == 0)
			fail("a .dropped file without a drop", NULL);
		return;
	}
	text = read_back(kept_path, &len);
	if (len != size - good || memcmp(text, data + good, len) != 0)
		fail("the .dropped file is not the dropped tail", NULL);
	free(text);
	unlink(kept_path);
}

struct replay {
	int64_t	n;
	char	last_event[64];
};

static int
check_record(const struct kb_tlog_rec *rec, void *arg)
{
	struct replay	*r = arg;

	if (rec->seq != r->n + 1)
		fail("records out of sequence", NULL);
	if (rec->task == NULL || rec->from == NULL || rec->event == NULL || rec->to == NULL)
		fail("a record lacks a string field", NULL);
	if (rec->turn < 0 || rec->turn > 100000)
		fail("turn out of range", NULL);
	if (!json_is_object(rec->data))
		fail("data is not an object", NULL);
	if (memchr(rec->ts, '\0', sizeof(rec->ts)) == NULL)
		fail("ts not terminated", NULL);
	snprintf(r->last_event, sizeof(r->last_event), "%s", rec->event);
	r->n++;
	return 0;
}

static bool
measured_or_none(double v)
{
	return v == -1 || v >= 0;
}

static void
check_summary(int64_t records)
{
	struct rpt_summary	s;

	if (rpt_summarize(scratch, "T", &s) < 0)
		fail("rpt_summarize refused a readable log", NULL);
	if (s.last_seq < 0 || s.last_seq > records)
		fail("summary last_seq outside the log", NULL);
	if (s.turns_done < 0 || s.turns_done > 256 || s.nbest < 0 || s.nbest > 256 ||
	    s.best_turn < 0 || s.best_turn > 256)
		fail("summary turn counts out of range", NULL);
	if (!measured_or_none(s.best_speedup))
		fail("summary best_speedup out of range", NULL);
	for (int k = 0; k < s.nbest; k++)
		if (!measured_or_none(s.best_at_turn[k]))
			fail("summary best_at_turn out of range", NULL);
	if (s.llm_requests < 0 || s.prompt_tokens < 0 || s.completion_tokens < 0)
		fail("summary counters negative", NULL);
	if (memchr(s.fail_reason, '\0', sizeof(s.fail_reason)) == NULL ||
	    memchr(s.last_status, '\0', sizeof(s.last_status)) == NULL)
		fail("summary strings not terminated", NULL);
}

/* The warnings logged since the last call: none when nothing was dropped, else one
 * line naming the line and its problem. */
static void
check_warning(int64_t dropped, int64_t records)
{
	char	 text[8192], want[64];
	ssize_t	 n = pread(log_capture, text, sizeof(text) - 1, 0);
	char	*nl;

	if (n < 0)
		fail("cannot read the captured log", NULL);
	text[n] = '\0';
	if (ftruncate(log_capture, 0) != 0 || lseek(log_capture, 0, SEEK_SET) != 0)
		fail("cannot reset the captured log", NULL);
	if (dropped == 0) {
		if (n != 0)
			fail("a warning without a drop", text);
		return;
	}
	nl = memchr(text, '\n', (size_t)n);
	if (nl == NULL || nl != text + n - 1)
		fail("the drop warning is not exactly one line", text);
	if (memchr(text, '\0', (size_t)n) != NULL)
		fail("the drop warning holds a NUL", NULL);
	snprintf(want, sizeof(want), "after record %lld: line %lld ", (long long)records,
		 (long long)records + 1);
	if (strstr(text, "dropping") == NULL || strstr(text, want) == NULL)
		fail("the drop warning does not name the line", text);
	for (const char *p = text; p < nl; p++)
		if ((unsigned char)*p < 0x20)
			fail("the drop warning holds a control character", text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replay	 seen = { 0 }, again = { 0 };
	struct kb_tlog	*log;
	int64_t		 dropped = -1;
	char		*text;
	size_t		 len;
	int		 count;

	setup_once();
	unlink(kept_path);
	write_input(data, size);

	/* The reader: records in sequence, file untouched. */
	if ((count = kb_tlog_read(log_path, check_record, &seen)) < 0)
		fail("kb_tlog_read failed", kb_strerror(count));
	if (count != seen.n)
		fail("kb_tlog_read count differs from its callbacks", NULL);
	text = read_back(log_path, &len);
	if (len != size || (size > 0 && memcmp(text, data, size) != 0))
		fail("the reader changed the file", NULL);
	free(text);
	check_summary(count);

	/* The repair: same records, file cut to the good prefix, one warning per drop. */
	if (kb_tlog_open(&log, log_path, check_record, &again, &dropped) < 0)
		fail("kb_tlog_open failed", NULL);
	if (again.n != count || kb_tlog_last_seq(log) != count ||
	    strcmp(again.last_event, seen.last_event) != 0)
		fail("open replayed other records than read", NULL);
	text = read_back(log_path, &len);
	if (dropped < 0 || len + (size_t)dropped != size || memcmp(text, data, len) != 0 ||
	    (len > 0 && text[len - 1] != '\n'))
		fail("the repaired file is not the input's good prefix", NULL);
	free(text);
	check_kept(data, size, len);
	check_warning(dropped, count);

	/* The repaired log takes an append that reads back after the good records. */
	if (kb_tlog_append(log, "T", 1, "FEEDBACK", "next_turn", "GENERATE", NULL) < 0 ||
	    kb_tlog_last_seq(log) != count + 1)
		fail("append after repair failed", NULL);
	kb_tlog_close(log);
	memset(&again, 0, sizeof(again));
	dropped = -1;
	if (kb_tlog_open(&log, log_path, check_record, &again, &dropped) < 0 ||
	    again.n != count + 1 || dropped != 0 || strcmp(again.last_event, "next_turn") != 0)
		fail("the appended log does not replay whole", NULL);
	kb_tlog_close(log);
	check_warning(0, count + 1);
	return 0;
}
