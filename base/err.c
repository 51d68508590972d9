/* err.c: the error table and the process-wide operational log. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/banned.h"

#define KB_MSG_(name, cls, msg) [KB_E##name] = msg,
static const char *const err_msgs[KB_E_MAX] = { [KB_OK] = "success", KB_ERRORS(KB_MSG_) };
#undef KB_MSG_
#define KB_CLS_(name, cls, msg) [KB_E##name] = (#cls[0] == 'T'),
static const bool err_transient[KB_E_MAX] = { KB_ERRORS(KB_CLS_) };
#undef KB_CLS_

const char *
kb_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= KB_E_MAX)
		return "unknown error";
	return err_msgs[err];
}

bool
kb_err_transient(int err)
{
	if (err < 0)
		err = -err;
	return err > 0 && err < KB_E_MAX && err_transient[err];
}

int
kb_errno_to_err(int errnum)
{
	switch (errnum) {
	case ENOSPC:
	case EDQUOT:
		return KB_ENOSPC;
	case ENOENT:
		return KB_ENOENT;
	case ENOMEM:
		return KB_ENOMEM;
	default:
		return KB_ESYS;
	}
}

/* ------------------------------------------------------------------ log */

static char	log_prefix[192] = "kforge";
static int	log_fd = 2;
static int	log_tee_fd = -1;
static enum kb_log_level log_level = KB_LOG_INFO;
static kb_log_writer_fn log_writer;
static void	*log_writer_arg;

void
kb_log_init(const char *prefix, int fd)
{
	snprintf(log_prefix, sizeof(log_prefix), "%s", prefix);
	log_fd = fd;
	log_writer = NULL;
	log_writer_arg = NULL;
}

void
kb_log_set_writer(kb_log_writer_fn fn, void *arg)
{
	log_writer = fn;
	log_writer_arg = arg;
}

void
kb_log_tee(int fd)
{
	log_tee_fd = fd;
}

void
kb_log_set_level(enum kb_log_level level)
{
	log_level = level;
}

/* One write(2) per line so lines from many processes sharing a log file never
 * interleave mid-line. */
static void
log_emit(enum kb_log_level level, const char *tag, const char *fmt, va_list ap,
	 const char *suffix)
{
	char	 line[4096], ts[32];
	int	 n, m;

	if (level < log_level)
		return;
	kb_iso8601(kb_now_ms(), ts);
	n = snprintf(line, sizeof(line), "%s [%s] %s", ts, log_prefix, tag);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (m > 0)
		n = (size_t)(n + m) >= sizeof(line) - 2 ? (int)sizeof(line) - 2 : n + m;
	if (suffix != NULL) {
		m = snprintf(line + n, sizeof(line) - (size_t)n, ": %s", suffix);
		if (m > 0)
			n = (size_t)(n + m) >= sizeof(line) - 2 ? (int)sizeof(line) - 2 : n + m;
	}
	line[n++] = '\n';
	if (log_writer != NULL)
		log_writer(line, (size_t)n, log_writer_arg);
	else if (write(log_fd, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
	if (log_tee_fd >= 0 && write(log_tee_fd, line, (size_t)n) < 0) {
		/* likewise */
	}
}

#define LOG_FN(fn, level, tag)                         \
	void fn(const char *fmt, ...)                  \
	{                                              \
		va_list ap;                            \
		int saved = errno;                     \
		va_start(ap, fmt);                     \
		log_emit(level, tag, fmt, ap, NULL);   \
		va_end(ap);                            \
		errno = saved;                         \
	}
LOG_FN(log_debug, KB_LOG_DEBUG, "debug: ")
LOG_FN(log_info, KB_LOG_INFO, "")
LOG_FN(log_warnx, KB_LOG_WARN, "warning: ")

void
log_warn(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_emit(KB_LOG_WARN, "warning: ", fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
}

static char crash_task[192];	/* this process's task, for KFORGE_CRASHTASK */
static long crash_passed;	/* hits of the armed point in this process, for KFORGE_CRASHSKIP */

void
kb_crashpoint_task(const char *id)
{
	snprintf(crash_task, sizeof(crash_task), "%s", id != NULL ? id : "");
	crash_passed = 0;	/* a worker counts its own hits, not its parent's */
}

bool
kb_crashpoint_due(const char *name)
{
	const char	*want = getenv("KFORGE_CRASHPOINT");
	const char	*task = getenv("KFORGE_CRASHTASK");
	const char	*skip = getenv("KFORGE_CRASHSKIP");
	const char	*once = getenv("KFORGE_CRASHONCE");
	long		 n = 0;

	if (want == NULL || strcmp(want, name) != 0)
		return false;
	if (task != NULL && *task != '\0' && strcmp(task, crash_task) != 0)
		return false;
	if (skip != NULL && kb_parse_int(skip, 0, 1L << 30, &n) == 0 && crash_passed++ < n)
		return false;
	if (once != NULL && *once != '\0') {
		/* The file is the token: whoever creates it crashes, everyone after goes on. */
		char	pid[32];
		int	fd = open(once, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

		if (fd == -1)
			return false;
		snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
		if (write(fd, pid, strlen(pid)) < 0) {
			/* the crash matters, not the note */
		}
		close(fd);
	}
	return true;
}

void
kb_crashpoint_die(void)
{
	const char	*delay = getenv("KFORGE_CRASHDELAY_MS");
	const char	*sig = getenv("KFORGE_CRASHSIGNAL");
	long		 ms = 0;

	if (delay != NULL && kb_parse_int(delay, 0, 600000, &ms) == 0 && ms > 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
	if (sig != NULL && strcmp(sig, "9") == 0)
		kill(getpid(), SIGKILL);
	_exit(99);
}

void
kb_crashpoint(const char *name)
{
	if (kb_crashpoint_due(name))
		kb_crashpoint_die();
}
