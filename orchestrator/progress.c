/* progress.c: the progress display of a foreground run (see orch_int.h). It lives in
 * the supervisor's process and must never slow it: a look stats every task's log and
 * re-summarises only the ones that grew, and all output is a few write(2)s a second.
 * Output that goes away (a closed pipe, a hung-up terminal) turns the display off and
 * leaves the run alone. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/orch_int.h"
#include "base/banned.h"

/* A worker's log line is at most the logger's 4 KiB; a longer run of bytes without a
 * newline is let out as it is rather than held. */
#define LOG_PENDING_CAP	8192

/* What one look at a task's log gave, and what its log looked like then. */
struct task_view {
	off_t		 size;
	struct timespec	 mtime;
	bool		 looked, has_worker;
	enum rpt_state	 state;
	int		 turns_done;
	bool		 any_correct;
	double		 best_speedup;
	long		 requests, prompt_tokens, completion_tokens;
};

struct orch_progress {
	const struct orch_run	*run;
	enum orch_progress_mode	 mode;
	int64_t			 interval_ms, started_ms, last_line_ms;
	struct task_view	*tasks;
	long			 turns_done_at_start;	/* -1 until the first look */
	int			 finished_at_start;
	struct orch_eta		 eta;
	struct orch_progress_stats pool;		/* only the slot fields are kept */
	struct kb_buf		 block;			/* on screen now (terminal) */
	int			 drawn_lines;
	bool			 out_gone;		/* stdout failed: draw nothing more */
	int			 log_pipe[2];		/* workers -> supervisor (terminal) */
	char			 pending[LOG_PENDING_CAP];
	size_t			 npending;
};

/* ------------------------------------------------------------ formatting */

void
orch_fmt_duration(int64_t ms, char *out, size_t len)
{
	int64_t	s = ms > 0 ? ms / 1000 : 0;

	if (s < 60)
		snprintf(out, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(out, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else if (s < 86400)
		snprintf(out, len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else
		snprintf(out, len, "%lldd%02lldh", (long long)(s / 86400),
			 (long long)(s % 86400 / 3600));
}

int64_t
orch_eta_ms(long turns_done, long turns_left, int64_t elapsed_ms)
{
	if (turns_done <= 0 || elapsed_ms <= 0)
		return -1;
	if (turns_left <= 0)
		return 0;
	return (int64_t)((double)turns_left * (double)elapsed_ms / (double)turns_done);
}

int64_t
orch_eta_next(struct orch_eta *e, long turns_done, long turns_left, int tasks_finished,
	      int64_t elapsed_ms)
{
	int64_t	raw = orch_eta_ms(turns_done, turns_left, elapsed_ms), end;
	double	tau, weight;

	if (raw <= 0)		/* no rate yet, or nothing left */
		return raw;
	if (e->end_ms < 0 && tasks_finished < 1 &&
	    (double)turns_done < ORCH_ETA_MIN_SHARE * (double)(turns_done + turns_left))
		return -1;
	end = elapsed_ms + raw;
	/* Weighted by the time since the last look, against a span that grows with the run:
	 * looks a second apart or thirty, the estimate moves alike. A smoothed finish that
	 * the clock has passed with work left says nothing more: the rate's own takes over. */
	if (e->end_ms > elapsed_ms && elapsed_ms > e->at_ms) {
		tau = ORCH_ETA_SMOOTHING * (double)elapsed_ms;
		weight = 1.0 - exp(-(double)(elapsed_ms - e->at_ms) / (tau > 1000 ? tau : 1000));
		end = e->end_ms + (int64_t)(weight * (double)(end - e->end_ms));
	} else if (e->end_ms > elapsed_ms) {
		end = e->end_ms;
	}
	e->end_ms = end;
	e->at_ms = elapsed_ms;
	return end - elapsed_ms;
}

/* The bytes of s[0..n) that fill at most width terminal columns: one column per UTF-8
 * character (the display writes nothing wider). */
static size_t
fit_columns(const char *s, size_t n, int width)
{
	int	cols = 0;

	for (size_t i = 0; i < n; i++) {
		if (((unsigned char)s[i] & 0xC0) == 0x80)
			continue;
		if (cols == width)
			return i;
		cols++;
	}
	return n;
}

/* A part of the display: a label and its text (one block line, one ';' part of a
 * summary line). */
struct part {
	const char	*label;
	char		 text[640];
};

static void
best_text(const struct orch_progress_stats *st, char *out, size_t len)
{
	size_t	n = 0;

	out[0] = '\0';
	for (int i = 0; i < st->nbest && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%.2fx %s", i ? ", " : "",
				      st->best[i].speedup, st->best[i].task);
	if (n >= len)
		return;
	snprintf(out + n, len - n, "%scorrect kernels in %d/%d tasks",
		 st->nbest > 0 ? "; " : "none yet; ", st->ncorrect, st->ntasks);
}

static int
live_parts(const struct orch_progress_stats *st, struct part *parts)
{
	int	n = 0;
	size_t	m = 0;

	parts[n].label = "tasks";
	m = (size_t)snprintf(parts[n].text, sizeof(parts[n].text), "%d:", st->ntasks);
	for (int s = RPT_ST_GENERATE; s < RPT_ST__N && m < sizeof(parts[n].text); s++)
		m += (size_t)snprintf(parts[n].text + m, sizeof(parts[n].text) - m, " %s %d,",
				      rpt_state_name((enum rpt_state)s), st->in_state[s]);
	if (m < sizeof(parts[n].text))
		snprintf(parts[n].text + m, sizeof(parts[n].text) - m, " pending %d", st->pending);
	n++;
	parts[n].label = "turns";
	snprintf(parts[n++].text, sizeof(parts[0].text), "%ld/%ld", st->turns_done,
		 st->turns_total);
	parts[n].label = "builds";
	snprintf(parts[n++].text, sizeof(parts[0].text), "%d/%d busy, %d waiting",
		 st->build_busy, st->build_total, st->build_waiting);
	/* Before a build asks for its slot: a worker's first runner waits for torch's
	 * import, which no slot shows. */
	if (st->runners_starting > 0) {
		parts[n].label = "runners";
		snprintf(parts[n++].text, sizeof(parts[0].text),
			 "%d starting (importing torch), in no slot", st->runners_starting);
	}
	parts[n].label = "executions";
	snprintf(parts[n++].text, sizeof(parts[0].text), "%d/%d busy, %d waiting",
		 st->exec_busy, st->exec_total, st->exec_waiting);
	parts[n].label = "llm";
	snprintf(parts[n++].text, sizeof(parts[0].text),
		 "%d in flight, %d waiting, %ld done, %ld tokens (%ld prompt + %ld completion)",
		 st->llm_busy, st->llm_waiting, st->llm_done,
		 st->prompt_tokens + st->completion_tokens, st->prompt_tokens,
		 st->completion_tokens);
	parts[n].label = "best";
	best_text(st, parts[n++].text, sizeof(parts[0].text));
	return n;
}

/* One line of a block into out, cut to width - 1 columns (a character in the last
 * column makes some terminals wrap, and a wrapped line breaks the redraw's count). */
static void
block_line(struct kb_buf *out, int width, const char *text)
{
	size_t	n = strlen(text);

	if (width > 1)
		n = fit_columns(text, n, width - 1);
	kb_buf_append_trunc(out, text, n);
	kb_buf_append_trunc(out, "\n", 1);
}

void
orch_progress_render(const struct orch_progress_stats *st, bool block, int width,
		     struct kb_buf *out)
{
	struct part	parts[8];
	char		elapsed[32], eta[32] = "\xe2\x80\x94", head[256], line[800];
	int		n = live_parts(st, parts);

	orch_fmt_duration(st->elapsed_ms, elapsed, sizeof(elapsed));
	if (st->eta_ms >= 0) {
		eta[0] = '~';
		orch_fmt_duration(st->eta_ms, eta + 1, sizeof(eta) - 1);
	}
	snprintf(head, sizeof(head), "kforge run %s: elapsed %s, left %s", st->run_name, elapsed,
		 eta);
	if (block) {
		block_line(out, width, head);
		for (int i = 0; i < n; i++) {
			snprintf(line, sizeof(line), "  %-11s %s", parts[i].label, parts[i].text);
			block_line(out, width, line);
		}
		return;
	}
	kb_buf_append_trunc(out, head, strlen(head));
	for (int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "; %s %s", parts[i].label, parts[i].text);
		kb_buf_append_trunc(out, line, strlen(line));
	}
	kb_buf_append_trunc(out, "\n", 1);
}

void
orch_progress_render_final(const struct orch_progress_stats *st, const char *outcome,
			   struct kb_buf *out)
{
	char	elapsed[32], best[640];
	int	done = st->in_state[RPT_ST_DONE], failed = st->in_state[RPT_ST_FAILED];

	orch_fmt_duration(st->elapsed_ms, elapsed, sizeof(elapsed));
	best_text(st, best, sizeof(best));
	kb_buf_printf(out, "kforge run %s %s in %s\n"
		      "  %-11s %d: %d done, %d failed, %d unfinished\n"
		      "  %-11s %ld/%ld\n"
		      "  %-11s %ld requests, %ld tokens (%ld prompt + %ld completion)\n"
		      "  %-11s %s\n",
		      st->run_name, outcome, elapsed,
		      "tasks", st->ntasks, done, failed, st->ntasks - done - failed,
		      "turns", st->turns_done, st->turns_total,
		      "llm", st->llm_done, st->prompt_tokens + st->completion_tokens,
		      st->prompt_tokens, st->completion_tokens,
		      "best", best);
}

/* ----------------------------------------------------------- one look */

/* Re-summarises the tasks whose log changed since the last look. */
static void
look_at_logs(struct orch_progress *p)
{
	for (int i = 0; i < p->run->ntasks; i++) {
		struct task_view	*v = &p->tasks[i];
		struct rpt_summary	 sum;
		struct stat		 st;
		char			 path[PATH_MAX];

		if (rd_task_file(path, sizeof(path), p->run->dir, p->run->tasks[i].id,
				 RD_TRAJECTORY) < 0)
			continue;
		if (stat(path, &st) == -1)
			memset(&st, 0, sizeof(st));	/* no log yet: what a summary says of none */
		if (v->looked && st.st_size == v->size && st.st_mtim.tv_sec == v->mtime.tv_sec &&
		    st.st_mtim.tv_nsec == v->mtime.tv_nsec)
			continue;
		if (rpt_summarize(p->run->dir, p->run->tasks[i].id, &sum) < 0)
			continue;	/* looked at again next time */
		v->looked = true;
		v->size = st.st_size;
		v->mtime = st.st_mtim;
		v->state = sum.state;
		v->turns_done = sum.turns_done;
		v->any_correct = sum.any_correct;
		v->best_speedup = sum.best_speedup;
		v->requests = sum.llm_requests;
		v->prompt_tokens = sum.prompt_tokens;
		v->completion_tokens = sum.completion_tokens;
	}
}

static void
add_best(struct orch_progress_stats *st, const char *task, double speedup)
{
	int	at = st->nbest;

	while (at > 0 && st->best[at - 1].speedup < speedup)
		at--;
	if (at >= ORCH_PROGRESS_TOP)
		return;
	if (st->nbest < ORCH_PROGRESS_TOP)
		st->nbest++;
	memmove(&st->best[at + 1], &st->best[at], (size_t)(st->nbest - 1 - at) * sizeof(st->best[0]));
	st->best[at].task = task;
	st->best[at].speedup = speedup;
}

static void
gather(struct orch_progress *p, struct orch_progress_stats *st)
{
	long	turns = p->run->cfg.refinement.turns, left = 0;
	int	finished;

	*st = p->pool;
	st->run_name = p->run->cfg.name;
	st->ntasks = p->run->ntasks;
	st->turns_total = 0;
	for (int i = 0; i < p->run->ntasks; i++) {
		const struct task_view *v = &p->tasks[i];

		/* A task DONE early (its search's budget spent: docs/search.md) had all the
		 * turns it will have. */
		st->turns_total += v->state == RPT_ST_DONE ? v->turns_done : turns;

		if (rpt_state_finished(v->state) || v->has_worker)
			st->in_state[v->state]++;
		else
			st->pending++;
		if (!rpt_state_finished(v->state) && turns > v->turns_done)
			left += turns - v->turns_done;
		st->turns_done += v->turns_done;
		st->llm_done += v->requests;
		st->prompt_tokens += v->prompt_tokens;
		st->completion_tokens += v->completion_tokens;
		st->ncorrect += v->any_correct;
		if (v->any_correct && v->best_speedup > 0)
			add_best(st, p->run->tasks[i].id, v->best_speedup);
	}
	finished = st->in_state[RPT_ST_DONE] + st->in_state[RPT_ST_FAILED];
	if (p->turns_done_at_start < 0) {
		p->turns_done_at_start = st->turns_done;
		p->finished_at_start = finished;
	}
	st->elapsed_ms = kb_mono_ms() - p->started_ms;
	st->eta_ms = orch_eta_next(&p->eta, st->turns_done - p->turns_done_at_start, left,
				   finished - p->finished_at_start, st->elapsed_ms);
}

/* ------------------------------------------------------------- output */

static void
out_write(struct orch_progress *p, const char *s, size_t n)
{
	if (!p->out_gone && kb_write_all(1, s, n) < 0)
		p->out_gone = true;
}

/* Whether standard output takes a write now: a reader that does not keep up (a pipe
 * nobody drains, a terminal stopped with ^S) costs the supervisor an update, never a
 * wait. */
static bool
out_ready(void)
{
	struct pollfd	pfd = { 1, POLLOUT, 0 };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLOUT) != 0;
}

/* The sequence that moves to the block's first line and erases to the end of the
 * screen. */
static int
erase_seq(const struct orch_progress *p, char *seq, size_t len)
{
	return p->drawn_lines > 0 ? snprintf(seq, len, "\r\033[%dA\033[J", p->drawn_lines) : 0;
}

static void
erase_block(struct orch_progress *p)
{
	char	seq[32];
	int	n = erase_seq(p, seq, sizeof(seq));

	if (n > 0)
		out_write(p, seq, (size_t)n);
	p->drawn_lines = 0;
}

static int
count_lines(const struct kb_buf *b)
{
	int	n = 0;

	for (size_t i = 0; i < b->len; i++)
		n += b->p[i] == '\n';
	return n;
}

static void
draw_block(struct orch_progress *p)
{
	out_write(p, p->block.p, p->block.len);
	p->drawn_lines = count_lines(&p->block);
}

/* The terminal's size; a block taller than the screen cannot be moved back over, so it
 * keeps only the lines that fit. */
static void
render_block(struct orch_progress *p, const struct orch_progress_stats *st)
{
	struct winsize	ws = { 0 };
	int		width = 80, lines = 0;

	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		width = ws.ws_col;
	p->block.len = 0;
	orch_progress_render(st, true, width, &p->block);
	if (p->block.p == NULL || ws.ws_row == 0)
		return;
	for (size_t i = 0; i < p->block.len; i++) {
		if (p->block.p[i] == '\n' && ++lines >= ws.ws_row - 1 && ws.ws_row > 1) {
			p->block.len = i + 1;
			break;
		}
	}
}

/* The logger's writer on a terminal, and where the workers' lines end: the block
 * makes room for each line and comes back under it. */
static void
log_line_out(const char *line, size_t n, void *arg)
{
	struct orch_progress	*p = arg;
	bool			 drawn = p->drawn_lines > 0;

	erase_block(p);
	if (kb_write_all(2, line, n) < 0) {
		/* nowhere left to say it: as the plain logger */
	}
	if (n > 0 && line[n - 1] != '\n' && kb_write_all(2, "\n", 1) < 0) {
		/* likewise */
	}
	if (drawn)
		draw_block(p);
}

/* --------------------------------------------------------------- public */

enum orch_progress_mode
orch_progress_mode_for(bool quiet, bool detach)
{
	const char *term = getenv("TERM");

	if (quiet || detach)
		return ORCH_PROGRESS_OFF;
	if (isatty(1) && (term == NULL || strcmp(term, "dumb") != 0))
		return ORCH_PROGRESS_TERMINAL;
	return ORCH_PROGRESS_LINES;
}

struct orch_progress *
orch_progress_start(const struct orch_run *run, enum orch_progress_mode mode, int interval_s)
{
	struct orch_progress	*p;

	if (mode == ORCH_PROGRESS_OFF || (p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	if ((p->tasks = calloc((size_t)run->ntasks + 1, sizeof(*p->tasks))) == NULL) {
		free(p);
		return NULL;
	}
	for (int i = 0; i < run->ntasks; i++)
		p->tasks[i].state = RPT_ST_GENERATE;	/* as a task without a log */
	p->run = run;
	p->mode = mode;
	p->interval_ms = (int64_t)(interval_s > 0 ? interval_s : ORCH_PROGRESS_INTERVAL_S) * 1000;
	p->started_ms = kb_mono_ms();
	p->last_line_ms = -1;
	p->turns_done_at_start = -1;
	p->eta = (struct orch_eta)ORCH_ETA_INIT;
	p->block = (struct kb_buf)KB_BUF_INIT(64 << 10);
	p->log_pipe[0] = p->log_pipe[1] = -1;
	if (mode == ORCH_PROGRESS_TERMINAL) {
		/* The workers' lines come through us, so that none lands inside the block. A
		 * worker blocks on a full pipe until we read it, rather than lose a line. */
		if (pipe2(p->log_pipe, O_CLOEXEC) == 0 &&
		    fcntl(p->log_pipe[0], F_SETFL, O_NONBLOCK) == -1) {
			close(p->log_pipe[0]);
			close(p->log_pipe[1]);
			p->log_pipe[0] = p->log_pipe[1] = -1;
		}
		kb_log_set_writer(log_line_out, p);
	}
	return p;
}

void
orch_progress_worker(struct orch_progress *p, int i, bool has_worker)
{
	if (p != NULL && i >= 0 && i < p->run->ntasks)
		p->tasks[i].has_worker = has_worker;
}

int
orch_progress_worker_log_fd(struct orch_progress *p, int fallback)
{
	if (p == NULL || p->log_pipe[1] < 0)
		return fallback;
	close(p->log_pipe[0]);
	p->log_pipe[0] = -1;
	return p->log_pipe[1];
}

int
orch_progress_log_poll_fd(const struct orch_progress *p)
{
	return p != NULL ? p->log_pipe[0] : -1;
}

void
orch_progress_read_logs(struct orch_progress *p)
{
	ssize_t	n;

	if (p == NULL || p->log_pipe[0] < 0)
		return;
	for (;;) {
		n = read(p->log_pipe[0], p->pending + p->npending, sizeof(p->pending) - p->npending);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p->npending += (size_t)n;
		for (;;) {
			char	*nl = memchr(p->pending, '\n', p->npending);
			size_t	 len;

			if (nl == NULL && p->npending < sizeof(p->pending))
				break;
			len = nl != NULL ? (size_t)(nl - p->pending) + 1 : p->npending;
			log_line_out(p->pending, len, p);
			memmove(p->pending, p->pending + len, p->npending - len);
			p->npending -= len;
		}
	}
}

static void
class_counts(json_t *pool, const char *name, int *busy, int *total, int *waiting)
{
	json_t	*c = json_object_get(pool, name);

	if (!json_is_object(c))
		return;
	*busy = (int)json_integer_value(json_object_get(c, "used"));
	*total = (int)json_integer_value(json_object_get(c, "total"));
	*waiting = (int)json_integer_value(json_object_get(c, "waiting"));
}

static void
take_pool(struct orch_progress_stats *st, json_t *pool)
{
	int	llm_total;

	class_counts(pool, "compile", &st->build_busy, &st->build_total, &st->build_waiting);
	class_counts(pool, "exec", &st->exec_busy, &st->exec_total, &st->exec_waiting);
	class_counts(pool, "llm", &st->llm_busy, &llm_total, &st->llm_waiting);
	st->runners_starting = (int)json_integer_value(json_object_get(
		json_object_get(pool, "runner_start"), "starting"));
}

void
orch_progress_update(struct orch_progress *p, json_t *pool)
{
	struct orch_progress_stats	st;
	struct kb_buf			line = KB_BUF_INIT(16 << 10);
	int64_t				now = kb_mono_ms();

	if (p == NULL)
		return;
	take_pool(&p->pool, pool);
	if (p->out_gone || (p->mode == ORCH_PROGRESS_LINES && p->last_line_ms >= 0 &&
			    now - p->last_line_ms < p->interval_ms) || !out_ready())
		return;
	look_at_logs(p);
	gather(p, &st);
	if (p->mode == ORCH_PROGRESS_LINES) {
		p->last_line_ms = now;
		orch_progress_render(&st, false, 0, &line);
		if (line.p != NULL)
			out_write(p, line.p, line.len);
		kb_buf_clear(&line);
		return;
	}
	/* Erase and draw in one write, so the terminal never shows the block half gone. */
	{
		char	seq[32];
		int	n = erase_seq(p, seq, sizeof(seq));

		render_block(p, &st);
		kb_buf_append_trunc(&line, seq, (size_t)(n > 0 ? n : 0));
		if (p->block.p != NULL)
			kb_buf_append_trunc(&line, p->block.p, p->block.len);
		if (line.p != NULL)
			out_write(p, line.p, line.len);
		p->drawn_lines = count_lines(&p->block);
		kb_buf_clear(&line);
	}
}

void
orch_progress_finish(struct orch_progress *p, const char *outcome)
{
	struct orch_progress_stats	st;
	struct kb_buf			out = KB_BUF_INIT(16 << 10);

	if (p == NULL)
		return;
	orch_progress_read_logs(p);
	if (p->npending > 0)
		log_line_out(p->pending, p->npending, p);
	kb_log_set_writer(NULL, NULL);
	erase_block(p);
	look_at_logs(p);
	gather(p, &st);
	orch_progress_render_final(&st, outcome, &out);
	if (out.p != NULL)
		out_write(p, out.p, out.len);
	kb_buf_clear(&out);
	kb_buf_clear(&p->block);
	if (p->log_pipe[0] >= 0)
		close(p->log_pipe[0]);
	if (p->log_pipe[1] >= 0)
		close(p->log_pipe[1]);
	free(p->tasks);
	free(p);
}
