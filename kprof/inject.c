/* kprof/inject.c: the CUPTI side of libkforge_kprof.so (kprof.h). The driver loads
 * the library through CUDA_INJECTION64_PATH and calls InitializeInjection during cuInit.
 *
 * trace mode: the Activity API (CONCURRENT_KERNEL, MEMCPY, MEMSET, OVERHEAD) enabled between
 * cuProfilerStart and cuProfilerStop (KPROF_GATE=profiler_api) or throughout (all); every
 * completed buffer is folded into the kernel table (core.c) and the JSON rewritten,
 * so a killed runner still leaves a profile; at Stop and at exit the device is synchronised
 * and the buffers force-flushed, and the JSON says complete.
 * metrics mode: the Range Profiler, auto range and kernel replay, started on the ENTER and
 * stopped on the EXIT of one launch of each selected kernel in the window; the counter
 * availability image it needs is read from KPROF_AVAILABILITY_DIR where kept there
 * (availability_path says why and by whom).
 *
 * Nothing here may crash or stop the traced process: every CUPTI or driver failure becomes
 * a status and a message in the JSON (research/cupti.md: busy CUPTI, version mismatch, no
 * counter permission, unsupported device).
 *
 * Locks: g.lock guards the table, the metadata and the file; it is never held across a
 * driver call or an activity flush, because CUPTI may deliver a buffer on this thread from
 * inside those. metrics.lock serialises the range profiler from a launch's ENTER to its EXIT
 * and is only ever taken with trylock, so a launch on another thread never waits on it. */
#include "kprof/kprof.h"

#include <cuda.h>
#include <cupti.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/banned.h"

#define KPROF_EXPORT __attribute__((visibility("default")))

/* How often CUPTI's worker thread hands back full buffers (ms). */
#define KPROF_FLUSH_PERIOD_MS 100
#define KPROF_MAX_CONTEXTS 8
/* Ranges one counter data image holds: one launch is measured per Start/Stop. */
#define KPROF_RANGES_PER_IMAGE 4

static const CUpti_ActivityKind trace_kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_OVERHEAD,
};

enum { FOR_TRACE = 1, FOR_METRICS = 2, FOR_BOTH = 3 };

/* The callbacks each mode needs; gated ones only with KPROF_GATE=profiler_api. */
static const struct {
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	int modes;
	int gate_only;
} callbacks[] = {
	{ CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, FOR_BOTH, 0 },
	{ CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, FOR_BOTH, 0 },
	{ CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR, FOR_BOTH, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, FOR_BOTH, 1 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, FOR_BOTH, 1 },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, FOR_BOTH, 1 },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, FOR_BOTH, 1 },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, FOR_TRACE, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, FOR_METRICS, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, FOR_METRICS, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, FOR_METRICS, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, FOR_METRICS, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	  FOR_METRICS, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	  FOR_METRICS, 0 },
};

/* Device facts for the occupancy calculator. */
#define DEV_INT(attr, field) { attr, offsetof(struct kprof_device, field), 0 }
#define DEV_SIZE(attr, field) { attr, offsetof(struct kprof_device, field), 1 }
static const struct {
	CUdevice_attribute attr;
	size_t offset;
	int is_size;
} device_attrs[] = {
	DEV_INT(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cc_major),
	DEV_INT(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cc_minor),
	DEV_INT(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sm_count),
	DEV_INT(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, max_threads_per_block),
	DEV_INT(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm),
	DEV_INT(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, regs_per_block),
	DEV_INT(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, regs_per_sm),
	DEV_INT(CU_DEVICE_ATTRIBUTE_WARP_SIZE, warp_size),
	DEV_SIZE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, smem_per_block),
	DEV_SIZE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, smem_per_sm),
	DEV_SIZE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, smem_per_block_optin),
	DEV_SIZE(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, reserved_smem_per_block),
};

static struct {
	pthread_mutex_t lock;
	int initialized;                /* InitializeInjection ran */
	int active;                     /* subscribed; callbacks are ours to act on */
	int finished;                   /* the exit handler wrote the last JSON */
	int gate_open, gate_ever_opened;
	int devices_queried;
	int write_failed;
	struct kprof_config cfg;
	struct kprof_agg agg;
	struct kprof_meta meta;
	struct kprof_buf json;
	CUpti_SubscriberHandle subscriber;
	CUcontext contexts[KPROF_MAX_CONTEXTS];
	size_t ncontexts;
	uint64_t buffer_failures;
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct {
	pthread_mutex_t lock;           /* trylock only (see the file comment) */
	int tried, ready, disabled;
	CUcontext ctx;
	struct kprof_host *host;
	uint8_t *availability;          /* the host object keeps a pointer to it */
	CUpti_RangeProfiler_Object *profiler;
	uint8_t *counter_data;
	size_t counter_size;
	struct kprof_metric_set set;
	uint64_t measured;
	int other_context_noted;
} metrics = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* metrics mode: kernel index + 1 of the launch this thread is measuring, 0 none. While it
 * is set, this thread holds metrics.lock. */
static __thread size_t measuring;

/* KPROF_DEBUG=1: each step of the gate, the buffers and metrics mode on stderr. */
static int debug;
#define DEBUG(...)                                                                       \
	do {                                                                             \
		if (debug) {                                                             \
			fprintf(stderr, "kprof[%d]: ", (int)getpid());                   \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
		}                                                                        \
	} while (0)

static const char *
cupti_error(CUptiResult r)
{
	const char *s = NULL;
	if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}

/* With g.lock held. */
static void
write_json_locked(int durable)
{
	if (!g.cfg.out[0])
		return;
	const char *data;
	size_t len;
	char fallback[256];
	if (kprof_render(&g.agg, &g.meta, &g.json) == 0) {
		data = g.json.data;
		len = g.json.len;
	} else {
		int n = snprintf(fallback, sizeof fallback,
				 "{\"source\":\"cupti\",\"complete\":%s,\"status\":\"error\","
				 "\"message\":\"profile larger than %u bytes\"}\n",
				 g.meta.complete ? "true" : "false", KPROF_JSON_MAX);
		data = fallback;
		len = (size_t)n;
	}
	int err = kprof_write_atomic(g.cfg.out, data, len, durable);
	if (err && !g.write_failed) {
		g.write_failed = 1;
		fprintf(stderr, "kprof: cannot write %s: %s\n", g.cfg.out, strerror(-err));
	}
}

static void
note_locked_write(const char *status, const char *what, CUptiResult r)
{
	pthread_mutex_lock(&g.lock);
	if (status)
		g.meta.status = status;
	kprof_meta_note(&g.meta, "%s: %s", what, cupti_error(r));
	write_json_locked(0);
	pthread_mutex_unlock(&g.lock);
}

/* ---------------------------------------------------------------- devices and contexts */

static void
query_devices_once(void)
{
	pthread_mutex_lock(&g.lock);
	int done = g.devices_queried;
	g.devices_queried = 1;
	pthread_mutex_unlock(&g.lock);
	if (done)
		return;

	static struct kprof_device devs[KPROF_MAX_DEVICES];
	int n = 0;
	if (cuDeviceGetCount(&n) != CUDA_SUCCESS)
		n = 0;
	if (n > KPROF_MAX_DEVICES)
		n = KPROF_MAX_DEVICES;
	for (int i = 0; i < n; i++) {
		struct kprof_device *d = &devs[i];
		CUdevice dev;
		memset(d, 0, sizeof *d);
		if (cuDeviceGet(&dev, i) != CUDA_SUCCESS)
			continue;
		d->valid = 1;
		for (size_t a = 0; a < sizeof device_attrs / sizeof device_attrs[0]; a++) {
			int v = 0;
			if (cuDeviceGetAttribute(&v, device_attrs[a].attr, dev) != CUDA_SUCCESS) {
				d->valid = 0;
				continue;
			}
			char *field = (char *)d + device_attrs[a].offset;
			if (device_attrs[a].is_size)
				*(size_t *)(void *)field = (size_t)v;
			else
				*(int *)(void *)field = v;
		}
		if (cuDeviceGetName(d->name, (int)sizeof d->name, dev) != CUDA_SUCCESS)
			snprintf(d->name, sizeof d->name, "unknown");
	}
	pthread_mutex_lock(&g.lock);
	for (int i = 0; i < n; i++)
		g.agg.devices[i] = devs[i];
	pthread_mutex_unlock(&g.lock);
}

static void
remember_context(CUcontext ctx)
{
	pthread_mutex_lock(&g.lock);
	if (g.ncontexts < KPROF_MAX_CONTEXTS)
		g.contexts[g.ncontexts++] = ctx;
	pthread_mutex_unlock(&g.lock);
}

static void
forget_context(CUcontext ctx)
{
	pthread_mutex_lock(&g.lock);
	for (size_t i = 0; i < g.ncontexts; i++)
		if (g.contexts[i] == ctx) {
			g.contexts[i] = g.contexts[--g.ncontexts];
			break;
		}
	pthread_mutex_unlock(&g.lock);
}

/* Best effort: a forced flush of a kernel still running would give it no end time. */
static void
synchronize_contexts(void)
{
	CUcontext ctxs[KPROF_MAX_CONTEXTS];
	pthread_mutex_lock(&g.lock);
	size_t n = g.ncontexts;
	memcpy(ctxs, g.contexts, n * sizeof ctxs[0]);
	pthread_mutex_unlock(&g.lock);
	for (size_t i = 0; i < n; i++) {
		CUcontext popped;
		if (cuCtxPushCurrent(ctxs[i]) != CUDA_SUCCESS)
			continue;
		cuCtxSynchronize();
		cuCtxPopCurrent(&popped);
	}
}

/* ---------------------------------------------------------------- activity buffers */

static void CUPTIAPI
buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	/* CUDA 13 requests buffers per thread: each request gets its own fresh buffer. */
	size_t bytes = g.cfg.buffer_bytes;
	*buffer = aligned_alloc(8, bytes);
	*size = *buffer ? bytes : 0;
	*max_records = 0;
	if (!*buffer) {
		pthread_mutex_lock(&g.lock);
		g.buffer_failures++;
		pthread_mutex_unlock(&g.lock);
	}
}

static void
take_kernel(const CUpti_ActivityKernel10 *k)
{
	struct kprof_kernel_rec r = {
		.name = k->name,
		.start = k->start,
		.end = k->end,
		.grid = { k->gridX, k->gridY, k->gridZ },
		.block = { k->blockX, k->blockY, k->blockZ },
		.registers = k->registersPerThread,
		.static_smem = k->staticSharedMemory,
		.dynamic_smem = k->dynamicSharedMemory,
		.local_mem = k->localMemoryPerThread,
		.stream_id = k->streamId,
		.device_id = k->deviceId,
		.shmem_optin = k->shmemLimitConfig == CUPTI_FUNC_SHMEM_LIMIT_OPTIN,
		.carveout = k->isSharedMemoryCarveoutRequested ? k->sharedMemoryCarveoutRequested : -1,
		.cluster = { k->clusterX, k->clusterY, k->clusterZ },
		.max_active_clusters = k->maxActiveClusters,
	};
	kprof_agg_kernel(&g.agg, &r);
}

/* With g.lock held. Record layouts are those of the CUPTI this was built against; a
 * different major.minor never gets here (InitializeInjection refuses it). */
static void
take_record(const CUpti_Activity *rec)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		take_kernel((const CUpti_ActivityKernel10 *)(const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)rec;
		kprof_agg_memcpy(&g.agg, m->bytes, m->start, m->end);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)rec;
		kprof_agg_memset(&g.agg, m->bytes, m->start, m->end);
		break;
	}
	case CUPTI_ACTIVITY_KIND_OVERHEAD: {
		const CUpti_ActivityOverhead3 *o = (const void *)rec;
		kprof_agg_overhead(&g.agg, o->start, o->end);
		break;
	}
	default:
		break;
	}
}

static void CUPTIAPI
buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
				      size_t size, size_t valid)
{
	(void)ctx;
	(void)stream;
	(void)size;
	DEBUG("buffer completed, %zu bytes", valid);
	pthread_mutex_lock(&g.lock);
	CUpti_Activity *rec = NULL;
	for (;;) {
		CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
		if (r == CUPTI_ERROR_MAX_LIMIT_REACHED)
			break;
		if (r != CUPTI_SUCCESS) {
			kprof_meta_note(&g.meta, "activity buffer cut short: %s", cupti_error(r));
			break;
		}
		take_record(rec);
	}
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS)
		g.agg.dropped += dropped;
	if (g.buffer_failures) {
		kprof_meta_note(&g.meta, "%llu activity buffer requests failed (out of memory)",
				(unsigned long long)g.buffer_failures);
		g.buffer_failures = 0;
	}
	write_json_locked(0);
	pthread_mutex_unlock(&g.lock);
	free(buffer);
}

static void
set_trace_kinds(int enable)
{
	for (size_t i = 0; i < sizeof trace_kinds / sizeof trace_kinds[0]; i++) {
		CUptiResult r = enable ? cuptiActivityEnable(trace_kinds[i])
				       : cuptiActivityDisable(trace_kinds[i]);
		if (r != CUPTI_SUCCESS)
			note_locked_write(NULL, enable ? "cuptiActivityEnable" : "cuptiActivityDisable",
					  r);
	}
}

/* ---------------------------------------------------------------- the gate */

static void
gate_open(void)
{
	query_devices_once();
	pthread_mutex_lock(&g.lock);
	int was_open = g.gate_open || g.finished;
	g.gate_open = 1;
	g.gate_ever_opened = 1;
	if (!was_open)
		g.meta.complete = 0;
	pthread_mutex_unlock(&g.lock);
	if (was_open)
		return;
	DEBUG("gate open");
	if (g.cfg.mode == KPROF_MODE_TRACE)
		set_trace_kinds(1);
	pthread_mutex_lock(&g.lock);
	write_json_locked(0);
	pthread_mutex_unlock(&g.lock);
}

static void
gate_close(void)
{
	pthread_mutex_lock(&g.lock);
	int was_open = g.gate_open;
	g.gate_open = 0;
	pthread_mutex_unlock(&g.lock);
	if (!was_open)
		return;
	DEBUG("gate closing");
	if (g.cfg.mode == KPROF_MODE_TRACE) {
		cuCtxSynchronize();
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		set_trace_kinds(0);
	}
	pthread_mutex_lock(&g.lock);
	g.meta.complete = 1;
	write_json_locked(1);
	pthread_mutex_unlock(&g.lock);
}

/* ---------------------------------------------------------------- metrics mode */

/* Measuring stops for good; the JSON says why. Returns -1 for the caller to pass on. */
static int
metrics_fail(const char *status, const char *what, CUptiResult r)
{
	metrics.disabled = 1;
	DEBUG("metrics: %s failed: %s", what, cupti_error(r));
	pthread_mutex_lock(&g.lock);
	g.meta.metrics_status = status ? status : kprof_cupti_status(r);
	kprof_meta_note(&g.meta, "metrics: %s: %s", what, cupti_error(r));
	if (strcmp(g.meta.metrics_status, "not_permitted") == 0)
		kprof_meta_note(&g.meta, "GPU performance counters need root or the driver option "
					 "NVreg_RestrictProfilingToAdminUsers=0");
	write_json_locked(0);
	pthread_mutex_unlock(&g.lock);
	return -1;
}

static const char *
support_level(CUpti_Profiler_Support_Level level)
{
	switch (level) {
	case CUPTI_PROFILER_CONFIGURATION_SUPPORTED:
		return "supported";
	case CUPTI_PROFILER_CONFIGURATION_DISABLED:
		return "disabled";
	case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED:
		return "unsupported";
	default:
		return "unknown";
	}
}

/* The device's counter availability image, queried live (ctx current): a malloc'd copy
 * in *image. Counter permission shows here first (research/cupti.md §3). */
static CUptiResult
query_availability(CUcontext ctx, uint8_t **image, size_t *size)
{
	CUpti_Profiler_GetCounterAvailability_Params avail = {
		.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE,
		.ctx = ctx,
	};
	*image = NULL;
	CUptiResult r = cuptiProfilerGetCounterAvailability(&avail);
	if (r != CUPTI_SUCCESS)
		return r;
	uint8_t *buf = malloc(avail.counterAvailabilityImageSize ? avail.counterAvailabilityImageSize
								 : 1);
	if (!buf)
		return CUPTI_ERROR_OUT_OF_MEMORY;
	avail.pCounterAvailabilityImage = buf;
	r = cuptiProfilerGetCounterAvailability(&avail);
	if (r != CUPTI_SUCCESS) {
		free(buf);
		return r;
	}
	*image = buf;
	*size = avail.counterAvailabilityImageSize;
	return CUPTI_SUCCESS;
}

/*
 * The live query of the counter availability image takes about 0.6 s on an H100, most of a
 * metrics run's own set-up, and gives the same image for one chip, CUPTI and driver; so
 * one is kept per (chip, CUPTI, driver) in KPROF_AVAILABILITY_DIR. Only a process kforge
 * trusts writes it there (KPROF_AVAILABILITY_WRITE=1: its selftest, which runs no
 * candidate; the directory is sealed from the runner's user afterwards); the others read
 * it, and one the host API refuses is queried again live.
 */
static int
availability_path(const char *chip, char *out, size_t cap)
{
	int driver = 0;
	char safe[64];
	size_t n = 0;

	if (!g.cfg.availability_dir[0] || cuDriverGetVersion(&driver) != CUDA_SUCCESS)
		return -1;
	for (const char *p = chip; *p && n + 1 < sizeof safe; p++)
		safe[n++] = (isalnum((unsigned char)*p) || *p == '-' || *p == '_') ? *p : '_';
	safe[n] = '\0';
	int len = snprintf(out, cap, "%s/%s-cupti%u-driver%d.bin", g.cfg.availability_dir, safe,
			   (unsigned)g.meta.cupti_version, driver);
	return len > 0 && (size_t)len < cap ? 0 : -1;
}

/* A kept image is the image behind a header: AVAIL_MAGIC, its length and its FNV-1a hash
 * (8 bytes each, little-endian), so that a file cut short or damaged is never handed to
 * CUPTI, whose host initialisation crashed the process on one (gpu_kprof_metrics). */
#define AVAIL_MAGIC "KPROFAV1"
#define AVAIL_HEADER 24

static void
put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* A kept image (malloc'd, *size bytes), or NULL: none, unreadable, too large, or not
 * whole as written. */
static uint8_t *
read_availability(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = malloc(AVAIL_HEADER + KPROF_AVAILABILITY_MAX + 1);
	size_t n = buf ? fread(buf, 1, AVAIL_HEADER + KPROF_AVAILABILITY_MAX + 1, f) : 0;
	fclose(f);
	if (n <= AVAIL_HEADER || n > AVAIL_HEADER + KPROF_AVAILABILITY_MAX ||
	    memcmp(buf, AVAIL_MAGIC, 8) != 0 || get_le64(buf + 8) != n - AVAIL_HEADER ||
	    get_le64(buf + 16) != kprof_hash_bytes(KPROF_HASH_START, buf + AVAIL_HEADER,
						    n - AVAIL_HEADER)) {
		free(buf);
		return NULL;
	}
	memmove(buf, buf + AVAIL_HEADER, n - AVAIL_HEADER);
	*size = n - AVAIL_HEADER;
	return buf;
}

/* The image behind its header, written whole or not at all. 0 or -errno. */
static int
write_availability(const char *path, const uint8_t *image, size_t size)
{
	if (size == 0 || size > KPROF_AVAILABILITY_MAX)
		return -EINVAL;
	uint8_t *buf = malloc(AVAIL_HEADER + size);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, AVAIL_MAGIC, 8);
	put_le64(buf + 8, size);
	put_le64(buf + 16, kprof_hash_bytes(KPROF_HASH_START, image, size));
	memcpy(buf + AVAIL_HEADER, image, size);
	int err = kprof_write_atomic(path, (const char *)buf, AVAIL_HEADER + size, 1);
	free(buf);
	return err;
}

/* With metrics.lock held, in a launch's ENTER (ctx is current). 0: ready to measure. */
static int
metrics_setup(CUcontext ctx)
{
	metrics.tried = 1;
	char why[256];
	if (kprof_host_preload_nvperf(why, sizeof why) != 0) {
		pthread_mutex_lock(&g.lock);
		kprof_meta_note(&g.meta, "metrics: %s", why);
		pthread_mutex_unlock(&g.lock);
	}
	DEBUG("metrics: setup on context %p", (void *)ctx);
	CUpti_Profiler_Initialize_Params init = {
		.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE,
	};
	CUptiResult r = cuptiProfilerInitialize(&init);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiProfilerInitialize", r);

	DEBUG("metrics: profiler initialised");
	CUdevice dev;
	if (cuCtxGetDevice(&dev) != CUDA_SUCCESS)
		return metrics_fail("error", "cuCtxGetDevice", CUPTI_ERROR_INVALID_CONTEXT);
	CUpti_Profiler_DeviceSupported_Params sup = {
		.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE,
		.cuDevice = dev,
		.api = CUPTI_PROFILER_RANGE_PROFILING,
	};
	r = cuptiProfilerDeviceSupported(&sup);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiProfilerDeviceSupported", r);
	if (sup.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
		metrics.disabled = 1;
		pthread_mutex_lock(&g.lock);
		g.meta.metrics_status = "unsupported";
		kprof_meta_note(&g.meta, "metrics: the range profiler is not supported on this "
					 "device (architecture %s, sli %s, vgpu %s, confidential "
					 "compute %s, cmp %s, wsl %s)",
				support_level(sup.architecture), support_level(sup.sli),
				support_level(sup.vGpu), support_level(sup.confidentialCompute),
				support_level(sup.cmp), support_level(sup.wsl));
		write_json_locked(0);
		pthread_mutex_unlock(&g.lock);
		return -1;
	}

	DEBUG("metrics: device %d supported", (int)dev);
	CUpti_Device_GetChipName_Params chip = {
		.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
		.deviceIndex = (size_t)dev,
	};
	r = cuptiDeviceGetChipName(&chip);
	if (r != CUPTI_SUCCESS || !chip.pChipName)
		return metrics_fail(NULL, "cuptiDeviceGetChipName", r);

	DEBUG("metrics: chip %s", chip.pChipName);
	char cached_path[sizeof g.cfg.availability_dir + 128];
	int have_path = availability_path(chip.pChipName, cached_path, sizeof cached_path) == 0;
	size_t image_size = 0;
	uint8_t *image = have_path ? read_availability(cached_path, &image_size) : NULL;
	const char *source = "cached";
	if (!image) {
		source = "queried";
		r = query_availability(ctx, &image, &image_size);
		if (r != CUPTI_SUCCESS)
			return metrics_fail(NULL, "cuptiProfilerGetCounterAvailability", r);
		if (have_path && g.cfg.availability_write) {
			int werr = write_availability(cached_path, image, image_size);
			DEBUG("metrics: availability image written to %s: %d", cached_path, werr);
		}
	}

	DEBUG("metrics: counter availability image %zu bytes, %s", image_size, source);
	int err;
	metrics.availability = image;
	metrics.host = kprof_host_open(chip.pChipName, image, &err);
	if (!metrics.host && strcmp(source, "cached") == 0) {
		/* A kept image the host API refuses: the live one, as if none were kept. */
		free(image);
		metrics.availability = NULL;
		source = "queried";
		r = query_availability(ctx, &image, &image_size);
		if (r != CUPTI_SUCCESS)
			return metrics_fail(NULL, "cuptiProfilerGetCounterAvailability", r);
		metrics.availability = image;
		metrics.host = kprof_host_open(chip.pChipName, image, &err);
	}
	if (!metrics.host)
		return metrics_fail(NULL, "cuptiProfilerHostInitialize", (CUptiResult)err);
	pthread_mutex_lock(&g.lock);
	g.meta.availability = source;
	pthread_mutex_unlock(&g.lock);
	kprof_metrics_select(g.cfg.metrics, kprof_host_metric_ok, metrics.host, &metrics.set);

	pthread_mutex_lock(&g.lock);
	snprintf(g.meta.chip, sizeof g.meta.chip, "%s", chip.pChipName);
	g.meta.metrics = &metrics.set;
	if (metrics.set.ndropped) {
		char list[512] = "";
		for (size_t i = 0; i < metrics.set.ndropped; i++) {
			size_t n = strlen(list);
			snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
				 metrics.set.dropped[i]);
		}
		kprof_meta_note(&g.meta, "metrics not supported on %s (or not valid), dropped: %s%s",
				chip.pChipName, list, metrics.set.more_dropped ? ", ..." : "");
	}
	pthread_mutex_unlock(&g.lock);
	if (metrics.set.count == 0)
		return metrics_fail("unsupported", "no requested metric is supported on this chip",
				    CUPTI_ERROR_INVALID_METRIC_NAME);

	DEBUG("metrics: %zu metrics kept, %zu dropped", metrics.set.count, metrics.set.ndropped);
	if (kprof_host_configure(metrics.host, &metrics.set, &err) != 0)
		return metrics_fail(NULL, "metric configuration", (CUptiResult)err);
	pthread_mutex_lock(&g.lock);
	g.meta.metrics_passes = kprof_host_passes(metrics.host);
	pthread_mutex_unlock(&g.lock);

	DEBUG("metrics: config image built, %zu passes", kprof_host_passes(metrics.host));
	CUpti_RangeProfiler_Enable_Params enable = {
		.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE,
		.ctx = ctx,
	};
	r = cuptiRangeProfilerEnable(&enable);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiRangeProfilerEnable", r);
	metrics.profiler = enable.pRangeProfilerObject;
	metrics.ctx = ctx;

	DEBUG("metrics: range profiler enabled");
	const char *names[KPROF_MAX_METRICS];
	for (size_t i = 0; i < metrics.set.count; i++)
		names[i] = metrics.set.names[i];
	CUpti_RangeProfiler_GetCounterDataSize_Params size = {
		.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
		.pRangeProfilerObject = metrics.profiler,
		.pMetricNames = names,
		.numMetrics = metrics.set.count,
		.maxNumOfRanges = KPROF_RANGES_PER_IMAGE,
		.maxNumRangeTreeNodes = KPROF_RANGES_PER_IMAGE,
	};
	r = cuptiRangeProfilerGetCounterDataSize(&size);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiRangeProfilerGetCounterDataSize", r);
	metrics.counter_size = size.counterDataSize;
	metrics.counter_data = malloc(size.counterDataSize ? size.counterDataSize : 1);
	if (!metrics.counter_data)
		return metrics_fail("error", "counter data image", CUPTI_ERROR_OUT_OF_MEMORY);
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params image_init = {
		.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE,
		.pRangeProfilerObject = metrics.profiler,
		.counterDataSize = metrics.counter_size,
		.pCounterData = metrics.counter_data,
	};
	r = cuptiRangeProfilerCounterDataImageInitialize(&image_init);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiRangeProfilerCounterDataImageInitialize", r);

	DEBUG("metrics: counter data image %zu bytes", metrics.counter_size);
	size_t config_size;
	const uint8_t *config = kprof_host_config_image(metrics.host, &config_size);
	CUpti_RangeProfiler_SetConfig_Params set = {
		.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE,
		.pRangeProfilerObject = metrics.profiler,
		.configSize = config_size,
		.pConfig = config,
		.counterDataImageSize = metrics.counter_size,
		.pCounterDataImage = metrics.counter_data,
		.range = CUPTI_AutoRange,
		.replayMode = CUPTI_KernelReplay,
		.maxRangesPerPass = KPROF_RANGES_PER_IMAGE,
		.numNestingLevels = 1,
		.minNestingLevel = 1,
		.passIndex = 0,
		.targetNestingLevel = 1,
	};
	r = cuptiRangeProfilerSetConfig(&set);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiRangeProfilerSetConfig", r);
	DEBUG("metrics: configured");
	metrics.ready = 1;
	return 0;
}

static void
metrics_teardown(void)
{
	if (metrics.profiler) {
		CUpti_RangeProfiler_Disable_Params p = {
			.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE,
			.pRangeProfilerObject = metrics.profiler,
		};
		cuptiRangeProfilerDisable(&p);
		metrics.profiler = NULL;
	}
	DEBUG("metrics: teardown");
	kprof_host_close(metrics.host);
	metrics.host = NULL;
	free(metrics.availability);
	metrics.availability = NULL;
	if (metrics.tried) {
		CUpti_Profiler_DeInitialize_Params p = {
			.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE,
		};
		cuptiProfilerDeInitialize(&p);
	}
	metrics.ready = 0;
	metrics.disabled = 1;
}

/* The launch's grid, block and dynamic shared memory, from the API's parameters. */
#define SHAPE_FROM(p)                                                                    \
	do {                                                                             \
		r->grid[0] = (int32_t)(p)->gridDimX;                                     \
		r->grid[1] = (int32_t)(p)->gridDimY;                                     \
		r->grid[2] = (int32_t)(p)->gridDimZ;                                     \
		r->block[0] = (int32_t)(p)->blockDimX;                                   \
		r->block[1] = (int32_t)(p)->blockDimY;                                   \
		r->block[2] = (int32_t)(p)->blockDimZ;                                   \
		r->dynamic_smem = (int32_t)(p)->sharedMemBytes;                          \
	} while (0)

static int
launch_shape(CUpti_CallbackId cbid, const void *params, struct kprof_kernel_rec *r)
{
	if (!params)
		return -1;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
		SHAPE_FROM((const cuLaunchKernel_params *)params);
		return 0;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
		SHAPE_FROM((const cuLaunchKernel_ptsz_params *)params);
		return 0;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
		SHAPE_FROM((const cuLaunchCooperativeKernel_params *)params);
		return 0;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
		SHAPE_FROM((const cuLaunchCooperativeKernel_ptsz_params *)params);
		return 0;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: {
		const CUlaunchConfig *c = ((const cuLaunchKernelEx_params *)params)->config;
		if (!c)
			return -1;
		SHAPE_FROM(c);
		return 0;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
		const CUlaunchConfig *c = ((const cuLaunchKernelEx_ptsz_params *)params)->config;
		if (!c)
			return -1;
		SHAPE_FROM(c);
		return 0;
	}
	default:
		return -1;
	}
}

/* With g.lock held: should this kernel's launch be measured? */
static int
wanted_locked(struct kprof_kernel *k)
{
	if (k->profiled || metrics.measured >= KPROF_MAX_RANGES)
		return 0;
	if (k->target < 0) {
		char demangled[KPROF_NAME_MAX], short_name[KPROF_SHORT_MAX];
		kprof_demangle(k->name, demangled, sizeof demangled);
		kprof_short_name(demangled, short_name, sizeof short_name);
		k->target = kprof_targets_match(g.cfg.targets, k->name, demangled, short_name);
	}
	return k->target;
}

static void
launch_enter(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	struct kprof_kernel_rec r = { .name = cb->symbolName, .carveout = -1 };
	if (launch_shape(cbid, cb->functionParams, &r) != 0)
		return;
	pthread_mutex_lock(&g.lock);
	if (!g.gate_open || g.finished) {
		pthread_mutex_unlock(&g.lock);
		return;
	}
	g.agg.launches++;
	struct kprof_kernel *k = kprof_agg_entry(&g.agg, &r);
	if (!k) {
		g.agg.overflow_calls++;
		pthread_mutex_unlock(&g.lock);
		return;
	}
	k->calls++;
	size_t index = (size_t)(k - g.agg.kernels);
	int want = !metrics.disabled && wanted_locked(k);
	pthread_mutex_unlock(&g.lock);
	if (!want || pthread_mutex_trylock(&metrics.lock) != 0)
		return;

	if (!metrics.ready && !metrics.tried)
		(void)metrics_setup(cb->context);
	if (!metrics.ready || metrics.disabled) {
		pthread_mutex_unlock(&metrics.lock);
		return;
	}
	if (cb->context != metrics.ctx) {
		if (!metrics.other_context_noted) {
			metrics.other_context_noted = 1;
			pthread_mutex_lock(&g.lock);
			kprof_meta_note(&g.meta, "metrics: launches in a second context are not "
						 "measured");
			pthread_mutex_unlock(&g.lock);
		}
		pthread_mutex_unlock(&metrics.lock);
		return;
	}
	CUpti_RangeProfiler_Start_Params start = {
		.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE,
		.pRangeProfilerObject = metrics.profiler,
	};
	DEBUG("metrics: start, kernel %zu %s", index, cb->symbolName ? cb->symbolName : "?");
	CUptiResult res = cuptiRangeProfilerStart(&start);
	if (res != CUPTI_SUCCESS) {
		(void)metrics_fail(NULL, "cuptiRangeProfilerStart", res);
		pthread_mutex_unlock(&metrics.lock);
		return;
	}
	measuring = index + 1;
}

/* With metrics.lock held (taken in launch_enter). */
static int
launch_exit(void)
{
	size_t index = measuring - 1;
	measuring = 0;
	CUpti_RangeProfiler_Stop_Params stop = {
		.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE,
		.pRangeProfilerObject = metrics.profiler,
	};
	CUptiResult r = cuptiRangeProfilerStop(&stop);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiRangeProfilerStop", r);
	DEBUG("metrics: stopped, all passes submitted %d", stop.isAllPassSubmitted);
	if (!stop.isAllPassSubmitted) {
		/* Kernel replay submits every pass within the launch; anything else is a
		 * configuration this library does not handle. */
		return metrics_fail("error", "kernel replay left passes unsubmitted",
				    CUPTI_ERROR_INVALID_OPERATION);
	}
	CUpti_RangeProfiler_DecodeData_Params decode = {
		.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE,
		.pRangeProfilerObject = metrics.profiler,
	};
	r = cuptiRangeProfilerDecodeData(&decode);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiRangeProfilerDecodeData", r);
	CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
		.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE,
		.pCounterDataImage = metrics.counter_data,
		.counterDataImageSize = metrics.counter_size,
	};
	r = cuptiRangeProfilerGetCounterDataInfo(&info);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "cuptiRangeProfilerGetCounterDataInfo", r);

	DEBUG("metrics: decoded, %zu ranges, %zu dropped", info.numTotalRanges,
	      decode.numOfRangeDropped);
	double values[KPROF_MAX_METRICS];
	int err = CUPTI_SUCCESS;
	int have = info.numTotalRanges > 0 &&
		   kprof_host_evaluate(metrics.host, metrics.counter_data, metrics.counter_size,
				       info.numTotalRanges - 1, &metrics.set, values, &err) == 0;

	pthread_mutex_lock(&g.lock);
	g.meta.ranges_dropped += decode.numOfRangeDropped;
	if (have) {
		struct kprof_kernel *k = &g.agg.kernels[index];
		k->profiled++;
		for (size_t i = 0; i < metrics.set.count; i++) {
			k->metrics[i] = values[i];
			k->metrics_mask |= 1u << i;
		}
		metrics.measured++;
		g.meta.metrics_status = "ok";
	} else {
		kprof_meta_note(&g.meta, "metrics: a measured launch gave no values (%zu ranges%s%s)",
				info.numTotalRanges, err ? ": " : "",
				err ? cupti_error((CUptiResult)err) : "");
	}
	write_json_locked(0);
	pthread_mutex_unlock(&g.lock);

	/* A fresh image for the next launch, with the same configuration. */
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params image_init = {
		.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE,
		.pRangeProfilerObject = metrics.profiler,
		.counterDataSize = metrics.counter_size,
		.pCounterData = metrics.counter_data,
	};
	r = cuptiRangeProfilerCounterDataImageInitialize(&image_init);
	if (r != CUPTI_SUCCESS)
		return metrics_fail(NULL, "re-initialising the counter data image", r);
	return 0;
}

static void
on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	if (cb->callbackSite == CUPTI_API_ENTER) {
		launch_enter(cbid, cb);
	} else if (measuring) {
		(void)launch_exit();
		pthread_mutex_unlock(&metrics.lock);
	}
}

/* ---------------------------------------------------------------- callbacks */

static void
on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
		remember_context(rd->context);
		/* The first point after cuInit where the driver answers device queries. */
		query_devices_once();
	} else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		if (g.cfg.mode == KPROF_MODE_TRACE)
			cuptiActivityFlushAll(0);
		if (g.cfg.mode == KPROF_MODE_METRICS &&
		    pthread_mutex_trylock(&metrics.lock) == 0) {
			if (metrics.ready && metrics.ctx == rd->context)
				metrics_teardown();
			pthread_mutex_unlock(&metrics.lock);
		}
		forget_context(rd->context);
	}
}

static void
on_state(CUpti_CallbackId cbid, const CUpti_StateData *sd)
{
	if (cbid != CUPTI_CBID_STATE_FATAL_ERROR)
		return;
	pthread_mutex_lock(&g.lock);
	g.meta.status = "error";
	kprof_meta_note(&g.meta, "CUPTI fatal error (%s): %.200s",
			cupti_error(sd->notification.result),
			sd->notification.message ? sd->notification.message : "no message");
	write_json_locked(1);
	pthread_mutex_unlock(&g.lock);
}

static void CUPTIAPI
on_callback(void *userdata, CUpti_CallbackDomain domain,
				 CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	const CUpti_CallbackData *cb = data;
	switch (domain) {
	case CUPTI_CB_DOMAIN_RESOURCE:
		on_resource(cbid, data);
		break;
	case CUPTI_CB_DOMAIN_STATE:
		on_state(cbid, data);
		break;
	case CUPTI_CB_DOMAIN_DRIVER_API:
		if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart) {
			if (cb->callbackSite == CUPTI_API_EXIT)
				gate_open();
		} else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) {
			if (cb->callbackSite == CUPTI_API_ENTER)
				gate_close();
		} else {
			on_launch(cbid, cb);
		}
		break;
	case CUPTI_CB_DOMAIN_RUNTIME_API:
		if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) {
			if (cb->callbackSite == CUPTI_API_EXIT)
				gate_open();
		} else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000) {
			if (cb->callbackSite == CUPTI_API_ENTER)
				gate_close();
		} else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) {
			if (cb->callbackSite == CUPTI_API_ENTER) {
				cuCtxSynchronize();
				cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
			}
		}
		break;
	default:
		break;
	}
}

/* ---------------------------------------------------------------- init and exit */

static void
at_exit(void)
{
	pthread_mutex_lock(&g.lock);
	int skip = !g.active || g.finished;
	pthread_mutex_unlock(&g.lock);
	if (skip)
		return;
	if (g.cfg.mode == KPROF_MODE_TRACE) {
		synchronize_contexts();
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
	pthread_mutex_lock(&g.lock);
	g.finished = 1;
	g.meta.complete = 1;
	if (g.cfg.gate == KPROF_GATE_PROFILER_API && !g.gate_ever_opened)
		kprof_meta_note(&g.meta, "cuProfilerStart was never called, so nothing was "
					 "collected (KPROF_GATE=profiler_api)");
	if (g.cfg.mode == KPROF_MODE_METRICS && !g.meta.metrics_status) {
		g.meta.metrics_status = "error";
		kprof_meta_note(&g.meta, "metrics: no kernel launch in the window was measured%s",
				g.cfg.targets[0] ? " (none matched KPROF_TARGETS)" : "");
	}
	write_json_locked(1);
	pthread_mutex_unlock(&g.lock);
}

static int
enable_callbacks(void)
{
	int mode = g.cfg.mode == KPROF_MODE_METRICS ? FOR_METRICS : FOR_TRACE;
	for (size_t i = 0; i < sizeof callbacks / sizeof callbacks[0]; i++) {
		if (!(callbacks[i].modes & mode) ||
		    (callbacks[i].gate_only && g.cfg.gate != KPROF_GATE_PROFILER_API))
			continue;
		CUptiResult r = cuptiEnableCallback(1, g.subscriber, callbacks[i].domain,
						    callbacks[i].cbid);
		if (r != CUPTI_SUCCESS) {
			kprof_meta_note(&g.meta, "cuptiEnableCallback(%d, %d): %s",
					(int)callbacks[i].domain, (int)callbacks[i].cbid,
					cupti_error(r));
			return -1;
		}
	}
	return 0;
}

/* With g.lock held. 0: subscribed and collecting; -1: the status says why not. */
static int
start_locked(void)
{
	uint32_t version = 0;
	CUptiResult r = cuptiGetVersion(&version);
	if (r != CUPTI_SUCCESS) {
		g.meta.status = "error";
		kprof_meta_note(&g.meta, "cuptiGetVersion: %s", cupti_error(r));
		return -1;
	}
	g.meta.cupti_version = version;
	/* xxyyzz: activity record layouts change between minor releases, so only the
	 * major.minor this was built against is parsed. */
	if (version / 100 != CUPTI_API_VERSION / 100) {
		g.meta.status = "version_mismatch";
		kprof_meta_note(&g.meta, "the process loaded CUPTI %u.%u but kprof was built "
					 "against CUPTI %u.%u; record layouts differ, nothing collected",
				version / 10000, version / 100 % 100, CUPTI_API_VERSION / 10000,
				CUPTI_API_VERSION / 100 % 100);
		return -1;
	}

	char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 16] = "";
	CUpti_SubscriberParams params = {
		.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
		.subscriberName = "kforge-kprof",
		.oldSubscriberName = holder,
		.oldSubscriberSize = sizeof holder,
	};
	r = cuptiSubscribe_v2(&g.subscriber, on_callback, NULL, &params);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		holder[sizeof holder - 1] = '\0';
		g.meta.status = "cupti_busy";
		snprintf(g.meta.holder, sizeof g.meta.holder, "%s",
			 holder[0] ? holder : "unknown");
		kprof_meta_note(&g.meta, "CUPTI is already in use by %s (a profiler or debugger "
					 "such as nsys, ncu or torch.profiler); nothing collected",
				holder[0] ? holder : "another tool");
		return -1;
	}
	if (r != CUPTI_SUCCESS) {
		g.meta.status = kprof_cupti_status(r);
		kprof_meta_note(&g.meta, "cuptiSubscribe_v2: %s", cupti_error(r));
		return -1;
	}
	if (enable_callbacks() != 0)
		goto out_error;

	if (g.cfg.mode == KPROF_MODE_TRACE) {
		r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
		if (r != CUPTI_SUCCESS) {
			kprof_meta_note(&g.meta, "cuptiActivityRegisterCallbacks: %s",
					cupti_error(r));
			goto out_error;
		}
		r = cuptiActivityFlushPeriod(KPROF_FLUSH_PERIOD_MS);
		if (r != CUPTI_SUCCESS)
			kprof_meta_note(&g.meta, "cuptiActivityFlushPeriod: %s (partial profiles "
						 "only at buffer ends)", cupti_error(r));
	}
	return 0;
out_error:
	g.meta.status = "error";
	cuptiUnsubscribe(g.subscriber);
	return -1;
}

KPROF_EXPORT int
InitializeInjection(void)
{
	pthread_mutex_lock(&g.lock);
	if (g.initialized) {
		pthread_mutex_unlock(&g.lock);
		return 1;
	}
	g.initialized = 1;
	kprof_config_from_env(&g.cfg, getpid());
	const char *debug_env = getenv("KPROF_DEBUG");
	debug = debug_env && *debug_env && strcmp(debug_env, "0") != 0;
	DEBUG("InitializeInjection: out %s, mode %s", g.cfg.out,
	      g.cfg.mode == KPROF_MODE_METRICS ? "metrics" : "trace");
	if (!g.cfg.out[0]) {
		fprintf(stderr, "kprof: KPROF_OUT is not set (or too long): not profiling\n");
		pthread_mutex_unlock(&g.lock);
		return 1;
	}
	kprof_agg_init(&g.agg);
	kprof_meta_init(&g.meta, &g.cfg, CUPTI_API_VERSION);
	int started = start_locked() == 0;
	if (started) {
		g.active = 1;
		/* Registered from inside cuInit, after the driver's own handler: it runs first. */
		atexit(at_exit);
		if (g.cfg.gate == KPROF_GATE_ALL) {
			g.gate_open = g.gate_ever_opened = 1;
		}
	} else {
		g.meta.complete = 1;
	}
	write_json_locked(!started);
	pthread_mutex_unlock(&g.lock);
	/* Outside the lock: enabling may hand a buffer back on this thread. */
	if (started && g.cfg.gate == KPROF_GATE_ALL && g.cfg.mode == KPROF_MODE_TRACE)
		set_trace_kinds(1);
	return 1;
}
