/*
 * policy.c: what a runner step is held to, put together from what contain.c decided,
 * where stage.c has the runners work and where cache.c keeps the shared cache: the paths
 * of the sandbox each step's request carries (fb_contain_sandbox: what a runner may read
 * and write; sandbox/ makes the kernel's rules of them), and the log of the containment
 * decided (fb_contain_report). Apart from contain.c, on which the staging and the cache
 * build (the runner's user's reach, the seals), so that it needs neither of them.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

static int
spec_line(struct kb_buf *b, const char *what, const char *path)
{
	/* A path with a newline would be two lines of the spec: such a path is not ours. */
	if (path == NULL || path[0] != '/' || strchr(path, '\n') != NULL)
		return 0;
	return kb_buf_printf(b, "%s %s\n", what, path);
}

/* The directory of a file (the runner imports its siblings), into out. */
static const char *
dir_of(const char *file, char *out, size_t n)
{
	const char	*slash = file != NULL ? strrchr(file, '/') : NULL;

	if (slash == NULL || slash == file || (size_t)(slash - file) >= n)
		return NULL;
	memcpy(out, file, (size_t)(slash - file));
	out[slash - file] = '\0';
	return out;
}

json_t *
fb_contain_sandbox(const struct fb_request *req, bool judge, bool writes_build,
		   const char *runner)
{
	struct kb_buf	 b = KB_BUF_INIT(16 << 10);
	char		 dir[PATH_MAX], cache[PATH_MAX];
	const char	*lib = getenv("KFORGE_SANDBOX_LIB");
	json_t		*r;
	int		 bad = 0;

	if (lib == NULL || lib[0] == '\0')
		lib = KFORGE_SANDBOX_PATH;
	/* Hidden: the record of the run, its staging directory and the caches. */
	bad |= spec_line(&b, "hidden", fb_stage_root());
	bad |= spec_line(&b, "hidden", fb_stage_dir());
	if (fb_cache_root(cache, sizeof(cache)) == 0)
		bad |= spec_line(&b, "hidden", cache);
	/* Shown back: what the step reads. */
	bad |= spec_line(&b, "visible", req->problem_path);
	bad |= spec_line(&b, "visible", req->candidate_path);
	bad |= spec_line(&b, "visible", dir_of(runner, dir, sizeof(dir)));
	bad |= spec_line(&b, "visible", req->kprof_lib);
	bad |= spec_line(&b, "visible", lib);
	if (fb_cache_dir("pch", NULL, dir, sizeof(dir)) == 0)
		bad |= spec_line(&b, req->mode == FB_SELFTEST ? "writable" : "visible", dir);
	if (fb_cache_dir("kprof", NULL, dir, sizeof(dir)) == 0)
		bad |= spec_line(&b, req->mode == FB_SELFTEST ? "writable" : "visible", dir);
	/* Written: its scratch, and its own build when it makes it. */
	bad |= spec_line(&b, "writable", req->work_dir);
	if (req->build_dir != NULL)
		bad |= spec_line(&b, writes_build ? "writable" : "visible", req->build_dir);
	if (!judge)
		bad |= kb_buf_append(&b, "scope_signals\n", 14);
	if (fb_contain_strict())
		bad |= kb_buf_append(&b, "strict\n", 7);
	if (bad != 0) {
		kb_buf_clear(&b);
		return NULL;
	}
	/* The namespaces for every runner that runs a candidate's code; not the judge's,
	 * which stops the candidate's runner through its pidfd: a signal through a pidfd
	 * reaches only a process of the sender's PID namespace or one beneath it. */
	r = json_pack("{s:s, s:s%, s:b, s:b, s:s}", "lib", lib, "spec", b.p != NULL ? b.p : "",
		      b.len, "namespaces", !judge && fb_contain_namespaces(), "strict",
		      fb_contain_strict(), "trailer", FB_NS_TRAILER);
	kb_buf_clear(&b);
	return r;
}

char *
fb_agent_sandbox_spec(const char *run_dir, const char *workspace)
{
	struct kb_buf	 b = KB_BUF_INIT(16 << 10);
	char		 cache[PATH_MAX], run[PATH_MAX];
	const char	*tmp = getenv("TMPDIR");
	int		 bad = 0;

	/* Hidden as from a runner: the run's record, its staging directory, the caches. */
	if (run_dir != NULL && realpath(run_dir, run) != NULL)
		bad |= spec_line(&b, "hidden", run);
	bad |= spec_line(&b, "hidden", fb_stage_root());
	bad |= spec_line(&b, "hidden", fb_stage_dir());
	if (fb_cache_root(cache, sizeof(cache)) == 0)
		bad |= spec_line(&b, "hidden", cache);
	/* Written: its workspace and the temporary directory (the tool's socket is there). */
	bad |= spec_line(&b, "writable", workspace);
	bad |= spec_line(&b, "writable", tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
	bad |= kb_buf_printf(&b, "network\n") < 0;
	if (fb_contain_strict())
		bad |= kb_buf_append(&b, "strict\n", 7);
	if (bad != 0) {
		kb_buf_clear(&b);
		return NULL;
	}
	return kb_buf_steal(&b);
}

void
fb_contain_report(void)
{
	char	net[384], user[256], sbx[1280];

	if (fb_contain_describe(net, sizeof(net), user, sizeof(user)))
		log_info("network: %s", net);
	else
		log_warnx("network: %s", net);
	log_info("user: runners run as %s", user);
	if (fb_contain_describe_sandbox(sbx, sizeof(sbx)))
		log_info("sandbox: %s", sbx);
	else
		log_warnx("sandbox: %s", sbx);
	fb_stage_report();
}
