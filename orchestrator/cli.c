/* cli.c: the kforge command line — one table of commands, each with its help. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feedback/feedback.h"
#include "fsm/fsm.h"
#include "llm/llm.h"
#include "orchestrator/orch_int.h"
#include "rundir/rundir.h"
#include "sandbox/sandbox.h"
#include "base/banned.h"

#define MAX_SETS 128
#define STR_(x)	#x
#define STR(x)	STR_(x)

/* What run and resume say of the progress display. */
#define PROGRESS_HELP \
	"\nIn a terminal a progress display redraws in place: tasks by state, turns, builds\n" \
	"and executions busy and waiting, LLM requests and tokens, best speedups, elapsed\n" \
	"time and an estimate of what is left; the log lines (stderr) appear above it.\n" \
	"When standard output is not a terminal, a one-line summary is printed at once and\n" \
	"then every --progress-interval SECONDS (default " STR(ORCH_PROGRESS_INTERVAL_S) "). Either way a final summary\n" \
	"ends the run. --quiet prints none of it, nor does --detach (no terminal)."

struct command {
	const char	*name;
	int		(*run)(int argc, char **argv);
	const char	*usage;
	const char	*help;
	int		(*view)(const char *dir, bool json);	/* for cmd_view */
	void		(*more_help)(FILE *fp);	/* help generated from the code's tables */
};

static int	cmd_run(int argc, char **argv);
static int	cmd_resume(int argc, char **argv);
static int	cmd_view(int argc, char **argv);
static int	cmd_report(int argc, char **argv);
static int	cmd_viewer(int argc, char **argv);
static int	cmd_tail(int argc, char **argv);
static int	cmd_stop(int argc, char **argv);
static int	cmd_eval(int argc, char **argv);
static int	cmd_doctor(int argc, char **argv);
static int	cmd_baseline(int argc, char **argv);
static int	cmd_config(int argc, char **argv);
static int	cmd_subset(int argc, char **argv);
static int	cmd_redteam(int argc, char **argv);
static int	cmd_shard(int argc, char **argv);
static int	cmd_tool(int argc, char **argv);

static const struct command commands[] = {
	{ .name = "run", .run = cmd_run,
	  .usage = "run CONFIG [--run-dir DIR] [--set key=value ...] [--detach] [--quiet]\n"
		   "         [--progress-interval SECONDS]",
	  .help = "Start an experiment from a YAML config. The run directory (default runs/<name>)\n"
	  "receives the frozen config and every task's trajectory. --set overrides any\n"
	  "config key by its dotted path (recorded in the frozen config). --detach runs the\n"
	  "supervisor in the background (pid in DIR/supervisor.pid, log in\n"
	  "DIR/supervisor.log). SIGINT/SIGTERM stop gracefully; 'kforge resume' continues.\n"
	  "What can be checked first (the config and problems, the API key variable,\n"
	  "runner.python, runner.user) is checked before the run directory is created:\n"
	  "such a failure exits 2 and leaves nothing behind.\n"
	  "If the LLM endpoint refuses the credentials (HTTP 401/403), generation pauses for\n"
	  "the whole run: no task fails, the work under way finishes, and kforge exits 75;\n"
	  "fix the key, then 'kforge resume DIR'. Before any model request, a tiny extension\n"
	  "is built and run as candidates are (cached per environment); if that fails, or a\n"
	  "later step fails for a reason no candidate can cause (torch not importable, torch's\n"
	  "headers, pybind11, the compiler or ninja missing, the reference itself failing),\n"
	  "nothing is scored or fed back, the run pauses, and kforge exits 69 naming the fix;\n"
	  "then 'kforge resume DIR'.\n"
	  "With cluster.engine slurm (--set cluster.engine=slurm) the run directory, which\n"
	  "every node must see, is made here, one Slurm job array of cluster.shards elements\n"
	  "is submitted (sbatch; its job id in run.json), and the run is followed as a local\n"
	  "one until Slurm has none of its elements left; --detach returns once submitted.\n"
	  "Each element is a 'kforge shard' taking tasks from a queue in the run directory.\n"
	  PROGRESS_HELP },
	{ .name = "redteam", .run = cmd_redteam,
	  .usage = "redteam CONFIG [--run-dir DIR] [--set key=value ...] [--detach] [--quiet]\n"
		   "         [--progress-interval SECONDS]\n"
		   "         redteam --harvest RUN_DIR [--quiet]",
	  .help = "Test the evaluator: 'kforge run' of CONFIG with redteam.enabled set (recorded in\n"
	  "the frozen config.yaml and run.json), whose prompt asks the model, whatever the\n"
	  "provider, for a ModelNew that the evaluator judges correct and faster than the\n"
	  "reference without computing it faster honestly (llm/prompts/statement_redteam_*.md;\n"
	  "later turns get the ordinary feedback). Everything a run does (resume, status,\n"
	  "tail, stop, report) works on it, and the report says it is a red-team run: its\n"
	  "fast_p measures the evaluator, not kernels.\n"
	  "When the run finishes (and each resume), every candidate judged correct, and apart\n"
	  "from those every one judged suspect, whose speedup is at least\n"
	  "redteam.min_speedup (default 1.5) is kept under DIR/redteam/<task>_t<turn>/: its\n"
	  "kernel.py, a copy of its problem (problem.py), its result.json (verdict, reasons,\n"
	  "timings) and suite.py, the kernel under the adversarial suite's header lines\n"
	  "(# problem, # expect: rejected, # catches: -, # why: where it was found) to move\n"
	  "into tests/data/adversarial/<device>/ once a reviewer has named the rule that\n"
	  "should catch it. One line per kept candidate is printed (task, turn, verdict,\n"
	  "speedup, folder; --quiet and --detach print none) and DIR/redteam/index.json lists\n"
	  "them. --harvest RUN_DIR does the same for a red-team run already made, finished or\n"
	  "not, whose supervisor is not running.\n"
	  "Exit status: as 'kforge run' (0 when the run finished, kept anything or not); a\n"
	  "harvest that could not be written is 1. --harvest: 0, 1 (not a red-team run, a\n"
	  "supervisor running, a write failed), 2 (not a run directory)." },
	{ .name = "resume", .run = cmd_resume,
	  .usage = "resume DIR [--set runner.python=PATH] [--detach] [--quiet] "
		   "[--progress-interval SECONDS]\n"
		   "         [--add-shards N]",
	  .help = "Continue an interrupted run. Finished tasks are not redone, saved LLM replies are\n"
	  "never requested again, and each task re-enters the step it was in. --set changes\n"
	  "what describes the machine rather than the experiment (runner.python), recorded\n"
	  "in the run's config.yaml; $KFORGE_PYTHON applies only where runner.python is ''.\n"
	  "A Slurm run (cluster.engine slurm): where none of its shards is with Slurm any\n"
	  "more, submits a new array for what is left (cluster.shards elements, fewer where\n"
	  "fewer tasks are left), else follows the shards there are; --add-shards N submits N\n"
	  "more either way, which take tasks nobody holds.\n"
	  PROGRESS_HELP },
	{ .name = "status", .run = cmd_view,
	  .usage = "status DIR [--json]",
	  .help = "Tasks with their state, turn, best speedup and last result; the GPU, compile and\n"
	  "LLM slots (busy/total, waiting, utilisation) and the workers starting their runner;\n"
	  "per stage, the time spent waiting for a slot and the time holding it (median, p90),\n"
	  "and a row for the runners' starts (torch's import, in no slot); LLM requests and\n"
	  "tokens. A run with work left and no supervisor (stopped, paused, or interrupted:\n"
	  "killed) is said to be so, with the 'kforge resume' that continues it.",
	  .view = orch_cmd_status },
	{ .name = "tail", .run = cmd_tail,
	  .usage = "tail DIR [TASK] [-f]",
	  .help = "Print the trajectory of one task (or all) a line per transition, in time order\n"
	  "with the retries, the worker restarts and the resumes; -f follows live until the\n"
	  "followed tasks finish." },
	{ .name = "report", .run = cmd_report,
	  .usage = "report DIR [--json] [--accept RULE ...]\n"
		   "         report RUN_A RUN_B ... [--json] [--accept RULE ...]\n"
		   "         report DIR... [--csv] [--html FILE] [--svg DIR] [--accept RULE ...]",
	  .help = "Compile rate, correctness (fast_0), fast_p for p in 0.5, 1, 1.5, 2 per level and\n"
	  "overall, fast_1 by turn (best kernel up to turn N), and last statuses. Only a\n"
	  "correct verdict counts: turns judged rejected (a rule broken) or suspect (flagged\n"
	  "for review) are listed with their reasons. --accept RULE counts a suspect turn\n"
	  "whose every reason is an accepted rule (a flag such as excessive_speedup, or a\n"
	  "static warning such as torch_compute) as correct; repeat it for several.\n"
	  "--csv prints one row per task and turn: status, verdict, reasons, speedup and its\n"
	  "95% interval, runtimes, per-stage slot wait and hold (ms), LLM requests and tokens.\n"
	  "--svg DIR writes the plots, drawn by kforge itself: fast_p against p per level,\n"
	  "fast_1 by turn, the best speedups of correct kernels, the status of every turn\n"
	  "by turn, execution (GPU or CPU) and compile slot use over time. --html FILE\n"
	  "writes one self-contained page: the summary, the plots (as wide as the window),\n"
	  "a sortable table of tasks and, per task, its timeline and every turn's prompt,\n"
	  "reply, kernel (with a diff against the previous turn's), build output, results,\n"
	  "verdict, profile and feedback. With several run directories --csv, --svg and\n"
	  "--html cover them all, the plots overlaid.\n"
	  "With problems.samples above 1 the report adds fast_p@k and fast_1@k by turn for\n"
	  "k = 1 to the samples, by the unbiased estimator 1 - C(n-c,k)/C(n,k) averaged over\n"
	  "problems. Several run directories without --csv, --html or --svg compare the\n"
	  "runs (as Table 2 of the KernelBench paper: G, G+E, G+E+P) on the problems they\n"
	  "have in common: fast_0, fast_p and fast_1 by turn per run, each run's difference\n"
	  "from the first with the 95% interval of a paired bootstrap over the problems\n"
	  "(2000 resamples, a fixed seed), marked * when the interval leaves out 0: beyond\n"
	  "the runs' own noise. A problem whose content (its SHA-256, recorded in tasks.json\n"
	  "at each run's start) differs between runs is a warning line on stderr." },
	{ .name = "subset", .run = cmd_subset,
	  .usage = "subset RUN_DIR... --size N --out FILE [--seed S]",
	  .help = "Choose N representative problems of the runs' common problems: k-medoids (PAM)\n"
	  "over each problem's standardized results in every run (compiled, correct and the\n"
	  "log of the best speedup, by turn and sample). Prints how well the subset\n"
	  "reproduces the full set: per run, fast_0, fast_1 and fast_1 by turn of both, the\n"
	  "absolute deviations and their mean, next to the same for 50 random subsets of N\n"
	  "(drawn with --seed, default 1) and how many of them the medoids beat and tie.\n"
	  "Writes the medoids to FILE as a problems.subset file (keys a line, a comment\n"
	  "header saying how it was made). Problems not in every run are left out with a\n"
	  "line on stderr; a problem whose content differs between runs is a warning." },
	{ .name = "view", .run = cmd_viewer,
	  .usage = "view DIR [--port N] [--bind ADDR]",
	  .help = "Serve the report page of a run (as report --html writes it) on http://ADDR:N/,\n"
	  "default 127.0.0.1:" STR(RPT_VIEW_PORT) "; --port 0 takes a free port. The page follows the run as it\n"
	  "moves on (it polls for a change in the trajectories and redraws). Read-only: only\n"
	  "GET; files are served as text from inside the run directory only. It listens on\n"
	  "loopback unless --bind names another address (the page shows model output and\n"
	  "the run's files: bind elsewhere only on a trusted network). Ctrl-C stops it." },
	{ .name = "stop", .run = cmd_stop,
	  .usage = "stop DIR [--timeout SECONDS]",
	  .help = "Ask the run's supervisor to stop gracefully and wait until it has. A Slurm run:\n"
	  "the kforge following it asks Slurm (scancel: pending shards cancelled, running\n"
	  "ones sent SIGTERM, which stops each at a turn's boundary); with none following,\n"
	  "stop asks Slurm itself and returns." },
	{ .name = "shard", .run = cmd_shard,
	  .usage = "shard DIR [--id ID]",
	  .help = "One shard of a Slurm run (cluster.engine slurm): what each element of the run's\n"
	  "job array runs. A supervisor on this node's GPUs (CUDA_VISIBLE_DEVICES where Slurm\n"
	  "sets it) whose files are in DIR/shards/ID/ (ID: <array job>_<index>, the same\n"
	  "across a requeue, or --id); it claims each task in DIR/claims/ before working on\n"
	  "it, beats a heartbeat, takes the tasks of a shard whose heartbeat stopped for\n"
	  "cluster.claim_timeout_s, and ends when nothing is left to claim. SIGTERM stops it at\n"
	  "a turn's boundary, letting its unfinished tasks go to the others." },
	{ .name = "eval", .run = cmd_eval,
	  .usage = "eval --problem P.py --kernel K.py|REPLY.md [--device cpu|cuda|auto]\n"
		   "         [--set key=value ...] [--json] [--profile]",
	  .help = "Evaluate one kernel against one KernelBench-format problem: precompile,\n"
	  "reference timing, correctness trials and timing, as in a run's turn. --profile\n"
	  "also profiles it as a run with P feedback does (CUPTI on a GPU: the kernels that\n"
	  "ran, on which streams, judged by the same profile rule) and prints the P text.\n"
	  "A --kernel whose name ends in .md is a model's reply (a run keeps each as its\n"
	  "turn's response.md): its code is taken as a run's turn takes it (the last fenced\n"
	  "block tagged python, else the last untagged one); a reply with none exits 2.",
	  .more_help = orch_eval_help },
	{ .name = "tool", .run = cmd_tool,
	  .usage = "tool eval KERNEL | tool confine SPEC -- PROGRAM [ARG ...]",
	  .help = "An agent's tool (llm.provider agent), run inside the turn's workspace as\n"
	  "bin/kforge-tool: the kernel evaluated by the run that started the agent, as that\n"
	  "turn's own kernel would be (static checks, build, correctness and timing, the\n"
	  "verdict), counted against llm.agent.max_tool_calls and recorded in the task's\n"
	  "trajectory. Prints the answer as JSON: call, calls_left, status, verdict,\n"
	  "compiled, correct, speedup (when correct) and feedback (what a refinement prompt\n"
	  "would say of it), or error. Exits 0 with an evaluation, 1 when the call was\n"
	  "refused or failed, 2 outside a workspace or on a bad argument. confine is how\n"
	  "the worker starts the agent: under the sandbox SPEC (sandbox.h's lines: it\n"
	  "reads neither the run directory nor the caches, writes its workspace and the\n"
	  "temporary directory), then PROGRAM." },
	{ .name = "baseline", .run = cmd_baseline,
	  .usage = "baseline CONFIG [--set key=value ...]",
	  .help = "Time the reference of every problem of CONFIG's problem set, alone, as a run's\n"
	  "baseline step does, into the cache that runs and 'kforge eval' share, on each GPU\n"
	  "model the config uses (or the CPU): a run after it times no reference. A problem\n"
	  "already timed for this environment and these settings (precision, perf_trials,\n"
	  "warmup, seed, eval.baseline_compile) is not timed again. One line per problem;\n"
	  "exits 0 when every problem has its timings, 1 when one failed." },
	{ .name = "config", .run = cmd_config,
	  .usage = "config CONFIG [--set key=value ...] | config --reference",
	  .help = "Print the frozen config a run of CONFIG would write as its config.yaml: every\n"
	  "key, defaults filled in, --set overrides applied, eval.device auto and an empty\n"
	  "eval.arch_list resolved on this machine. Everything 'run' checks before it starts\n"
	  "is checked, by the same code (the config, the problems, the API key variable,\n"
	  "runner.python, runner.user): a failure prints the one line 'run' prints\n"
	  "(FILE:LINE:COLUMN: key: what is wrong, where the file sets the key) and exits 2.\n"
	  "--reference prints every config key instead: its type, default, allowed values or\n"
	  "bounds, when it is required, and one line of meaning, generated from the table\n"
	  "the loader checks configs against." },
	{ .name = "doctor", .run = cmd_doctor,
	  .usage = "doctor [CONFIG] [--device cpu|cuda|auto] [--json] [--fresh]",
	  .help = "Check every prerequisite of a run, one line per item: the C toolchain, the\n"
	  "runner's Python and torch (as a run chooses them), torch's C++ headers, pybind11,\n"
	  "ninja, a tiny C++ extension built and run as candidates are (cached per\n"
	  "environment; --fresh builds it again); for cuda also nvcc, the NVIDIA driver and\n"
	  "each GPU, a tiny CUDA extension, CUPTI and whether performance counters are\n"
	  "permitted; the runner's network namespace and user; free space where runs go.\n"
	  "CONFIG supplies runner.python, runner.user, runner.isolate_network and\n"
	  "eval.device (default: the defaults, device auto). Each missing item names its\n"
	  "fix. Exits 0 when the device can run kforge, 1 when it cannot. --json prints the\n"
	  "items as a JSON array of {item, ok, required, detail, version, path, fix}." },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *current;

static int
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "kforge %s: ", current->name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: kforge %s\n", current->usage);
	return 2;
}

static int
print_help(void)
{
	printf("usage: kforge %s\n\n%s\n", current->usage, current->help);
	if (current->more_help != NULL)
		current->more_help(stdout);
	return 0;
}

/* Options common to every command are --help/-h; each command adds its own. */
static int
parse(int argc, char **argv, const char *shortopts, const struct option *longopts,
      int (*on_opt)(int c, const char *arg, void *st), void *st, char ***rest, int *nrest)
{
	int	c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == 'h')
			return print_help() + 1000;
		if (c == '?' || c == ':')
			return usage_error("bad or incomplete option '%s'", argv[optind - 1]);
		if (on_opt(c, optarg, st) != 0)
			return 2;
	}
	*rest = argv + optind;
	*nrest = argc - optind;
	return 0;
}

struct run_opts {
	const char	*run_dir, *sets[MAX_SETS], *device, *problem, *kernel;
	const char	*accept[MAX_SETS + 1];	/* NULL-ended */
	int		 nsets, naccept, timeout, progress_interval;
	bool		 detach, json, follow, quiet, fresh, csv, reference, profile;
	const char	*html, *svg, *bind, *out;
	int		 port, size, add_shards;
	long		 seed;
	bool		 seed_set, harvest;
	const char	*shard_id;
};

static int
on_opt(int c, const char *arg, void *st)
{
	struct run_opts *o = st;
	long		 v;

	switch (c) {
	case 'd': o->run_dir = arg; break;
	case 'D': o->detach = true; break;
	case 'q': o->quiet = true; break;
	case 'i':
		if (kb_parse_int(arg, 1, 86400, &v) < 0)
			return usage_error("--progress-interval wants seconds (1 to 86400), got '%s'",
					   arg);
		o->progress_interval = (int)v;
		break;
	case 'j': o->json = true; break;
	case 'r': o->profile = true; break;
	case 'f': o->follow = true; break;
	case 'F': o->fresh = true; break;
	case 'v': o->device = arg; break;
	case 'p': o->problem = arg; break;
	case 'k': o->kernel = arg; break;
	case 't':
		if (kb_parse_int(arg, 1, 86400, &v) < 0)
			return usage_error("--timeout wants seconds, got '%s'", arg);
		o->timeout = (int)v;
		break;
	case 'c': o->csv = true; break;
	case 'R': o->reference = true; break;
	case 'H': o->html = arg; break;
	case 'S': o->svg = arg; break;
	case 'B': o->bind = arg; break;
	case 'P':
		if (kb_parse_int(arg, 0, 65535, &v) < 0)
			return usage_error("--port wants a port number (0 to 65535; 0: any free "
					   "one), got '%s'", arg);
		o->port = (int)v;
		break;
	case 'N':
		if (kb_parse_int(arg, 1, RPT_KMEDOIDS_MAX, &v) < 0)
			return usage_error("--size wants a number of problems (1 to "
					   STR(RPT_KMEDOIDS_MAX) "), got '%s'", arg);
		o->size = (int)v;
		break;
	case 'O': o->out = arg; break;
	case 'I': o->shard_id = arg; break;
	case 'A':
		if (kb_parse_int(arg, 1, 10000, &v) < 0)
			return usage_error("--add-shards wants a number of shards (1 to 10000), "
					   "got '%s'", arg);
		o->add_shards = (int)v;
		break;
	case 'X': o->harvest = true; break;
	case 'E':
		if (kb_parse_int(arg, 0, LONG_MAX, &v) < 0)
			return usage_error("--seed wants a non-negative integer, got '%s'", arg);
		o->seed = v;
		o->seed_set = true;
		break;
	case 'a':
		if (o->naccept >= MAX_SETS)
			return usage_error("too many --accept options (%s)", arg);
		o->accept[o->naccept++] = arg;
		break;
	case 's':
		if (o->nsets >= MAX_SETS)
			return usage_error("too many --set options (%s)", arg);
		if (strchr(arg, '=') == NULL)
			return usage_error("--set wants key=value, got '%s'", arg);
		o->sets[o->nsets++] = arg;
		break;
	}
	return 0;
}

static const struct option all_longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "run-dir", required_argument, NULL, 'd' },
	{ "set", required_argument, NULL, 's' },
	{ "detach", no_argument, NULL, 'D' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "progress-interval", required_argument, NULL, 'i' },
	{ "json", no_argument, NULL, 'j' },
	{ "profile", no_argument, NULL, 'r' },
	{ "follow", no_argument, NULL, 'f' },
	{ "device", required_argument, NULL, 'v' },
	{ "problem", required_argument, NULL, 'p' },
	{ "kernel", required_argument, NULL, 'k' },
	{ "timeout", required_argument, NULL, 't' },
	{ "fresh", no_argument, NULL, 'F' },
	{ "accept", required_argument, NULL, 'a' },
	{ "csv", no_argument, NULL, 'c' },
	{ "html", required_argument, NULL, 'H' },
	{ "svg", required_argument, NULL, 'S' },
	{ "port", required_argument, NULL, 'P' },
	{ "bind", required_argument, NULL, 'B' },
	{ "reference", no_argument, NULL, 'R' },
	{ "size", required_argument, NULL, 'N' },
	{ "out", required_argument, NULL, 'O' },
	{ "seed", required_argument, NULL, 'E' },
	{ "harvest", no_argument, NULL, 'X' },
	{ "id", required_argument, NULL, 'I' },
	{ "add-shards", required_argument, NULL, 'A' },
	{ NULL, 0, NULL, 0 },
};

/* Each command accepts only its own options; the rest are refused by name. */
static int
parse_for(int argc, char **argv, const char *allowed, struct run_opts *o, char ***rest,
	  int *nrest)
{
	struct option	opts[sizeof(all_longopts) / sizeof(all_longopts[0])];
	int		n = 0, rc;

	for (const struct option *p = all_longopts; p->name != NULL; p++)
		if (p->val == 'h' || strchr(allowed, p->val) != NULL)
			opts[n++] = *p;
	memset(&opts[n], 0, sizeof(opts[n]));
	rc = parse(argc, argv, strchr(allowed, 'f') ? "hf" : "h", opts, on_opt, o, rest, nrest);
	return rc;
}

#define PARSE_OR_RETURN(allowed)                                            \
	do {                                                                \
		int prc_ = parse_for(argc, argv, allowed, &o, &rest, &nrest); \
		if (prc_ >= 1000)                                           \
			return 0;                                           \
		if (prc_ != 0)                                              \
			return prc_;                                        \
	} while (0)

/* run and resume: supervise an opened run with the options given, then close it. */
static int
supervise(struct orch_run *run, const struct run_opts *o)
{
	struct orch_sup_opts	sopts = { 0 };
	int			rc;

	sopts.detach = o->detach;
	sopts.quiet = o->quiet;
	sopts.progress_interval_s = o->progress_interval;
	rc = orch_slurm_engine(&run->cfg) ? orch_slurm_launch(run, &sopts, o->add_shards) :
	     orch_supervise(run, &sopts);
	orch_run_clear(run);
	return rc;
}

static int
cmd_run(int argc, char **argv)
{
	struct run_opts		o = { 0 };
	struct orch_run		run;
	char			err[1024], **rest;
	int			nrest;

	PARSE_OR_RETURN("dsDqi");
	if (nrest != 1)
		return usage_error("wants exactly one CONFIG%s", nrest > 1 ? " (extra arguments)" : "");
	if (orch_run_create(&run, rest[0], o.run_dir, o.sets, o.nsets, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 2;
	}
	return supervise(&run, &o);
}

/* `kforge run` of CONFIG as a red-team run: the supervisor harvests at the end, as it
 * does for any run whose config says so. */
static int
cmd_redteam(int argc, char **argv)
{
	struct run_opts		o = { 0 };
	struct orch_run		run;
	char			err[1024], **rest;
	int			nrest;

	PARSE_OR_RETURN("dsDqiX");
	if (o.harvest) {
		if (o.run_dir != NULL || o.nsets > 0 || o.detach || o.progress_interval > 0)
			return usage_error("--harvest takes the run directory alone%s", "");
		if (nrest != 1)
			return usage_error("--harvest wants exactly one run directory%s", "");
		return orch_cmd_redteam_harvest(rest[0], o.quiet);
	}
	if (nrest != 1)
		return usage_error("wants exactly one CONFIG%s", nrest > 1 ? " (extra arguments)" : "");
	/* last, so that no --set makes it an ordinary run */
	if (o.nsets >= MAX_SETS)
		return usage_error("too many --set options%s", "");
	o.sets[o.nsets++] = "redteam.enabled=true";
	if (orch_run_create(&run, rest[0], o.run_dir, o.sets, o.nsets, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 2;
	}
	return supervise(&run, &o);
}

static int
cmd_resume(int argc, char **argv)
{
	struct run_opts		o = { 0 };
	struct orch_run		run;
	char			err[1024], **rest;
	int			nrest;

	PARSE_OR_RETURN("sDqiA");
	if (nrest != 1)
		return usage_error("wants exactly one run directory%s", "");
	if (orch_run_open(&run, rest[0], err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 2;
	}
	if (o.add_shards > 0 && !orch_slurm_engine(&run.cfg)) {
		orch_run_clear(&run);
		return usage_error("--add-shards: %s is not a Slurm run (cluster.engine local)",
				   rest[0]);
	}
	if (o.nsets > 0 && orch_run_supervisor_pid(run.dir) == 0 &&
	    orch_run_override(&run, o.sets, o.nsets, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		orch_run_clear(&run);
		return 2;
	}
	if (orch_run_supervisor_pid(run.dir) != 0) {
		fprintf(stderr, "kforge: a supervisor is already running on %s\n", run.dir);
		orch_run_clear(&run);
		return 1;
	}
	return supervise(&run, &o);
}

/* status and report: one run directory, optionally as JSON. */
static int
cmd_view(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	char		**rest;
	int		nrest;

	PARSE_OR_RETURN("j");
	if (nrest != 1)
		return usage_error("wants exactly one run directory%s", "");
	return current->view(rest[0], o.json);
}

static int
cmd_report(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	char		**rest;
	int		nrest;

	PARSE_OR_RETURN("jacHS");
	o.accept[o.naccept] = NULL;
	if (o.csv || o.html != NULL || o.svg != NULL) {
		struct rpt_files out = { o.csv, o.html, o.svg };

		if (o.json)
			return usage_error("--json prints the report alone; leave it out with "
					   "--csv, --html or --svg%s", "");
		if (nrest < 1)
			return usage_error("wants at least one run directory%s", "");
		return orch_cmd_report_files((const char *const *)rest, nrest, o.accept, &out);
	}
	if (nrest < 1)
		return usage_error("wants at least one run directory%s", "");
	if (nrest > 1)
		return orch_cmd_compare((const char *const *)rest, nrest, o.json, o.accept);
	return orch_cmd_report(rest[0], o.json, o.accept);
}

static int
cmd_subset(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	char		**rest;
	int		nrest;

	PARSE_OR_RETURN("NOE");
	if (nrest < 1)
		return usage_error("wants at least one run directory%s", "");
	if (o.size == 0)
		return usage_error("wants --size N, the number of problems to choose%s", "");
	if (o.out == NULL)
		return usage_error("wants --out FILE, where the subset goes%s", "");
	return orch_cmd_subset((const char *const *)rest, nrest, o.size, o.out,
			       o.seed_set ? (uint64_t)o.seed : 1);
}

static int
cmd_viewer(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	char		**rest;
	int		nrest;

	o.port = RPT_VIEW_PORT;
	o.bind = "127.0.0.1";
	PARSE_OR_RETURN("PB");
	if (nrest != 1)
		return usage_error("wants exactly one run directory%s", "");
	return orch_cmd_viewer(rest[0], o.bind, o.port);
}

static int
cmd_tail(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	char		**rest;
	int		nrest;

	PARSE_OR_RETURN("f");
	if (nrest < 1 || nrest > 2)
		return usage_error("wants a run directory and at most one TASK%s", "");
	return orch_cmd_tail(rest[0], nrest == 2 ? rest[1] : NULL, o.follow);
}

static int
cmd_stop(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	struct orch_run	run;
	char		**rest, err[1024];
	int		nrest, rc;

	o.timeout = 600;
	PARSE_OR_RETURN("t");
	if (nrest != 1)
		return usage_error("wants exactly one run directory%s", "");
	/* A Slurm run nobody follows: Slurm is asked directly. */
	if (orch_run_supervisor_pid(rest[0]) == 0 && orch_run_open(&run, rest[0], err,
								 sizeof(err)) == 0) {
		bool slurm = orch_slurm_engine(&run.cfg);

		orch_run_clear(&run);
		if (slurm) {
			if ((rc = orch_slurm_cancel(rest[0], false, err, sizeof(err))) < 0)
				fprintf(stderr, "kforge: %s\n", err);
			else
				printf("kforge: asked Slurm to stop the shards (each stops at a turn's "
				       "boundary); 'kforge status %s' shows them\n", rest[0]);
			return rc < 0 ? 1 : 0;
		}
	}
	return orch_cmd_stop(rest[0], o.timeout);
}

/* One element of a Slurm run's job array (what its sbatch script runs). */
static int
cmd_shard(int argc, char **argv)
{
	struct run_opts		o = { 0 };
	struct orch_sup_opts	sopts = { 0 };
	char			**rest;
	int			nrest;

	PARSE_OR_RETURN("I");
	if (nrest != 1)
		return usage_error("wants exactly one run directory%s", "");
	return orch_shard_main(rest[0], o.shard_id, &sopts);
}

static bool
device_ok(const char *device)
{
	return device == NULL || strcmp(device, "cpu") == 0 || strcmp(device, "cuda") == 0 ||
	       strcmp(device, "auto") == 0;
}

static int
cmd_eval(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	char		**rest;
	int		nrest;

	PARSE_OR_RETURN("pkvsjr");
	if (o.problem == NULL || o.kernel == NULL)
		return usage_error("needs --problem and --kernel%s", "");
	if (nrest != 0)
		return usage_error("unexpected argument '%s'", rest[0]);
	if (!device_ok(o.device))
		return usage_error("--device is cpu, cuda or auto, not '%s'", o.device);
	/* --profile is P in the feedback, as a run's config says it; a later --set wins. */
	if (o.profile) {
		if (o.nsets >= MAX_SETS)
			return usage_error("too many --set options with --profile%s", "");
		memmove(&o.sets[1], &o.sets[0], (size_t)o.nsets * sizeof(o.sets[0]));
		o.sets[0] = "refinement.feedback=[G, E, P]";
		o.nsets++;
	}
	return orch_cmd_eval(o.problem, o.kernel, o.device, o.sets, o.nsets, o.json);
}

/* Inside an agent's workspace: a kernel sent to the run's worker, which evaluates and
 * records it (llm/agent.c serves the call). */
static int
cmd_tool(int argc, char **argv)
{
	struct run_opts	 o = { 0 };
	json_t		*answer = NULL;
	char		**rest, *code = NULL, err[512];
	size_t		 len = 0;
	int		 nrest, rc;

	/* What the worker runs its agent through: the sandbox, then the agent. */
	if (argc >= 4 && strcmp(argv[1], "confine") == 0 && strcmp(argv[3], "--") == 0) {
		char	report[512];

		if (kforge_sandbox_apply(argv[2], report, sizeof(report)) < 0) {
			fprintf(stderr, "kforge tool confine: %s\n", report);
			return 126;
		}
		if (argc < 5 || argv[4][0] != '/') {
			fprintf(stderr, "kforge tool confine: wants a program's absolute path\n");
			return 2;
		}
		execv(argv[4], argv + 4);
		fprintf(stderr, "kforge tool confine: %s: %s\n", argv[4], strerror(errno));
		return 127;
	}
	PARSE_OR_RETURN("");
	if (nrest != 2 || strcmp(rest[0], "eval") != 0)
		return usage_error("wants eval and one KERNEL file%s", "");
	if ((rc = kb_read_file(rest[1], FSM_MAX_SOURCE, &code, &len)) < 0) {
		fprintf(stderr, "kforge tool: %s: %s\n", rest[1], kb_strerror(rc));
		return 2;
	}
	rc = llm_agent_tool_call("eval", code, len, &answer, err, sizeof(err));
	free(code);
	if (rc < 0) {
		fprintf(stderr, "kforge tool: %s\n", err);
		return rc == -KB_ECONFIG ? 2 : 1;
	}
	json_dumpf(answer, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("\n");
	rc = json_object_get(answer, "error") != NULL ? 1 : 0;
	if (rc != 0)
		fprintf(stderr, "kforge tool: %s\n", json_string_value(json_object_get(answer,
			"error")) ?: "refused");
	json_decref(answer);
	return rc;
}

static int
cmd_baseline(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	char		**rest;
	int		nrest;

	PARSE_OR_RETURN("s");
	if (nrest != 1)
		return usage_error("wants exactly one CONFIG%s", nrest > 1 ? " (extra arguments)" : "");
	return orch_cmd_baseline(rest[0], o.sets, o.nsets);
}

static int
cmd_config(int argc, char **argv)
{
	struct run_opts	 o = { 0 };
	struct orch_run	 run;
	json_t		*gpus;
	char		 err[1024], **rest;
	int		 nrest, rc;

	PARSE_OR_RETURN("sR");
	if (o.reference) {
		if (nrest > 0 || o.nsets > 0)
			return usage_error("--reference takes no CONFIG and no --set%s", "");
		return orch_config_reference(stdout) < 0 ? 1 : 0;
	}
	if (nrest != 1)
		return usage_error("wants exactly one CONFIG%s", nrest > 1 ? " (extra arguments)" : "");
	/* what `kforge run` checks before it freezes the config, the same way */
	if (orch_run_prepare(&run, rest[0], o.sets, o.nsets, &gpus, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 2;
	}
	rc = orch_config_emit(&run.cfg, stdout);
	json_decref(gpus);
	orch_run_clear(&run);
	return rc < 0 ? 2 : 0;
}

static int
cmd_doctor(int argc, char **argv)
{
	struct run_opts	o = { 0 };
	char		**rest;
	int		nrest;

	PARSE_OR_RETURN("vjF");
	if (nrest > 1)
		return usage_error("wants at most one CONFIG, got '%s' too", rest[1]);
	if (!device_ok(o.device))
		return usage_error("--device is cpu, cuda or auto, not '%s'", o.device);
	return orch_cmd_doctor(nrest == 1 ? rest[0] : NULL, o.device, o.json, o.fresh);
}

/* What kforge is, in the overview and as the manual page's NAME line. */
static const char about[] = "runs LLM-driven GPU-kernel refinement experiments (KernelBench style)";

static void
print_overview(FILE *fp)
{
	fprintf(fp, "usage: kforge COMMAND [ARGS]\n\n"
		"kforge %s.\n\n"
		"commands:\n", about);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(fp, "  kforge %s\n", commands[i].usage);
	fprintf(fp, "\n'kforge COMMAND --help' describes one command; 'kforge --version' prints\n"
		"the version; 'kforge --man [FILE]' writes the manual page kforge.1.\n");
}

/* Text for roff: a backslash escaped, a hyphen a minus (options are typed so), and a
 * line that would start with a control character made plain. */
static void
man_text(FILE *fp, const char *text)
{
	bool	line_start = true;

	for (const char *p = text; *p != '\0'; p++) {
		if (line_start && (*p == '.' || *p == '\''))
			fputs("\\&", fp);
		line_start = *p == '\n';
		if (*p == '\\')
			fputs("\\e", fp);
		else if (*p == '-')
			fputs("\\-", fp);
		else
			fputc(*p, fp);
	}
	if (!line_start)
		fputc('\n', fp);
}

/* A command's table-made help (more_help), which is laid out in columns: kept as it is. */
static int
man_more_help(FILE *fp, const struct command *c)
{
	char	*text = NULL;
	size_t	 len = 0;
	FILE	*mem = open_memstream(&text, &len);

	if (mem == NULL)
		return -1;
	c->more_help(mem);
	if (fclose(mem) != 0) {
		free(text);
		return -1;
	}
	fputs(".PP\n.nf\n", fp);
	man_text(fp, text[0] == '\n' ? text + 1 : text);
	fputs(".fi\n", fp);
	free(text);
	return 0;
}

/* The manual page, from the table of commands that --help prints: one home for both. */
static int
write_man(FILE *fp)
{
	fprintf(fp, ".\\\" kforge.1: made by 'kforge --man' from the commands' table in "
		"orchestrator/cli.c; edit that, not this.\n"
		".TH KFORGE 1 \"\" \"kforge %s\" \"kforge manual\"\n.nh\n.ad l\n"
		".SH NAME\nkforge \\- ", KFORGE_VERSION);
	man_text(fp, about);
	fputs(".SH SYNOPSIS\n.nf\n", fp);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		fputs("\\fBkforge\\fR ", fp);
		man_text(fp, commands[i].usage);
	}
	fputs("\\fBkforge\\fR \\-\\-version\n\\fBkforge\\fR \\-\\-man [FILE]\n.fi\n"
	      ".SH DESCRIPTION\nkforge ", fp);
	man_text(fp, about);
	fputs(".PP\nEvery command takes \\fB\\-\\-help\\fR, which prints its section below.\n"
	      "\\fB\\-\\-version\\fR prints kforge's version.\n.SH COMMANDS\n", fp);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		fprintf(fp, ".SS %s\n.nf\n\\fBkforge\\fR ", commands[i].name);
		man_text(fp, commands[i].usage);
		fputs(".fi\n.PP\n", fp);
		man_text(fp, commands[i].help);
		if (commands[i].more_help != NULL && man_more_help(fp, &commands[i]) < 0)
			return -1;
	}
	fputs(".SH SEE ALSO\nREADME.md in kforge's source, for a tour; "
	      "\\fBkforge config \\-\\-reference\\fR, for every config key.\n", fp);
	return ferror(fp) ? -1 : 0;
}

/* kforge --man [FILE]: the page on standard output, or into FILE whole or not at all
 * (the build makes build/kforge.1 so). */
static int
cmd_man(int argc, char **argv)
{
	char	*text = NULL;
	size_t	 len = 0;
	FILE	*mem;
	int	 rc;

	if (argc > 3) {
		fprintf(stderr, "kforge --man: wants at most one FILE\nusage: kforge --man [FILE]\n");
		return 2;
	}
	if (argc < 3)
		return write_man(stdout) < 0 || fflush(stdout) != 0 ? 1 : 0;
	if ((mem = open_memstream(&text, &len)) == NULL)
		return 1;
	rc = write_man(mem);
	if (fclose(mem) != 0)
		rc = -1;
	if (rc == 0 && (rc = kb_write_atomic(argv[2], text, len)) < 0)
		fprintf(stderr, "kforge --man: cannot write %s: %s\n", argv[2], kb_strerror(rc));
	free(text);
	return rc < 0 ? 1 : 0;
}

/*
 * kforge --list WHAT: one of the lists kforge keeps once, one item a line, for tools and
 * tests that must agree with them (tools/stage_times.py, tests/feedback_flags.py):
 * providers (llm.provider's values), states, stages ("NAME slot|no-slot"), flags
 * ("flag<TAB>verdict<TAB>meaning"; verdict "none" where it leaves the verdict alone).
 */
static int
cmd_list(int argc, char **argv)
{
#define LIST_STATE(n)		puts(#n);
#define LIST_STAGE(n, slot)	printf("%s %s\n", #n, (slot) ? "slot" : "no-slot");
	const char	*flag, *message;
	enum fb_verdict	 v;

	if (argc != 3) {
		fprintf(stderr, "usage: kforge --list providers|states|stages|flags\n");
		return 2;
	}
	if (strcmp(argv[2], "providers") == 0) {
		for (const char *const *p = llm_provider_names(); *p != NULL; p++)
			puts(*p);
	} else if (strcmp(argv[2], "states") == 0) {
		RD_TASK_STATES(LIST_STATE)
	} else if (strcmp(argv[2], "stages") == 0) {
		RD_TASK_STAGES(LIST_STAGE)
	} else if (strcmp(argv[2], "flags") == 0) {
		for (size_t i = 0; fb_flag_rule(i, &flag, &v, &message) == 0; i++)
			printf("%s\t%s\t%s\n", flag, v == FB_VERDICT_CORRECT ? "none" :
			       fb_verdict_name(v), message);
	} else {
		fprintf(stderr, "kforge --list: no list '%s' (providers, states, stages, flags)\n",
			argv[2]);
		return 2;
	}
	return 0;
#undef LIST_STATE
#undef LIST_STAGE
}

int
orch_main(int argc, char **argv)
{
	if (argc < 2) {
		print_overview(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		print_overview(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("kforge %s\n", KFORGE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--man") == 0)
		return cmd_man(argc, argv);
	if (strcmp(argv[1], "--list") == 0)
		return cmd_list(argc, argv);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			current = &commands[i];
			return commands[i].run(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "kforge: unknown command '%s'\n", argv[1]);
	print_overview(stderr);
	return 2;
}
