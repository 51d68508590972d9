/* runmodel.c: one run directory read back as a JSON model — the report's tally, each
 * task's summary, one row per task and turn, its transitions and the slot leases — which
 * report --csv, the SVG plots, the HTML page and the live viewer all draw from. Read-only:
 * the trajectories are the truth, nothing else is opened here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "base/banned.h"

/* The columns of a turn row, in order: the keys of the model's rows and the header of
 * report --csv (docs/reports.md lists them from here). A value not recorded is empty. */
const struct rpt_column rpt_turn_columns[] = {
	{ "run", "the run's name" },
	{ "task", "task id" },
	{ "level", "problem level" },
	{ "problem", "problem key" },
	{ "turn", "turn number, from 1" },
	{ "status", "the runner's status (empty while the turn is under way)" },
	{ "verdict", "correct, incorrect, rejected or suspect" },
	{ "reasons", "the verdict's rules, separated by ';'" },
	{ "compiled", "whether the kernel built" },
	{ "correct", "whether the kernel's outputs matched" },
	{ "speedup", "reference time over kernel time" },
	{ "speedup_ci95_lo", "lower end of the speedup's 95% interval" },
	{ "speedup_ci95_hi", "upper end of the speedup's 95% interval" },
	{ "runtime_ms", "the kernel's runtime" },
	{ "ref_runtime_ms", "the reference's runtime" },
	{ "generate_wait_ms", "waiting for an LLM slot" },
	{ "generate_hold_ms", "holding the LLM slot" },
	{ "precompile_wait_ms", "waiting for a compile slot" },
	{ "precompile_hold_ms", "holding the compile slot" },
	{ "execute_wait_ms", "waiting for a GPU (or CPU) slot to execute" },
	{ "execute_hold_ms", "holding it" },
	{ "profile_wait_ms", "waiting for a GPU slot to profile" },
	{ "profile_hold_ms", "holding it" },
	{ "llm_requests", "model requests, retries included" },
	{ "prompt_tokens", "prompt tokens" },
	{ "completion_tokens", "completion tokens" },
	{ "reasoning_tokens", "of the completion tokens, reasoning (where the server says)" },
	{ "cost_usd", "the turn's model cost in USD (priced runs: llm.price_*_per_mtok)" },
	{ "parent", "the search node this turn refined (0: the problem alone; docs/search.md)" },
	{ "spent_requests", "the task's LLM requests up to this turn, included (refinement.budget)" },
	{ "spent_tokens", "the task's prompt and completion tokens up to this turn" },
	{ "spent_gpu_s", "the task's execution-slot seconds up to this turn" },
	{ NULL, NULL },
};

#define MODEL_MAX_TURN		256	/* as rpt_summary's best_at_turn */
#define MODEL_MAX_RECORDS	20000	/* per task: the timeline shows no more */
#define MODEL_MAX_LEASES	200000	/* per run */
#define LEASE_MS_MAX		(INT64_C(1) << 50)

struct reading {
	const struct rpt_run	*run;
	const struct kb_task	*task;
	json_t			*rows;		/* turn k at index k-1 */
	json_t			*records;
	json_t			*leases;	/* the run's, shared by its tasks */
	const struct rpt_summary *sum;	/* the task's, read in the same pass */
};

static json_t *
row_for(struct reading *rd, int turn)
{
	while ((int)json_array_size(rd->rows) < turn) {
		json_t	*row = json_object();
		int	 k = (int)json_array_size(rd->rows) + 1;

		for (const struct rpt_column *c = rpt_turn_columns; c->name != NULL; c++)
			json_object_set_new(row, c->name, json_null());
		json_object_set_new(row, "run", json_string(rd->run->cfg->name));
		json_object_set_new(row, "task", json_string(rd->task->id));
		json_object_set_new(row, "level", json_integer(rd->task->level));
		json_object_set_new(row, "problem", json_string(rd->task->problem_key));
		json_object_set_new(row, "turn", json_integer(k));
		json_object_set_new(row, "artifacts", json_object());
		json_array_append_new(rd->rows, row);
	}
	return json_array_get(rd->rows, (size_t)turn - 1);
}

static void
add_int(json_t *row, const char *key, json_int_t v)
{
	json_object_set_new(row, key, json_integer(json_integer_value(json_object_get(row, key)) + v));
}

/* A relative path inside the task's directory, as the worker writes them; anything else
 * is not shown. */
static bool
artifact_path_ok(const char *p)
{
	return p != NULL && p[0] != '\0' && p[0] != '/' && strstr(p, "..") == NULL &&
	       strlen(p) < 512;
}

static void
copy_if(json_t *row, const char *key, json_t *d, bool (*is)(const json_t *))
{
	json_t	*v = json_object_get(d, key);

	if (v != NULL && is(v))
		json_object_set(row, key, v);
}

static bool is_number(const json_t *v) { return json_is_number(v); }
static bool is_string(const json_t *v) { return json_is_string(v); }
static bool is_bool(const json_t *v) { return json_is_boolean(v); }

/* The FEEDBACK record of a turn carries its outcome. */
static void
take_outcome(json_t *row, json_t *d)
{
	json_t	*ci = json_object_get(d, "speedup_ci95"), *r;
	char	 reasons[1024] = "";
	size_t	 i, len;

	copy_if(row, "status", d, is_string);
	copy_if(row, "verdict", d, is_string);
	copy_if(row, "compiled", d, is_bool);
	copy_if(row, "correct", d, is_bool);
	copy_if(row, "speedup", d, is_number);
	copy_if(row, "runtime_ms", d, is_number);
	copy_if(row, "ref_runtime_ms", d, is_number);
	if (json_array_size(ci) == 2 && json_is_number(json_array_get(ci, 0)) &&
	    json_is_number(json_array_get(ci, 1))) {
		json_object_set(row, "speedup_ci95_lo", json_array_get(ci, 0));
		json_object_set(row, "speedup_ci95_hi", json_array_get(ci, 1));
	}
	json_array_foreach(json_object_get(d, "reasons"), i, r) {
		len = strlen(reasons);
		if (json_is_string(r))
			snprintf(reasons + len, sizeof(reasons) - len, "%s%s", len > 0 ? ";" : "",
				 json_string_value(r));
	}
	if (json_is_array(json_object_get(d, "reasons")))
		json_object_set_new(row, "reasons", json_string(reasons));
}

/* The lease record of a step (views.c's stage times read the same one): its wait and
 * hold, or false for a step that took no slot or a damaged record. */
static bool
lease_of(json_t *d, int64_t *wait, int64_t *acq, int64_t *rel)
{
	json_t	*lease = json_object_get(d, "lease");
	json_t	*w = json_object_get(lease, "wait_ms");
	json_t	*a = json_object_get(lease, "acquired_ms");
	json_t	*r = json_object_get(lease, "released_ms");

	if (!json_is_integer(w) || !json_is_integer(a) || !json_is_integer(r))
		return false;
	*wait = json_integer_value(w);
	*acq = json_integer_value(a);
	*rel = json_integer_value(r);
	return *wait >= 0 && *wait <= LEASE_MS_MAX && *acq >= 0 && *rel >= *acq &&
	       *rel - *acq <= LEASE_MS_MAX;
}

static int
read_record(const struct kb_tlog_rec *rec, void *arg)
{
	struct reading	*rd = arg;
	json_t		*d = rec->data, *row = NULL, *v, *entry;
	const char	*key;
	int64_t		 wait = 0, acq = 0, rel = 0;
	bool		 leased = lease_of(d, &wait, &acq, &rel);
	bool		 start = strcmp(rec->event, "start") == 0;
	bool		 tool_call = strcmp(rec->event, "tool_call") == 0;

	if (json_array_size(rd->records) < MODEL_MAX_RECORDS) {
		entry = json_pack("{s:I, s:s, s:i, s:s, s:s, s:s}", "seq", (json_int_t)rec->seq,
				  "ts", rec->ts, "turn", rec->turn, "from", rec->from, "event",
				  rec->event, "to", rec->to);
		if (entry != NULL && leased)
			json_object_set_new(entry, "lease", json_pack("{s:s?, s:I, s:I}", "class",
				json_string_value(json_object_get(json_object_get(d, "lease"),
								  "class")),
				"wait_ms", (json_int_t)wait, "hold_ms", (json_int_t)(rel - acq)));
		if (entry != NULL && json_is_string(json_object_get(d, "reason")))
			json_object_set(entry, "reason", json_object_get(d, "reason"));
		json_array_append_new(rd->records, entry);
	}
	if (rec->turn >= 1 && rec->turn <= MODEL_MAX_TURN)
		row = row_for(rd, rec->turn);
	if (row == NULL)
		return 0;
	json_object_foreach(d, key, v) {
		const char *path = json_string_value(json_object_get(v, "path"));

		if (json_is_object(v) && json_is_string(json_object_get(v, "sha256")) &&
		    artifact_path_ok(path))
			json_object_set_new(json_object_get(row, "artifacts"), key, json_string(path));
	}
	/* A node's parent as soon as its GENERATE names it, so that a node under way sits
	 * where it grows in the search tree (html.c); its FEEDBACK says it again. */
	if (strcmp(rec->from, rpt_state_name(RPT_ST_GENERATE)) == 0 && !tool_call &&
	    json_is_integer(v = json_object_get(d, RD_NODE_PARENT)))
		json_object_set(row, "parent", v);
	if (strcmp(rec->from, rpt_state_name(RPT_ST_GENERATE)) == 0 && json_is_integer(json_object_get(d, "attempts"))) {
		static const char *const counts[][2] = {
			{ "attempts", "llm_requests" },
			{ "prompt_tokens", "prompt_tokens" },
			{ "completion_tokens", "completion_tokens" },
			{ "reasoning_tokens", "reasoning_tokens" },
		};

		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
			v = json_object_get(d, counts[i][0]);
			if (json_is_integer(v) && json_integer_value(v) >= 0 &&
			    json_integer_value(v) <= INT32_MAX)
				add_int(row, counts[i][1], json_integer_value(v));
		}
		v = json_object_get(d, "cost_usd");
		if (json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) < 1e9)
			json_object_set_new(row, "cost_usd", json_real(json_number_value(v) +
			    json_number_value(json_object_get(row, "cost_usd"))));
	}
	if (tool_call) {
		/* An agent's tool call: a node of the turn, shown beside it (html.c). */
		json_t	*calls = json_object_get(row, "tool_calls");
		json_t	*arts = json_object_get(d, "artifacts"), *call;

		if (calls == NULL)
			json_object_set_new(row, "tool_calls", calls = json_array());
		call = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "parent",
				 json_object_get(d, RD_NODE_PARENT), "call",
				 json_object_get(d, RD_NODE_CALL),
				 "verdict", json_object_get(d, "verdict"), "status",
				 json_object_get(d, "status"), "speedup", json_object_get(d, "speedup"));
		json_object_foreach(arts, key, v) {
			const char *path = json_string_value(json_object_get(v, "path"));

			if (call != NULL && artifact_path_ok(path))
				json_object_set_new(call, key, json_string(path));
		}
		if (call != NULL && json_array_size(calls) < MODEL_MAX_TURN)
			json_array_append_new(calls, call);
		else
			json_decref(call);
	}
	if (leased && !start && !tool_call) {
		for (size_t i = 0; i < rpt_nstages; i++) {
			char	 name[40], lower[24];
			size_t	 j;

			if (!rpt_stages[i].slot ||
			    strcmp(rec->from, rpt_state_name(rpt_stages[i].state)) != 0)
				continue;
			for (j = 0; rec->from[j] != '\0' && j + 1 < sizeof(lower); j++)
				lower[j] = (char)(rec->from[j] - 'A' + 'a');
			lower[j] = '\0';
			snprintf(name, sizeof(name), "%s_wait_ms", lower);
			add_int(row, name, wait);
			snprintf(name, sizeof(name), "%s_hold_ms", lower);
			add_int(row, name, rel - acq);
		}
	}
	if (leased && !start) {
		if (json_array_size(rd->leases) < MODEL_MAX_LEASES)
			json_array_append_new(rd->leases, json_pack("{s:s?, s:O?, s:s, s:i, s:I, s:I}",
				"class", json_string_value(json_object_get(json_object_get(d, "lease"),
									    "class")),
				"slot", json_object_get(json_object_get(d, "lease"), "slot"),
				"task", rd->task->id, "turn", rec->turn,
				"acquired_ms", (json_int_t)acq, "released_ms", (json_int_t)rel));
	}
	if (strcmp(rec->from, rpt_state_name(RPT_ST_FEEDBACK)) == 0) {
		take_outcome(row, d);
		/* the summary has read this record already: its spend includes the turn */
		if (json_is_integer(v = json_object_get(d, RD_NODE_PARENT)))
			json_object_set(row, "parent", v);
		json_object_set_new(row, "spent_requests", json_integer(rd->sum->spent.requests));
		json_object_set_new(row, "spent_tokens", json_integer(rd->sum->spent.tokens));
		json_object_set_new(row, "spent_gpu_s", json_real(rd->sum->spent.gpu_s));
	}
	return 0;
}

/* Each trajectory is read once: its summary (the report's tally is made of them) and
 * its rows, records and leases come from the same pass. */
json_t *
rpt_run_model(const struct rpt_run *run, const char *const *accept)
{
	json_t			*tasks = json_array(), *leases = json_array(), *model;
	struct rpt_summary	*sums = calloc((size_t)run->ntasks + 1, sizeof(*sums));

	if (sums == NULL) {
		json_decref(tasks);
		json_decref(leases);
		return NULL;
	}
	for (int i = 0; i < run->ntasks; i++) {
		struct rpt_summary	*s = &sums[i];
		struct reading		 rd = { run, &run->tasks[i], json_array(), json_array(),
						leases, s };

		rpt_summarize_with(run->dir, run->tasks[i].id, accept, s, read_record, &rd);
		json_array_append_new(tasks, json_pack("{s:s, s:i, s:s, s:s, s:i, s:i, s:o, "
			"s:s, s:s, s:o, s:o}", "id", run->tasks[i].id, "level", run->tasks[i].level,
			"problem", run->tasks[i].problem_key, "state", rpt_state_name(s->state),
			"turn", s->turn, "turns_done", s->turns_done, "best_speedup",
			s->best_speedup >= 0 ? json_real(s->best_speedup) : json_null(),
			"last_status", s->last_status, "fail_reason", s->fail_reason,
			"rows", rd.rows, "records", rd.records));
	}
	model = json_pack("{s:s, s:s, s:s, s:i, s:o, s:o, s:o}", "dir", run->dir, "name",
			  run->cfg->name, "device", run->cfg->eval.device, "turns",
			  (int)run->cfg->refinement.turns, "report",
			  rpt_report_json(run, sums, accept), "tasks", tasks, "leases", leases);
	free(sums);
	return model;
}

/* RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
static int
csv_field(struct kb_buf *out, json_t *v)
{
	char	 num[40];
	const char *s = num;

	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_string(v))
		s = json_string_value(v);
	else if (json_is_integer(v))
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(num, sizeof(num), "%.17g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(num, sizeof(num), "%s", json_is_true(v) ? "true" : "false");
	else
		return 0;
	if (strpbrk(s, ",\"\r\n") == NULL)
		return kb_buf_append(out, s, strlen(s)) < 0 ? -KB_ETOOBIG : 0;
	if (kb_buf_append(out, "\"", 1) < 0)
		return -KB_ETOOBIG;
	for (; *s; s++)
		if (kb_buf_append(out, *s == '"' ? "\"\"" : s, *s == '"' ? 2 : 1) < 0)
			return -KB_ETOOBIG;
	return kb_buf_append(out, "\"", 1) < 0 ? -KB_ETOOBIG : 0;
}

int
rpt_csv_write(json_t *models, struct kb_buf *out)
{
	size_t	 m, t, k;
	json_t	*model, *task, *row;

	/* Every append is checked: a row cut short by the cap must not pass as whole. */
	for (const struct rpt_column *c = rpt_turn_columns; c->name != NULL; c++)
		if (kb_buf_printf(out, "%s%s", c == rpt_turn_columns ? "" : ",", c->name) < 0)
			return -KB_ETOOBIG;
	if (kb_buf_append(out, "\r\n", 2) < 0)
		return -KB_ETOOBIG;
	json_array_foreach(models, m, model)
		json_array_foreach(json_object_get(model, "tasks"), t, task)
			json_array_foreach(json_object_get(task, "rows"), k, row) {
				for (const struct rpt_column *c = rpt_turn_columns; c->name != NULL;
				     c++) {
					if ((c != rpt_turn_columns &&
					     kb_buf_append(out, ",", 1) < 0) ||
					    csv_field(out, json_object_get(row, c->name)) < 0)
						return -KB_ETOOBIG;
				}
				if (kb_buf_append(out, "\r\n", 2) < 0)
					return -KB_ETOOBIG;
			}
	return 0;
}
