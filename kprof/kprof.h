/* kprof/kprof.h: libkforge_kprof.so, the CUPTI injection library that a runner's PROFILE
 * step (and a selftest on a GPU) loads through CUDA_INJECTION64_PATH (docs/DESIGN.md §6).
 * Its interface to kforge is no C call: the runner is started with the library and the
 * KPROF_* variables (feedback/run.c, kprof_env), the driver calls InitializeInjection
 * during cuInit, and the library writes a JSON profile that feedback/profile.c reads back
 * (the contract in the feedback module's users' hands, notes/kprof_contract.md). No
 * module of kforge links this code or includes this header (tools/check_modules.py):
 * feedback/ only passes the library's path (KFORGE_KPROF_PATH) to the runner.
 *
 * What is declared here are the library's own parts, shared by its three files and by
 * their unit tests (tests/kprof/kprof_core.c, tests/kprof/kprof_host.c):
 *   core.c    the pure parts: the per-kernel table fed with neutral records, the
 *             occupancy arithmetic (cuda_occupancy.h), names (demangle, short name),
 *             metric-set selection, the environment, the bounded JSON writer and the
 *             atomic file write. Needs CUDA/CUPTI *headers* only (enums, the header-only
 *             occupancy calculator), never libcupti or libcuda: CI unit tests feed it.
 *   host.c    the CUPTI Profiler Host API (metric names, config image, pass count): needs
 *             libcupti but no GPU, so a CI test checks the default set on GH100.
 *   inject.c  InitializeInjection, the callbacks, the Activity API and the Range
 *             Profiler: needs a GPU to do anything.
 * Processes: the traced one (a runner, or a CUDA program under test) runs it, and the
 * unit tests call core.c's and host.c's functions directly.
 *
 * Threads: the core is not thread-safe; inject.c holds one mutex around every use. */
#ifndef KFORGE_KPROF_H
#define KFORGE_KPROF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Caps: every table and string fed from the traced process is bounded. */
#define KPROF_MAX_KERNELS 4096      /* distinct (name, grid, block); later ones go to "other" */
#define KPROF_NAME_MAX 2048         /* bytes kept of a mangled or demangled name */
#define KPROF_SHORT_MAX 256         /* bytes of a short name */
#define KPROF_TOP_DEFAULT 20
#define KPROF_TOP_MAX 200
#define KPROF_KERNEL_STREAMS 8      /* streams listed per kernel */
#define KPROF_MAX_STREAMS 64        /* streams in the global list */
#define KPROF_MAX_DEVICES 16
#define KPROF_MAX_METRICS 16
#define KPROF_METRIC_NAME_MAX 128
#define KPROF_MAX_RANGES 64         /* metrics mode: profiled launches in one process */
#define KPROF_MESSAGE_MAX 768
#define KPROF_TARGETS_MAX 4096      /* bytes of KPROF_TARGETS / KPROF_METRICS kept */
#define KPROF_JSON_MAX (16u << 20)  /* the whole document */
#define KPROF_BUFFER_KB_DEFAULT 1024 /* activity buffer; small so a killed run leaves data */
#define KPROF_BUFFER_KB_MIN 16
#define KPROF_BUFFER_KB_MAX 65536
#define KPROF_AVAILABILITY_MAX (1u << 20) /* bytes of a cached counter availability image */

enum kprof_mode { KPROF_MODE_TRACE, KPROF_MODE_METRICS };
enum kprof_gate { KPROF_GATE_PROFILER_API, KPROF_GATE_ALL };

/* One kernel execution, filled by the glue from CUpti_ActivityKernel10 (trace mode) or from
 * a launch callback's parameters (metrics mode, no timestamps). */
struct kprof_kernel_rec {
	const char *name;               /* mangled; not owned */
	uint64_t start, end;            /* ns; both 0: no timestamps */
	int32_t grid[3], block[3];
	uint32_t registers;             /* per thread */
	int32_t static_smem, dynamic_smem;
	uint32_t local_mem;             /* per thread */
	uint32_t stream_id, device_id;
	int shmem_optin;                /* the function opted in to the large smem limit */
	int carveout;                   /* requested smem carveout in %, or -1 */
	uint32_t cluster[3];
	uint32_t max_active_clusters;
};

/* Device facts for the occupancy calculator, from cuDeviceGetAttribute. */
struct kprof_device {
	int valid;
	char name[128];
	int cc_major, cc_minor;
	int sm_count;
	int max_threads_per_block, max_threads_per_sm;
	int regs_per_block, regs_per_sm;
	int warp_size;
	size_t smem_per_block, smem_per_sm, smem_per_block_optin, reserved_smem_per_block;
};

struct kprof_occupancy {
	double theoretical;             /* 0..1 */
	int blocks_per_sm;
	const char *limiter;            /* "registers", "shared_memory", "warps", "blocks", "barriers" */
	int limit_registers, limit_shared_memory, limit_warps, limit_blocks;
};

struct kprof_kernel {
	char *name;                     /* owned copy of the mangled name, at most KPROF_NAME_MAX */
	int name_truncated;
	struct kprof_kernel_rec shape;  /* first sight; shape.name is NULL */
	uint64_t calls, timed_calls, total_ns, min_ns, max_ns;
	uint32_t streams[KPROF_KERNEL_STREAMS];
	unsigned nstreams;
	int streams_more;
	unsigned seq;                   /* order of first sight, for stable ties */
	int target;                     /* metrics mode: -1 unknown, 0 no, 1 yes */
	uint64_t profiled;              /* metrics mode: launches measured */
	uint32_t metrics_mask;          /* bit i: metrics[i] holds a value */
	double metrics[KPROF_MAX_METRICS];
};

struct kprof_totals {
	uint64_t count, bytes, total_ns;
};

struct kprof_stream {
	uint32_t id;
	uint64_t kernels, total_ns;
};

struct kprof_agg {
	struct kprof_kernel *kernels;
	size_t nkernels, kernels_alloc;
	uint32_t *slots;                /* open addressing: kernel index + 1, 0 empty */
	size_t nslots;
	uint64_t launches;              /* every kernel record counted, table full or not */
	uint64_t overflow_calls, overflow_ns; /* records of kernels past KPROF_MAX_KERNELS */
	int table_full;
	uint64_t no_timestamp;          /* kernel records skipped: no usable timestamps */
	struct kprof_totals memcpy, memset, overhead;
	uint64_t dropped;
	struct kprof_stream streams[KPROF_MAX_STREAMS];
	size_t nstreams;
	int streams_more;
	struct kprof_device devices[KPROF_MAX_DEVICES];
};

void kprof_agg_init(struct kprof_agg *agg);
void kprof_agg_free(struct kprof_agg *agg);
/* A timed kernel record: 0 counted in its entry, 1 skipped (a timestamp is 0 or end is
 * before start), 2 counted in "other" (the table is full or out of memory). */
int kprof_agg_kernel(struct kprof_agg *agg, const struct kprof_kernel_rec *rec);
/* The entry of rec's (name, grid, block), created on first sight; NULL when the table is
 * full. Counts nothing. */
struct kprof_kernel *kprof_agg_entry(struct kprof_agg *agg, const struct kprof_kernel_rec *rec);
void kprof_agg_memcpy(struct kprof_agg *agg, uint64_t bytes, uint64_t start, uint64_t end);
void kprof_agg_memset(struct kprof_agg *agg, uint64_t bytes, uint64_t start, uint64_t end);
void kprof_agg_overhead(struct kprof_agg *agg, uint64_t start, uint64_t end);

/* Theoretical occupancy of one launch shape on dev: 0, or -1 when the calculator refuses
 * (unknown device, block larger than the device allows, ...). */
int kprof_occupancy(const struct kprof_device *dev, const struct kprof_kernel_rec *shape,
		    struct kprof_occupancy *out);

/* Names. kprof_demangle writes the demangled name (through __cxa_demangle when the process
 * has libstdc++ loaded) or a copy of the raw one, truncated to cap; returns 1 when it
 * demangled, 0 when it copied. kprof_short_name drops the return type, template arguments
 * and the parameter list: "void at::native::foo<4, F>(int, F)" -> "at::native::foo". */
int kprof_demangle(const char *mangled, char *out, size_t cap);
void kprof_short_name(const char *demangled, char *out, size_t cap);
/* Does a comma list of names (mangled, demangled or short, or the last :: part of a short
 * name) name this kernel? An empty or NULL list names every kernel. */
int kprof_targets_match(const char *targets, const char *mangled, const char *demangled,
			const char *short_name);

/* Metric sets. The default set needs at most two passes on Hopper (checked by
 * unit_kprof_host on GH100). A metric's JSON key is its row's key, or the metric name. */
struct kprof_metric_def {
	const char *name, *key;
};
extern const struct kprof_metric_def kprof_default_metrics[];
extern const size_t kprof_default_metrics_count;
const char *kprof_metric_key(const char *metric);

struct kprof_metric_set {
	size_t count, ndropped;
	char names[KPROF_MAX_METRICS][KPROF_METRIC_NAME_MAX];
	char dropped[KPROF_MAX_METRICS][KPROF_METRIC_NAME_MAX];
	int more_dropped;               /* names dropped past the dropped list's end */
};
/* The override list (comma separated; NULL or blank: the default set), each name kept when
 * supported(name, ctx) says so (NULL: all), the rest listed as dropped. Duplicates, blank
 * items, names of KPROF_METRIC_NAME_MAX bytes or more and items past KPROF_MAX_METRICS are
 * dropped too. */
void kprof_metrics_select(const char *override_list,
			  int (*supported)(const char *metric, void *ctx), void *ctx,
			  struct kprof_metric_set *out);

/* CUptiResult (as an int) -> "not_permitted" | "unsupported" | "error". */
const char *kprof_cupti_status(int cupti_result);

/* The environment (contract: KPROF_OUT, KPROF_MODE, KPROF_GATE, KPROF_TOP, KPROF_TARGETS,
 * KPROF_METRICS; KPROF_BUFFER_KB sizes activity buffers, for tests; KPROF_DEBUG=1 traces
 * the library's steps on stderr, read by inject.c). */
struct kprof_config {
	char out[4096];                 /* expanded: %p -> pid; empty: no output, stay idle */
	enum kprof_mode mode;
	enum kprof_gate gate;
	int top;
	size_t buffer_bytes;
	char targets[KPROF_TARGETS_MAX];
	char metrics[KPROF_TARGETS_MAX];
	/* metrics mode: where counter availability images are kept, one per chip, CUPTI and
	 * driver (KPROF_AVAILABILITY_DIR; "" none), and whether this process may write one
	 * there (KPROF_AVAILABILITY_WRITE=1: kforge's selftest, which runs no candidate) */
	char availability_dir[4096];
	int availability_write;
	char warning[KPROF_MESSAGE_MAX]; /* values that were not understood, "" when none */
};
void kprof_config_from_env(struct kprof_config *cfg, pid_t pid);
/* FNV-1a of n bytes from h (the kernel table's keys, the kept availability image's
 * checksum); start from KPROF_HASH_START. */
#define KPROF_HASH_START 14695981039346656037ull
uint64_t kprof_hash_bytes(uint64_t h, const void *p, size_t n);
/* pattern with %p -> pid and %% -> %; -1 when it does not fit. */
int kprof_expand_path(const char *pattern, pid_t pid, char *out, size_t cap);

/* Everything the JSON says besides the table. */
struct kprof_meta {
	enum kprof_mode mode;
	enum kprof_gate gate;
	int top;
	int complete;
	const char *status;             /* "ok" | "cupti_busy" | "version_mismatch" | ... */
	char message[KPROF_MESSAGE_MAX];
	uint32_t cupti_version, cupti_header_version;
	char holder[80];
	int device;                     /* device described, -1: the first kernel's or 0 */
	/* metrics mode */
	const char *metrics_status;     /* NULL until known */
	const struct kprof_metric_set *metrics;
	size_t metrics_passes;
	char chip[64];
	uint64_t ranges_dropped;
	const char *availability;       /* "cached" | "queried": where the counter availability
					 * image came from; NULL before metrics are set up */
};
void kprof_meta_init(struct kprof_meta *meta, const struct kprof_config *cfg,
		     uint32_t header_version);
/* Appends one clause to meta->message ("; " between clauses, newlines flattened, bounded). */
void kprof_meta_note(struct kprof_meta *meta, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct kprof_buf {
	char *data;
	size_t len, cap;
	int overflow;                   /* a write past KPROF_JSON_MAX was refused */
};
void kprof_buf_free(struct kprof_buf *buf);
/* The JSON document; 0, or -1 when it would exceed KPROF_JSON_MAX or memory ran out. */
int kprof_render(const struct kprof_agg *agg, const struct kprof_meta *meta,
		 struct kprof_buf *out);
/* data to path + ".tmp", then rename over path; fsync first when durable. 0 or -errno. */
int kprof_write_atomic(const char *path, const char *data, size_t len, int durable);

/* The CUPTI Profiler Host API (host.c; libcupti, no GPU): a host object for one chip,
 * the metrics it knows, the config image and pass count of a metric set, and the values
 * decoded from a counter data image. Errors come back as a CUptiResult in *err. */
struct kprof_host;
/* counter_availability (may be NULL) must outlive the host object: CUPTI keeps the pointer
 * and reads it again when metrics are configured (a freed image crashed the process). */
struct kprof_host *kprof_host_open(const char *chip, const uint8_t *counter_availability,
				   int *err);
void kprof_host_close(struct kprof_host *host);
/* A kprof_metrics_select predicate: ctx is the struct kprof_host. */
int kprof_host_metric_ok(const char *metric, void *host);
int kprof_host_configure(struct kprof_host *host, const struct kprof_metric_set *set,
			 int *err);
const uint8_t *kprof_host_config_image(const struct kprof_host *host, size_t *size);
size_t kprof_host_passes(const struct kprof_host *host);
int kprof_host_evaluate(struct kprof_host *host, const uint8_t *counter_data, size_t size,
			size_t range, const struct kprof_metric_set *set, double *values, int *err);
/* libcupti dlopens libnvperf_host.so by bare name when the host API starts; torch's copy of
 * libcupti lives in a directory the loader does not search, so load the one beside the
 * libcupti in use first. Returns 0, or -1 with a reason in why. */
int kprof_host_preload_nvperf(char *why, size_t cap);

#endif
