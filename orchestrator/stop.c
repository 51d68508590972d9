/* stop.c: `kforge stop DIR` — asks the run's supervisor to stop (SIGTERM: its workers
 * finish their step, the run is left resumable) and waits until it is gone. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orchestrator/orch_int.h"
#include "base/banned.h"

/* Whether pid has exited: gone, or a zombie its parent has not reaped yet. The lock
 * goes free a moment before the supervisor's process ends, which `stop` must not call
 * stopped. */
static bool
process_gone(pid_t pid)
{
	char	path[64], *text = NULL, *paren;
	bool	gone;

	if (kill(pid, 0) == -1 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (kb_read_file(path, 4096, &text, NULL) < 0)
		return true;
	/* "pid (comm) S ...": the state follows the last ')' (comm may hold one). */
	paren = strrchr(text, ')');
	gone = paren != NULL && paren[1] == ' ' && paren[2] == 'Z';
	free(text);
	return gone;
}

int
orch_cmd_stop(const char *dir, int timeout_s)
{
	pid_t	pid = orch_run_supervisor_pid(dir);
	int64_t	end;

	if (pid == 0) {
		fprintf(stderr, "kforge: no supervisor is running on %s\n", dir);
		return 1;
	}
	if (pid < 0 || kill(pid, SIGTERM) == -1) {
		fprintf(stderr, "kforge: cannot signal the supervisor of %s\n", dir);
		return 1;
	}
	printf("kforge: asked the supervisor (pid %ld) to stop; waiting\n", (long)pid);
	end = kb_mono_ms() + (int64_t)timeout_s * 1000;
	while (orch_run_supervisor_pid(dir) != 0 || !process_gone(pid)) {
		if (kb_mono_ms() > end) {
			fprintf(stderr, "kforge: still stopping after %d s; run 'kforge stop' again "
				"to hurry it\n", timeout_s);
			return 1;
		}
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
	}
	printf("kforge: stopped; 'kforge resume %s' continues\n", dir);
	return 0;
}
