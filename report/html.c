/* html.c: the report page — one self-contained HTML document (inline CSS, JS and SVG, no
 * outside resource) over one run model or several: summary, plots, a sortable table of
 * tasks, and per task its timeline and every turn's artifacts, the kernel with a line
 * diff against the previous turn's. Everything from the run (model output above all) is
 * escaped; the page's script only sorts tables and, served live by `kforge view`, polls
 * for a change and swaps in the newly rendered page. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report_int.h"
#include "base/banned.h"

#define ARTIFACT_MAX	(256 * 1024)	/* bytes of one artifact shown; the rest is cut */
#define DIFF_MAX_LINES	3000		/* per side: the LCS table is their product */

/* The artifacts of a turn, in the order shown; any other the records name follows. */
static const struct {
	const char	*key, *label;
} shown_artifacts[] = {
	{ "prompt", "Prompt" },
	{ "response", "Reply" },
	{ "response_raw", "Reply as received" },
	{ "agent_stdout", "Agent transcript (stdout)" },
	{ "agent_stderr", "Agent transcript (stderr)" },
	{ "reply_refused", "Reply refused" },
	{ "kernel", "Kernel" },
	{ "static", "Static checks" },
	{ "compile", "Build result" },
	{ "compile_log", "Build output" },
	{ "execute_log", "Execution output" },
	{ "result", "Results" },
	{ "profile", "Profile" },
	{ "profile_feedback", "Profile as told to the model" },
	{ "feedback", "Feedback sent next" },
	{ "response_meta", "Reply metadata" },
	{ "env_error", "Environment error" },
};
#define NSHOWN (sizeof(shown_artifacts) / sizeof(shown_artifacts[0]))

static const char page_css[] =
	"body{font-family:sans-serif;margin:1.5em;color:#222}"
	"table{border-collapse:collapse;margin:.5em 0}"
	"td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:13px}"
	"th{background:#f0f0f0}table.sortable th{cursor:pointer}"
	"pre{background:#f7f7f7;border:1px solid #ddd;padding:6px;overflow:auto;"
	"max-height:32em;font-size:12px;white-space:pre-wrap}"
	".diff .add{background:#e6ffec;display:block}.diff .del{background:#ffebe9;display:block}"
	".diff .same{display:block;color:#555}"
	"details{margin:.3em 0}details.task>summary{font-weight:bold}"
	"details.turn{margin-left:1.5em}"
	/* the plots fill the window's width: as many columns of at least 560 px as fit
	 * (one on a narrow window), each drawing scaled to its column */
	".plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,560px),1fr));"
	"gap:8px}.plots svg{width:100%;height:auto;border:1px solid #eee;box-sizing:border-box}"
	".note{color:#666}#live{color:#080}"
	/* a task's search tree: edges, the best path heavier, nodes filled by verdict */
	".tree{display:block;margin:.4em 0}.tree .edge{stroke:#aaa;stroke-width:1.5;fill:none}"
	".tree .edge.best{stroke:#06c;stroke-width:3.5}.tree .best>circle,.tree .best>rect"
	"{stroke:#06c;stroke-width:3}.tree circle,.tree rect{stroke:#555;stroke-width:1}"
	".tree text{font-size:10px;text-anchor:middle;dominant-baseline:central;"
	"pointer-events:none}";

/* Sorting (click a header: numbers by value, text by collation, again to reverse) and,
 * when live, the polling that swaps in the page rendered anew, keeping open sections. */
static const char page_js[] =
	"(function(){\n"
	"function sortBy(th){var t=th.closest('table'),i=Array.prototype.indexOf.call("
	"th.parentNode.children,th),num=th.getAttribute('data-type')==='num',"
	"asc=th.getAttribute('data-dir')!=='asc';th.setAttribute('data-dir',asc?'asc':'desc');"
	"var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);"
	"rows.sort(function(p,q){var x=p.cells[i].getAttribute('data-v')||'',"
	"y=q.cells[i].getAttribute('data-v')||'';if(num){x=parseFloat(x);y=parseFloat(y);"
	"if(isNaN(x))x=-Infinity;if(isNaN(y))y=-Infinity;return asc?(x>y)-(x<y):(y>x)-(y<x);}"
	"return asc?x.localeCompare(y):y.localeCompare(x);});"
	"rows.forEach(function(r){b.appendChild(r);});}\n"
	"function wire(){document.querySelectorAll('table.sortable th').forEach(function(th){"
	"th.addEventListener('click',function(){sortBy(th);});});}\n"
	/* a node of a search tree opens its turn's section before the link scrolls to it */
	"document.addEventListener('click',function(e){var a=e.target.closest?"
	"e.target.closest('a.node-link'):null;if(!a)return;var d=document.getElementById("
	"a.getAttribute('href').slice(1));if(d)d.open=true;});\n"
	"wire();\n"
	"if(document.body.getAttribute('data-live')!=='1')return;\n"
	"var stamp=document.getElementById('main').getAttribute('data-stamp');\n"
	"function redraw(html){var doc=new DOMParser().parseFromString(html,'text/html'),"
	"nm=doc.getElementById('main');if(!nm)return;var open=[];"
	"document.querySelectorAll('details[open]').forEach(function(d){open.push(d.id);});"
	"document.getElementById('main').replaceWith(document.importNode(nm,true));"
	"open.forEach(function(id){var d=document.getElementById(id);if(d)d.open=true;});"
	"stamp=nm.getAttribute('data-stamp');wire();"
	"document.getElementById('live').textContent='live: updated '+new Date().toLocaleTimeString();}\n"
	/* The next look waits at least a second, and three times what the last took, so that
	 * a large run's page is not rendered back to back. */
	"function poll(){var t0=Date.now();fetch('stamp',{cache:'no-store'})"
	".then(function(r){return r.text();})"
	".then(function(s){if(s.trim()===stamp)return;return fetch('./',{cache:'no-store'})"
	".then(function(r){return r.text();}).then(redraw);})"
	".catch(function(){document.getElementById('live').textContent="
	"'live: the viewer does not answer';})"
	".then(function(){setTimeout(poll,Math.max(1000,3*(Date.now()-t0)));});}\n"
	"setTimeout(poll,1000);\n"
	"})();\n";

static void
esc(struct kb_buf *out, const char *s)
{
	rpt_xml_escape(out, s);
}

/* A JSON value as table text: strings as they are, numbers shortest, null empty. */
static void
esc_value(struct kb_buf *out, json_t *v)
{
	if (json_is_string(v))
		esc(out, json_string_value(v));
	else if (json_is_integer(v))
		kb_buf_printf(out, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		kb_buf_printf(out, "%.4g", json_real_value(v));
	else if (json_is_boolean(v))
		kb_buf_printf(out, "%s", json_is_true(v) ? "yes" : "no");
	else if (v != NULL && !json_is_null(v)) {
		char *s = json_dumps(v, JSON_COMPACT);

		esc(out, s ? s : "");
		free(s);
	}
}

/* The sort key of a cell: a number's full value, else its text. */
static void
cell(struct kb_buf *out, json_t *v)
{
	kb_buf_printf(out, "<td data-v=\"");
	if (json_is_number(v))
		kb_buf_printf(out, "%.17g", json_number_value(v));
	else
		esc_value(out, v);
	kb_buf_printf(out, "\">");
	esc_value(out, v);
	kb_buf_printf(out, "</td>");
}

/* The text of an artifact under the task's directory, at most ARTIFACT_MAX bytes, or
 * NULL. What the path resolves to, links included, must be a regular file inside the
 * task's directory: the page shows nothing from elsewhere, whatever a record names. */
static char *
read_artifact(const char *run_dir, const char *task, const char *rel, bool *cut)
{
	char		 path[PATH_MAX], real[PATH_MAX], top[PATH_MAX], task_dir[PATH_MAX];
	struct stat	 st;
	char		*buf;
	ssize_t		 n;
	size_t		 got = 0, toplen;
	int		 fd;

	*cut = false;
	if (rd_task_dir(task_dir, sizeof(task_dir), run_dir, task) < 0 ||
	    snprintf(path, sizeof(path), "%s/%s", task_dir, rel) >= (int)sizeof(path) ||
	    realpath(task_dir, top) == NULL || realpath(path, real) == NULL)
		return NULL;
	toplen = strlen(top);
	if (strncmp(real, top, toplen) != 0 || real[toplen] != '/')
		return NULL;
	if ((fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (buf = malloc(ARTIFACT_MAX + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (got < ARTIFACT_MAX && (n = read(fd, buf + got, ARTIFACT_MAX - got)) > 0)
		got += (size_t)n;
	*cut = st.st_size > (off_t)got;
	close(fd);
	buf[got] = '\0';
	/* A NUL inside would end the text early: shown as the replacement character. */
	for (size_t i = 0; i < got; i++)
		if (buf[i] == '\0')
			buf[i] = '\x01';
	return buf;
}

/* ------------------------------------------------------------------ diff */

struct lines {
	const char	**at;
	int		 *len;
	int		  n;
};

static int
split_lines(const char *s, struct lines *l)
{
	int	cap = 0;

	memset(l, 0, sizeof(*l));
	for (const char *p = s; *p;) {
		const char *nl = strchr(p, '\n');
		int	    len = nl ? (int)(nl - p) : (int)strlen(p);

		if (l->n == DIFF_MAX_LINES)
			return -1;
		if (l->n == cap) {
			cap = cap ? 2 * cap : 64;
			l->at = realloc(l->at, (size_t)cap * sizeof(*l->at));
			l->len = realloc(l->len, (size_t)cap * sizeof(*l->len));
			if (l->at == NULL || l->len == NULL)
				return -1;
		}
		l->at[l->n] = p;
		l->len[l->n++] = len;
		p += len + (nl ? 1 : 0);
	}
	return 0;
}

static bool
same_line(const struct lines *a, int i, const struct lines *b, int j)
{
	return a->len[i] == b->len[j] && memcmp(a->at[i], b->at[j], (size_t)a->len[i]) == 0;
}

static void
diff_line(struct kb_buf *out, const char *cls, char mark, const char *s, int len)
{
	char	*line = kb_asprintf("%c %.*s", mark, len, s);

	kb_buf_printf(out, "<span class=\"%s\">", cls);
	esc(out, line);
	kb_buf_printf(out, "</span>");
	free(line);
}

void
rpt_html_diff(const char *old, const char *new, struct kb_buf *out)
{
	struct lines	 a, b;
	uint16_t	*lcs = NULL;	/* lcs[i][j]: of a[i..] and b[j..] */
	int		 i, j, added = 0, removed = 0;
	struct kb_buf	 body = KB_BUF_INIT(0);

	if (split_lines(old, &a) < 0 || split_lines(new, &b) < 0 ||
	    (lcs = calloc((size_t)(a.n + 1) * (size_t)(b.n + 1), sizeof(*lcs))) == NULL) {
		kb_buf_printf(out, "<p class=\"note\">too long to diff (over %d lines)</p>",
			      DIFF_MAX_LINES);
		goto out;
	}
#define LCS(x, y) lcs[(size_t)(x) * (size_t)(b.n + 1) + (size_t)(y)]
	for (i = a.n - 1; i >= 0; i--)
		for (j = b.n - 1; j >= 0; j--)
			LCS(i, j) = same_line(&a, i, &b, j) ? LCS(i + 1, j + 1) + 1 :
				    LCS(i + 1, j) >= LCS(i, j + 1) ? LCS(i + 1, j) : LCS(i, j + 1);
	for (i = 0, j = 0; i < a.n || j < b.n;) {
		if (i < a.n && j < b.n && same_line(&a, i, &b, j)) {
			diff_line(&body, "same", ' ', a.at[i], a.len[i]);
			i++;
			j++;
		} else if (j < b.n && (i == a.n || LCS(i, j + 1) >= LCS(i + 1, j))) {
			diff_line(&body, "add", '+', b.at[j], b.len[j]);
			j++;
			added++;
		} else {
			diff_line(&body, "del", '-', a.at[i], a.len[i]);
			i++;
			removed++;
		}
	}
#undef LCS
	kb_buf_printf(out, "<pre class=\"diff\" data-added=\"%d\" data-removed=\"%d\">", added,
		      removed);
	if (body.len > 0)
		kb_buf_append(out, body.p, body.len);
	kb_buf_printf(out, "</pre>");
out:
	kb_buf_clear(&body);
	free(lcs);
	free(a.at);
	free(a.len);
	free(b.at);
	free(b.len);
}

/* --------------------------------------------------------------- summary */

static void
summary_table(struct kb_buf *out, json_t *report)
{
	const char	*level, *key;
	json_t		*tally, *v;

	kb_buf_printf(out, "<table class=\"summary\"><thead><tr><th>level</th><th>tasks</th>"
		      "<th>compiled</th><th>fast_0</th>");
	json_object_foreach(json_object_get(json_object_get(report, "overall"), "fast_p"), key, v) {
		kb_buf_printf(out, "<th>fast_");
		esc(out, key);
		kb_buf_printf(out, "</th>");
	}
	kb_buf_printf(out, "<th>geomean speedup (correct)</th></tr></thead><tbody>");
	for (int pass = 0; pass < 2; pass++) {
		json_t *levels = pass == 0 ? json_object_get(report, "levels") : NULL;

		if (pass == 1) {
			levels = json_pack("{s:O}", "overall", json_object_get(report, "overall"));
			if (levels == NULL)
				break;
		}
		json_object_foreach(levels, level, tally) {
			kb_buf_printf(out, "<tr><td>%s", pass == 0 ? "L" : "");
			esc(out, level);
			kb_buf_printf(out, "</td><td>%lld</td><td>%.1f%%</td><td>%.1f%%</td>",
				      (long long)json_integer_value(json_object_get(tally, "tasks")),
				      100 * json_number_value(json_object_get(tally, "compiled")),
				      100 * json_number_value(json_object_get(tally, "fast_0")));
			json_object_foreach(json_object_get(tally, "fast_p"), key, v)
				kb_buf_printf(out, "<td>%.1f%%</td>", 100 * json_number_value(v));
			kb_buf_printf(out, "<td>");
			esc_value(out, json_object_get(tally, "geomean_speedup_correct"));
			kb_buf_printf(out, "</td></tr>");
		}
		if (pass == 1)
			json_decref(levels);
	}
	kb_buf_printf(out, "</tbody></table>\n<p>last status of each task:");
	json_object_foreach(json_object_get(json_object_get(report, "overall"), "last_status"),
			    key, v) {
		kb_buf_printf(out, " ");
		esc(out, key);
		kb_buf_printf(out, " %lld;", (long long)json_integer_value(v));
	}
	kb_buf_printf(out, "</p>\n");
}

static void
flagged_and_failed(struct kb_buf *out, json_t *report)
{
	json_t	*flagged = json_object_get(json_object_get(report, "verdicts"), "flagged"), *f, *r;
	size_t	 i, j;

	if (json_array_size(flagged) > 0) {
		kb_buf_printf(out, "<p>turns that do not count (rejected or suspect):</p><ul>");
		json_array_foreach(flagged, i, f) {
			kb_buf_printf(out, "<li>");
			esc(out, json_string_value(json_object_get(f, "id")));
			kb_buf_printf(out, " turn %lld: ",
				      (long long)json_integer_value(json_object_get(f, "turn")));
			esc(out, json_string_value(json_object_get(f, "verdict")));
			json_array_foreach(json_object_get(f, "reasons"), j, r) {
				kb_buf_printf(out, j ? ", " : ": ");
				esc(out, json_string_value(r));
			}
			kb_buf_printf(out, "</li>");
		}
		kb_buf_printf(out, "</ul>\n");
	}
	if (json_array_size(json_object_get(report, "failed")) > 0) {
		kb_buf_printf(out, "<p>failed tasks:</p><ul>");
		json_array_foreach(json_object_get(report, "failed"), i, f) {
			kb_buf_printf(out, "<li>");
			esc(out, json_string_value(json_object_get(f, "id")));
			kb_buf_printf(out, ": ");
			esc(out, json_string_value(json_object_get(f, "reason")));
			kb_buf_printf(out, "</li>");
		}
		kb_buf_printf(out, "</ul>\n");
	}
}

/* ----------------------------------------------------------------- tasks */

static const struct {
	const char	*key, *label;
	bool		 numeric;
} task_columns[] = {
	{ "id", "task", false },
	{ "level", "level", true },
	{ "problem", "problem", false },
	{ "state", "state", false },
	{ "turns_done", "turns done", true },
	{ "best_speedup", "best speedup", true },
	{ "last_status", "last status", false },
	{ "fail_reason", "failure", false },
};
#define NTASKCOLS (sizeof(task_columns) / sizeof(task_columns[0]))

static void
task_table(struct kb_buf *out, json_t *tasks, size_t m)
{
	size_t	 t;
	json_t	*task;

	kb_buf_printf(out, "<table class=\"sortable tasks\" id=\"tasks-%zu\"><thead><tr>", m);
	for (size_t c = 0; c < NTASKCOLS; c++)
		kb_buf_printf(out, "<th data-type=\"%s\">%s</th>",
			      task_columns[c].numeric ? "num" : "text", task_columns[c].label);
	kb_buf_printf(out, "</tr></thead><tbody>\n");
	json_array_foreach(tasks, t, task) {
		kb_buf_printf(out, "<tr class=\"task-row\" data-task=\"");
		esc(out, json_string_value(json_object_get(task, "id")));
		kb_buf_printf(out, "\">");
		for (size_t c = 0; c < NTASKCOLS; c++) {
			if (c == 0) {
				kb_buf_printf(out, "<td data-v=\"");
				esc(out, json_string_value(json_object_get(task, "id")));
				kb_buf_printf(out, "\"><a href=\"#task-%zu-%zu\">", m, t);
				esc(out, json_string_value(json_object_get(task, "id")));
				kb_buf_printf(out, "</a></td>");
			} else {
				cell(out, json_object_get(task, task_columns[c].key));
			}
		}
		kb_buf_printf(out, "</tr>\n");
	}
	kb_buf_printf(out, "</tbody></table>\n");
}

static void
timeline(struct kb_buf *out, json_t *records)
{
	size_t	 i;
	json_t	*r;

	kb_buf_printf(out, "<details class=\"timeline\"><summary>timeline (%zu transitions)"
		      "</summary><table><thead><tr><th>seq</th><th>time</th><th>turn</th>"
		      "<th>from</th><th>event</th><th>to</th><th>slot wait ms</th>"
		      "<th>slot hold ms</th><th>reason</th></tr></thead><tbody>",
		      json_array_size(records));
	json_array_foreach(records, i, r) {
		json_t *lease = json_object_get(r, "lease");

		kb_buf_printf(out, "<tr>");
		cell(out, json_object_get(r, "seq"));
		cell(out, json_object_get(r, "ts"));
		cell(out, json_object_get(r, "turn"));
		cell(out, json_object_get(r, "from"));
		cell(out, json_object_get(r, "event"));
		cell(out, json_object_get(r, "to"));
		cell(out, json_object_get(lease, "wait_ms"));
		cell(out, json_object_get(lease, "hold_ms"));
		cell(out, json_object_get(r, "reason"));
		kb_buf_printf(out, "</tr>");
	}
	kb_buf_printf(out, "</tbody></table></details>\n");
}

static void
artifact(struct kb_buf *out, const char *run_dir, const char *task, const char *key,
	 const char *label, const char *rel, bool live)
{
	bool	 cut;
	char	 task_rel[PATH_MAX];
	char	*text = read_artifact(run_dir, task, rel, &cut);

	kb_buf_printf(out, "<h4>");
	esc(out, label);
	kb_buf_printf(out, " <span class=\"note\">");
	esc(out, rel);
	kb_buf_printf(out, "</span>");
	if (live && rd_task_dir(task_rel, sizeof(task_rel), NULL, task) == 0) {
		kb_buf_printf(out, " <a href=\"files/");
		esc(out, task_rel);
		kb_buf_printf(out, "/");
		esc(out, rel);
		kb_buf_printf(out, "\">raw</a>");
	}
	kb_buf_printf(out, "</h4><pre class=\"artifact ");
	esc(out, key);
	kb_buf_printf(out, "\">");
	if (text == NULL)
		kb_buf_printf(out, "(cannot be read)");
	else
		esc(out, text);
	kb_buf_printf(out, "</pre>");
	if (cut)
		kb_buf_printf(out, "<p class=\"note\">cut at %d KiB</p>", ARTIFACT_MAX / 1024);
	free(text);
}

/* An agent's tool calls in the turn (llm.provider agent): each a node of the turn, with
 * its verdict and the kernel, result and output it was judged by. */
static void
tool_calls_section(struct kb_buf *out, const char *run_dir, const char *id, json_t *calls,
		   bool live)
{
	static const struct {
		const char	*key, *class, *label;
	} files[] = { { "kernel", "tool_kernel", "kernel" }, { "result", "tool_result", "result" },
		      { "log", "tool_log", "output" } };
	size_t	 i;
	json_t	*c;

	if (json_array_size(calls) == 0)
		return;
	kb_buf_printf(out, "<h4>Agent tool calls</h4><table class=\"tool-calls\"><thead><tr>"
		      "<th>call</th><th>under node</th><th>verdict</th><th>status</th>"
		      "<th>speedup</th></tr></thead><tbody>");
	json_array_foreach(calls, i, c) {
		kb_buf_printf(out, "<tr>");
		cell(out, json_object_get(c, "call"));
		cell(out, json_object_get(c, "parent"));
		cell(out, json_object_get(c, "verdict"));
		cell(out, json_object_get(c, "status"));
		cell(out, json_object_get(c, "speedup"));
		kb_buf_printf(out, "</tr>");
	}
	kb_buf_printf(out, "</tbody></table>\n");
	json_array_foreach(calls, i, c) {
		for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
			const char	*rel = json_string_value(json_object_get(c, files[f].key));
			char		*label;

			if (rel == NULL)
				continue;
			label = kb_asprintf("Tool call %lld: %s",
					    (long long)json_integer_value(json_object_get(c, "call")),
					    files[f].label);
			artifact(out, run_dir, id, files[f].class, label, rel, live);
			free(label);
		}
	}
}

/* ------------------------------------------------------------ a task's search tree */

#define TREE_NODES_MAX	(256 + 256)	/* turns, and tool calls drawn as leaves */
#define TREE_DX		56		/* px from a depth to the next */
#define TREE_DY		24		/* px from a row of leaves to the next */
#define TREE_R		9

struct tree_node {
	int		 parent;	/* index; -1 for the problem itself (index 0) */
	int		 depth, first, last, next;	/* children: first..next chain */
	double		 y;
	bool		 best, call;
	long long	 turn, callno;
	json_t		*row;		/* the turn's, a call's own object */
};

static const struct {
	const char	*verdict, *fill;
} verdict_fill[] = {
	{ RD_VERDICT_CORRECT, "#4b4" },
	{ RD_VERDICT_SUSPECT, "#f2a93b" },
	{ RD_VERDICT_REJECTED, "#aaa" },
	{ RD_VERDICT_INCORRECT, "#e55" },
};

static const char *
node_fill(json_t *row)
{
	const char *v = json_string_value(json_object_get(row, "verdict"));

	for (size_t i = 0; v != NULL && i < sizeof(verdict_fill) / sizeof(verdict_fill[0]); i++)
		if (strcmp(verdict_fill[i].verdict, v) == 0)
			return verdict_fill[i].fill;
	return "#fff";	/* under way, or no verdict */
}

static void
tree_adopt(struct tree_node *n, int child)
{
	struct tree_node *p = &n[n[child].parent];

	n[child].depth = p->depth + 1;
	n[child].next = -1;
	if (p->first < 0)
		p->first = child;
	else
		n[p->last].next = child;
	p->last = child;
}

/* Leaves one row each in the order they grew, a parent level with its middle child. */
static void
tree_place(struct tree_node *n, int i, int *rows)
{
	if (n[i].first < 0) {
		n[i].y = (*rows)++;
		return;
	}
	for (int c = n[i].first; c >= 0; c = n[c].next)
		tree_place(n, c, rows);
	n[i].y = (n[n[i].first].y + n[n[i].last].y) / 2;
}

/* The search over a task's turns as an SVG: each node a turn (its parent the record's,
 * a chain's the turn before), an agent's tool calls small squares under their turn,
 * filled by verdict; the path from the problem to the best correct node drawn heavier;
 * each node a link to its turn's section (prompt, kernel, results). */
static void
search_tree(struct kb_buf *out, json_t *task, size_t m, size_t t)
{
	struct tree_node	*n = calloc(TREE_NODES_MAX + 1, sizeof(*n));
	json_t			*rows = json_object_get(task, "rows"), *row, *call;
	size_t			 k, c;
	int			 count = 1, rows_used = 0, best = -1, maxdepth = 0;
	double			 best_speedup = -1;

	if (n == NULL)
		return;		/* the page without this task's tree */

	memset(&n[0], 0, sizeof(n[0]));
	n[0].parent = -1;
	n[0].first = n[0].last = n[0].next = -1;
	json_array_foreach(rows, k, row) {
		json_t		*s;
		long long	 turn = (long long)k + 1;

		if (count > TREE_NODES_MAX / 2)
			break;
		memset(&n[count], 0, sizeof(n[count]));
		n[count].first = n[count].last = -1;
		n[count].turn = turn;
		n[count].row = row;
		n[count].parent = rd_node_named(row, RD_NODE_PARENT, (int)turn, (int)turn - 1);
		tree_adopt(n, count);
		s = json_object_get(row, "speedup");
		if (json_is_number(s) && json_number_value(s) > best_speedup &&
		    strcmp(json_string_value(json_object_get(row, "verdict")) ?: "",
			   RD_VERDICT_CORRECT) == 0) {
			best_speedup = json_number_value(s);
			best = count;
		}
		count++;
	}
	/* the tool calls after every turn, so that a turn's index stays its number */
	for (int i = 1, turns = count; i < turns; i++)
		json_array_foreach(json_object_get(n[i].row, "tool_calls"), c, call) {
			if (count >= TREE_NODES_MAX)
				break;
			memset(&n[count], 0, sizeof(n[count]));
			n[count].first = n[count].last = -1;
			n[count].parent = i;
			n[count].call = true;
			n[count].turn = n[i].turn;
			n[count].callno = json_integer_value(json_object_get(call, "call"));
			n[count].row = call;
			tree_adopt(n, count);
			count++;
		}
	for (int i = best; i > 0; i = n[i].parent)
		n[i].best = true;
	tree_place(n, 0, &rows_used);
	for (int i = 0; i < count; i++)
		maxdepth = n[i].depth > maxdepth ? n[i].depth : maxdepth;
	kb_buf_printf(out, "<svg class=\"tree\" xmlns=\"http://www.w3.org/2000/svg\" "
		      "width=\"%d\" height=\"%d\" data-nodes=\"%d\" data-best=\"%lld\">"
		      "<title>search tree: %d node(s)</title>", (maxdepth + 1) * TREE_DX + 2 *
		      TREE_R + 4, (rows_used > 0 ? rows_used : 1) * TREE_DY + 4, count - 1,
		      best > 0 ? n[best].turn : 0LL, count - 1);
#define TX(i) (TREE_R + 2 + n[i].depth * TREE_DX)
#define TY(i) (TREE_DY / 2 + 2 + n[i].y * TREE_DY)
	for (int i = 1; i < count; i++)
		kb_buf_printf(out, "<line class=\"edge%s\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
			      "y2=\"%.1f\"/>", n[i].best ? " best" : "", TX(n[i].parent),
			      TY(n[i].parent), TX(i), TY(i));
	kb_buf_printf(out, "<g class=\"node root\"><rect x=\"%d\" y=\"%.1f\" width=\"%d\" "
		      "height=\"%d\" fill=\"#ddd\"/><text x=\"%d\" y=\"%.1f\">P</text>"
		      "<title>the problem</title></g>", TX(0) - TREE_R, TY(0) - TREE_R, 2 * TREE_R,
		      2 * TREE_R, TX(0), TY(0));
	for (int i = 1; i < count; i++) {
		json_t	*s = json_object_get(n[i].row, "speedup");

		kb_buf_printf(out, "<a href=\"#turn-%zu-%zu-%lld\" class=\"node-link%s\" "
			      "data-node=\"%lld\" data-parent=\"%lld\"%s>", m, t, n[i].turn,
			      n[i].best ? " best" : "", n[i].call ? 0LL : n[i].turn,
			      n[i].call ? n[i].turn : n[n[i].parent].turn,
			      n[i].call ? " data-call=\"1\"" : "");
		if (n[i].call)
			kb_buf_printf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
				      "fill=\"%s\"/><text x=\"%d\" y=\"%.1f\">c%lld</text>",
				      TX(i) - TREE_R * 0.7, TY(i) - TREE_R * 0.7, (int)(TREE_R * 1.4),
				      (int)(TREE_R * 1.4), node_fill(n[i].row), TX(i), TY(i),
				      n[i].callno);
		else
			kb_buf_printf(out, "<circle cx=\"%d\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"/>"
				      "<text x=\"%d\" y=\"%.1f\">%lld</text>", TX(i), TY(i), TREE_R,
				      node_fill(n[i].row), TX(i), TY(i), n[i].turn);
		kb_buf_printf(out, "<title>");
		if (n[i].call)
			kb_buf_printf(out, "tool call %lld of turn %lld", n[i].callno, n[i].turn);
		else
			kb_buf_printf(out, "turn %lld", n[i].turn);
		kb_buf_printf(out, ": ");
		esc(out, json_string_value(json_object_get(n[i].row, "verdict")) ?: "under way");
		if (json_is_number(s))
			kb_buf_printf(out, ", speedup %.3gx", json_number_value(s));
		kb_buf_printf(out, "</title></a>");
	}
#undef TX
#undef TY
	kb_buf_printf(out, "</svg>\n");
	free(n);
}

static void
turn_section(struct kb_buf *out, const char *run_dir, json_t *task, json_t *row, size_t m,
	     size_t t, const char *prev_kernel_rel, long long prev_turn, bool live)
{
	const char	*id = json_string_value(json_object_get(task, "id"));
	json_t		*arts = json_object_get(row, "artifacts"), *v;
	long long	 k = json_integer_value(json_object_get(row, "turn"));
	const char	*key;

	kb_buf_printf(out, "<details class=\"turn\" id=\"turn-%zu-%zu-%lld\" data-turn=\"%lld\">"
		      "<summary>turn %lld: ", m, t, k, k, k);
	esc(out, rpt_turn_category(row));
	if (json_is_number(json_object_get(row, "speedup")))
		kb_buf_printf(out, ", speedup %.3gx",
			      json_number_value(json_object_get(row, "speedup")));
	kb_buf_printf(out, "</summary>\n<table class=\"outcome\"><tbody>");
	for (const struct rpt_column *c = rpt_turn_columns; c->name != NULL; c++) {
		if (strcmp(c->name, "run") == 0 || strcmp(c->name, "task") == 0 ||
		    strcmp(c->name, "level") == 0 || strcmp(c->name, "problem") == 0)
			continue;
		kb_buf_printf(out, "<tr><th title=\"");
		esc(out, c->help);
		kb_buf_printf(out, "\">%s</th>", c->name);
		cell(out, json_object_get(row, c->name));
		kb_buf_printf(out, "</tr>");
	}
	kb_buf_printf(out, "</tbody></table>\n");
	for (size_t a = 0; a < NSHOWN; a++) {
		const char *rel = json_string_value(json_object_get(arts, shown_artifacts[a].key));

		if (rel == NULL)
			continue;
		artifact(out, run_dir, id, shown_artifacts[a].key, shown_artifacts[a].label, rel,
			 live);
		if (strcmp(shown_artifacts[a].key, "kernel") == 0) {
			bool	 c1, c2;
			char	*old = prev_kernel_rel ? read_artifact(run_dir, id, prev_kernel_rel,
								       &c1) : NULL;
			char	*new = read_artifact(run_dir, id, rel, &c2);

			if (prev_kernel_rel == NULL)
				kb_buf_printf(out, "<p class=\"note nodiff\">%s: no diff</p>",
					      prev_turn > 0 ? "its parent wrote no kernel" : k > 1 ?
					      "grown from the problem alone" :
					      "the first kernel of the task");
			else if (old != NULL && new != NULL) {
				/* against the node it refined: the turn before in a chain */
				kb_buf_printf(out, "<h4>Kernel diff against turn %lld</h4>", prev_turn);
				rpt_html_diff(old, new, out);
			}
			free(old);
			free(new);
		}
	}
	json_object_foreach(arts, key, v) {
		bool known = false;

		for (size_t a = 0; a < NSHOWN; a++)
			known = known || strcmp(shown_artifacts[a].key, key) == 0;
		if (!known)
			artifact(out, run_dir, id, key, key, json_string_value(v), live);
	}
	tool_calls_section(out, run_dir, id, json_object_get(row, "tool_calls"), live);
	kb_buf_printf(out, "</details>\n");
}

static void
task_section(struct kb_buf *out, json_t *model, json_t *task, size_t m, size_t t, bool live)
{
	const char	*run_dir = json_string_value(json_object_get(model, "dir"));
	const char	*strategy = json_string_value(json_object_get(json_object_get(
				json_object_get(model, "report"), "search"), "strategy"));
	const char	*kernels[256] = { NULL };	/* turn k's at k - 1 */
	bool		 tree = strategy != NULL && strcmp(strategy, "chain") != 0;
	size_t		 k;
	json_t		*row;

	kb_buf_printf(out, "<details class=\"task\" id=\"task-%zu-%zu\" data-task=\"", m, t);
	esc(out, json_string_value(json_object_get(task, "id")));
	kb_buf_printf(out, "\"><summary>");
	esc(out, json_string_value(json_object_get(task, "id")));
	kb_buf_printf(out, ": ");
	esc(out, json_string_value(json_object_get(task, "state")));
	kb_buf_printf(out, ", %zu turn(s)</summary>\n",
		      json_array_size(json_object_get(task, "rows")));
	json_array_foreach(json_object_get(task, "rows"), k, row)
		tree = tree || json_array_size(json_object_get(row, "tool_calls")) > 0;
	if (tree)
		search_tree(out, task, m, t);
	timeline(out, json_object_get(task, "records"));
	json_array_foreach(json_object_get(task, "rows"), k, row) {
		int	parent = rd_node_named(row, RD_NODE_PARENT, (int)k + 1, (int)k);

		if (k >= sizeof(kernels) / sizeof(kernels[0]))
			break;
		/* The diff is against the kernel of the node this turn refined. */
		turn_section(out, run_dir, task, row, m, t, parent > 0 ? kernels[parent - 1] : NULL,
			     parent, live);
		kernels[k] = json_string_value(json_object_get(json_object_get(row, "artifacts"),
							       "kernel"));
	}
	kb_buf_printf(out, "</details>\n");
}

int
rpt_html_page(json_t *models, const char *live_stamp, struct kb_buf *out)
{
	size_t	 m, t;
	json_t	*model, *task;
	bool	 live = live_stamp != NULL;

	kb_buf_printf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		      "<meta name=\"viewport\" content=\"width=device-width\">"
		      "<link rel=\"icon\" href=\"data:,\"><title>kforge report: ");
	json_array_foreach(models, m, model) {
		kb_buf_printf(out, m ? ", " : "");
		esc(out, json_string_value(json_object_get(model, "name")));
	}
	kb_buf_printf(out, "</title><style>%s</style></head>\n<body data-live=\"%d\">\n",
		      page_css, live ? 1 : 0);
	if (live)
		kb_buf_printf(out, "<p id=\"live\">live: the page follows the run</p>\n");
	kb_buf_printf(out, "<div id=\"main\" data-stamp=\"");
	esc(out, live ? live_stamp : "");
	kb_buf_printf(out, "\">\n");
	json_array_foreach(models, m, model) {
		json_t *report = json_object_get(model, "report");

		kb_buf_printf(out, "<h1 class=\"run\">kforge report: ");
		esc(out, json_string_value(json_object_get(model, "name")));
		kb_buf_printf(out, "</h1><p class=\"note\">");
		esc(out, json_string_value(json_object_get(model, "dir")));
		kb_buf_printf(out, " — %zu tasks, %lld turns each, device ",
			      json_array_size(json_object_get(model, "tasks")),
			      (long long)json_integer_value(json_object_get(model, "turns")));
		esc(out, json_string_value(json_object_get(model, "device")));
		kb_buf_printf(out, "</p>\n");
		if (json_object_get(report, "redteam") != NULL)
			kb_buf_printf(out, "<p class=\"redteam\"><b>Red-team run:</b> the model was "
				      "asked for kernels that the evaluator judges correct and faster "
				      "without being so; fast_p here counts what got through the "
				      "evaluator, not kernels (the findings: redteam/index.json).</p>\n");
		summary_table(out, report);
		flagged_and_failed(out, report);
	}
	kb_buf_printf(out, "<h2>plots</h2><div class=\"plots\">\n");
	for (const struct rpt_plot *p = rpt_plots; p->name != NULL; p++)
		p->draw(models, out);
	kb_buf_printf(out, "</div>\n");
	json_array_foreach(models, m, model) {
		kb_buf_printf(out, "<h2>tasks of ");
		esc(out, json_string_value(json_object_get(model, "name")));
		kb_buf_printf(out, "</h2>\n");
		task_table(out, json_object_get(model, "tasks"), m);
		json_array_foreach(json_object_get(model, "tasks"), t, task)
			task_section(out, model, task, m, t, live);
	}
	kb_buf_printf(out, "</div>\n<script>%s</script>\n</body></html>\n", page_js);
	/* kb_buf refuses what passes its cap: a page near it is incomplete. */
	return out->len + 64 >= (out->cap ? out->cap : KB_BUF_DEFAULT_CAP) ? -KB_ETOOBIG : 0;
}
