/* tlog.c: the per-task trajectory log — append-only JSON lines, fdatasync'd, replayed
 * on open with a torn or corrupt tail dropped (Redis aof-load-truncated style). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "base/banned.h"

#define TLOG_MAX_FILE	(512u << 20)	/* a task log over this is refused, not slurped */
#define TLOG_MAX_LINE	(1u << 20)

struct kb_tlog {
	int	 fd;
	int64_t	 seq;
	off_t	 size;
	char	*path;
};

void
kb_tlog_rec_clear(struct kb_tlog_rec *rec)
{
	free(rec->task);
	free(rec->from);
	free(rec->event);
	free(rec->to);
	json_decref(rec->data);
	memset(rec, 0, sizeof(*rec));
}

static int
take_str(json_t *obj, const char *key, char **out)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_string(v))
		return -KB_ECORRUPT;
	*out = kb_strdup(json_string_value(v));
	return 0;
}

/* why (may be NULL) gets a one-line reason: a log's bytes are anything, so the parser's
 * own text is quoted with every byte outside printable ASCII made '?'. */
static void
set_why(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
set_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list	ap;

	if (why == NULL || whylen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	for (char *p = why; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
}

static int
parse_line(const char *line, size_t n, struct kb_tlog_rec *rec, char *why, size_t whylen)
{
	static const char *const str_keys[] = { "task", "from", "event", "to" };
	char		**str_dest[] = { &rec->task, &rec->from, &rec->event, &rec->to };
	json_error_t	 jerr;
	json_t		*obj, *v;
	int		 rc = -KB_ECORRUPT;

	memset(rec, 0, sizeof(*rec));
	if (n > TLOG_MAX_LINE) {
		set_why(why, whylen, "is over %u bytes", TLOG_MAX_LINE);
		return -KB_ETOOBIG;
	}
	obj = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	if (obj == NULL) {
		set_why(why, whylen, "is not JSON (%s)", jerr.text);
		goto out;
	}
	if (!json_is_object(obj)) {
		set_why(why, whylen, "is not a JSON object");
		goto out;
	}
	v = json_object_get(obj, "seq");
	if (!json_is_integer(v) || json_integer_value(v) < 1) {
		set_why(why, whylen, "has no integer seq >= 1");
		goto out;
	}
	rec->seq = json_integer_value(v);
	v = json_object_get(obj, "turn");
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000) {
		set_why(why, whylen, "has no integer turn in 0..100000");
		goto out;
	}
	rec->turn = (int)json_integer_value(v);
	v = json_object_get(obj, "ts");
	if (!json_is_string(v)) {
		set_why(why, whylen, "has no string ts");
		goto out;
	}
	snprintf(rec->ts, sizeof(rec->ts), "%s", json_string_value(v));
	for (size_t i = 0; i < sizeof(str_keys) / sizeof(str_keys[0]); i++)
		if (take_str(obj, str_keys[i], str_dest[i]) < 0) {
			set_why(why, whylen, "has no string %s", str_keys[i]);
			goto out;
		}
	v = json_object_get(obj, "data");
	if (v != NULL && !json_is_object(v)) {
		set_why(why, whylen, "has a data that is not an object");
		goto out;
	}
	rec->data = v != NULL ? json_incref(v) : json_object();
	rc = 0;
out:
	json_decref(obj);
	if (rc < 0)
		kb_tlog_rec_clear(rec);
	return rc;
}

int
kb_tlog_parse_line(const char *line, size_t n, struct kb_tlog_rec *rec)
{
	return parse_line(line, n, rec, NULL, 0);
}

/* Walks whole records of buf; returns the byte length of the good prefix and, when it
 * is shorter than buf, says in why what ends it (one line). */
static size_t
replay_buf(const char *buf, size_t len, int64_t *last_seq, kb_tlog_replay_fn cb, void *arg,
	   int *cb_rc, char *why, size_t whylen)
{
	size_t	off = 0;
	int64_t	seq = 0;
	char	line_why[200];

	*cb_rc = 0;
	while (off < len) {
		const char		*nl = memchr(buf + off, '\n', len - off);
		struct kb_tlog_rec	 rec;
		size_t			 n;

		if (nl == NULL) {
			set_why(why, whylen, "line %lld has no newline (a torn write)",
				(long long)seq + 1);
			break;
		}
		n = (size_t)(nl - (buf + off));
		if (parse_line(buf + off, n, &rec, line_why, sizeof(line_why)) < 0) {
			set_why(why, whylen, "line %lld %s", (long long)seq + 1, line_why);
			break;
		}
		if (rec.seq != seq + 1) {
			set_why(why, whylen, "line %lld has seq %lld where %lld was expected",
				(long long)seq + 1, (long long)rec.seq, (long long)seq + 1);
			kb_tlog_rec_clear(&rec);
			break;
		}
		if (cb != NULL && (*cb_rc = cb(&rec, arg)) < 0) {
			kb_tlog_rec_clear(&rec);
			break;
		}
		kb_tlog_rec_clear(&rec);
		seq++;
		off += n + 1;
	}
	*last_seq = seq;
	return off;
}

/* What the repair cuts off is appended to path.dropped before the cut: a corrupt record
 * may have whole records after it, and only a person can tell what the bytes were. */
static int
keep_dropped(const char *path, const char *bytes, size_t n)
{
	char	 kept[PATH_MAX];
	int	 fd, rc = 0;

	if (snprintf(kept, sizeof(kept), "%s.dropped", path) >= (int)sizeof(kept))
		return -KB_ETOOBIG;
	if ((fd = open(kept, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) == -1)
		return -kb_errno_to_err(errno);
	while (n > 0) {
		ssize_t w = write(fd, bytes, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -kb_errno_to_err(errno);
			break;
		}
		bytes += w;
		n -= (size_t)w;
	}
	if (rc == 0 && fsync(fd) == -1)
		rc = -kb_errno_to_err(errno);
	close(fd);
	return rc;
}

int
kb_tlog_open(struct kb_tlog **out, const char *path, kb_tlog_replay_fn cb, void *arg,
	     int64_t *dropped_bytes)
{
	struct kb_tlog	*log;
	char		*buf = NULL;
	size_t		 len = 0, good;
	int		 rc, cb_rc;
	char		 why[256];

	if (dropped_bytes != NULL)
		*dropped_bytes = 0;
	if ((log = calloc(1, sizeof(*log))) == NULL)
		return -KB_ENOMEM;
	log->path = kb_strdup(path);
	log->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log->fd == -1) {
		rc = -kb_errno_to_err(errno);
		goto out_free;
	}
	if ((rc = kb_read_file(path, TLOG_MAX_FILE, &buf, &len)) < 0)
		goto out_close;
	good = replay_buf(buf, len, &log->seq, cb, arg, &cb_rc, why, sizeof(why));
	if (cb_rc < 0) {
		rc = cb_rc;
		goto out_close;
	}
	if (good < len) {
		log_warnx("%s: dropping %zu bytes of torn or corrupt tail after record %lld: %s "
			  "(kept in %s.dropped)", path, len - good, (long long)log->seq, why, path);
		if ((rc = keep_dropped(path, buf + good, len - good)) < 0) {
			log_warnx("%s.dropped: %s; the log is left as it was", path, kb_strerror(rc));
			goto out_close;
		}
		if (ftruncate(log->fd, (off_t)good) == -1 || fsync(log->fd) == -1) {
			rc = -kb_errno_to_err(errno);
			goto out_close;
		}
		if (dropped_bytes != NULL)
			*dropped_bytes = (int64_t)(len - good);
	}
	free(buf);
	log->size = (off_t)good;
	*out = log;
	return 0;

out_close:
	free(buf);
	close(log->fd);
out_free:
	free(log->path);
	free(log);
	return rc;
}

int
kb_tlog_append(struct kb_tlog *log, const char *task, int turn, const char *from,
	       const char *event, const char *to, json_t *data)
{
	json_t	*obj;
	char	 ts[32], *text = NULL;
	size_t	 n, done = 0;
	int	 rc = 0;

	kb_iso8601(kb_now_ms(), ts);
	obj = json_pack("{s:I, s:s, s:s, s:i, s:s, s:s, s:s, s:o}", "seq",
			(json_int_t)(log->seq + 1), "ts", ts, "task", task, "turn", turn, "from",
			from, "event", event, "to", to, "data",
			data != NULL ? json_incref(data) : json_object());
	if (obj == NULL)
		return -KB_ENOMEM;
	text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (text == NULL)
		return -KB_ENOMEM;
	n = strlen(text);
	text[n++] = '\n';	/* json_dumps leaves room: replace the NUL */
	if (n > TLOG_MAX_LINE) {
		rc = -KB_ETOOBIG;
		goto out;
	}
	if (kb_crashpoint_due("tlog-mid-append")) {
		/* Fault injection: leave a torn half line behind, as a crash would. */
		if (write(log->fd, text, n / 2) < 0) {
			/* dying anyway */
		}
		kb_crashpoint_die();
	}
	while (done < n) {
		ssize_t w = write(log->fd, text + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -kb_errno_to_err(errno);
			/* Take the partial line back so the log stays whole. */
			if (done > 0 && ftruncate(log->fd, log->size) == -1)
				log_warn("%s: cannot cut back a partial line", log->path);
			goto out;
		}
		done += (size_t)w;
	}
	if (fdatasync(log->fd) == -1) {
		rc = -kb_errno_to_err(errno);
		goto out;
	}
	log->size += (off_t)n;
	log->seq++;
out:
	free(text);
	return rc;
}

int64_t
kb_tlog_last_seq(const struct kb_tlog *log)
{
	return log->seq;
}

void
kb_tlog_close(struct kb_tlog *log)
{
	if (log == NULL)
		return;
	close(log->fd);
	free(log->path);
	free(log);
}

int
kb_tlog_read(const char *path, kb_tlog_replay_fn cb, void *arg)
{
	char	*buf = NULL;
	size_t	 len = 0;
	int64_t	 seq;
	int	 rc, cb_rc;

	if ((rc = kb_read_file(path, TLOG_MAX_FILE, &buf, &len)) < 0)
		return rc;
	replay_buf(buf, len, &seq, cb, arg, &cb_rc, NULL, 0);
	free(buf);
	return cb_rc < 0 ? cb_rc : (int)seq;
}
