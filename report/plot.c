/* plot.c: the report's plots as SVG, drawn from run models (runmodel.c) — one run, or
 * several overlaid. kforge writes the SVG itself: no plotting library is a dependency,
 * and five line, bar and step charts need only a few elements (axes, ticks, polylines,
 * rectangles, a legend). Every point or bar carries its numbers as data-* attributes
 * and a <title>, so that a test (and a reader hovering) sees the values drawn, which
 * are the report's own (report --json, the CSV rows). All text is escaped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "base/banned.h"

#define PLOT_W		720
#define PLOT_H		380
#define PLOT_LEFT	64
#define PLOT_RIGHT	200	/* the legend's column */
#define PLOT_TOP	40
#define PLOT_BOTTOM	52
#define PLOT_MAX_SERIES	64	/* more are left out of the legend, not of the data */

static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
	"#7f7f7f", "#bcbd22", "#17becf",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

void
rpt_xml_escape(struct kb_buf *out, const char *s)
{
	for (; s != NULL && *s; s++) {
		switch (*s) {
		case '&': kb_buf_append(out, "&amp;", 5); break;
		case '<': kb_buf_append(out, "&lt;", 4); break;
		case '>': kb_buf_append(out, "&gt;", 4); break;
		case '"': kb_buf_append(out, "&quot;", 6); break;
		case '\'': kb_buf_append(out, "&#39;", 5); break;
		default:
			/* control characters other than tab and line breaks are not XML */
			if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r')
				kb_buf_append(out, "\xEF\xBF\xBD", 3);
			else
				kb_buf_append(out, s, 1);
		}
	}
}

struct chart {
	struct kb_buf	*out;
	double		 x0, x1, y0, y1;
	int		 nlegend;
};

static double
px(const struct chart *c, double x)
{
	double span = c->x1 > c->x0 ? c->x1 - c->x0 : 1;

	return PLOT_LEFT + (x - c->x0) / span * (PLOT_W - PLOT_LEFT - PLOT_RIGHT);
}

static double
py(const struct chart *c, double y)
{
	double span = c->y1 > c->y0 ? c->y1 - c->y0 : 1;

	return PLOT_H - PLOT_BOTTOM - (y - c->y0) / span * (PLOT_H - PLOT_TOP - PLOT_BOTTOM);
}

static void
chart_open(struct chart *c, const char *id, const char *title, const char *note)
{
	kb_buf_printf(c->out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" "
		      "id=\"plot-%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		      "font-family=\"sans-serif\" font-size=\"11\">\n", id, PLOT_W, PLOT_H,
		      PLOT_W, PLOT_H);
	kb_buf_printf(c->out, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", PLOT_W, PLOT_H);
	kb_buf_printf(c->out, "<text x=\"%d\" y=\"20\" font-size=\"14\" font-weight=\"bold\">",
		      PLOT_LEFT);
	rpt_xml_escape(c->out, title);
	kb_buf_printf(c->out, "</text>\n");
	if (note != NULL) {
		kb_buf_printf(c->out, "<text x=\"%d\" y=\"34\" fill=\"#555\">", PLOT_LEFT);
		rpt_xml_escape(c->out, note);
		kb_buf_printf(c->out, "</text>\n");
	}
}

/* Axes with nx and ny ticks (labels by fmt, or the given labels for x). */
static void
chart_axes(struct chart *c, const char *xlabel, const char *ylabel, int nx, int ny,
	   const char *xfmt, const char *yfmt, double (*xlabel_of)(double))
{
	double	bx = PLOT_H - PLOT_BOTTOM, lx = PLOT_LEFT, rx = PLOT_W - PLOT_RIGHT;

	kb_buf_printf(c->out, "<g class=\"axes\" stroke=\"#333\">"
		      "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\"/>"
		      "<line x1=\"%g\" y1=\"%d\" x2=\"%g\" y2=\"%g\"/></g>\n",
		      lx, bx, rx, bx, lx, PLOT_TOP, lx, bx);
	for (int i = 0; i <= ny && ny > 0; i++) {
		double v = c->y0 + (c->y1 - c->y0) * i / ny, y = py(c, v);

		kb_buf_printf(c->out, "<line x1=\"%g\" y1=\"%.2f\" x2=\"%g\" y2=\"%.2f\" "
			      "stroke=\"#ddd\"/><text x=\"%g\" y=\"%.2f\" text-anchor=\"end\">",
			      lx, y, rx, y, lx - 4, y + 4);
		kb_buf_printf(c->out, yfmt, v);
		kb_buf_printf(c->out, "</text>\n");
	}
	for (int i = 0; i <= nx && nx > 0; i++) {
		double v = c->x0 + (c->x1 - c->x0) * i / nx, x = px(c, v);

		kb_buf_printf(c->out, "<line x1=\"%.2f\" y1=\"%g\" x2=\"%.2f\" y2=\"%g\" "
			      "stroke=\"#333\"/><text x=\"%.2f\" y=\"%g\" text-anchor=\"middle\">",
			      x, bx, x, bx + 4, x, bx + 16);
		kb_buf_printf(c->out, xfmt, xlabel_of != NULL ? xlabel_of(v) : v);
		kb_buf_printf(c->out, "</text>\n");
	}
	kb_buf_printf(c->out, "<text x=\"%g\" y=\"%d\" text-anchor=\"middle\">",
		      (lx + rx) / 2, PLOT_H - 12);
	rpt_xml_escape(c->out, xlabel);
	kb_buf_printf(c->out, "</text><text transform=\"translate(16 %g) rotate(-90)\" "
		      "text-anchor=\"middle\">", (double)(PLOT_TOP + bx) / 2);
	rpt_xml_escape(c->out, ylabel);
	kb_buf_printf(c->out, "</text>\n");
}

static void
chart_legend(struct chart *c, const char *label, const char *color)
{
	double	y = PLOT_TOP + 14.0 * c->nlegend;

	if (c->nlegend++ >= PLOT_MAX_SERIES)
		return;
	kb_buf_printf(c->out, "<g class=\"legend\"><rect x=\"%d\" y=\"%.1f\" width=\"10\" "
		      "height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%.1f\">",
		      PLOT_W - PLOT_RIGHT + 12, y, color, PLOT_W - PLOT_RIGHT + 26, y + 9);
	rpt_xml_escape(c->out, label);
	kb_buf_printf(c->out, "</text></g>\n");
}

static void
chart_empty(struct chart *c, const char *why)
{
	kb_buf_printf(c->out, "<text class=\"empty\" x=\"%d\" y=\"%d\" fill=\"#555\">",
		      PLOT_LEFT + 20, PLOT_H / 2);
	rpt_xml_escape(c->out, why);
	kb_buf_printf(c->out, "</text>\n");
}

static void
chart_close(struct chart *c)
{
	kb_buf_printf(c->out, "</svg>\n");
}

/* A run's label in a legend: its name, with its position among several runs. */
static void
run_label(json_t *models, size_t m, const char *suffix, char *out, size_t len)
{
	const char *name = json_string_value(json_object_get(json_array_get(models, m), "name"));

	if (json_array_size(models) > 1)
		snprintf(out, len, "%zu:%s%s%s", m + 1, name ? name : "?", suffix[0] ? " " : "",
			 suffix);
	else
		snprintf(out, len, "%s", suffix[0] ? suffix : name ? name : "?");
}

/* One series of points joined by a line: xs, ys of n points. */
static void
chart_series(struct chart *c, const char *label, const char *color, const double *xs,
	     const double *ys, int n)
{
	kb_buf_printf(c->out, "<g class=\"series\" data-series=\"");
	rpt_xml_escape(c->out, label);
	kb_buf_printf(c->out, "\"><polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
		      "points=\"", color);
	for (int i = 0; i < n; i++)
		kb_buf_printf(c->out, "%s%.2f,%.2f", i ? " " : "", px(c, xs[i]), py(c, ys[i]));
	kb_buf_printf(c->out, "\"/>\n");
	for (int i = 0; i < n; i++) {
		kb_buf_printf(c->out, "<circle class=\"pt\" cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" "
			      "fill=\"%s\" data-series=\"", px(c, xs[i]), py(c, ys[i]), color);
		rpt_xml_escape(c->out, label);
		kb_buf_printf(c->out, "\" data-x=\"%.17g\" data-y=\"%.17g\"><title>", xs[i], ys[i]);
		rpt_xml_escape(c->out, label);
		kb_buf_printf(c->out, ": %g, %g</title></circle>\n", xs[i], ys[i]);
	}
	kb_buf_printf(c->out, "</g>\n");
	chart_legend(c, label, color);
}

/* ------------------------------------------------------------ fast_p vs p */

/* fast_0 at p = 0, then each fast_p of the report, for one tally (a level or overall). */
static int
fast_p_points(json_t *tally, double *xs, double *ys, int cap)
{
	const char	*key;
	json_t		*v;
	int		 n = 0;

	if (!json_is_object(tally))
		return 0;
	xs[n] = 0;
	ys[n++] = json_number_value(json_object_get(tally, "fast_0"));
	json_object_foreach(json_object_get(tally, "fast_p"), key, v) {
		if (n >= cap)
			break;
		xs[n] = strtod(key, NULL);
		ys[n++] = json_number_value(v);
	}
	return n;
}

static void
plot_fast_p(json_t *models, struct kb_buf *out)
{
	struct chart	 c = { out, 0, 2, 0, 1, 0 };
	double		 xs[16], ys[16];
	size_t		 m;
	json_t		*model;
	int		 color = 0;
	char		 label[160];

	chart_open(&c, "fast_p", "fast_p against p",
		   "share of tasks with a correct kernel faster than p times the reference "
		   "(p = 0: correct)");
	chart_axes(&c, "p (speedup threshold)", "fast_p", 4, 5, "%g", "%.1f", NULL);
	json_array_foreach(models, m, model) {
		json_t		*report = json_object_get(model, "report"), *tally;
		const char	*level;
		int		 n;

		json_object_foreach(json_object_get(report, "levels"), level, tally) {
			char lv[16];

			snprintf(lv, sizeof(lv), "L%s", level);
			run_label(models, m, lv, label, sizeof(label));
			n = fast_p_points(tally, xs, ys, 16);
			chart_series(&c, label, palette[color++ % NPALETTE], xs, ys, n);
		}
		run_label(models, m, "overall", label, sizeof(label));
		n = fast_p_points(json_object_get(report, "overall"), xs, ys, 16);
		chart_series(&c, label, palette[color++ % NPALETTE], xs, ys, n);
	}
	chart_close(&c);
}

/* ------------------------------------------------------------ fast_1 by turn */

static void
plot_fast1_by_turn(json_t *models, struct kb_buf *out)
{
	struct chart	 c = { out, 1, 1, 0, 1, 0 };
	size_t		 m, k;
	json_t		*model, *v;
	char		 label[160];

	json_array_foreach(models, m, model) {
		double t = json_array_size(json_object_get(json_object_get(json_object_get(model,
			"report"), "overall"), "fast_1_at_turn"));

		if (t > c.x1)
			c.x1 = t;
	}
	chart_open(&c, "fast1_by_turn", "fast_1 by turn",
		   "share of tasks whose best correct kernel up to turn N beats the reference");
	chart_axes(&c, "turn", "fast_1", (int)(c.x1 - c.x0) > 0 ? (int)(c.x1 - c.x0) : 1, 5,
		   "%.0f", "%.1f", NULL);
	json_array_foreach(models, m, model) {
		json_t	*at = json_object_get(json_object_get(json_object_get(model, "report"),
							  "overall"), "fast_1_at_turn");
		size_t	 n = json_array_size(at) < 256 ? json_array_size(at) : 256;
		double	 xs[256], ys[256];

		json_array_foreach(at, k, v) {
			if (k >= n)
				break;
			xs[k] = (double)k + 1;
			ys[k] = json_number_value(v);
		}
		run_label(models, m, "", label, sizeof(label));
		chart_series(&c, label, palette[m % NPALETTE], xs, ys, (int)n);
	}
	chart_close(&c);
}

/* ------------------------------------------------------------ fast_1 by spend */

/* fast_1 against what the tasks spent of measure (the report's by_spend steps), a step
 * line per run from 0 to the most a task of it spent, labelled with its strategy: two
 * searches compared at equal cost (docs/search.md). */
static void
plot_fast1_by(json_t *models, struct kb_buf *out, const char *measure, const char *id,
	      const char *title, const char *xlabel)
{
	struct chart	 c = { out, 0, 1, 0, 1, 0 };
	size_t		 m, k;
	json_t		*model, *st;
	char		 label[160];

	json_array_foreach(models, m, model) {
		double most = json_number_value(json_object_get(json_object_get(json_object_get(
			json_object_get(model, "report"), "by_spend"), measure), "max"));

		if (most > c.x1)
			c.x1 = most;
	}
	chart_open(&c, id, title, "share of tasks whose search found a kernel faster than the "
		   "reference within a spend");
	chart_axes(&c, xlabel, "fast_1", 5, 5, "%.3g", "%.1f", NULL);
	json_array_foreach(models, m, model) {
		json_t		*report = json_object_get(model, "report");
		json_t		*by = json_object_get(json_object_get(report, "by_spend"), measure);
		json_t		*steps = json_object_get(by, "fast_1");
		const char	*strategy = json_string_value(json_object_get(json_object_get(report,
							"search"), "strategy"));
		double		 xs[2 * 256 + 2], ys[2 * 256 + 2], y = 0;
		int		 n = 0;

		xs[n] = 0;
		ys[n++] = 0;
		json_array_foreach(steps, k, st) {
			if (n + 3 > (int)(sizeof(xs) / sizeof(xs[0])))
				break;
			xs[n] = json_number_value(json_array_get(st, 0));
			ys[n++] = y;
			y = json_number_value(json_array_get(st, 1));
			xs[n] = xs[n - 1];
			ys[n++] = y;
		}
		xs[n] = json_number_value(json_object_get(by, "max"));
		ys[n++] = y;
		run_label(models, m, strategy != NULL ? strategy : "", label, sizeof(label));
		chart_series(&c, label, palette[m % NPALETTE], xs, ys, n);
	}
	chart_close(&c);
}

static void
plot_fast1_by_requests(json_t *models, struct kb_buf *out)
{
	plot_fast1_by(models, out, "requests", "fast1_by_requests",
		      "fast_1 against LLM requests spent", "LLM requests per task");
}

static void
plot_fast1_by_gpu_s(json_t *models, struct kb_buf *out)
{
	plot_fast1_by(models, out, "gpu_s", "fast1_by_gpu_s",
		      "fast_1 against execution seconds spent", "execution seconds per task");
}

/* ------------------------------------------------------------ speedups */

/* Bins of half a power of two: (2^(i/2), 2^((i+1)/2)], so that the bins above 1 hold
 * exactly the tasks that count in fast_1. */
#define SPEEDUP_BIN_LOG2	0.5
#define SPEEDUP_MIN_BIN		(-40)
#define SPEEDUP_MAX_BIN		40

static int
speedup_bin(double s)
{
	int b = (int)ceil(log2(s) / SPEEDUP_BIN_LOG2) - 1;

	return b < SPEEDUP_MIN_BIN ? SPEEDUP_MIN_BIN : b > SPEEDUP_MAX_BIN ? SPEEDUP_MAX_BIN : b;
}

static double
bin_edge(double b)
{
	return pow(2, b * SPEEDUP_BIN_LOG2);
}

static void
plot_speedups(json_t *models, struct kb_buf *out)
{
	enum { NB = SPEEDUP_MAX_BIN - SPEEDUP_MIN_BIN + 1 };
	struct chart	 c = { out, -2, 2, 0, 1, 0 };
	size_t		 nm = json_array_size(models), m, t;
	int		 (*count)[NB] = calloc(nm ? nm : 1, sizeof(*count));
	int		 lo = SPEEDUP_MAX_BIN, hi = SPEEDUP_MIN_BIN, top = 1;
	json_t		*model, *task;
	char		 label[160];

	if (count == NULL)
		return;
	json_array_foreach(models, m, model)
		json_array_foreach(json_object_get(model, "tasks"), t, task) {
			double	s = json_number_value(json_object_get(task, "best_speedup"));
			int	b;

			if (!(s > 0))
				continue;
			b = speedup_bin(s);
			count[m][b - SPEEDUP_MIN_BIN]++;
			lo = b < lo ? b : lo;
			hi = b > hi ? b : hi;
			top = count[m][b - SPEEDUP_MIN_BIN] > top ? count[m][b - SPEEDUP_MIN_BIN] : top;
		}
	if (lo > -2)
		lo = -2;
	if (hi < 1)
		hi = 1;
	c.x0 = lo;
	c.x1 = hi + 1;
	c.y1 = top;
	chart_open(&c, "speedups", "speedups of correct kernels",
		   "each task's best correct speedup (log scale; a task correct with no "
		   "timing is left out)");
	chart_axes(&c, "speedup (best per task)", "tasks", (int)(c.x1 - c.x0), top < 10 ? top : 5,
		   "%.2g", "%.0f", bin_edge);
	kb_buf_printf(out, "<line class=\"parity\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
		      "stroke=\"#000\" stroke-dasharray=\"4 3\"/>\n", px(&c, 0), PLOT_TOP, px(&c, 0),
		      PLOT_H - PLOT_BOTTOM);
	json_array_foreach(models, m, model) {
		double w = (px(&c, 1) - px(&c, 0)) / (double)(nm ? nm : 1);

		run_label(models, m, "", label, sizeof(label));
		for (int b = lo; b <= hi; b++) {
			int n = count[m][b - SPEEDUP_MIN_BIN];

			if (n == 0)
				continue;
			kb_buf_printf(out, "<rect class=\"bar\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
				      "height=\"%.2f\" fill=\"%s\" data-series=\"", px(&c, b) + w * m,
				      py(&c, n), w - 1, py(&c, 0) - py(&c, n), palette[m % NPALETTE]);
			rpt_xml_escape(out, label);
			kb_buf_printf(out, "\" data-lo=\"%.17g\" data-hi=\"%.17g\" data-count=\"%d\">"
				      "<title>", bin_edge(b), bin_edge(b + 1), n);
			rpt_xml_escape(out, label);
			kb_buf_printf(out, ": %d task(s) with speedup in (%.3g, %.3g]</title></rect>\n",
				      n, bin_edge(b), bin_edge(b + 1));
		}
		chart_legend(&c, label, palette[m % NPALETTE]);
	}
	if (lo == -2 && hi == 1 && top == 1) {
		bool any = false;

		for (size_t i = 0; i < nm * NB && !any; i++)
			any = count[i / NB][i % NB] > 0;
		if (!any)
			chart_empty(&c, "no correct kernel with a timing yet");
	}
	free(count);
	chart_close(&c);
}

/* ------------------------------------------------------------ status by turn */

/* What a turn's bar segment is called: the runner's status, except that a kernel that
 * ran ("ok") is named by its verdict (correct, incorrect, rejected, suspect); a turn
 * with no outcome yet is "in progress". */
const char *
rpt_turn_category(json_t *row)
{
	const char	*status = json_string_value(json_object_get(row, "status"));
	const char	*verdict = json_string_value(json_object_get(row, "verdict"));

	if (status == NULL || status[0] == '\0')
		return "in progress";
	if (strcmp(status, "ok") == 0 && verdict != NULL && verdict[0] != '\0')
		return verdict;
	return status;
}

static void
plot_turn_status(json_t *models, struct kb_buf *out)
{
	struct chart	 c = { out, 0.5, 1.5, 0, 1, 0 };
	json_t		*cats = json_object();	/* category -> {turn: count} per model */
	json_t		*per = json_array();	/* per model: {category: [count per turn]} */
	size_t		 nm = json_array_size(models), m, t, k;
	json_t		*model, *task, *row;
	int		 maxturn = 1, top = 1, color = 0;
	const char	*cat;
	json_t		*v;
	char		 label[160];

	json_array_foreach(models, m, model) {
		json_t	*counts = json_object();
		int	 total[257] = { 0 };

		json_array_foreach(json_object_get(model, "tasks"), t, task)
			json_array_foreach(json_object_get(task, "rows"), k, row) {
				json_t	*arr;

				if (k >= 256)
					break;
				cat = rpt_turn_category(row);
				if ((arr = json_object_get(counts, cat)) == NULL)
					json_object_set_new(counts, cat, arr = json_array());
				while (json_array_size(arr) <= k)
					json_array_append_new(arr, json_integer(0));
				json_array_set_new(arr, k, json_integer(
					json_integer_value(json_array_get(arr, k)) + 1));
				if (!json_object_get(cats, cat))
					json_object_set_new(cats, cat, json_string(
						palette[color++ % NPALETTE]));
				maxturn = (int)k + 1 > maxturn ? (int)k + 1 : maxturn;
				if (++total[k] > top)
					top = total[k];
			}
		json_array_append_new(per, counts);
	}
	c.x1 = maxturn + 0.5;
	c.y1 = top;
	chart_open(&c, "turn_status", "status of every turn",
		   nm > 1 ? "turns by outcome, stacked per turn (one bar per run, numbered as "
			    "the runs)" : "turns by outcome, stacked per turn");
	chart_axes(&c, "turn", "turns", 0, top < 10 ? top : 5, "%g", "%.0f", NULL);
	for (int k2 = 1; k2 <= maxturn; k2++)
		kb_buf_printf(out, "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
			      px(&c, k2), PLOT_H - PLOT_BOTTOM + 16, k2);
	json_array_foreach(per, m, v) {
		double	w = (px(&c, 1.4) - px(&c, 0.6)) / (double)(nm ? nm : 1);

		run_label(models, m, "", label, sizeof(label));
		for (int k2 = 0; k2 < maxturn; k2++) {
			int	 below = 0;
			json_t	*arr;

			if (nm > 1)	/* which run a bar is: its number, as in the legend */
				kb_buf_printf(out, "<text x=\"%.2f\" y=\"%d\" font-size=\"9\" "
					      "text-anchor=\"middle\" fill=\"#555\">%zu</text>\n",
					      px(&c, k2 + 0.6) + w * ((double)m + 0.5),
					      PLOT_H - PLOT_BOTTOM + 27, m + 1);

			json_object_foreach(v, cat, arr) {
				int n = (int)json_integer_value(json_array_get(arr, (size_t)k2));

				if (n == 0)
					continue;
				kb_buf_printf(out, "<rect class=\"bar\" x=\"%.2f\" y=\"%.2f\" "
					      "width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
					      "data-series=\"", px(&c, k2 + 0.6) + w * m,
					      py(&c, below + n), w - 1, py(&c, below) - py(&c, below + n),
					      json_string_value(json_object_get(cats, cat)));
				rpt_xml_escape(out, label);
				kb_buf_printf(out, "\" data-turn=\"%d\" data-category=\"", k2 + 1);
				rpt_xml_escape(out, cat);
				kb_buf_printf(out, "\" data-count=\"%d\"><title>", n);
				rpt_xml_escape(out, label);
				kb_buf_printf(out, " turn %d: %d ", k2 + 1, n);
				rpt_xml_escape(out, cat);
				kb_buf_printf(out, "</title></rect>\n");
				below += n;
			}
		}
	}
	json_object_foreach(cats, cat, v)
		chart_legend(&c, cat, json_string_value(v));
	if (json_object_size(cats) == 0)
		chart_empty(&c, "no turn has started");
	json_decref(cats);
	json_decref(per);
	chart_close(&c);
}

/* ------------------------------------------------------------ slot use */

/* The lease classes drawn, with their label on a GPU run (a CPU run executes on
 * cpu-exec slots). */
static const struct {
	const char	*cls, *label, *cpu_label;
} slot_classes[] = {
	{ "exec", "GPU slots", "cpu-exec slots" },
	{ "compile", "compile slots", "compile slots" },
};

struct slot_event {
	int64_t	ms;
	int	delta;
};

static int
cmp_event(const void *a, const void *b)
{
	const struct slot_event *x = a, *y = b;

	if (x->ms != y->ms)
		return (x->ms > y->ms) - (x->ms < y->ms);
	return x->delta - y->delta;	/* a release before an acquire at the same moment */
}

/* The slots of a class held over time: (seconds since the run's first lease, slots held
 * from then on), one point per moment a count changes. Returns the number of points
 * (xs and ys malloc'd, the caller frees), 0 when none. */
static int
slot_use(json_t *model, const char *cls, double **xs, double **ys)
{
	json_t			*leases = json_object_get(model, "leases"), *l;
	size_t			 n = json_array_size(leases), i, ne = 0;
	struct slot_event	*ev = calloc(2 * n + 1, sizeof(*ev));
	int64_t			 t0 = INT64_MAX;
	int			 held = 0, np = 0;

	*xs = *ys = NULL;
	if (ev == NULL)
		return 0;
	json_array_foreach(leases, i, l) {
		int64_t a = json_integer_value(json_object_get(l, "acquired_ms"));

		if (a < t0)
			t0 = a;
		if (strcmp(json_string_value(json_object_get(l, "class")) ?: "", cls) != 0)
			continue;
		ev[ne++] = (struct slot_event){ a, +1 };
		ev[ne++] = (struct slot_event){ json_integer_value(json_object_get(l,
							"released_ms")), -1 };
	}
	if (ne == 0 || (*xs = calloc(ne + 1, sizeof(double))) == NULL ||
	    (*ys = calloc(ne + 1, sizeof(double))) == NULL) {
		free(*xs);
		*xs = NULL;
		free(ev);
		return 0;
	}
	qsort(ev, ne, sizeof(*ev), cmp_event);
	for (i = 0; i < ne; i++) {
		held += ev[i].delta;
		if (i + 1 < ne && ev[i + 1].ms == ev[i].ms)
			continue;
		(*xs)[np] = (double)(ev[i].ms - t0) / 1000.0;
		(*ys)[np++] = held;
	}
	free(ev);
	return np;
}

static bool
model_on_cpu(json_t *model)
{
	return strcmp(json_string_value(json_object_get(model, "device")) ?: "", "cpu") == 0;
}

/* The slot plot's title names what the runs executed on: GPUs, the CPU, or both. */
static const char *
slot_use_title(json_t *models)
{
	size_t	 m, ncpu = 0;
	json_t	*model;

	json_array_foreach(models, m, model)
		ncpu += model_on_cpu(model);
	if (ncpu == 0)
		return "GPU and compile slot use over time";
	if (ncpu == json_array_size(models))
		return "CPU execution and compile slot use over time";
	return "GPU, CPU execution and compile slot use over time";
}

static void
plot_slot_use(json_t *models, struct kb_buf *out)
{
	struct chart	 c = { out, 0, 1, 0, 1, 0 };
	size_t		 m;
	json_t		*model;
	int		 color = 0;
	char		 label[160];

	json_array_foreach(models, m, model)
		for (size_t k = 0; k < sizeof(slot_classes) / sizeof(slot_classes[0]); k++) {
			double	*xs, *ys;
			int	 n = slot_use(model, slot_classes[k].cls, &xs, &ys);

			for (int i = 0; i < n; i++) {
				c.x1 = xs[i] > c.x1 ? xs[i] : c.x1;
				c.y1 = ys[i] > c.y1 ? ys[i] : c.y1;
			}
			free(xs);
			free(ys);
		}
	c.x1 = ceil(c.x1);
	chart_open(&c, "slot_use", slot_use_title(models),
		   "slots held, from the lease records of the trajectories");
	chart_axes(&c, "seconds since the run's first lease", "slots held", 5,
		   (int)c.y1 < 8 ? (int)c.y1 : 4, "%.0f", "%.0f", NULL);
	json_array_foreach(models, m, model)
		for (size_t k = 0; k < sizeof(slot_classes) / sizeof(slot_classes[0]); k++) {
			const char	*color_s = palette[color++ % NPALETTE];
			bool		 cpu = model_on_cpu(model);
			double		*xs, *ys;
			int		 n = slot_use(model, slot_classes[k].cls, &xs, &ys);

			if (n == 0)
				continue;
			run_label(models, m, cpu ? slot_classes[k].cpu_label : slot_classes[k].label,
				  label, sizeof(label));
			kb_buf_printf(out, "<g class=\"steps\" data-series=\"");
			rpt_xml_escape(out, label);
			kb_buf_printf(out, "\" data-class=\"%s\" data-points=\"", slot_classes[k].cls);
			for (int i = 0; i < n; i++)
				kb_buf_printf(out, "%s%.17g,%g", i ? " " : "", xs[i], ys[i]);
			kb_buf_printf(out, "\"><polyline fill=\"none\" stroke=\"%s\" "
				      "stroke-width=\"1.5\" points=\"", color_s);
			for (int i = 0; i < n; i++) {
				if (i > 0)
					kb_buf_printf(out, " %.2f,%.2f", px(&c, xs[i]),
						      py(&c, ys[i - 1]));
				kb_buf_printf(out, "%s%.2f,%.2f", i ? " " : "", px(&c, xs[i]),
					      py(&c, ys[i]));
			}
			kb_buf_printf(out, "\"/><title>");
			rpt_xml_escape(out, label);
			kb_buf_printf(out, "</title></g>\n");
			chart_legend(&c, label, color_s);
			free(xs);
			free(ys);
		}
	if (c.nlegend == 0)
		chart_empty(&c, "no slot was leased yet");
	chart_close(&c);
}

const struct rpt_plot rpt_plots[] = {
	{ "fast_p", "fast_p against p, per level", plot_fast_p },
	{ "fast1_by_turn", "fast_1 by turn", plot_fast1_by_turn },
	{ "fast1_by_requests", "fast_1 against LLM requests spent", plot_fast1_by_requests },
	{ "fast1_by_gpu_s", "fast_1 against execution seconds spent", plot_fast1_by_gpu_s },
	{ "speedups", "speedups of correct kernels", plot_speedups },
	{ "turn_status", "status of every turn", plot_turn_status },
	{ "slot_use", "execution (GPU or CPU) and compile slot use over time", plot_slot_use },
	{ NULL, NULL, NULL },
};
