/* run.c: the run directory — created once by `kforge run` (frozen config, task manifest,
 * device list, run.json), reopened by resume, status, tail and report. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "feedback/feedback.h"
#include "fsm/fsm.h"
#include "llm/llm.h"
#include "orchestrator/orch_int.h"
#include "base/banned.h"

static int
absolute_dir(const char *in, char *out, size_t n)
{
	char	cwd[PATH_MAX];

	if (in[0] == '/') {
		if (strlen(in) >= n)
			return -KB_ETOOBIG;
		snprintf(out, n, "%s", in);
	} else {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return -KB_ESYS;
		if (kb_path_join(out, n, cwd, in) < 0)
			return -KB_ETOOBIG;
	}
	for (size_t len = strlen(out); len > 1 && out[len - 1] == '/'; len--)
		out[len - 1] = '\0';
	return strlen(out) > ORCH_MAX_RUN_DIR ? -KB_ETOOBIG : 0;
}

/* -------------------------------------------------------------- devices */

static const char *const nvidia_smi_paths[] = {
	"/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi",
	"/usr/lib/wsl/lib/nvidia-smi",
};

int
orch_nvidia_smi_run(const char *const *args, struct kb_spawn_result *r, char *path,
		    size_t pathlen)
{
	const char	*override = getenv("KFORGE_NVIDIA_SMI");
	size_t		 nargs = 0;

	while (args[nargs] != NULL)
		nargs++;
	if (nargs > 8)
		return -KB_EINVAL;
	for (size_t i = 0; i <= sizeof(nvidia_smi_paths) / sizeof(nvidia_smi_paths[0]); i++) {
		const char		*smi = i == 0 ? override : nvidia_smi_paths[i - 1];
		const char		*argv[10] = { smi };
		const char		*envp[] = { "PATH=/usr/bin:/bin", "LANG=C", NULL };
		struct kb_spawn_opts	 o = { 0 };

		/* $KFORGE_NVIDIA_SMI, where set, is the only one asked. */
		if (i > 0 && override != NULL && override[0] != '\0')
			break;
		if (smi == NULL || smi[0] == '\0' || access(smi, X_OK) != 0)
			continue;
		memcpy(argv + 1, args, nargs * sizeof(*args));
		argv[nargs + 1] = NULL;
		o.argv = argv;
		o.envp = envp;
		o.timeout_ms = 30000;
		o.out_cap = 65536;
		if (path != NULL)
			snprintf(path, pathlen, "%s", smi);
		if (kb_spawn_run(&o, r) == 0 && r->end == KB_END_EXITED && r->exit_code == 0)
			return 0;
		/* It answered and refused (no permission): that is the answer. */
		if (r->end == KB_END_EXITED && r->exit_code != 127)
			return -KB_EPERM;
		kb_spawn_result_clear(r);
	}
	return -KB_ENOENT;
}

int
orch_nvidia_smi(const char *query, struct kb_spawn_result *r, char *path, size_t pathlen)
{
	char		 arg[256];
	const char	*args[] = { arg, "--format=csv,noheader,nounits", NULL };
	int		 rc;

	if (snprintf(arg, sizeof(arg), "--query-gpu=%s", query) >= (int)sizeof(arg))
		return -KB_ETOOBIG;
	if ((rc = orch_nvidia_smi_run(args, r, path, pathlen)) == 0 && r->out.p == NULL)
		rc = -KB_ENOENT;	/* no answer to the query */
	if (rc < 0) {
		kb_spawn_result_clear(r);
		rc = -KB_ENOENT;
	}
	return rc;
}

/* GPUs by nvidia-smi (index and name), else by /dev/nvidiaN; empty when none. */
json_t *
orch_detect_gpus(void)
{
	json_t			*list = json_array();
	struct kb_spawn_result	 r = { 0 };
	char			*line, *save = NULL;

	/* compute_cap is known to drivers since 510; an older one refuses the query. */
	if (orch_nvidia_smi("index,compute_cap,name", &r, NULL, 0) == 0 ||
	    orch_nvidia_smi("index,name", &r, NULL, 0) == 0) {
		for (line = strtok_r(r.out.p, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save)) {
			char	*comma = strchr(line, ','), *name, cap[16] = "";
			long	 idx;

			if (comma == NULL)
				continue;
			*comma = '\0';
			if (kb_parse_int(line, 0, KB_MAX_DEVICES - 1, &idx) < 0)
				continue;
			name = comma + 1;
			while (*name == ' ')
				name++;
			/* "9.0, NVIDIA H100" or, from an old driver, just the name */
			if (isdigit((unsigned char)name[0]) && (comma = strchr(name, ',')) != NULL &&
			    (size_t)(comma - name) < sizeof(cap) && strspn(name, "0123456789.") ==
			    (size_t)(comma - name)) {
				memcpy(cap, name, (size_t)(comma - name));
				cap[comma - name] = '\0';
				for (name = comma + 1; *name == ' '; name++)
					;
			}
			json_array_append_new(list, json_pack("{s:I, s:s, s:s}", "index",
							      (json_int_t)idx, "name", name,
							      "capability", cap));
		}
		kb_spawn_result_clear(&r);
		if (json_array_size(list) > 0)
			return list;
	}
	for (int i = 0; i < KB_MAX_DEVICES; i++) {
		char dev[32];

		snprintf(dev, sizeof(dev), "/dev/nvidia%d", i);
		if (access(dev, F_OK) != 0)
			break;
		json_array_append_new(list, json_pack("{s:i, s:s}", "index", i, "name", "cuda"));
	}
	return list;
}

/* An empty eval.arch_list means "the GPUs this run uses": their compute capabilities,
 * each once ("9.0", "8.0;9.0"). Resolved here, once, into the config that every process
 * of the run reads (and config.yaml records), because a precompile sees no GPU: left
 * empty, torch would build for every arch it knows, and nvcc's time grows with each. */
static void
resolve_arch_list(struct kb_config *cfg, json_t *chosen)
{
	struct kb_buf	 list = KB_BUF_INIT(256);
	size_t		 i;
	json_t		*g;

	if (cfg->eval.arch_list != NULL && cfg->eval.arch_list[0] != '\0')
		return;
	json_array_foreach(chosen, i, g) {
		const char *cap = json_string_value(json_object_get(g, "capability"));
		bool	    seen = false;

		if (cap == NULL || cap[0] == '\0') {
			kb_buf_clear(&list);	/* one unknown: let torch decide, as before */
			return;
		}
		for (const char *p = list.p; p != NULL && (p = strstr(p, cap)) != NULL; p++)
			if ((p == list.p || p[-1] == ';') &&
			    (p[strlen(cap)] == ';' || p[strlen(cap)] == '\0'))
				seen = true;
		if (!seen)
			kb_buf_printf(&list, "%s%s", list.len > 0 ? ";" : "", cap);
	}
	if (list.len > 0) {
		free(cfg->eval.arch_list);
		cfg->eval.arch_list = kb_buf_steal(&list);
	}
	kb_buf_clear(&list);
}

int
orch_resolve_devices(struct kb_config *cfg, json_t **gpus, char *err, size_t errlen)
{
	json_t	*found, *chosen, *g;
	size_t	 i;

	if (strcmp(cfg->eval.device, "cpu") == 0) {
		*gpus = json_pack("{s:s, s:[{s:i, s:s}]}", "device", "cpu", "devices", "index", -1,
				  "name", "cpu");
		return 0;
	}
	found = orch_detect_gpus();
	if (json_array_size(found) == 0) {
		json_decref(found);
		if (strcmp(cfg->eval.device, "auto") == 0) {
			free(cfg->eval.device);
			cfg->eval.device = kb_strdup("cpu");
			return orch_resolve_devices(cfg, gpus, err, errlen);
		}
		snprintf(err, errlen, "eval.device is cuda but no NVIDIA GPU is visible "
			 "(no nvidia-smi answer, no /dev/nvidia0)");
		return -KB_ECONFIG;
	}
	free(cfg->eval.device);
	cfg->eval.device = kb_strdup("cuda");
	chosen = json_array();
	if (cfg->gpus.all) {
		json_array_extend(chosen, found);
	} else {
		for (int d = 0; d < cfg->gpus.ndevices; d++) {
			bool	present = false;

			json_array_foreach(found, i, g) {
				if (json_integer_value(json_object_get(g, "index")) ==
				    cfg->gpus.devices[d]) {
					json_array_append(chosen, g);
					present = true;
				}
			}
			if (!present) {
				snprintf(err, errlen, "gpus.devices: GPU %d is not present (found %zu)",
					 cfg->gpus.devices[d], json_array_size(found));
				json_decref(found);
				json_decref(chosen);
				return -KB_ECONFIG;
			}
		}
	}
	json_decref(found);
	resolve_arch_list(cfg, chosen);
	*gpus = json_pack("{s:s, s:o}", "device", "cuda", "devices", chosen);
	return 0;
}

/* ---------------------------------------------------------------- files */

static int
write_config(const char *dir, const struct kb_config *cfg)
{
	char	 path[PATH_MAX], *text = NULL;
	size_t	 len = 0;
	FILE	*fp = open_memstream(&text, &len);
	int	 rc;

	if (fp == NULL)
		return -KB_ENOMEM;
	rc = orch_config_emit(cfg, fp);
	fclose(fp);
	if (rc == 0 && (rc = rd_run_file(path, sizeof(path), dir, RD_CONFIG_YAML)) == 0)
		rc = kb_write_atomic(path, text, len);
	free(text);
	return rc;
}

/* The manifest, with each problem file's SHA-256 as the run found it at its start
 * ("problem_sha256"): a comparison of runs can then tell a key whose content changed. */
static int
write_tasks(const char *dir, const struct kb_task *tasks, int n, char *err, size_t errlen)
{
	char	path[PATH_MAX], sha[65] = "";
	json_t	*arr = json_array();
	int	rc;

	for (int i = 0; i < n; i++) {
		if (i == 0 || strcmp(tasks[i].problem_path, tasks[i - 1].problem_path) != 0) {
			char	*text;
			size_t	 len;

			if ((rc = kb_read_file(tasks[i].problem_path, FSM_MAX_SOURCE, &text,
					       &len)) < 0) {
				if (rc == -KB_ETOOBIG)
					snprintf(err, errlen, "cannot read the problem file '%s': "
						 "larger than %u MiB", tasks[i].problem_path,
						 FSM_MAX_SOURCE >> 20);
				else
					snprintf(err, errlen, "cannot read the problem file '%s': %s",
						 tasks[i].problem_path, strerror(errno));
				json_decref(arr);
				return rc;
			}
			kb_sha256_hex(text, len, sha);
			free(text);
		}
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:i}",
			"id", tasks[i].id, "problem_key", tasks[i].problem_key, "problem_name",
			tasks[i].problem_name, "problem_path", tasks[i].problem_path,
			"problem_sha256", sha, "level", tasks[i].level, "problem_id",
			(json_int_t)tasks[i].problem_id, "sample", tasks[i].sample));
	}
	if ((rc = rd_run_file(path, sizeof(path), dir, RD_TASKS_JSON)) < 0 ||
	    (rc = kb_write_atomic_json(path, arr)) < 0)
		snprintf(err, errlen, "cannot write the run directory '%s': %s", dir,
			 kb_strerror(rc));
	json_decref(arr);
	return rc;
}

#define TASKS_JSON_CAP	(1u << 30)	/* a million tasks are about 350 MB */

static int
read_tasks(const char *dir, struct kb_task **out, int *n, char *err, size_t errlen)
{
	char		 path[PATH_MAX];
	json_error_t	 jerr;
	json_t		*arr, *t;
	size_t		 i, len;
	char		*next, *text;
	int		 rc;

	if (rd_run_file(path, sizeof(path), dir, RD_TASKS_JSON) < 0) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -KB_ETOOBIG;
	}
	/* Read whole, then parsed: json_load_file takes a byte at a time through stdio's
	 * locks, a quarter of a status's time at 10,000 tasks (3.5 MB). */
	if ((rc = kb_read_file(path, TASKS_JSON_CAP, &text, &len)) < 0) {
		snprintf(err, errlen, "%s: %s", path, kb_strerror(rc));
		return -KB_ECORRUPT;
	}
	arr = json_loadb(text, len, 0, &jerr);
	free(text);
	if (arr == NULL || !json_is_array(arr)) {
		snprintf(err, errlen, "%s: %s", path, arr == NULL ? jerr.text : "not a list");
		json_decref(arr);
		return -KB_ECORRUPT;
	}
	*n = (int)json_array_size(arr);
	/* The paths share the array's allocation, as orch_tasks_list makes it. */
	{
		size_t pool = 0;

		json_array_foreach(arr, i, t) {
			const char *p = json_string_value(json_object_get(t, "problem_path"));

			pool += p != NULL ? strlen(p) + 1 : 0;
		}
		*out = calloc(1, ((size_t)*n + 1) * sizeof(**out) + pool);
		if (*out == NULL) {
			json_decref(arr);
			snprintf(err, errlen, "out of memory");
			return -KB_ENOMEM;
		}
	}
	next = (char *)(*out + *n + 1);
	json_array_foreach(arr, i, t) {
		struct kb_task	*k = &(*out)[i];
		const char	*id = json_string_value(json_object_get(t, "id"));
		const char	*key = json_string_value(json_object_get(t, "problem_key"));
		const char	*name = json_string_value(json_object_get(t, "problem_name"));
		const char	*p = json_string_value(json_object_get(t, "problem_path"));

		if (id == NULL || key == NULL || name == NULL || p == NULL) {
			snprintf(err, errlen, "%s: task %zu is incomplete", path, i);
			free(*out);
			json_decref(arr);
			return -KB_ECORRUPT;
		}
		snprintf(k->id, sizeof(k->id), "%s", id);
		snprintf(k->problem_key, sizeof(k->problem_key), "%s", key);
		snprintf(k->problem_name, sizeof(k->problem_name), "%s", name);
		k->problem_path = memcpy(next, p, strlen(p) + 1);
		next += strlen(p) + 1;
		k->level = (int)json_integer_value(json_object_get(t, "level"));
		k->problem_id = (long)json_integer_value(json_object_get(t, "problem_id"));
		k->sample = (int)json_integer_value(json_object_get(t, "sample"));
	}
	json_decref(arr);
	return 0;
}

int
orch_run_update(const struct orch_run *run, json_t *fields)
{
	char	path[PATH_MAX];
	json_t	*obj;
	int	rc;

	if ((rc = rd_run_file(path, sizeof(path), run->home[0] != '\0' ? run->home : run->dir,
			      RD_RUN_JSON)) < 0)
		return rc;
	if ((obj = json_load_file(path, 0, NULL)) == NULL)
		obj = json_object();
	json_object_update(obj, fields);
	rc = kb_write_atomic_json(path, obj);
	json_decref(obj);
	return rc;
}

/* What the supervisor checks before its first worker, as far as it can be checked
 * without the run directory (the quick ones first): the LLM client can be created (its
 * API key variable is set), runner.user exists, and the runner's Python is there and
 * reachable for that user (what else the runner reads, kforge stages where that user
 * can reach it). A run that would stop there stops before it creates anything, so the
 * same command can simply be run again. */
/* eval.backend triton: a GPU run, and Triton importable in the runner's Python (the
 * same check kforge doctor's "triton" line makes). */
static int
check_backend(const struct kb_config *cfg, const char *python, char *err, size_t errlen)
{
	static const char import_triton[] =
		"import sys\n"
		"try:\n"
		"    import triton\n"
		"except BaseException as e:\n"
		"    print(('%s: %s' % (type(e).__name__, e)).splitlines()[0][:200])\n"
		"    sys.exit(1)\n";
	struct kb_spawn_result	r = { 0 };
	int			rc;

	if (cfg->eval.backend == NULL || strcmp(cfg->eval.backend, "triton") != 0)
		return 0;
	if (strcmp(cfg->eval.device, "cuda") != 0) {
		snprintf(err, errlen, "eval.backend: triton runs only with eval.device cuda "
			 "(the device is %s)", cfg->eval.device);
		return -KB_ECONFIG;
	}
	rc = fb_python_snippet(cfg, python, import_triton, NULL, false, 60000, &r);
	if (rc < 0 || r.end != KB_END_EXITED || r.exit_code != 0) {
		char	why[256] = "";

		if (r.out.p != NULL)
			snprintf(why, sizeof(why), "%.*s", (int)strcspn(r.out.p, "\n"), r.out.p);
		snprintf(err, errlen, "eval.backend: triton does not import in %s (%s); pip install "
			 "triton for it, or set eval.backend: cuda", python,
			 why[0] != '\0' ? why : rc < 0 ? kb_strerror(rc) : "it did not run");
		kb_spawn_result_clear(&r);
		return -KB_ECONFIG;
	}
	kb_spawn_result_clear(&r);
	return 0;
}

static int
check_before_creating(const struct kb_config *cfg, char *err, size_t errlen)
{
	char	python[PATH_MAX];
	int	rc;

	if ((rc = llm_check_config(cfg, err, errlen)) < 0 ||
	    (rc = fb_contain_setup(cfg, err, errlen)) < 0 ||
	    (rc = fb_contain_sandbox_ready(err, errlen)) < 0 ||
	    (rc = fb_find_python(cfg, python, sizeof(python), err, errlen)) < 0 ||
	    (rc = check_backend(cfg, python, err, errlen)) < 0)
		return rc;
	return 0;
}

int
orch_run_prepare(struct orch_run *run, const char *config_path, const char *const *sets,
		 int nsets, json_t **gpus, char *err, size_t errlen)
{
	int	rc;

	memset(run, 0, sizeof(*run));
	*gpus = NULL;
	if ((rc = orch_config_load(config_path, sets, nsets, &run->cfg, err, errlen)) < 0)
		return rc;
	/* A Slurm run's devices are each shard's node's, resolved there (orch_shard_main). */
	if (orch_slurm_engine(&run->cfg))
		*gpus = json_pack("{s:s, s:[], s:b}", "device", run->cfg.eval.device, "devices",
				  "per_shard", true);
	else if ((rc = orch_resolve_devices(&run->cfg, gpus, err, errlen)) < 0)
		goto out;
	if ((rc = orch_tasks_list(&run->cfg, &run->tasks, &run->ntasks, err, errlen)) < 0)
		goto out;
	/* The machine's checks are the shards' where they run: this may be a login node. */
	if (!orch_slurm_engine(&run->cfg))
		rc = check_before_creating(&run->cfg, err, errlen);
out:
	if (rc < 0) {
		json_decref(*gpus);
		*gpus = NULL;
		orch_run_clear(run);
	}
	return rc;
}

int
orch_run_create(struct orch_run *run, const char *config_path, const char *run_dir,
		const char *const *sets, int nsets, char *err, size_t errlen)
{
	char	 path[PATH_MAX], ts[32], host[256] = "", id[65], seed[128];
	json_t	*gpus, *info;
	int	 rc;

	if ((rc = orch_run_prepare(run, config_path, sets, nsets, &gpus, err, errlen)) < 0)
		return rc;
	if (run_dir == NULL)
		snprintf(path, sizeof(path), "%s/%s", ORCH_RUNS_DIR, run->cfg.name);
	else
		snprintf(path, sizeof(path), "%s", run_dir);
	if ((rc = absolute_dir(path, run->dir, sizeof(run->dir))) < 0) {
		snprintf(err, errlen, "run directory '%s': path too long", path);
		goto out;
	}
	if ((rc = rd_run_file(path, sizeof(path), run->dir, RD_CONFIG_YAML)) < 0) {
		snprintf(err, errlen, "run directory '%s': path too long", run->dir);
		goto out;
	}
	if (kb_file_exists(path)) {
		snprintf(err, errlen, "%s already holds a run: 'kforge resume %s' continues it, "
			 "or choose another --run-dir", run->dir, run->dir);
		rc = -KB_ECONFIG;
		goto out;
	}
	if (run->cfg.refinement.hardware && !orch_slurm_engine(&run->cfg)) {
		char python[PATH_MAX];

		if ((rc = fb_find_python(&run->cfg, python, sizeof(python), err, errlen)) < 0 ||
		    (rc = orch_probe_hardware(&run->cfg, python, gpus, err, errlen)) < 0)
			goto out;
	}
	if ((rc = rd_run_file(path, sizeof(path), run->dir, RD_TASKS_DIR)) < 0 ||
	    (rc = kb_mkdir_p(path, 0755)) < 0) {
		snprintf(err, errlen, "cannot create '%s': %s", path,
			 rc == -KB_ETOOBIG ? kb_strerror(rc) : strerror(errno));
		goto out;
	}
	if ((rc = rd_run_file(path, sizeof(path), run->dir, RD_GPUS_JSON)) < 0 ||
	    (rc = kb_write_atomic_json(path, gpus)) < 0) {
		snprintf(err, errlen, "cannot write the run directory '%s': %s", run->dir,
			 kb_strerror(rc));
		goto out;
	}
	if ((rc = write_tasks(run->dir, run->tasks, run->ntasks, err, errlen)) < 0)
		goto out;
	if ((rc = write_config(run->dir, &run->cfg)) < 0) {
		snprintf(err, errlen, "cannot write the run directory '%s': %s", run->dir,
			 kb_strerror(rc));
		goto out;
	}
	gethostname(host, sizeof(host) - 1);
	kb_iso8601(kb_now_ms(), ts);
	snprintf(seed, sizeof(seed), "%s %s %ld", host, ts, (long)getpid());
	kb_sha256_hex(seed, strlen(seed), id);
	id[16] = '\0';
	info = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:i}", "run_id", id, "name",
			 run->cfg.name, "host", host, "created", ts, "kforge_version",
			 KFORGE_VERSION, "status", "created", "gpus", gpus, "tasks", run->ntasks);
	if (info != NULL && run->cfg.redteam.enabled)
		json_object_set_new(info, "redteam", json_pack("{s:f}", "min_speedup",
							     run->cfg.redteam.min_speedup));
	rc = orch_run_update(run, info);
	json_decref(info);
out:
	json_decref(gpus);
	if (rc < 0)
		orch_run_clear(run);
	return rc;
}

int
orch_run_open(struct orch_run *run, const char *dir, char *err, size_t errlen)
{
	char	path[PATH_MAX];
	int	rc;

	memset(run, 0, sizeof(*run));
	if (absolute_dir(dir, run->dir, sizeof(run->dir)) < 0) {
		snprintf(err, errlen, "run directory '%s': path too long", dir);
		return -KB_EINVAL;
	}
	if (rd_run_file(path, sizeof(path), run->dir, RD_CONFIG_YAML) < 0) {
		snprintf(err, errlen, "run directory '%s': path too long", dir);
		return -KB_EINVAL;
	}
	if (!kb_file_exists(path)) {
		snprintf(err, errlen, "%s is not a kforge run directory (no %s)", dir,
			 rd_name(RD_CONFIG_YAML));
		return -KB_ENOENT;
	}
	if ((rc = orch_config_load(path, NULL, 0, &run->cfg, err, errlen)) < 0)
		return rc;
	if ((rc = read_tasks(run->dir, &run->tasks, &run->ntasks, err, errlen)) < 0) {
		kb_config_clear(&run->cfg);
		return rc;
	}
	return 0;
}

/* What `resume --set` may change: where the machine's software is, never what the
 * experiment measures. */
static const char *const resume_settable[] = { "runner.python" };

int
orch_run_override(struct orch_run *run, const char *const *sets, int nsets, char *err,
		  size_t errlen)
{
	struct kb_config	 cfg;
	char			 path[PATH_MAX];
	int			 rc;

	for (int i = 0; i < nsets; i++) {
		size_t	klen = strcspn(sets[i], "=");
		bool	allowed = false;

		for (size_t k = 0; k < sizeof(resume_settable) / sizeof(resume_settable[0]); k++)
			allowed = allowed || (strlen(resume_settable[k]) == klen &&
					      strncmp(sets[i], resume_settable[k], klen) == 0);
		if (!allowed) {
			snprintf(err, errlen, "--set %s: resume changes only %s (the rest of the "
				 "frozen config is the experiment)", sets[i], resume_settable[0]);
			return -KB_ECONFIG;
		}
	}
	if ((rc = rd_run_file(path, sizeof(path), run->dir, RD_CONFIG_YAML)) < 0) {
		snprintf(err, errlen, "run directory '%s': path too long", run->dir);
		return rc;
	}
	if ((rc = orch_config_load(path, sets, nsets, &cfg, err, errlen)) < 0)
		return rc;
	if ((rc = write_config(run->dir, &cfg)) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, kb_strerror(rc));
		kb_config_clear(&cfg);
		return rc;
	}
	kb_config_clear(&run->cfg);
	run->cfg = cfg;
	return 0;
}

void
orch_run_clear(struct orch_run *run)
{
	kb_config_clear(&run->cfg);
	free(run->tasks);
	run->tasks = NULL;
	run->ntasks = 0;
}

int
orch_run_unfinished(const struct orch_run *run, bool any)
{
	int n = 0;

	for (int i = 0; i < run->ntasks && (n == 0 || !any); i++) {
		struct rpt_summary sum;

		if (rpt_summarize(run->dir, run->tasks[i].id, &sum) < 0 ||
		    !rpt_state_finished(sum.state))
			n++;
	}
	return n;
}

pid_t
orch_run_supervisor_pid(const char *dir)
{
	char	 path[PATH_MAX], *text = NULL;
	long	 pid = 0;
	int	 fd;

	/* The lock, not the pid file, says whether a supervisor lives: a pid file left by a
	 * SIGKILLed supervisor must not block a resume. */
	if (rd_run_file(path, sizeof(path), dir, RD_SUPERVISOR_LOCK) < 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		close(fd);
		return 0;
	}
	close(fd);
	if (rd_run_file(path, sizeof(path), dir, RD_SUPERVISOR_PID) == 0 &&
	    kb_read_file(path, 64, &text, NULL) == 0) {
		text[strcspn(text, "\n")] = '\0';
		if (kb_parse_int(text, 1, 1L << 30, &pid) < 0)
			pid = 0;
	}
	free(text);
	return pid > 0 ? (pid_t)pid : -1;
}
