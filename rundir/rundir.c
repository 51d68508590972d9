/* rundir.c: the run directory's layout table and the paths built from it. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rundir/rundir.h"
#include "base/banned.h"

struct rd_row {
	enum rd_level	 level;
	const char	*name;
};

#define RD_ROW_(name, level, file) [RD_##name] = { RD_LEVEL_##level, file },
static const struct rd_row rd_table[RD_ENTRY__N] = { RD_ENTRIES(RD_ROW_) };
#undef RD_ROW_

const char *
rd_name(enum rd_entry e)
{
	return (unsigned)e < RD_ENTRY__N ? rd_table[e].name : NULL;
}

int
rd_level(enum rd_entry e)
{
	return (unsigned)e < RD_ENTRY__N ? (int)rd_table[e].level : -1;
}

static bool
of_level(enum rd_entry e, enum rd_level level)
{
	return (unsigned)e < RD_ENTRY__N && rd_table[e].level == level;
}

/* One plain path component: it names exactly one entry of its folder. */
static bool
component_ok(const char *s)
{
	return s != NULL && s[0] != '\0' && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
	       strchr(s, '/') == NULL;
}

static int
fail(char *out, size_t n, int rc)
{
	if (n > 0)
		out[0] = '\0';
	return rc;
}

/* out = [run_dir "/"] fmt...: the one place a path is put together. */
static int __attribute__((format(printf, 4, 5)))
build(char *out, size_t n, const char *run_dir, const char *fmt, ...)
{
	va_list	ap;
	int	w = 0, v;

	if (n == 0)
		return -KB_ETOOBIG;
	if (run_dir != NULL && (w = snprintf(out, n, "%s/", run_dir)) >= (int)n)
		return fail(out, n, -KB_ETOOBIG);
	va_start(ap, fmt);
	v = vsnprintf(out + w, n - (size_t)w, fmt, ap);
	va_end(ap);
	if (w < 0 || v < 0 || (size_t)v >= n - (size_t)w)
		return fail(out, n, -KB_ETOOBIG);
	return 0;
}

int
rd_run_file(char *out, size_t n, const char *run_dir, enum rd_entry e)
{
	if (!of_level(e, RD_LEVEL_RUN))
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s", rd_table[e].name);
}

int
rd_run_key(char *out, size_t n, const char *run_dir, enum rd_entry folder, const char *key)
{
	if (!of_level(folder, RD_LEVEL_RUN) || !component_ok(key))
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s", rd_table[folder].name, key);
}

int
rd_shard_file(char *out, size_t n, const char *run_dir, const char *shard_id, enum rd_entry e)
{
	if (!of_level(e, RD_LEVEL_RUN) || !component_ok(shard_id))
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s/%s", rd_table[RD_SHARDS_DIR].name, shard_id,
		     rd_table[e].name);
}

int
rd_task_dir(char *out, size_t n, const char *run_dir, const char *task_id)
{
	return rd_run_key(out, n, run_dir, RD_TASKS_DIR, task_id);
}

int
rd_task_file(char *out, size_t n, const char *run_dir, const char *task_id, enum rd_entry e)
{
	if (!of_level(e, RD_LEVEL_TASK) || !component_ok(task_id))
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s/%s", rd_table[RD_TASKS_DIR].name, task_id,
		     rd_table[e].name);
}

int
rd_turn_dir(char *out, size_t n, const char *run_dir, const char *task_id, int turn)
{
	if (!component_ok(task_id) || turn < 1)
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s/%s/%d", rd_table[RD_TASKS_DIR].name, task_id,
		     rd_table[RD_TURNS_DIR].name, turn);
}

int
rd_turn_file(char *out, size_t n, const char *run_dir, const char *task_id, int turn,
	     enum rd_entry e)
{
	if (!of_level(e, RD_LEVEL_TURN) || !component_ok(task_id) || turn < 1)
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s/%s/%d/%s", rd_table[RD_TASKS_DIR].name, task_id,
		     rd_table[RD_TURNS_DIR].name, turn, rd_table[e].name);
}

int
rd_agent_file(char *out, size_t n, const char *run_dir, const char *task_id, int turn,
	      enum rd_entry e)
{
	if (!of_level(e, RD_LEVEL_AGENT) || !component_ok(task_id) || turn < 1)
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s/%s/%d/%s/%s", rd_table[RD_TASKS_DIR].name,
		     task_id, rd_table[RD_TURNS_DIR].name, turn, rd_table[RD_AGENT_DIR].name,
		     rd_table[e].name);
}

int
rd_tool_call_dir(char *out, size_t n, const char *run_dir, const char *task_id, int turn,
		 int call)
{
	if (!component_ok(task_id) || turn < 1 || call < 1)
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s/%s/%d/%s/%d", rd_table[RD_TASKS_DIR].name,
		     task_id, rd_table[RD_TURNS_DIR].name, turn,
		     rd_table[RD_TOOL_CALLS_DIR].name, call);
}

int
rd_tool_call_file(char *out, size_t n, const char *run_dir, const char *task_id, int turn,
		  int call, enum rd_entry e)
{
	if (!of_level(e, RD_LEVEL_TOOL_CALL) || !component_ok(task_id) || turn < 1 || call < 1)
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s/%s/%d/%s/%d/%s", rd_table[RD_TASKS_DIR].name,
		     task_id, rd_table[RD_TURNS_DIR].name, turn,
		     rd_table[RD_TOOL_CALLS_DIR].name, call, rd_table[e].name);
}

/* A device name as a path component. */
static int
device_slug(const char *in, char *out, size_t n)
{
	size_t	j = 0;

	for (size_t i = 0; in[i] != '\0'; i++) {
		char c = in[i];

		if (j + 1 >= n)
			return -KB_ETOOBIG;
		out[j++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || c == '-' || c == '.' ? c : '_';
	}
	out[j] = '\0';
	return component_ok(out) ? 0 : -KB_EINVAL;
}

int
rd_baseline_dir(char *out, size_t n, const char *run_dir, const char *device_name)
{
	char	slug[256];
	int	rc;

	if (device_name == NULL)
		return fail(out, n, -KB_EINVAL);
	if ((rc = device_slug(device_name, slug, sizeof(slug))) < 0)
		return fail(out, n, rc);
	return rd_run_key(out, n, run_dir, RD_BASELINES_DIR, slug);
}

int
rd_baseline_file(char *out, size_t n, const char *run_dir, const char *device_name,
		 const char *problem_key, enum rd_entry e)
{
	size_t	len;
	int	rc;

	if (!of_level(e, RD_LEVEL_BASELINE) || !component_ok(problem_key))
		return fail(out, n, -KB_EINVAL);
	if ((rc = rd_baseline_dir(out, n, run_dir, device_name)) < 0)
		return rc;
	len = strlen(out);	/* then "/<problem key><suffix>" */
	if (build(out + len, n - len, "", "%s%s", problem_key, rd_table[e].name) < 0)
		return fail(out, n, -KB_ETOOBIG);
	return 0;
}

int
rd_redteam_file(char *out, size_t n, const char *run_dir, enum rd_entry e)
{
	if (!of_level(e, RD_LEVEL_REDTEAM))
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s", rd_table[RD_REDTEAM_DIR].name, rd_table[e].name);
}

int
rd_finding_dir(char *out, size_t n, const char *run_dir, const char *task_id, int turn)
{
	if (!component_ok(task_id) || turn < 1)
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s_t%d", rd_table[RD_REDTEAM_DIR].name, task_id, turn);
}

int
rd_finding_file(char *out, size_t n, const char *run_dir, const char *task_id, int turn,
		enum rd_entry e)
{
	if (!of_level(e, RD_LEVEL_FINDING) || !component_ok(task_id) || turn < 1)
		return fail(out, n, -KB_EINVAL);
	return build(out, n, run_dir, "%s/%s_t%d/%s", rd_table[RD_REDTEAM_DIR].name, task_id,
		     turn, rd_table[e].name);
}

/* A count of a record, or 0 when it is not a plausible one: sums over a log must not
 * overflow, whatever the log holds. */
int
rd_node_named(const json_t *data, const char *key, int node, int none)
{
	json_t	*v = json_object_get(data, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 &&
	       json_integer_value(v) < node ? (int)json_integer_value(v) : none;
}

static long
plausible_count(const json_t *d, const char *key)
{
	json_t	*v = json_object_get(d, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 &&
	       json_integer_value(v) <= INT_MAX ? (long)json_integer_value(v) : 0;
}

void
rd_spend_add(struct rd_spend *s, const char *from, const json_t *data)
{
	json_t	*v, *lease;
	double	 held;

	if (strcmp(from, "GENERATE") == 0 && json_is_integer(json_object_get(data, "attempts"))) {
		s->requests += plausible_count(data, "attempts");
		s->tokens += plausible_count(data, "prompt_tokens") +
			     plausible_count(data, "completion_tokens");
		if (json_is_number(v = json_object_get(data, "cost_usd")) &&
		    json_number_value(v) >= 0 && json_number_value(v) < 1e9)
			s->cost_usd += json_number_value(v);
		return;
	}
	if (strcmp(from, "EXECUTE") != 0 && strcmp(from, "PROFILE") != 0)
		return;
	lease = json_object_get(data, "lease");
	v = json_object_get(lease, "class");
	if (!json_is_string(v) || strcmp(json_string_value(v), "exec") != 0 ||
	    !json_is_integer(json_object_get(lease, "acquired_ms")) ||
	    !json_is_integer(json_object_get(lease, "released_ms")))
		return;
	held = (double)(json_integer_value(json_object_get(lease, "released_ms")) -
			json_integer_value(json_object_get(lease, "acquired_ms"))) / 1000.0;
	if (held > 0 && held < 1e7)
		s->gpu_s += held;
}

double
rd_spend_get(const struct rd_spend *s, const char *measure)
{
	if (strcmp(measure, "requests") == 0)
		return (double)s->requests;
	if (strcmp(measure, "tokens") == 0)
		return (double)s->tokens;
	if (strcmp(measure, "cost_usd") == 0)
		return s->cost_usd;
	if (strcmp(measure, "gpu_s") == 0)
		return s->gpu_s;
	return -1;
}
