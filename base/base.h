/*
 * base.h: the pieces every kforge module shares — error codes, the operational log,
 * bounded buffers, time, hashing, durable file writes, the trajectory log, child
 * spawning and the resolved experiment configuration.
 *
 * Lifecycle: nothing here keeps global state except the log prefix/destination
 * (kb_log_init) and the crash-point name read from KFORGE_CRASHPOINT.
 * Ownership: functions borrow their inputs; buffers and strings they return belong
 * to the caller (free with free(), kb_buf_clear() or the matching _clear()).
 * Processes: everything here is safe in the supervisor, a worker, or a CLI command.
 */
#ifndef KFORGE_BASE_H
#define KFORGE_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* ---------------------------------------------------------------- errors */

/* One list of error codes; the second column says whether retrying may help. */
#define KB_ERRORS(X)                                                            \
	X(NOMEM,      TRANSIENT, "out of memory")                               \
	X(SYS,        TRANSIENT, "system call failed")                          \
	X(TIMEDOUT,   TRANSIENT, "deadline exceeded")                           \
	X(AGAIN,      TRANSIENT, "resource busy, try again")                    \
	X(LLM_HTTP,   TRANSIENT, "LLM endpoint error")                          \
	X(LLM_REPLY,  TRANSIENT, "LLM reply could not be understood")           \
	X(LLM_AUTH,   PERMANENT, "LLM endpoint refused the credentials")        \
	X(LLM_REQUEST,PERMANENT, "LLM endpoint rejected the request")           \
	X(TOOBIG,     PERMANENT, "input exceeds its size cap")                  \
	X(CONFIG,     PERMANENT, "invalid configuration")                       \
	X(CORRUPT,    PERMANENT, "corrupt record")                              \
	X(NOENT,      PERMANENT, "not found")                                   \
	X(EXEC,       PERMANENT, "cannot execute program")                      \
	X(INVAL,      PERMANENT, "invalid argument")                            \
	X(NOSPC,      PERMANENT, "no space left on device")                     \
	X(STOPPED,    PERMANENT, "stop requested")                              \
	X(NOPYTHON,   PERMANENT, "no Python interpreter that imports torch")    \
	X(PERM,       PERMANENT, "not permitted")                               \
	X(BUG,        PERMANENT, "internal error")

#define KB_ENUM_(name, cls, msg) KB_E##name,
enum kb_err { KB_OK, KB_ERRORS(KB_ENUM_) KB_E_MAX };
#undef KB_ENUM_

const char *kb_strerror(int err);	/* accepts err or -err */
bool	kb_err_transient(int err);	/* accepts err or -err */
int	kb_errno_to_err(int errnum);	/* ENOSPC -> KB_ENOSPC, ENOENT -> KB_ENOENT, else KB_ESYS */

/* Worker exit codes: the supervisor's restart policy reads them. */
enum {
	KB_EXIT_DONE = 0,	/* task reached DONE or FAILED; never restart */
	KB_EXIT_NOSPC = 74,	/* the run's disk is full: stop the run, resume once freed */
	KB_EXIT_TEMPFAIL = 75,	/* transient: restart and resume */
	KB_EXIT_CONFIG = 78,	/* permanent: never restart */
};

/* ------------------------------------------------------------------ log */

enum kb_log_level { KB_LOG_DEBUG, KB_LOG_INFO, KB_LOG_WARN };

/* prefix appears in brackets on every line, e.g. "sup" or "task L1_19_ReLU_s0". fd is
 * where lines go (stderr in the foreground, supervisor.log when detached). */
void	kb_log_init(const char *prefix, int fd);
void	kb_log_set_level(enum kb_log_level level);
void	kb_log_tee(int fd);	/* also write every line to fd (-1: stop) */
/* Hands each whole line (newline included) to fn instead of writing it to the log's fd,
 * so that whoever else draws on that terminal (the foreground progress display) can
 * make room for it; the tee is written as before. NULL: back to plain writes.
 * kb_log_init clears it, so a forked worker never calls its parent's writer. */
typedef void (*kb_log_writer_fn)(const char *line, size_t n, void *arg);
void	kb_log_set_writer(kb_log_writer_fn fn, void *arg);
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));	/* appends strerror(errno) */

/* Crash-point hook for fault-injection tests: when KFORGE_CRASHPOINT equals name,
 * the process _exit()s with status 99 (or is SIGKILLed with KFORGE_CRASHSIGNAL=9).
 * Narrowed by KFORGE_CRASHTASK=ID (only the worker of that task, see
 * kb_crashpoint_task), KFORGE_CRASHSKIP=N (pass the point N times in this process
 * first) and KFORGE_CRASHONCE=FILE (only the process that creates FILE, which gets its
 * pid: at most once across restarts); KFORGE_CRASHDELAY_MS=MS waits before dying, so
 * that a runner just started is mid-work when its worker dies. */
void	kb_crashpoint(const char *name);
/* The same decision without dying, for points that first leave half-done work behind:
 * true when the point fires now, and then the caller ends with kb_crashpoint_die(). */
bool	kb_crashpoint_due(const char *name);
void	kb_crashpoint_die(void) __attribute__((noreturn));
/* Names this process as the worker of task id, for KFORGE_CRASHTASK. */
void	kb_crashpoint_task(const char *id);

/* --------------------------------------------------------------- buffers */

/* A growable byte buffer that refuses to grow past cap (0 = KB_BUF_DEFAULT_CAP).
 * Always NUL-terminated after any successful append. */
#define KB_BUF_DEFAULT_CAP (64u << 20)
struct kb_buf {
	char	*p;
	size_t	 len, alloc, cap;
	bool	 truncated;	/* a kb_buf_append_trunc() dropped bytes */
};
#define KB_BUF_INIT(capacity) { NULL, 0, 0, (capacity), false }
int	kb_buf_append(struct kb_buf *b, const void *data, size_t n);	/* -KB_ETOOBIG at cap */
void	kb_buf_append_trunc(struct kb_buf *b, const void *data, size_t n); /* keeps what fits */
int	kb_buf_printf(struct kb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void	kb_buf_clear(struct kb_buf *b);
char	*kb_buf_steal(struct kb_buf *b);	/* returns p (never NULL), resets b */

/* ---------------------------------------------------------- time, hash, str */

int64_t	kb_now_ms(void);	/* CLOCK_REALTIME, milliseconds */
int64_t	kb_mono_ms(void);	/* CLOCK_MONOTONIC, milliseconds */
void	kb_iso8601(int64_t ms, char out[32]);	/* "2026-11-22T01:02:03.456Z" */
void	kb_sha256_hex(const void *data, size_t n, char out[65]);
/* FNV-1a of n bytes from h: a quick, stable fingerprint (not a cryptographic one), chained
 * over several pieces; start from KB_FNV1A_START. */
#define KB_FNV1A_START	1469598103934665603ULL
uint64_t kb_fnv1a(uint64_t h, const void *data, size_t n);
/* This build of kforge: the executable's GNU build id (the linker's digest of it) in hex,
 * for what is computed from a run and kept beside it only as long as the code that
 * computed it runs; -KB_ENOENT where it was linked without one. */
int	kb_self_build_id(char *out, size_t n);
char	*kb_strdup(const char *s);	/* NULL-safe; aborts on OOM (small strings only) */
char	*kb_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));	/* aborts on OOM */
int	kb_parse_int(const char *s, long lo, long hi, long *out);	/* whole string or -KB_EINVAL */

/* ---------------------------------------------------------------- files */

int	kb_mkdir_p(const char *path, mode_t mode);
/* Removes path and everything below it, depth first, following no link; what cannot be
 * removed stays. 0, or the first failure (a vanished entry is none). */
int	kb_rmtree(const char *path);
/* tmp in the same directory -> write -> fsync -> rename -> fsync(dir). */
int	kb_write_atomic(const char *path, const void *data, size_t n);
/* All n bytes to fd, again after an interrupted write; -1 (errno set) where a write fails. */
int	kb_write_all(int fd, const void *data, size_t n);
/* ------------------------------------------------------------- processes */

/* The fields kforge reads from a process's /proc/<pid>/stat line. */
struct kb_proc_stat {
	pid_t		pid, ppid, pgrp;
	char		state;		/* R, S, D, Z, X, ... */
	uint64_t	start;		/* clock ticks since boot: tells a reused pid apart */
	long long	rss_pages;
};
/* 0, or -1 when the process is gone or its line cannot be read. */
int	kb_proc_stat(pid_t pid, struct kb_proc_stat *out);

/* Removes the "<name>.tmp.<pid>" files a process killed inside kb_write_atomic left in
 * dir (not below it), skipping this process's own; returns how many, or < 0. Call it
 * only where no other live process writes (a task's dirs under the task's lock). */
int	kb_sweep_atomic_tmp(const char *dir);
int	kb_write_atomic_json(const char *path, json_t *obj);	/* pretty, trailing newline */
bool	kb_json_has_string(const json_t *array, const char *s);	/* NULL or a non-array: false */
/* Read a whole file, refusing files over cap bytes (-KB_ETOOBIG). *out is NUL-terminated. */
int	kb_read_file(const char *path, size_t cap, char **out, size_t *len);
bool	kb_file_exists(const char *path);
/* Whether the filesystem holding path is (all but) full: under 16 MiB or 1% free. A
 * child's failure that mentions ENOSPC is the disk's fault only when this is true. */
bool	kb_fs_nearly_full(const char *path);
int	kb_path_join(char *out, size_t outlen, const char *a, const char *b);	/* -KB_ETOOBIG */
/* The executable that a search of $PATH finds for a bare name, as execvp would (kb_spawn_run
 * does no search). 0 with its path in out, or -KB_ENOENT. */
int	kb_which(const char *name, char *out, size_t outlen);

/* --------------------------------------------------------- trajectory log */

/* The append-only per-task log of docs/DESIGN.md §1. One writer: the task's worker. */
struct kb_tlog;
struct kb_tlog_rec {
	int64_t	 seq;
	char	 ts[32];
	char	*task;
	int	 turn;
	char	*from, *event, *to;
	json_t	*data;	/* owned; may be an empty object */
};
/* Opens (creating) path, replays every whole record through cb (may be NULL), drops a
 * torn or corrupt tail with a warning (truncating the file), then positions for append.
 * A corrupt record ends the log even when whole records follow it (they cannot be
 * chained without it): what is dropped is first appended to path.dropped and fsync'd,
 * so nothing is destroyed. *dropped_bytes (may be NULL) says how much was dropped. */
typedef int (*kb_tlog_replay_fn)(const struct kb_tlog_rec *rec, void *arg);
int	kb_tlog_open(struct kb_tlog **out, const char *path, kb_tlog_replay_fn cb, void *arg,
		     int64_t *dropped_bytes);
/* Appends one line (seq = last + 1, ts = now) and fdatasyncs it. data is borrowed. */
int	kb_tlog_append(struct kb_tlog *log, const char *task, int turn, const char *from,
		       const char *event, const char *to, json_t *data);
int64_t	kb_tlog_last_seq(const struct kb_tlog *log);
void	kb_tlog_close(struct kb_tlog *log);
/* Read-only replay for readers (status, tail, report): never truncates. A torn tail is
 * skipped silently. Returns the number of records or a negative error. */
int	kb_tlog_read(const char *path, kb_tlog_replay_fn cb, void *arg);
int	kb_tlog_parse_line(const char *line, size_t n, struct kb_tlog_rec *rec);
void	kb_tlog_rec_clear(struct kb_tlog_rec *rec);

/* ---------------------------------------------------------------- spawn */

/* The one way kforge starts a child: argv/env built before fork, new process group,
 * signal mask and dispositions reset before exec, exec failure reported over a
 * CLOEXEC pipe, PR_SET_PDEATHSIG, rlimits, stdout+stderr captured (merged) up to
 * out_cap bytes, an optional result pipe on fd 3 read up to result_cap bytes, stdin
 * fed from stdin_data, and a deadline after which the group gets SIGTERM and, after
 * grace_ms, SIGKILL. */
enum kb_netns {
	KB_NETNS_SHARED,	/* the parent's network */
	KB_NETNS_NEW,		/* unshare(CLONE_NEWNET): needs CAP_SYS_ADMIN (root) */
	KB_NETNS_USERNS,	/* CLONE_NEWUSER|CLONE_NEWNET, uid and gid mapped to themselves */
};
struct kb_spawn_opts {
	const char *const *argv;	/* argv[0] is a path; no shell, no PATH search */
	const char *const *envp;	/* the complete environment (allow-list built by caller) */
	const char	*cwd;		/* NULL: inherit */
	const char	*stdin_data;	/* NULL: /dev/null */
	size_t		 stdin_len;
	size_t		 out_cap;	/* cap for captured stdout+stderr (0: 1 MiB) */
	bool		 want_result;	/* open fd 3 in the child as a result pipe */
	size_t		 result_cap;	/* cap for fd 3 (0: 16 MiB) */
	/* The child's stderr goes to the result buffer instead (no fd 3), so that out holds
	 * its stdout alone: for a program whose stdout is its answer. */
	bool		 stderr_apart;
	int		 timeout_ms;	/* wall-clock deadline; 0: none */
	int		 grace_ms;	/* SIGTERM -> SIGKILL grace (0: 2000) */
	/* rlimits, 0 = leave as is */
	long		 rlimit_cpu_s, rlimit_nofile, rlimit_nproc;
	long long	 rlimit_fsize;
	bool		 core_dumps;	/* false: RLIMIT_CORE = 0 */
	/* Containment, set up in the child right after setpgid: a network namespace of its
	 * own (only a loopback, down; see kb_netns_probe for which way the host allows),
	 * then, for a root parent, the switch to an unprivileged uid/gid (no supplementary
	 * groups). A step the host refuses fails the spawn (-KB_EEXEC, step named). */
	enum kb_netns	 netns;
	bool		 drop_user;
	uid_t		 uid;
	gid_t		 gid;
	/* The cores the child starts on, [cpu_first, cpu_last) (cpu_last 0: those of the
	 * parent). A placement, not containment: the child may move itself, and a host whose
	 * cpuset refuses the set leaves the child where the parent is. */
	int		 cpu_first, cpu_last;
	/* The child starts under SCHED_IDLE (it runs only on a core nothing else wants),
	 * which kb_sched_normal undoes; a child started ahead of its work (a warm runner)
	 * then takes no time from the processes it waits beside. */
	bool		 sched_idle;
	/* > 0: this descriptor becomes the child's fd 4 (a fork server's socket to this
	 * process: kb_spawn_fork). */
	int		 pass_fd;
	/* The child outlives this process (a fork server others share): a session of its
	 * own, no PDEATHSIG, stdout and stderr on /dev/null, no result pipe; kb_spawn_release
	 * lets go of it. */
	bool		 detach;
	/* Called in the parent once the child's pid is known (e.g. gpool_set_runner). */
	void		(*on_start)(pid_t pid, void *arg);
	void		*on_start_arg;
	/* Polled every ~100 ms while waiting; returning true kills the group and the
	 * call returns -KB_ESTOPPED (e.g. the worker got SIGTERM). */
	bool		(*should_stop)(void *arg);
	void		*should_stop_arg;
	/* A service the child uses while it runs (an agent's tool): while waiting, serve_fd
	 * (a listening socket) is polled too, and serve(serve_fd, serve_arg) called when it
	 * is readable. serve must be bounded: the deadline is checked after it returns. */
	int		 serve_fd;
	void		(*serve)(int fd, void *arg);
	void		*serve_arg;
};

enum kb_spawn_end { KB_END_EXITED, KB_END_SIGNALED, KB_END_TIMEOUT };
struct kb_spawn_result {
	enum kb_spawn_end end;
	int		 exit_code;	/* KB_END_EXITED */
	int		 signo;		/* KB_END_SIGNALED (or the signal that ended a timeout) */
	struct kb_buf	 out;		/* stdout+stderr; out.truncated if the cap was hit */
	struct kb_buf	 result;	/* fd 3 contents */
	int64_t		 wall_ms;
	pid_t		 pid;
	/* A watched child's orphans, as its watcher counted them (a subreaper's, like
	 * fb_strays): killed running, and found dead (killed with the group). */
	int		 strays_running, strays_killed;
};
/* 0 when the child ran (whatever its end), -KB_EEXEC when it could not be started,
 * -KB_ESTOPPED when should_stop fired. r must be cleared with kb_spawn_result_clear(). */
int	kb_spawn_run(const struct kb_spawn_opts *opts, struct kb_spawn_result *r);
void	kb_spawn_result_clear(struct kb_spawn_result *r);
/* kb_spawn_run in two halves, for a child started ahead of its work (a warm runner):
 * kb_spawn_start forks and execs it (argv, envp, cwd, rlimits, containment, the caps
 * and want_result of o; a stdin pipe when o->stdin_data is non-NULL, whatever its
 * length) and returns once exec succeeded (-KB_EEXEC, reaped, when it did not).
 * kb_spawn_finish later hands it o->stdin_data and waits as kb_spawn_run does, with the
 * deadline, on_start and should_stop of o counted from then (wall_ms too); it frees s.
 * kb_spawn_exited says, without waiting, whether the child has ended meanwhile;
 * kb_spawn_discard kills its group, reaps it and frees s. A child that waits must write
 * at most a pipe's capacity (64 KiB) before its finish, or it blocks until then. */
struct kb_spawn;
/* Every thread of pid back to SCHED_OTHER (from sched_idle); -KB_ESYS where one cannot
 * be (the caller lacks CAP_SYS_NICE and RLIMIT_NICE forbids it). */
int	kb_sched_normal(pid_t pid);
int	kb_spawn_start(const struct kb_spawn_opts *o, struct kb_spawn **s);
int	kb_spawn_finish(struct kb_spawn *s, const struct kb_spawn_opts *o,
			struct kb_spawn_result *r);
bool	kb_spawn_exited(struct kb_spawn *s);
/* A child made by a fork server rather than by fork and exec here: a program this
 * process started (kb_spawn_start, pass_fd its end of a socketpair, ctl ours) that, for
 * each message, forks twice and answers the pid of the grandchild, which then leads a
 * process group of its own and, its parent gone, is reparented to this process (which
 * must have set PR_SET_CHILD_SUBREAPER). The pipes o asks for are made here and sent
 * with msg (SCM_RIGHTS: stdin, output, result), so the child is then finished, waited
 * for and killed as one kb_spawn_start made; it keeps the server's environment, limits,
 * containment, cores and scheduling, none of o's. -KB_EEXEC where the server answered
 * no child of this process within timeout_ms. */
int	kb_spawn_fork(int ctl, const struct kb_spawn_opts *o, const char *msg, int timeout_ms,
		      struct kb_spawn **s);
/* The same from a server that outlives this process (one several processes share, over a
 * Unix socket): conn, a connection of this request's alone, becomes the child's watcher's
 * (a process of the server's that forks the child, waits for it, and answers on conn
 * "exit STATUS RUNNING KILLED" with the orphans it killed), and is closed with s, or
 * here on failure. The child is not this process's: it is signalled through conn
 * (a signal number a line), and a closed conn has the watcher kill its group. hold
 * (-1: none) is sent too, for the watcher to keep open till the child and its orphans
 * are gone and never to give the child: one who reads its other end learns so. */
int	kb_spawn_fork_watched(int conn, int hold, const struct kb_spawn_opts *o,
			      const char *msg, int timeout_ms, struct kb_spawn **s);
/* Frees s without touching its child (a detached one, left running). */
void	kb_spawn_release(struct kb_spawn *s);
pid_t	kb_spawn_pid(const struct kb_spawn *s);
void	kb_spawn_discard(struct kb_spawn *s);
/* Which way this host lets a child get a network namespace of its own: KB_NETNS_NEW,
 * else KB_NETNS_USERNS, else KB_NETNS_SHARED with the reason in why. Tries both in a
 * short-lived forked child that execs nothing; this process is not changed. */
enum kb_netns	kb_netns_probe(char *why, size_t whylen);

/* ------------------------------------------------------------- the config */

#define KB_MAX_LEVELS	8	/* problems.levels: 1..KB_MAX_LEVELS (KernelBench has 1-4) */
#define KB_MAX_RANGES	64
#define KB_MAX_DEVICES	64

struct kb_id_range { long lo, hi; };	/* inclusive */

/* The fully resolved experiment configuration (defaults filled in). The loader lives
 * in orchestrator/ (orch_config_load); every module reads this struct. Strings are
 * owned by the struct and freed by kb_config_clear(). */
struct kb_config {
	char	*name;
	struct {
		char	*dir;			/* KernelBench-format root: level{N}/{id}_{Name}.py */
		int	 levels[KB_MAX_LEVELS];
		int	 nlevels;
		struct kb_id_range ids[KB_MAX_RANGES];	/* empty = all */
		int	 nids;
		int	 samples;
		char	*subset;	/* "" or a file of problem keys, one a line */
		/* "" none; "/..." a file of keys; else keys joined by ',' (a key has none) */
		char	*exclude;
		/* Where dir, levels and ids were set, as the config loader's messages
		 * name it ("x.yaml:3:12", "--set problems.ids=7", "x.yaml" for a
		 * default), for the task list's errors; NULL in a hand-made config. */
		char	*dir_at, *levels_at, *ids_at, *subset_at, *exclude_at;
	} problems;
	struct {
		char	*provider;		/* openai | anthropic | command | replay */
		char	*base_url;
		char	*model;
		char	*api_key_env;		/* name of the env var holding the key */
		double	 temperature;
		long	 max_tokens;
		long	 timeout_s;		/* per request */
		long	 retries;		/* transient retries per request */
		long	 concurrency;		/* LLM requests in flight, run-wide */
		long	 max_response_bytes;
		char	*replay_dir;		/* provider replay */
		char	*anthropic_version;	/* provider anthropic: anthropic-version header */
		char	**command;		/* provider command: argv, NULL-terminated; NULL: unset */
		long	 max_completion_tokens;	/* openai: sent instead of max_tokens when > 0 */
		char	*reasoning_effort;	/* openai: "default" (not sent) | none..high */
		double	 price_input_per_mtok;	/* USD per million prompt tokens; 0: not priced */
		double	 price_output_per_mtok;	/* USD per million completion tokens */
		long	 agent_max_tool_calls;	/* provider agent: tool calls per turn */
		long	 agent_timeout_s;	/* provider agent: one turn's wall clock */
	} llm;
	struct {
		long	 turns;
		bool	 feedback_g, feedback_e, feedback_p;
		char	*prompt;		/* one_shot | zero_shot | few_shot */
		char	*prompts_dir;		/* "" = the bundled llm/prompts */
		long	 examples;		/* few_shot: how many example pairs */
		bool	 hardware;		/* a block describing the device in prompts */
		long	 feedback_max_chars;	/* cap on E text */
		bool	 profile_metrics;	/* P on cuda: a second, metrics run */
		long	 profile_metrics_top;	/* ... over this many top kernels */
		/* The search over a task's turns (docs/search.md; fsm/search.c's table). */
		char	*strategy;		/* chain | best_of_n | beam | tree | evolve */
		long	 width;			/* best_of_n's n; beam's children per kept node */
		long	 keep;			/* beam's kept nodes per round; evolve's pool */
		double	 explore;		/* tree: the share of random expansions */
		long	 seed;			/* tree's and evolve's draws (with the task id) */
		struct {			/* per task; 0: no limit */
			long	 requests;	/* LLM requests (attempts) */
			long	 tokens;	/* prompt + completion tokens */
			double	 cost_usd;	/* needs the llm.price_* keys */
			double	 gpu_s;		/* execution-slot seconds (EXECUTE, PROFILE) */
		} budget;
	} refinement;
	struct {
		char	*device;		/* cpu | cuda (auto is resolved before freezing) */
		char	*precision;		/* fp32 | fp16 | bf16 */
		long	 correctness_trials;
		double	 atol, rtol;		/* < 0 means: the precision's default */
		long	 perf_trials;
		long	 warmup;
		long	 seed;
		long	 compile_timeout_s;
		long	 timeout_s;		/* execute deadline */
		char	*arch_list;		/* TORCH_CUDA_ARCH_LIST; "" = detect from the GPUs */
		char	*inputs;		/* "host" (made on the CPU, copied) | "device" */
		char	*format;		/* "load_inline" (KernelBench's) | "raw" */
		char	*backend;		/* what kernels are written in: "cuda" | "triton" */
		char	*torch_ops;		/* PyTorch compute in forward: "warning" | "error" */
		bool	 static_checks;		/* false: no static gate (fb_static_check finds nothing) */
		bool	 baseline_compile;	/* also time the reference under torch.compile */
		bool	 allow_tf32;		/* fp32 on CUDA: TF32 matmuls and convolutions */
		char	*timing;		/* cuda_event | host_time | do_bench (on cuda) */
		bool	 l2_flush;		/* flush the L2 cache before each timed trial */
		long	 timing_hold_us;	/* cuda_event: the GPU spins this long first;
						 * -1: the preset's */
		char	*speedup;		/* the speedup's statistic: auto | mean | median */
		char	*timing_preset;		/* robust | kernelbench (feedback/timing.c) */
	} eval;
	struct {
		bool	 all;
		int	 devices[KB_MAX_DEVICES];
		int	 ndevices;
		bool	 lock_clocks;		/* SM clocks at their maximum for the run */
	} gpus;
	struct {
		char	*python;		/* "" = KFORGE_PYTHON, else probe */
		long	 compile_slots;		/* 0 = cores/2 (at least 1) */
		long	 cpu_exec_slots;	/* device cpu: concurrent executions (default 1) */
		long	 max_host_memory_mb;	/* per runner, its processes' RSS; 0 = half of RAM */
		char	*user;			/* run as this user when root; "" = never switch */
		bool	 isolate_network;	/* own network namespace where the host allows */
		char	*sandbox;		/* strict | best_effort (feedback/contain.c) */
		bool	 selftest;		/* a known-good extension before any request */
		bool	 fast_build;		/* precompiled torch headers (kforge_runner.py) */
		bool	 warm;		/* start each worker's next runner ahead (fb_warm_*) */
		long	 server_idle_s;		/* kforge eval's fork server outlives it this long */
		long	 cache_max_gb;		/* the shared cache's builds, trimmed at start */
		long	 rlimit_cpu_s;		/* 0 = the deadline x max(cores, 4) */
		long	 rlimit_fsize_mb;	/* largest file the runner may write */
		long	 rlimit_nofile;		/* open files */
	} runner;
	struct {
		char	*dir;			/* "" = $KFORGE_CACHE_DIR or the default */
	} cache;
	long	 workers;
	/* Where the supervisors run (orchestrator/slurm.c, orchestrator/claims.c). */
	struct {
		char	*engine;		/* local | slurm */
		long	 shards;		/* the job array's elements */
		char	*partition, *account, *gres, *mem, *time_limit;	/* "" = Slurm's */
		long	 cpus_per_shard;	/* 0 = Slurm's */
		char	**sbatch_args;		/* NULL-terminated; NULL: none */
		bool	 requeue;
		long	 claim_timeout_s;	/* a heartbeat unchanged this long: dead */
	} cluster;
	/* `kforge redteam`: the prompt asks for kernels that fool the evaluator, and the
	 * candidates judged correct (or suspect) at min_speedup or more are kept for review
	 * under the run's redteam/ (orchestrator/redteam.c). */
	struct {
		bool	 enabled;
		double	 min_speedup;
	} redteam;
};
void	kb_config_clear(struct kb_config *c);

/* ----------------------------------------------------------------- tasks */

/* One (problem, sample) pair. id looks like "L1_19_ReLU_s0". problem_path points into
 * the allocation that holds the task array (see orch_tasks_list). */
struct kb_task {
	char	 id[160];
	char	 problem_key[144];	/* "L1_19_ReLU": level and file stem */
	char	 problem_name[128];	/* "19_ReLU" */
	const char *problem_path;
	int	 level;
	long	 problem_id;
	int	 sample;
};

/* Where the bundled data (prompts, runner, problems) lives: $KFORGE_HOME, else the
 * source tree the binary was built from. */
const char *kb_home(void);

#endif /* KFORGE_BASE_H */
