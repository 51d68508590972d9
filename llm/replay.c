/*
 * replay.c: the replay provider serves recorded responses, turn by turn, for
 * re-evaluation on new hardware, demos and tests. For task T (problem P) on device D,
 * turn k, the first existing file of
 *	<dir>/tasks/T/turns/k/response.md	(an earlier kforge run directory)
 *	<dir>/D/T/k.md		<dir>/D/P/k.md
 *	<dir>/T/k.md		<dir>/P/k.md
 * is the answer, read whole up to llm.max_response_bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "llm/llm_int.h"
#include "rundir/rundir.h"
#include "base/banned.h"

int
llm_replay_complete(struct llm_client *c, const struct llm_request *req,
		    struct llm_reply *out, char *err, size_t errlen)
{
	const struct kb_task	*t = req->task;
	const char		*dir = c->replay_dir, *dev = c->device;
	char			 path[4096];
	int64_t			 t0 = kb_mono_ms();
	size_t			 len;
	int			 rc, n;

	for (int i = 0; i < 5; i++) {
		switch (i) {
		case 0:
			/* 0, or < 0 when it does not fit */
			n = rd_turn_file(path, sizeof(path), dir, t->id, req->turn, RD_RESPONSE_MD);
			break;
		case 1:
			n = snprintf(path, sizeof(path), "%s/%s/%s/%d.md", dir, dev, t->id, req->turn);
			break;
		case 2:
			n = snprintf(path, sizeof(path), "%s/%s/%s/%d.md", dir, dev, t->problem_key,
			    req->turn);
			break;
		case 3:
			n = snprintf(path, sizeof(path), "%s/%s/%d.md", dir, t->id, req->turn);
			break;
		default:
			n = snprintf(path, sizeof(path), "%s/%s/%d.md", dir, t->problem_key, req->turn);
			break;
		}
		if (n < 0 || (size_t)n >= sizeof(path) || !kb_file_exists(path))
			continue;
		rc = kb_read_file(path, c->max_response_bytes, &out->content, &len);
		if (rc == -KB_ETOOBIG) {
			snprintf(err, errlen, "replay: %s exceeds llm.max_response_bytes (%zu bytes)",
			    path, c->max_response_bytes);
			return rc;
		}
		if (rc < 0) {
			snprintf(err, errlen, "replay: cannot read %s: %s", path, kb_strerror(rc));
			return rc;
		}
		out->attempts = 1;
		out->finish_reason = kb_strdup("replay");
		out->latency_s = (double)(kb_mono_ms() - t0) / 1000;
		return 0;
	}
	snprintf(err, errlen, "replay: no response for task %s turn %d under %s", t->id,
	    req->turn, dir);
	return -KB_ENOENT;
}
