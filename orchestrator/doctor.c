/*
 * doctor.c: `kforge doctor` — every prerequisite of a run, one line per item (what, found
 * or not, version or path, and the fix when missing), so that a machine that cannot run
 * kforge says so before a run scores its environment as the model's fault.
 *
 * Which items a device checks and which it cannot work without is the table `checks`.
 * Facts about the runner's Python (torch, its headers, CUDA_HOME, CUPTI) come from one
 * snippet run through the Python a run would choose, contained as a runner is
 * (fb_python_snippet); programs are asked their version through kb_spawn_run; the tiny
 * extensions are feedback's self-test (fb_selftest), the one a run makes before it asks
 * the model anything.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "feedback/feedback.h"
#include "orchestrator/orch_int.h"
#include "base/banned.h"

#define DR_CPU		1u
#define DR_CUDA		2u
#define DR_ALL		(DR_CPU | DR_CUDA)
#define DR_VERSION_CAP	(16 << 10)
#define DR_VERSION_MS	30000

/* Without a CONFIG: the defaults, with the bundled problems (what the demo runs). */
static const char doctor_defaults[] =
	"name: doctor\n"
	"llm: {provider: replay, replay_dir: .}\n";

/* Run through the chosen Python, as the runner's user: what a build will find. argv[1]
 * is the device. The answer is one JSON object on fd 3. */
static const char probe_py[] =
	"import json, os, platform, sys, sysconfig\n"
	"r = {'python': sys.executable, 'version': sys.version.split()[0]}\n"
	"inc = sysconfig.get_paths().get('include') or ''\n"
	"def find(rel, dirs):\n"
	"    return next((os.path.join(d, rel) for d in dirs\n"
	"                 if d and os.path.exists(os.path.join(d, rel))), None)\n"
	"r['python_h'] = find('Python.h', [inc])\n"
	"try:\n"
	"    import torch\n"
	"    from torch.utils import cpp_extension as ext\n"
	"except BaseException as e:\n"
	"    r['torch_error'] = ('%s: %s' % (type(e).__name__, e)).splitlines()[0][:300]\n"
	"else:\n"
	"    r.update(torch=torch.__version__, torch_dir=os.path.dirname(torch.__file__),\n"
	"             torch_cuda=torch.version.cuda, cuda_home=ext.CUDA_HOME)\n"
	"    paths = ext.include_paths()\n"
	"    r['extension_h'] = find('torch/extension.h', paths)\n"
	"    # the compiler's own search path is where Debian's pybind11-dev puts it\n"
	"    r['pybind11'] = find('pybind11/pybind11.h',\n"
	"                         paths + [inc, '/usr/local/include', '/usr/include'])\n"
	"    try:\n"
	"        import triton\n"
	"        r['triton'] = triton.__version__\n"
	"    except BaseException as e:\n"
	"        r['triton_error'] = ('%s: %s' % (type(e).__name__, e)).splitlines()[0][:300]\n"
	"    if sys.argv[1] == 'cuda':\n"
	"        try:\n"
	"            r['cuda_available'] = torch.cuda.is_available()\n"
	"            r['cuda_devices'] = torch.cuda.device_count() if r['cuda_available'] else 0\n"
	"        except Exception as e:\n"
	"            r['cuda_error'] = ('%s: %s' % (type(e).__name__, e)).splitlines()[0][:300]\n"
	"        arch = {'aarch64': 'sbsa'}.get(platform.machine(), platform.machine())\n"
	"        dirs = [os.path.join(ext.CUDA_HOME, d) for d in ('extras/CUPTI/lib64',\n"
	"                'targets/%s-linux/lib' % arch, 'lib64', 'lib')] if ext.CUDA_HOME else []\n"
	"        try:\n"
	"            import nvidia  # pip's CUDA wheels: nvidia/cuda_cupti/lib, nvidia/cu13/lib\n"
	"            dirs += [os.path.join(p, d, 'lib') for p in nvidia.__path__\n"
	"                     for d in sorted(os.listdir(p))]\n"
	"        except ImportError:\n"
	"            pass\n"
	"        r['cupti_searched'] = dirs\n"
	"        r['cupti'] = next((os.path.join(d, f) for d in dirs if os.path.isdir(d)\n"
	"                           for f in sorted(os.listdir(d))\n"
	"                           if f.startswith('libcupti.so')), None)\n"
	"os.write(3, json.dumps(r).encode())\n";

struct doctor {
	struct kb_config cfg;
	const char	*device;		/* "cpu" | "cuda" */
	unsigned	 dev;			/* DR_CPU | DR_CUDA */
	bool		 json, fresh;
	char		 python[PATH_MAX];	/* chosen, or the one named that failed */
	char		 python_err[1024];	/* "" when a Python was found */
	json_t		*probe;			/* the snippet's answer; NULL: none */
	char		 probe_err[512];
	char		 cuda_home[PATH_MAX];
	int		 ngpus;			/* found by the gpu item */
	json_t		*items;
	struct kb_buf	 failed;		/* names of required items that failed */
};

struct check {
	const char	*item;
	unsigned	 on;		/* devices that check it */
	unsigned	 required;	/* devices that cannot work without it */
	void		(*run)(struct doctor *d, const struct check *c);
};

/* One item's line: printed at once as text, collected for --json. */
static void
emit(struct doctor *d, const struct check *c, const char *item, bool ok, const char *version,
     const char *path, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

static void
emit(struct doctor *d, const struct check *c, const char *item, bool ok, const char *version,
     const char *path, const char *fix, const char *fmt, ...)
{
	bool	required = (c->required & d->dev) != 0;
	char	detail[1024];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (item == NULL)
		item = c->item;
	if (!ok && required)
		kb_buf_printf(&d->failed, "%s%s", d->failed.len > 0 ? ", " : "", item);
	json_array_append_new(d->items, json_pack(
		"{s:s, s:b, s:b, s:s, s:s?, s:s?, s:s?}", "item", item, "ok", ok,
		"required", required, "detail", detail,
		"version", version != NULL && version[0] != '\0' ? version : NULL,
		"path", path != NULL && path[0] != '\0' ? path : NULL,
		"fix", !ok && fix != NULL ? fix : NULL));
	if (d->json)
		return;
	printf("%-4s  %-15s %s", ok ? "ok" : required ? "FAIL" : "warn", item, detail);
	if (!ok && fix != NULL)
		printf("; fix: %s", fix);
	printf("\n");
	fflush(stdout);
}

static const char *
probe_str(const struct doctor *d, const char *key)
{
	return json_string_value(json_object_get(d->probe, key));
}

/* An item that needs torch imported by the snippet: when it is not, says so and why. */
static bool
need_torch(struct doctor *d, const struct check *c)
{
	if (d->probe != NULL && probe_str(d, "torch_error") == NULL)
		return true;
	emit(d, c, NULL, false, NULL, NULL, "see the python and torch lines", "not checked: %s",
	     d->probe == NULL ? d->probe_err : "torch does not import");
	return false;
}

/* The first line of `prog --version` (or the line holding want), trimmed. The PATH is
 * ours, which the runner's is too: a compiler driver finds its parts as in a build. */
static int
version_line(const char *prog, const char *want, char *out, size_t outlen)
{
	const char		*path = getenv("PATH");
	char			*path_var = kb_asprintf("PATH=%s", path != NULL ? path :
							"/usr/local/bin:/usr/bin:/bin");
	const char		*argv[] = { prog, "--version", NULL };
	const char		*envp[] = { path_var, "LANG=C", NULL };
	struct kb_spawn_opts	 o = { 0 };
	struct kb_spawn_result	 r = { 0 };
	const char		*line;
	size_t			 n;
	int			 rc = -KB_EEXEC;

	o.argv = argv;
	o.envp = envp;
	o.out_cap = DR_VERSION_CAP;
	o.timeout_ms = DR_VERSION_MS;
	if (kb_spawn_run(&o, &r) == 0 && r.end == KB_END_EXITED && r.exit_code == 0 &&
	    r.out.p != NULL) {
		line = r.out.p;
		if (want != NULL && strstr(r.out.p, want) != NULL) {
			line = strstr(r.out.p, want);
			while (line > r.out.p && line[-1] != '\n')
				line--;
		}
		n = strcspn(line, "\r\n");
		snprintf(out, outlen, "%.*s", (int)n, line);
		rc = 0;
	}
	kb_spawn_result_clear(&r);
	free(path_var);
	return rc;
}

/* ------------------------------------------------------------ the checks */

/* cc builds kforge itself; c++ builds every candidate (torch calls it by that name). */
/* A program found on PATH that answers --version: the line says which and where. */
static void
check_tool(struct doctor *d, const struct check *c, const char *name, const char *fix)
{
	char	path[PATH_MAX], version[256];

	if (kb_which(name, path, sizeof(path)) < 0) {
		emit(d, c, NULL, false, NULL, NULL, fix, "not found on PATH");
		return;
	}
	if (version_line(path, NULL, version, sizeof(version)) < 0) {
		emit(d, c, NULL, false, NULL, path, fix, "%s does not answer --version", path);
		return;
	}
	emit(d, c, NULL, true, version, path, NULL, "%s (%s)", version, path);
}

static void
check_compiler(struct doctor *d, const struct check *c)
{
	check_tool(d, c, c->item, strcmp(c->item, "c++") == 0 ?
		   "install g++ (Debian: apt-get install build-essential; tools/setup.sh does)" :
		   "install a C compiler (Debian: apt-get install build-essential; "
		   "tools/setup.sh does)");
}

/* The Python a run would use, and why that one: named (runner.python, $KFORGE_PYTHON) is
 * taken as given, so one that cannot import torch fails here, by name. */
static void
check_python(struct doctor *d, const struct check *c)
{
	const char	*fix = "set runner.python or KFORGE_PYTHON to a Python that imports torch, "
			       "or run tools/setup.sh (it installs Debian's python3-torch)";
	const char	*named = d->cfg.runner.python != NULL && d->cfg.runner.python[0] != '\0' ?
				 "runner.python" : getenv("KFORGE_PYTHON") != NULL &&
				 getenv("KFORGE_PYTHON")[0] != '\0' ? "KFORGE_PYTHON" : NULL;
	char		 how[64];

	if (d->python_err[0] != '\0') {
		/* fb_find_python's message is "problem; what to do": the two go apart. */
		char *sep = strstr(d->python_err, "; ");

		if (sep != NULL) {
			*sep = '\0';
			fix = sep + 2;
		}
		emit(d, c, NULL, false, NULL, d->python, fix, "%s", d->python_err);
		return;
	}
	snprintf(how, sizeof(how), "%s%s", named != NULL ? "named by " : "the first found that "
		 "imports torch", named != NULL ? named : "");
	if (d->probe != NULL && probe_str(d, "torch_error") != NULL) {
		emit(d, c, NULL, false, probe_str(d, "version"), d->python, fix,
		     "%s (%s) cannot import torch", d->python, how);
		return;
	}
	emit(d, c, NULL, true, probe_str(d, "version"), d->python, NULL,
	     "%s (Python %s, %s), imports torch as %s", d->python,
	     probe_str(d, "version") != NULL ? probe_str(d, "version") : "?", how,
	     fb_contain_user() != NULL ? fb_contain_user() : "this user");
}

static void
check_torch(struct doctor *d, const struct check *c)
{
	const char *fix = "run tools/setup.sh (Debian's python3-torch), or pip install torch "
			  "into that Python";
	const char *cuda = probe_str(d, "torch_cuda");

	if (d->probe == NULL) {
		emit(d, c, NULL, false, NULL, NULL, fix, "not checked: %s", d->probe_err);
		return;
	}
	if (probe_str(d, "torch_error") != NULL) {
		emit(d, c, NULL, false, NULL, NULL, fix, "%s cannot import torch: %s", d->python,
		     probe_str(d, "torch_error"));
		return;
	}
	emit(d, c, NULL, true, probe_str(d, "torch"), probe_str(d, "torch_dir"), NULL,
	     "%s, %s%s (%s)", probe_str(d, "torch"), cuda != NULL ? "built for CUDA " : "CPU only",
	     cuda != NULL ? cuda : "", probe_str(d, "torch_dir"));
}

static void
check_torch_cuda(struct doctor *d, const struct check *c)
{
	const char	*fix = "install a CUDA build of torch that this driver supports "
			       "(pip install torch)";
	json_t		*avail;

	if (!need_torch(d, c))
		return;
	avail = json_object_get(d->probe, "cuda_available");
	if (probe_str(d, "torch_cuda") == NULL)
		emit(d, c, NULL, false, NULL, NULL, fix, "torch %s is a CPU-only build",
		     probe_str(d, "torch"));
	else if (!json_is_true(avail))
		emit(d, c, NULL, false, probe_str(d, "torch_cuda"), NULL,
		     "check the driver and gpu lines; a torch built for a newer CUDA than the "
		     "driver supports sees no GPU", "torch (CUDA %s) sees no GPU%s%s",
		     probe_str(d, "torch_cuda"), probe_str(d, "cuda_error") != NULL ? ": " : "",
		     probe_str(d, "cuda_error") != NULL ? probe_str(d, "cuda_error") : "");
	else
		emit(d, c, NULL, true, probe_str(d, "torch_cuda"), NULL, NULL,
		     "torch (CUDA %s) sees %d GPU(s)", probe_str(d, "torch_cuda"),
		     (int)json_integer_value(json_object_get(d->probe, "cuda_devices")));
}

/* torch's C++ headers, pybind11 and Python.h: a path the snippet found, or the fix. */
static void
check_header(struct doctor *d, const struct check *c)
{
	static const struct {
		const char *item, *key, *what, *fix;
	} headers[] = {
		{ "torch-headers", "extension_h", "torch/extension.h on torch's include paths",
		  "install libtorch-dev (Debian's python3-torch ships no headers; tools/setup.sh "
		  "installs it), or use a pip torch, which bundles them" },
		{ "pybind11", "pybind11", "pybind11/pybind11.h",
		  "install pybind11-dev (tools/setup.sh does), or use a pip torch, which "
		  "bundles it" },
		{ "python-headers", "python_h", "Python.h",
		  "install python3-dev for that Python (tools/setup.sh does)" },
	};

	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		const char *path;

		if (strcmp(headers[i].item, c->item) != 0)
			continue;
		/* Python.h is the Python's own; the others are found through torch. */
		if (strcmp(headers[i].key, "python_h") != 0 && !need_torch(d, c))
			return;
		if (d->probe == NULL) {
			emit(d, c, NULL, false, NULL, NULL, headers[i].fix, "not checked: %s",
			     d->probe_err);
			return;
		}
		if ((path = probe_str(d, headers[i].key)) == NULL)
			emit(d, c, NULL, false, NULL, NULL, headers[i].fix, "%s: not found",
			     headers[i].what);
		else
			emit(d, c, NULL, true, NULL, path, NULL, "%s", path);
		return;
	}
}

static void
check_ninja(struct doctor *d, const struct check *c)
{
	check_tool(d, c, "ninja", "install ninja (Debian: apt-get install ninja-build; "
		   "tools/setup.sh does): torch builds extensions with it");
}

static void
check_selftest(struct doctor *d, const struct check *c)
{
	const char		*device = strcmp(c->item, "cuda-extension") == 0 ? "cuda" : "cpu";
	struct fb_selftest	 st = { 0 };
	int			 rc;

	if (strcmp(device, "cuda") == 0 && d->ngpus == 0) {
		emit(d, c, NULL, false, NULL, NULL, "see the driver and gpu lines",
		     "not checked: no GPU to run it on");
		return;
	}
	if ((rc = fb_selftest(&d->cfg, device, !d->fresh, &st)) < 0) {
		emit(d, c, NULL, false, NULL, NULL,
		     "fix the failed lines above, then run kforge doctor again",
		     "the self-test could not run: %s", kb_strerror(rc));
		return;
	}
	if (!st.ok) {
		emit(d, c, NULL, false, st.torch, st.python, st.fix[0] != '\0' ? st.fix : NULL,
		     "a tiny %s extension failed at %s: %s", device,
		     st.stage[0] != '\0' ? st.stage : "?", st.message);
		return;
	}
	if (st.cached)
		emit(d, c, NULL, true, st.torch, st.python, NULL,
		     "a tiny %s extension builds and runs (passed before in this environment; "
		     "--fresh builds it again)", device);
	else
		emit(d, c, NULL, true, st.torch, st.python, NULL,
		     "a tiny %s extension builds in %.1f s and runs in %.2f s", device,
		     st.build_s, st.run_s);
}

static void
check_nvcc(struct doctor *d, const struct check *c)
{
	char	path[PATH_MAX], version[256];
	char	fix[512];

	snprintf(fix, sizeof(fix), "install the CUDA toolkit%s%s (nvcc) and set CUDA_HOME to it",
		 probe_str(d, "torch_cuda") != NULL ? " for torch's CUDA " : "",
		 probe_str(d, "torch_cuda") != NULL ? probe_str(d, "torch_cuda") : "");
	if (d->cuda_home[0] != '\0')
		snprintf(path, sizeof(path), "%s/bin/nvcc", d->cuda_home);
	else if (kb_which("nvcc", path, sizeof(path)) < 0)
		path[0] = '\0';
	if (path[0] == '\0' || access(path, X_OK) != 0) {
		emit(d, c, NULL, false, NULL, path, fix, "%s", path[0] != '\0' ?
		     "not found where torch looks (CUDA_HOME)" :
		     "no CUDA_HOME and no nvcc on PATH");
		return;
	}
	if (version_line(path, "release", version, sizeof(version)) < 0) {
		emit(d, c, NULL, false, NULL, path, fix, "%s does not answer --version", path);
		return;
	}
	emit(d, c, NULL, true, version, path, NULL, "%s (%s)", version, path);
}

static const char gpu_fix[] = "install the NVIDIA driver so that nvidia-smi answers, "
			      "or use --device cpu";

static void
check_driver(struct doctor *d, const struct check *c)
{
	struct kb_spawn_result	 r = { 0 };
	char			 smi[PATH_MAX], *text = NULL, *p;
	size_t			 n;

	if (orch_nvidia_smi("driver_version", &r, smi, sizeof(smi)) == 0) {
		n = strcspn(r.out.p, "\r\n");
		r.out.p[n] = '\0';
		emit(d, c, NULL, true, r.out.p, smi, NULL, "NVIDIA driver %s (%s)", r.out.p, smi);
		kb_spawn_result_clear(&r);
		return;
	}
	/* No nvidia-smi that answers: the kernel module may still say its version. */
	if (kb_read_file("/proc/driver/nvidia/version", 4096, &text, &n) == 0 &&
	    (p = strstr(text, "Kernel Module")) != NULL) {
		p += strlen("Kernel Module");
		p += strspn(p, " ");
		p[strcspn(p, " \n")] = '\0';
		emit(d, c, NULL, false, p, "/proc/driver/nvidia/version", gpu_fix,
		     "kernel module %s is loaded, but no nvidia-smi answers", p);
	} else {
		emit(d, c, NULL, false, NULL, NULL, gpu_fix,
		     "no NVIDIA driver: no nvidia-smi answers and /proc/driver/nvidia/version "
		     "is missing");
	}
	free(text);
}

static void
check_gpus(struct doctor *d, const struct check *c)
{
	struct kb_spawn_result	 r = { 0 };
	json_t			*gpus, *g;
	size_t			 i;
	char			 item[32], *line, *save = NULL;
	int			 shown = 0;

	if (orch_nvidia_smi("index,name,memory.total", &r, NULL, 0) == 0) {
		for (line = strtok_r(r.out.p, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save)) {
			char	*name = strchr(line, ','), *mem;

			if (name == NULL || (mem = strrchr(line, ',')) == name)
				continue;
			*name++ = '\0';
			*mem++ = '\0';
			snprintf(item, sizeof(item), "gpu %s", line);
			emit(d, c, item, true, NULL, NULL, NULL, "%s, %s MiB",
			     name + strspn(name, " "), mem + strspn(mem, " "));
			shown++;
		}
		kb_spawn_result_clear(&r);
	}
	if ((d->ngpus = shown) > 0)
		return;
	gpus = orch_detect_gpus();
	json_array_foreach(gpus, i, g) {
		snprintf(item, sizeof(item), "gpu %d",
			 (int)json_integer_value(json_object_get(g, "index")));
		emit(d, c, item, true, NULL, NULL, NULL, "/dev/nvidia%d (nvidia-smi does not "
		     "describe it)", (int)json_integer_value(json_object_get(g, "index")));
		shown++;
	}
	json_decref(gpus);
	if ((d->ngpus = shown) == 0)
		emit(d, c, NULL, false, NULL, NULL, gpu_fix,
		     "no NVIDIA GPU visible (no nvidia-smi answer, no /dev/nvidia0)");
}

static void
check_cupti(struct doctor *d, const struct check *c)
{
	const char	*path;
	char		*searched;

	if (!need_torch(d, c))
		return;
	if ((path = probe_str(d, "cupti")) != NULL) {
		emit(d, c, NULL, true, NULL, path, NULL, "%s", path);
		return;
	}
	searched = json_dumps(json_object_get(d->probe, "cupti_searched"), JSON_COMPACT);
	emit(d, c, NULL, false, NULL, NULL, "install CUPTI (the CUDA toolkit's extras/CUPTI, or "
	     "pip's nvidia-cuda-cupti for torch's CUDA); without it there is no P feedback",
	     "no libcupti.so (searched %s)", searched != NULL ? searched : "nothing");
	free(searched);
}

/* Counters need root or RmProfilingAdminOnly: 0, and the runner is who asks for them. */
static void
check_counters(struct doctor *d, const struct check *c)
{
	const char	*fix = "set the nvidia module option NVreg_RestrictProfilingToAdminUsers=0 "
			       "(and reload it), or runner.user: '' with kforge as root";
	const char	*user = fb_contain_user();
	char		*params = NULL, *p;
	size_t		 n;
	long		 admin_only = -1;

	if (geteuid() == 0 && user == NULL) {
		emit(d, c, NULL, true, NULL, NULL, NULL, "permitted: the runner runs as root");
		return;
	}
	if (kb_read_file("/proc/driver/nvidia/params", 1 << 20, &params, &n) == 0 &&
	    (p = strstr(params, "RmProfilingAdminOnly:")) != NULL)
		admin_only = strtol(p + strlen("RmProfilingAdminOnly:"), NULL, 10);
	free(params);
	if (admin_only == 0)
		emit(d, c, NULL, true, NULL, "/proc/driver/nvidia/params", NULL,
		     "permitted: RmProfilingAdminOnly: 0");
	else if (admin_only > 0)
		emit(d, c, NULL, false, NULL, "/proc/driver/nvidia/params", fix,
		     "not permitted: RmProfilingAdminOnly: %ld and the runner runs as %s",
		     admin_only, user != NULL ? user : "a user other than root");
	else
		emit(d, c, NULL, false, NULL, NULL, fix, "cannot tell: no RmProfilingAdminOnly in "
		     "/proc/driver/nvidia/params, and the runner does not run as root");
}

static void
check_network(struct doctor *d, const struct check *c)
{
	char	net[384], user[256];
	bool	isolated = fb_contain_describe(net, sizeof(net), user, sizeof(user));

	emit(d, c, NULL, isolated || !d->cfg.runner.isolate_network, NULL, NULL,
	     "let kforge make network namespaces (root with CAP_SYS_ADMIN, or unprivileged user "
	     "namespaces: sysctl kernel.unprivileged_userns_clone=1); runs go on without",
	     "runners: %s", net);
}

static void
check_sandbox(struct doctor *d, const struct check *c)
{
	char	line[1280], err[1280];
	bool	whole = fb_contain_describe_sandbox(line, sizeof(line));
	bool	ready = fb_contain_sandbox_ready(err, sizeof(err)) == 0;

	emit(d, c, NULL, ready, NULL, NULL,
	     "a kernel with Landlock ABI 6 or later (Linux 6.12) and seccomp, or "
	     "runner.sandbox: best_effort to run with the layers there are",
	     "runners: %s%s", line, whole || !ready ? "" : " (runs go on without them)");
}

static void
check_user(struct doctor *d, const struct check *c)
{
	char	net[384], user[256], err[1024];

	if (fb_contain_setup(&d->cfg, err, sizeof(err)) < 0) {
		emit(d, c, NULL, false, NULL, NULL, "create that user, or set runner.user",
		     "%s", err);
		return;
	}
	(void)fb_contain_describe(net, sizeof(net), user, sizeof(user));
	emit(d, c, NULL, true, fb_contain_user(), NULL, NULL, "runners run as %s", user);
}

/* Free space where runs go: the nearest directory that exists on the way to runs/. */
static void
check_disk(struct doctor *d, const struct check *c)
{
	char		cwd[PATH_MAX], dir[PATH_MAX], *slash;
	struct statvfs	sv;
	double		gib;

	if (getcwd(cwd, sizeof(cwd)) == NULL ||
	    kb_path_join(dir, sizeof(dir), cwd, ORCH_RUNS_DIR) < 0) {
		emit(d, c, NULL, false, NULL, NULL, "run kforge from a directory that exists",
		     "cannot tell the working directory: %s", strerror(errno));
		return;
	}
	while (access(dir, F_OK) != 0 && (slash = strrchr(dir, '/')) != NULL && slash != dir)
		*slash = '\0';
	if (statvfs(dir, &sv) == -1) {
		emit(d, c, NULL, false, NULL, dir, "give runs another place (--run-dir)",
		     "statvfs %s: %s", dir, strerror(errno));
		return;
	}
	gib = (double)sv.f_bavail * (double)sv.f_frsize / (1024.0 * 1024 * 1024);
	emit(d, c, NULL, !kb_fs_nearly_full(dir), NULL, dir,
	     "free space there, or give runs another place (--run-dir)",
	     "%.1f GiB free where runs go (%s)", gib, dir);
}

/* The shared build cache: where it is, what it holds, and the cap a run trims it to. */
static void
check_cache(struct doctor *d, const struct check *c)
{
	struct fb_cache_usage	u;
	char			dir[PATH_MAX];
	int			rc;

	if ((rc = fb_cache_dir("builds", NULL, dir, sizeof(dir))) < 0 ||
	    (rc = fb_cache_trim(-1, &u)) < 0) {
		emit(d, c, NULL, false, NULL, NULL,
		     "set KFORGE_CACHE_DIR to a directory of kforge's user that no one else "
		     "can write", "no shared build cache: %s", kb_strerror(rc));
		return;
	}
	emit(d, c, NULL, true, NULL, dir, NULL,
	     "%ld builds, %.2f GiB (a run's start trims to runner.cache_max_gb %ld)",
	     u.builds, (double)u.bytes / (1024.0 * 1024 * 1024), d->cfg.runner.cache_max_gb);
}

/* Triton, for eval.backend triton: required then, else only reported. */
static void
check_triton(struct doctor *d, const struct check *c)
{
	struct check	 as_used = *c;
	const char	*fix = "pip install triton for this Python (a version that matches its torch), "
			       "or set eval.backend: cuda";

	if (d->cfg.eval.backend != NULL && strcmp(d->cfg.eval.backend, "triton") == 0)
		as_used.required = DR_CUDA;
	if (d->probe == NULL) {
		emit(d, &as_used, NULL, false, NULL, NULL, fix, "not checked: %s", d->probe_err);
		return;
	}
	if (probe_str(d, "triton") == NULL) {
		emit(d, &as_used, NULL, false, NULL, NULL, fix, "Triton does not import in %s: %s%s",
		     d->python, probe_str(d, "triton_error") != NULL ? probe_str(d, "triton_error") :
		     "torch does not import", as_used.required ? "" : " (needed only for "
		     "eval.backend: triton)");
		return;
	}
	emit(d, &as_used, NULL, true, probe_str(d, "triton"), NULL, NULL, "Triton %s",
	     probe_str(d, "triton"));
}

static const struct check checks[] = {
	/* item            checked on  required on  */
	{ "cc",             DR_ALL,    0,           check_compiler },
	{ "c++",            DR_ALL,    DR_ALL,      check_compiler },
	{ "python",         DR_ALL,    DR_ALL,      check_python },
	{ "torch",          DR_ALL,    DR_ALL,      check_torch },
	{ "torch-headers",  DR_ALL,    DR_ALL,      check_header },
	{ "pybind11",       DR_ALL,    DR_ALL,      check_header },
	{ "python-headers", DR_ALL,    DR_ALL,      check_header },
	{ "ninja",          DR_ALL,    DR_ALL,      check_ninja },
	{ "cpu-extension",  DR_CPU,    DR_CPU,      check_selftest },
	{ "torch-cuda",     DR_CUDA,   DR_CUDA,     check_torch_cuda },
	{ "nvcc",           DR_CUDA,   DR_CUDA,     check_nvcc },
	{ "driver",         DR_CUDA,   DR_CUDA,     check_driver },
	{ "gpu",            DR_CUDA,   DR_CUDA,     check_gpus },
	{ "cuda-extension", DR_CUDA,   DR_CUDA,     check_selftest },
	{ "triton",         DR_CUDA,   0,           check_triton },
	{ "cupti",          DR_CUDA,   0,           check_cupti },
	{ "perf-counters",  DR_CUDA,   0,           check_counters },
	{ "runner-user",    DR_ALL,    DR_ALL,      check_user },
	{ "network",        DR_ALL,    0,           check_network },
	{ "sandbox",        DR_ALL,    DR_ALL,      check_sandbox },
	{ "disk",           DR_ALL,    DR_ALL,      check_disk },
	{ "cache",          DR_ALL,    0,           check_cache },
};

/* ------------------------------------------------------------ the command */

/* The Python a run would choose, and the snippet's facts through it (or through the
 * Python that was named and fails, to say why). */
static void
probe_python(struct doctor *d)
{
	const char		*args[] = { d->device, NULL };
	struct kb_spawn_result	 r = { 0 };
	json_error_t		 jerr;
	const char		*home;
	int			 rc;

	if (fb_find_python(&d->cfg, d->python, sizeof(d->python), d->python_err,
			   sizeof(d->python_err)) == 0)
		d->python_err[0] = '\0';
	if (d->python[0] == '\0' || access(d->python, X_OK) != 0) {
		snprintf(d->probe_err, sizeof(d->probe_err), "no Python to ask (see the python "
			 "line)");
		return;
	}
	rc = fb_python_snippet(&d->cfg, d->python, probe_py, args, d->dev == DR_CUDA, 0, &r);
	if (rc < 0)
		snprintf(d->probe_err, sizeof(d->probe_err), "%s does not run: %s", d->python,
			 kb_strerror(rc));
	else if (r.result.p == NULL ||
		 (d->probe = json_loadb(r.result.p, r.result.len, 0, &jerr)) == NULL)
		snprintf(d->probe_err, sizeof(d->probe_err), "%s ran the probe with no answer "
			 "(%s): %.200s", d->python, r.end == KB_END_EXITED ? "exited" : "killed",
			 r.out.p != NULL ? r.out.p : "");
	kb_spawn_result_clear(&r);
	home = probe_str(d, "cuda_home");
	snprintf(d->cuda_home, sizeof(d->cuda_home), "%s", home != NULL ? home : "");
}

static int
load_config(struct doctor *d, const char *config)
{
	char	err[1024], problems[PATH_MAX + 32];
	int	rc;

	if (config != NULL) {
		rc = orch_config_load(config, NULL, 0, &d->cfg, err, sizeof(err));
	} else {
		char *yaml;

		snprintf(problems, sizeof(problems), "%s/problems", kb_home());
		yaml = kb_asprintf("%sproblems: {dir: '%s'}\n", doctor_defaults, problems);
		rc = orch_config_load_string(yaml, strlen(yaml), "kforge doctor", NULL, 0, &d->cfg,
					     err, sizeof(err));
		free(yaml);
	}
	if (rc < 0)
		fprintf(stderr, "kforge: %s\n", err);
	return rc;
}

int
orch_cmd_doctor(const char *config, const char *device, bool as_json, bool fresh)
{
	struct doctor	 d = { .json = as_json, .fresh = fresh, .failed = KB_BUF_INIT(4096) };
	char		 why[128] = "";
	json_t		*gpus;
	int		 code;

	if (load_config(&d, config) < 0)
		return 2;
	if (device == NULL)
		device = d.cfg.eval.device;
	if (strcmp(device, "auto") == 0) {
		gpus = orch_detect_gpus();
		device = json_array_size(gpus) > 0 ? "cuda" : "cpu";
		snprintf(why, sizeof(why), " (auto: %s)", json_array_size(gpus) > 0 ?
			 "a GPU is visible" : "no NVIDIA GPU visible");
		json_decref(gpus);
	}
	d.device = device;
	d.dev = strcmp(device, "cuda") == 0 ? DR_CUDA : DR_CPU;
	/* The runner's Python and its imports are checked as the runner's user sees them. */
	(void)fb_contain_setup(&d.cfg, NULL, 0);
	d.items = json_array();
	if (!as_json) {
		printf("kforge doctor: device %s%s%s%s\n", device, why, config != NULL ? ", " : "",
		       config != NULL ? config : "");
		fflush(stdout);
	}
	probe_python(&d);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (checks[i].on & d.dev)
			checks[i].run(&d, &checks[i]);
	code = d.failed.len > 0 ? 1 : 0;
	if (as_json) {
		json_dumpf(d.items, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
	} else if (code == 0) {
		printf("kforge doctor: device %s can run kforge\n", device);
	} else {
		printf("kforge doctor: device %s cannot work: %s (each line above names its fix)\n",
		       device, d.failed.p);
	}
	json_decref(d.items);
	json_decref(d.probe);
	kb_buf_clear(&d.failed);
	kb_config_clear(&d.cfg);
	return code;
}
