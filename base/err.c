/* err.c: the error table and the process-wide operational log. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

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

void
kb_log_init(const char *prefix, int fd)
{
	snprintf(log_prefix, sizeof(log_prefix), "%s", prefix);
	log_fd = fd;
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
	if (write(log_fd, line, (size_t)n) < 0) {
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

void
kb_crashpoint(const char *name)
{
	const char *want = getenv("KFORGE_CRASHPOINT");
	const char *sig;

	if (want == NULL || strcmp(want, name) != 0)
		return;
	sig = getenv("KFORGE_CRASHSIGNAL");
	if (sig != NULL && strcmp(sig, "9") == 0)
		kill(getpid(), SIGKILL);
	_exit(99);
}
