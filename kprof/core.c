/* kprof/core.c: the pure parts of libkforge_kprof.so (kprof.h): the per-kernel
 * table, occupancy, names, metric sets, the environment and the JSON document. It uses the
 * CUDA headers (cuda_occupancy.h is header-only; cupti_result.h for the error enum) and
 * never calls libcupti or libcuda, so CI tests without a GPU drive it with synthetic records.
 *
 * The JSON is written by a small bounded emitter rather than jansson: the library is
 * injected into a Python process that has no jansson, and the GPU host finds its jansson
 * only through kforge's LD_LIBRARY_PATH, so a dynamic dependency would not resolve there. */
#include "kprof/kprof.h"

#include <cuda_occupancy.h>
#include <cupti_result.h>

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/banned.h"

/* ---------------------------------------------------------------- the kernel table */

uint64_t
kprof_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t
key_hash(const char *name, size_t name_len, const int32_t grid[3],
			 const int32_t block[3])
{
	uint64_t h = kprof_hash_bytes(KPROF_HASH_START, name, name_len);
	h = kprof_hash_bytes(h, grid, 3 * sizeof grid[0]);
	return kprof_hash_bytes(h, block, 3 * sizeof block[0]);
}

void
kprof_agg_init(struct kprof_agg *agg)
{
	memset(agg, 0, sizeof *agg);
}

void
kprof_agg_free(struct kprof_agg *agg)
{
	for (size_t i = 0; i < agg->nkernels; i++)
		free(agg->kernels[i].name);
	free(agg->kernels);
	free(agg->slots);
	memset(agg, 0, sizeof *agg);
}

/* The stored name's length for a raw name: capped, so that lookups compare what was kept. */
static size_t
kept_len(const char *name, int *truncated)
{
	size_t n = strnlen(name, KPROF_NAME_MAX);
	*truncated = n == KPROF_NAME_MAX;
	return *truncated ? KPROF_NAME_MAX - 1 : n;
}

struct kprof_kernel *
kprof_agg_entry(struct kprof_agg *agg, const struct kprof_kernel_rec *rec)
{
	const char *name = rec->name ? rec->name : "<unnamed>";
	int truncated;
	size_t len = kept_len(name, &truncated);

	if (!agg->slots) {
		agg->nslots = 2 * KPROF_MAX_KERNELS;
		agg->slots = calloc(agg->nslots, sizeof agg->slots[0]);
		if (!agg->slots) {
			agg->nslots = 0;
			return NULL;
		}
	}
	size_t mask = agg->nslots - 1;
	size_t i = key_hash(name, len, rec->grid, rec->block) & mask;
	for (;; i = (i + 1) & mask) {
		uint32_t slot = agg->slots[i];
		if (!slot)
			break;
		struct kprof_kernel *k = &agg->kernels[slot - 1];
		if (memcmp(k->shape.grid, rec->grid, sizeof rec->grid) == 0 &&
		    memcmp(k->shape.block, rec->block, sizeof rec->block) == 0 &&
		    strncmp(k->name, name, len) == 0 && k->name[len] == '\0')
			return k;
	}
	if (agg->nkernels >= KPROF_MAX_KERNELS) {
		agg->table_full = 1;
		return NULL;
	}
	if (agg->nkernels == agg->kernels_alloc) {
		size_t n = agg->kernels_alloc ? 2 * agg->kernels_alloc : 64;
		struct kprof_kernel *k = realloc(agg->kernels, n * sizeof *k);
		if (!k)
			return NULL;
		agg->kernels = k;
		agg->kernels_alloc = n;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, name, len);
	copy[len] = '\0';

	struct kprof_kernel *k = &agg->kernels[agg->nkernels];
	memset(k, 0, sizeof *k);
	k->name = copy;
	k->name_truncated = truncated;
	k->shape = *rec;
	k->shape.name = NULL;
	k->shape.start = k->shape.end = 0;
	k->seq = (unsigned)agg->nkernels;
	k->target = -1;
	agg->slots[i] = (uint32_t)++agg->nkernels;
	return k;
}

static void
note_stream(struct kprof_agg *agg, uint32_t id, uint64_t ns)
{
	for (size_t i = 0; i < agg->nstreams; i++)
		if (agg->streams[i].id == id) {
			agg->streams[i].kernels++;
			agg->streams[i].total_ns += ns;
			return;
		}
	if (agg->nstreams == KPROF_MAX_STREAMS) {
		agg->streams_more = 1;
		return;
	}
	agg->streams[agg->nstreams++] = (struct kprof_stream){ .id = id, .kernels = 1,
								.total_ns = ns };
}

int
kprof_agg_kernel(struct kprof_agg *agg, const struct kprof_kernel_rec *rec)
{
	/* No timestamps (CUPTI_TIMESTAMP_UNKNOWN is 0), or a kernel still running when a
	 * forced flush took its record: its time is unknown, so it is counted apart. */
	if (rec->start == 0 || rec->end == 0 || rec->end < rec->start) {
		agg->no_timestamp++;
		return 1;
	}
	uint64_t ns = rec->end - rec->start;
	agg->launches++;
	note_stream(agg, rec->stream_id, ns);
	struct kprof_kernel *k = kprof_agg_entry(agg, rec);
	if (!k) {
		agg->overflow_calls++;
		agg->overflow_ns += ns;
		return 2;
	}
	if (k->timed_calls == 0 || ns < k->min_ns)
		k->min_ns = ns;
	if (ns > k->max_ns)
		k->max_ns = ns;
	k->calls++;
	k->timed_calls++;
	k->total_ns += ns;
	unsigned s = 0;
	while (s < k->nstreams && k->streams[s] != rec->stream_id)
		s++;
	if (s == k->nstreams) {
		if (k->nstreams < KPROF_KERNEL_STREAMS)
			k->streams[k->nstreams++] = rec->stream_id;
		else
			k->streams_more = 1;
	}
	return 0;
}

static void
add_totals(struct kprof_totals *t, uint64_t bytes, uint64_t start, uint64_t end)
{
	if (start == 0 || end == 0 || end < start)
		return;
	t->count++;
	t->bytes += bytes;
	t->total_ns += end - start;
}

void
kprof_agg_memcpy(struct kprof_agg *agg, uint64_t bytes, uint64_t start, uint64_t end)
{
	add_totals(&agg->memcpy, bytes, start, end);
}

void
kprof_agg_memset(struct kprof_agg *agg, uint64_t bytes, uint64_t start, uint64_t end)
{
	add_totals(&agg->memset, bytes, start, end);
}

void
kprof_agg_overhead(struct kprof_agg *agg, uint64_t start, uint64_t end)
{
	add_totals(&agg->overhead, 0, start, end);
}

/* ---------------------------------------------------------------- occupancy */

/* Which limit is named when several bind: the one a kernel author most often controls. */
static const struct {
	unsigned bit;
	const char *name;
} occ_limiters[] = {
	{ OCC_LIMIT_REGISTERS, "registers" },
	{ OCC_LIMIT_SHARED_MEMORY, "shared_memory" },
	{ OCC_LIMIT_WARPS, "warps" },
	{ OCC_LIMIT_BLOCKS, "blocks" },
	{ OCC_LIMIT_BARRIERS, "barriers" },
};

int
kprof_occupancy(const struct kprof_device *dev, const struct kprof_kernel_rec *shape,
		    struct kprof_occupancy *out)
{
	memset(out, 0, sizeof *out);
	if (!dev || !dev->valid || dev->warp_size <= 0 || dev->max_threads_per_sm <= 0)
		return -1;
	int64_t threads = (int64_t)shape->block[0] * shape->block[1] * shape->block[2];
	if (threads <= 0 || threads > dev->max_threads_per_block || shape->static_smem < 0 ||
	    shape->dynamic_smem < 0)
		return -1;

	cudaOccDeviceProp prop = {
		.computeMajor = dev->cc_major,
		.computeMinor = dev->cc_minor,
		.maxThreadsPerBlock = dev->max_threads_per_block,
		.maxThreadsPerMultiprocessor = dev->max_threads_per_sm,
		.regsPerBlock = dev->regs_per_block,
		.regsPerMultiprocessor = dev->regs_per_sm,
		.warpSize = dev->warp_size,
		.sharedMemPerBlock = dev->smem_per_block,
		.sharedMemPerMultiprocessor = dev->smem_per_sm,
		.numSms = dev->sm_count,
		.sharedMemPerBlockOptin = dev->smem_per_block_optin,
		.reservedSharedMemPerBlock = dev->reserved_smem_per_block,
	};
	cudaOccFuncAttributes attr = {
		.maxThreadsPerBlock = INT_MAX,
		.numRegs = (int)shape->registers,
		.sharedSizeBytes = (size_t)shape->static_smem,
		.partitionedGCConfig = PARTITIONED_GC_OFF,
		.shmemLimitConfig = shape->shmem_optin ? FUNC_SHMEM_LIMIT_OPTIN
						       : FUNC_SHMEM_LIMIT_DEFAULT,
		.maxDynamicSharedSizeBytes = (size_t)shape->dynamic_smem,
		.numBlockBarriers = 1,
	};
	cudaOccDeviceState state = {
		.cacheConfig = CACHE_PREFER_NONE,
		.carveoutConfig = shape->carveout >= 0 && shape->carveout <= 100
					  ? shape->carveout : SHAREDMEM_CARVEOUT_DEFAULT,
	};
	cudaOccResult res;
	memset(&res, 0, sizeof res);
	if (cudaOccMaxActiveBlocksPerMultiprocessor(&res, &prop, &attr, &state, (int)threads,
						    (size_t)shape->dynamic_smem) != CUDA_OCC_SUCCESS)
		return -1;

	int warps_per_block = (int)((threads + dev->warp_size - 1) / dev->warp_size);
	int warps_per_sm = dev->max_threads_per_sm / dev->warp_size;
	out->blocks_per_sm = res.activeBlocksPerMultiprocessor;
	out->theoretical = (double)res.activeBlocksPerMultiprocessor * warps_per_block /
			   warps_per_sm;
	out->limit_registers = res.blockLimitRegs;
	out->limit_shared_memory = res.blockLimitSharedMem;
	out->limit_warps = res.blockLimitWarps;
	out->limit_blocks = res.blockLimitBlocks;
	out->limiter = "none";
	/* At full occupancy the warps bind, whatever else ties with them. */
	if (out->theoretical >= 1.0 && (res.limitingFactors & OCC_LIMIT_WARPS))
		out->limiter = "warps";
	for (size_t i = 0; i < sizeof occ_limiters / sizeof occ_limiters[0] &&
			   strcmp(out->limiter, "none") == 0; i++)
		if (res.limitingFactors & occ_limiters[i].bit) {
			out->limiter = occ_limiters[i].name;
			break;
		}
	return 0;
}

/* ---------------------------------------------------------------- names */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static void
copy_capped(char *out, size_t cap, const char *s)
{
	if (!cap)
		return;
	size_t n = strlen(s);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

int
kprof_demangle(const char *mangled, char *out, size_t cap)
{
	/* __cxa_demangle is extern "C" in libstdc++, which a torch process (and any nvcc-built
	 * program) has loaded; a C program without it keeps raw names. Python loads its
	 * extensions, and with them libstdc++, RTLD_LOCAL: then the symbol is not in the
	 * global scope, so ask the loaded library itself (RTLD_NOLOAD: never load it). */
	cxa_demangle_fn demangle = (cxa_demangle_fn)(uintptr_t)dlsym(RTLD_DEFAULT,
								     "__cxa_demangle");
	if (!demangle) {
		void *libstdcxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
		if (libstdcxx) {
			demangle = (cxa_demangle_fn)(uintptr_t)dlsym(libstdcxx, "__cxa_demangle");
			dlclose(libstdcxx);
		}
	}
	if (demangle && mangled[0] == '_' && mangled[1] == 'Z') {
		int status = -1;
		char *d = demangle(mangled, NULL, NULL, &status);
		if (d && status == 0) {
			copy_capped(out, cap, d);
			free(d);
			return 1;
		}
		free(d);
	}
	copy_capped(out, cap, mangled);
	return 0;
}

/* The index just past the group that opens at s[i] (one of "<({"), balancing all three
 * kinds; len when unbalanced. */
static size_t
skip_group(const char *s, size_t i, size_t len)
{
	int depth = 0;
	for (; i < len; i++) {
		char c = s[i];
		if (c == '<' || c == '(' || c == '{' || c == '[')
			depth++;
		else if (c == '>' || c == ')' || c == '}' || c == ']') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return len;
}

void
kprof_short_name(const char *demangled, char *out, size_t cap)
{
	if (!cap)
		return;
	size_t len = strnlen(demangled, KPROF_NAME_MAX);
	/* 1. Cut the parameter list: the parenthesised group that ends the name. */
	while (len && demangled[len - 1] == ' ')
		len--;
	if (len && demangled[len - 1] == ')') {
		int depth = 0;
		for (size_t i = len; i-- > 0;) {
			if (demangled[i] == ')')
				depth++;
			else if (demangled[i] == '(' && --depth == 0) {
				/* "(anonymous namespace)" alone is not a parameter list */
				if (i > 0)
					len = i;
				break;
			}
		}
	}
	/* 2. Drop template arguments, keeping other groups ("(anonymous namespace)",
	 * "{lambda(int)#1}"); 3. remember where the last top-level space is (the return type
	 * ends there). */
	char tmp[KPROF_NAME_MAX];
	size_t n = 0, name_start = 0;
	for (size_t i = 0; i < len && n + 1 < sizeof tmp;) {
		char c = demangled[i];
		if (c == '<') {
			i = skip_group(demangled, i, len);
			continue;
		}
		if (c == '(' || c == '{' || c == '[') {
			size_t end = skip_group(demangled, i, len);
			while (i < end && n + 1 < sizeof tmp)
				tmp[n++] = demangled[i++];
			continue;
		}
		if (c == ' ')
			name_start = n + 1;
		tmp[n++] = c;
		i++;
	}
	tmp[n] = '\0';
	const char *name = tmp + (name_start <= n ? name_start : n);
	copy_capped(out, cap, *name ? name : tmp);
}

static int
name_equal(const char *a, size_t alen, const char *b)
{
	return b && strlen(b) == alen && strncmp(a, b, alen) == 0;
}

int
kprof_targets_match(const char *targets, const char *mangled, const char *demangled,
			const char *short_name)
{
	if (!targets)
		return 1;
	const char *tail = short_name ? short_name : "";
	for (const char *p = tail; (p = strstr(p, "::")); p += 2)
		tail = p + 2;
	int any = 0;
	for (const char *p = targets; *p;) {
		while (*p == ',' || *p == ' ')
			p++;
		const char *end = p;
		while (*end && *end != ',')
			end++;
		size_t n = (size_t)(end - p);
		while (n && p[n - 1] == ' ')
			n--;
		if (n) {
			any = 1;
			if (name_equal(p, n, mangled) || name_equal(p, n, demangled) ||
			    name_equal(p, n, short_name) || name_equal(p, n, tail))
				return 1;
		}
		p = end;
	}
	return !any;
}

/* ---------------------------------------------------------------- metric sets */

/* Two passes on GH100 (unit_kprof_host). The JSON keys are the contract's. */
const struct kprof_metric_def kprof_default_metrics[] = {
	{ "gpu__time_duration.sum", "duration_ns" },
	{ "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram_pct" },
	{ "sm__warps_active.avg.pct_of_peak_sustained_active", "achieved_occupancy_pct" },
	{ "l1tex__t_sector_hit_rate.pct", "l1_hit_pct" },
	{ "lts__t_sector_hit_rate.pct", "l2_hit_pct" },
	{ "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor_pct" },
	{ "dram__bytes_read.sum", "dram_read_bytes" },
	{ "dram__bytes_write.sum", "dram_write_bytes" },
};
const size_t kprof_default_metrics_count =
	sizeof kprof_default_metrics / sizeof kprof_default_metrics[0];

const char *
kprof_metric_key(const char *metric)
{
	for (size_t i = 0; i < kprof_default_metrics_count; i++)
		if (strcmp(kprof_default_metrics[i].name, metric) == 0)
			return kprof_default_metrics[i].key;
	return metric;
}

static void
drop_metric(struct kprof_metric_set *set, const char *name, size_t n)
{
	if (set->ndropped == KPROF_MAX_METRICS) {
		set->more_dropped = 1;
		return;
	}
	if (n >= KPROF_METRIC_NAME_MAX)
		n = KPROF_METRIC_NAME_MAX - 1;
	memcpy(set->dropped[set->ndropped], name, n);
	set->dropped[set->ndropped++][n] = '\0';
}

static void
consider_metric(struct kprof_metric_set *set, const char *name, size_t n,
			    int (*supported)(const char *, void *), void *ctx)
{
	if (!n)
		return;
	if (n >= KPROF_METRIC_NAME_MAX || set->count == KPROF_MAX_METRICS) {
		drop_metric(set, name, n);
		return;
	}
	char buf[KPROF_METRIC_NAME_MAX];
	memcpy(buf, name, n);
	buf[n] = '\0';
	for (size_t i = 0; i < set->count; i++)
		if (strcmp(set->names[i], buf) == 0)
			return;
	if (supported && !supported(buf, ctx)) {
		drop_metric(set, name, n);
		return;
	}
	memcpy(set->names[set->count++], buf, n + 1);
}

void
kprof_metrics_select(const char *override_list,
			  int (*supported)(const char *metric, void *ctx), void *ctx,
			  struct kprof_metric_set *out)
{
	memset(out, 0, sizeof *out);
	const char *p = override_list;
	while (p && (*p == ' ' || *p == ','))
		p++;
	if (!p || !*p) {
		for (size_t i = 0; i < kprof_default_metrics_count; i++)
			consider_metric(out, kprof_default_metrics[i].name,
					strlen(kprof_default_metrics[i].name), supported, ctx);
		return;
	}
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		const char *end = p;
		while (*end && *end != ',')
			end++;
		size_t n = (size_t)(end - p);
		while (n && p[n - 1] == ' ')
			n--;
		consider_metric(out, p, n, supported, ctx);
		p = end;
	}
}

/* ---------------------------------------------------------------- statuses, environment */

static const struct {
	int result;
	const char *status;
} cupti_statuses[] = {
	{ CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "not_permitted" },
	{ CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES, "not_permitted" },
	{ CUPTI_ERROR_NOT_SUPPORTED, "unsupported" },
	{ CUPTI_ERROR_API_NOT_IMPLEMENTED, "unsupported" },
	{ CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, "unsupported" },
	{ CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED, "unsupported" },
	{ CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED, "unsupported" },
	{ CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, "unsupported" },
	{ CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED, "unsupported" },
	{ CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED, "unsupported" },
	{ CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, "unsupported" },
	{ CUPTI_ERROR_INVALID_CHIP_NAME, "unsupported" },
	{ CUPTI_ERROR_NOT_COMPATIBLE, "unsupported" },
};

const char *
kprof_cupti_status(int cupti_result)
{
	for (size_t i = 0; i < sizeof cupti_statuses / sizeof cupti_statuses[0]; i++)
		if (cupti_statuses[i].result == cupti_result)
			return cupti_statuses[i].status;
	return "error";
}

int
kprof_expand_path(const char *pattern, pid_t pid, char *out, size_t cap)
{
	size_t n = 0;
	for (const char *p = pattern; *p; p++) {
		char num[32];
		const char *piece = num;
		if (p[0] == '%' && p[1] == 'p') {
			snprintf(num, sizeof num, "%ld", (long)pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			piece = "%";
			p++;
		} else {
			num[0] = *p;
			num[1] = '\0';
		}
		size_t k = strlen(piece);
		if (n + k >= cap)
			return -1;
		memcpy(out + n, piece, k);
		n += k;
	}
	if (n >= cap)
		return -1;
	out[n] = '\0';
	return 0;
}

static void
warn_config(struct kprof_config *cfg, const char *var, const char *value)
{
	size_t n = strlen(cfg->warning);
	snprintf(cfg->warning + n, sizeof cfg->warning - n, "%s%s=%.64s not understood",
		 n ? "; " : "", var, value);
}

static void
copy_env_list(char *out, size_t cap, const char *value)
{
	out[0] = '\0';
	if (value)
		copy_capped(out, cap, value);
}

void
kprof_config_from_env(struct kprof_config *cfg, pid_t pid)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->top = KPROF_TOP_DEFAULT;
	cfg->buffer_bytes = (size_t)KPROF_BUFFER_KB_DEFAULT << 10;

	const char *v = getenv("KPROF_OUT");
	if (v && *v && kprof_expand_path(v, pid, cfg->out, sizeof cfg->out) != 0) {
		cfg->out[0] = '\0';
		warn_config(cfg, "KPROF_OUT", v);
	}
	v = getenv("KPROF_MODE");
	if (v && strcmp(v, "metrics") == 0)
		cfg->mode = KPROF_MODE_METRICS;
	else if (v && *v && strcmp(v, "trace") != 0)
		warn_config(cfg, "KPROF_MODE", v);
	v = getenv("KPROF_GATE");
	if (v && strcmp(v, "all") == 0)
		cfg->gate = KPROF_GATE_ALL;
	else if (v && *v && strcmp(v, "profiler_api") != 0)
		warn_config(cfg, "KPROF_GATE", v);
	v = getenv("KPROF_TOP");
	if (v && *v) {
		char *end;
		long top = strtol(v, &end, 10);
		if (*end || top < 1)
			warn_config(cfg, "KPROF_TOP", v);
		else
			cfg->top = top > KPROF_TOP_MAX ? KPROF_TOP_MAX : (int)top;
	}
	v = getenv("KPROF_BUFFER_KB");
	if (v && *v) {
		char *end;
		long kb = strtol(v, &end, 10);
		if (*end || kb < KPROF_BUFFER_KB_MIN || kb > KPROF_BUFFER_KB_MAX)
			warn_config(cfg, "KPROF_BUFFER_KB", v);
		else
			cfg->buffer_bytes = (size_t)kb << 10;
	}
	copy_env_list(cfg->targets, sizeof cfg->targets, getenv("KPROF_TARGETS"));
	copy_env_list(cfg->metrics, sizeof cfg->metrics, getenv("KPROF_METRICS"));
	v = getenv("KPROF_AVAILABILITY_DIR");
	if (v && *v && strlen(v) < sizeof cfg->availability_dir)
		snprintf(cfg->availability_dir, sizeof cfg->availability_dir, "%s", v);
	else if (v && *v)
		warn_config(cfg, "KPROF_AVAILABILITY_DIR", v);
	v = getenv("KPROF_AVAILABILITY_WRITE");
	cfg->availability_write = v && strcmp(v, "1") == 0;
}

void
kprof_meta_init(struct kprof_meta *meta, const struct kprof_config *cfg,
		     uint32_t header_version)
{
	memset(meta, 0, sizeof *meta);
	meta->mode = cfg->mode;
	meta->gate = cfg->gate;
	meta->top = cfg->top;
	meta->status = "ok";
	meta->cupti_header_version = header_version;
	meta->device = -1;
	if (cfg->warning[0])
		kprof_meta_note(meta, "%s", cfg->warning);
}

void
kprof_meta_note(struct kprof_meta *meta, const char *fmt, ...)
{
	size_t n = strlen(meta->message);
	if (n + 3 >= sizeof meta->message)
		return;
	if (n) {
		memcpy(meta->message + n, "; ", 3);
		n += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(meta->message + n, sizeof meta->message - n, fmt, ap);
	va_end(ap);
	for (char *p = meta->message + n; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
}

/* ---------------------------------------------------------------- the JSON emitter */

void
kprof_buf_free(struct kprof_buf *buf)
{
	free(buf->data);
	memset(buf, 0, sizeof *buf);
}

static void
put(struct kprof_buf *b, const char *s, size_t n)
{
	if (b->overflow)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (cap > KPROF_JSON_MAX)
			cap = KPROF_JSON_MAX;
		char *d = b->len + n + 1 <= cap ? realloc(b->data, cap) : NULL;
		if (!d) {
			b->overflow = 1;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static void
puts_(struct kprof_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void
putf(struct kprof_buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp) {
		b->overflow = 1;
		return;
	}
	put(b, tmp, (size_t)n);
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid. */
static size_t
utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0) {
		n = 2;
		cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3;
		cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	static const uint32_t min_cp[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A JSON string of s: quotes, backslashes and control characters escaped, bytes that are
 * not UTF-8 replaced by U+FFFD, so that any JSON parser reads it. */
static void
put_str(struct kprof_buf *b, const char *s)
{
	put(b, "\"", 1);
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		const unsigned char *run = p;
		while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
			p++;
		put(b, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		if (*p == '"' || *p == '\\') {
			char esc[2] = { '\\', (char)*p };
			put(b, esc, 2);
			p++;
		} else if (*p < 0x20) {
			putf(b, "\\u%04x", *p);
			p++;
		} else {
			size_t n = utf8_len(p);
			if (n) {
				put(b, (const char *)p, n);
				p += n;
			} else {
				puts_(b, "\\ufffd");
				p++;
			}
		}
	}
	put(b, "\"", 1);
}

static void
put_key(struct kprof_buf *b, const char *key)
{
	put_str(b, key);
	put(b, ":", 1);
}

static void
put_u64(struct kprof_buf *b, const char *key, uint64_t v)
{
	put_key(b, key);
	putf(b, "%llu", (unsigned long long)v);
}

static void
put_int(struct kprof_buf *b, const char *key, long long v)
{
	put_key(b, key);
	putf(b, "%lld", v);
}

static void
put_double(struct kprof_buf *b, double v)
{
	if (!isfinite(v))
		puts_(b, "null");
	else if (v == floor(v) && fabs(v) < 9e15)
		putf(b, "%.0f", v);
	else
		putf(b, "%.6g", v);
}

static void
put_i3(struct kprof_buf *b, const char *key, const int32_t v[3])
{
	put_key(b, key);
	putf(b, "[%d,%d,%d]", v[0], v[1], v[2]);
}

static void
put_totals(struct kprof_buf *b, const char *key, const struct kprof_totals *t,
		       int with_bytes)
{
	put_key(b, key);
	putf(b, "{\"count\":%llu,", (unsigned long long)t->count);
	if (with_bytes)
		putf(b, "\"bytes\":%llu,", (unsigned long long)t->bytes);
	putf(b, "\"total_ns\":%llu}", (unsigned long long)t->total_ns);
}

static int
by_time(const void *a, const void *b, void *agg_)
{
	const struct kprof_agg *agg = agg_;
	const struct kprof_kernel *x = &agg->kernels[*(const size_t *)a];
	const struct kprof_kernel *y = &agg->kernels[*(const size_t *)b];
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if ((x->metrics_mask != 0) != (y->metrics_mask != 0))
		return x->metrics_mask ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const struct kprof_device *
device_of(const struct kprof_agg *agg, uint32_t id)
{
	return id < KPROF_MAX_DEVICES && agg->devices[id].valid ? &agg->devices[id] : NULL;
}

static void
put_kernel(struct kprof_buf *b, const struct kprof_agg *agg,
		       const struct kprof_meta *meta, const struct kprof_kernel *k)
{
	char demangled[KPROF_NAME_MAX], short_name[KPROF_SHORT_MAX];
	kprof_demangle(k->name, demangled, sizeof demangled);
	kprof_short_name(demangled, short_name, sizeof short_name);

	put(b, "{", 1);
	put_key(b, "name");
	put_str(b, demangled);
	put(b, ",", 1);
	put_key(b, "short");
	put_str(b, short_name);
	put(b, ",", 1);
	put_key(b, "mangled");
	put_str(b, k->name);
	if (k->name_truncated)
		puts_(b, ",\"name_truncated\":true");
	put(b, ",", 1);
	put_u64(b, "calls", k->calls);
	if (k->timed_calls) {
		put(b, ",", 1);
		put_u64(b, "total_ns", k->total_ns);
		put(b, ",", 1);
		put_u64(b, "mean_ns", k->total_ns / k->timed_calls);
		put(b, ",", 1);
		put_u64(b, "min_ns", k->min_ns);
		put(b, ",", 1);
		put_u64(b, "max_ns", k->max_ns);
	}
	put(b, ",", 1);
	put_i3(b, "grid", k->shape.grid);
	put(b, ",", 1);
	put_i3(b, "block", k->shape.block);
	if (meta->mode == KPROF_MODE_TRACE) {
		/* the launch callback of metrics mode knows none of these */
		put(b, ",", 1);
		put_u64(b, "registers", k->shape.registers);
		put(b, ",", 1);
		put_int(b, "static_smem", k->shape.static_smem);
	}
	put(b, ",", 1);
	put_int(b, "dynamic_smem", k->shape.dynamic_smem);
	if (meta->mode == KPROF_MODE_TRACE) {
		put(b, ",", 1);
		put_u64(b, "local_mem", k->shape.local_mem);
	}
	if (k->shape.cluster[0] * k->shape.cluster[1] * k->shape.cluster[2] > 1) {
		putf(b, ",\"cluster\":[%u,%u,%u],", k->shape.cluster[0], k->shape.cluster[1],
		     k->shape.cluster[2]);
		put_u64(b, "max_active_clusters", k->shape.max_active_clusters);
	}
	if (k->nstreams) {
		puts_(b, ",\"streams\":[");
		for (unsigned i = 0; i < k->nstreams; i++)
			putf(b, "%s%u", i ? "," : "", k->streams[i]);
		put(b, "]", 1);
		if (k->streams_more)
			puts_(b, ",\"streams_more\":true");
	}
	if (meta->mode == KPROF_MODE_TRACE) {
		struct kprof_occupancy occ;
		puts_(b, ",\"occupancy\":");
		if (kprof_occupancy(device_of(agg, k->shape.device_id), &k->shape, &occ) == 0) {
			puts_(b, "{\"theoretical\":");
			putf(b, "%.4g", occ.theoretical);
			puts_(b, ",\"limiter\":");
			put_str(b, occ.limiter);
			putf(b, ",\"blocks_per_sm\":%d,\"limits\":{\"registers\":%d,"
				"\"shared_memory\":%d,\"warps\":%d,\"blocks\":%d}}",
			     occ.blocks_per_sm, occ.limit_registers, occ.limit_shared_memory,
			     occ.limit_warps, occ.limit_blocks);
		} else {
			puts_(b, "null");
		}
	}
	if (meta->mode == KPROF_MODE_METRICS) {
		put(b, ",", 1);
		put_u64(b, "profiled", k->profiled);
	}
	if (k->metrics_mask && meta->metrics) {
		puts_(b, ",\"metrics\":{");
		int first = 1;
		for (size_t i = 0; i < meta->metrics->count && i < KPROF_MAX_METRICS; i++) {
			if (!(k->metrics_mask & (1u << i)))
				continue;
			if (!first)
				put(b, ",", 1);
			first = 0;
			put_key(b, kprof_metric_key(meta->metrics->names[i]));
			put_double(b, k->metrics[i]);
		}
		put(b, "}", 1);
	}
	put(b, "}", 1);
}

static void
put_device(struct kprof_buf *b, const struct kprof_device *d)
{
	puts_(b, ",\"device\":{");
	put_key(b, "name");
	put_str(b, d->name);
	putf(b, ",\"cc\":[%d,%d],\"sm_count\":%d,\"max_threads_per_sm\":%d,"
		"\"max_threads_per_block\":%d,",
	     d->cc_major, d->cc_minor, d->sm_count, d->max_threads_per_sm,
	     d->max_threads_per_block);
	putf(b, "\"regs_per_sm\":%d,\"regs_per_block\":%d,\"warp_size\":%d,", d->regs_per_sm,
	     d->regs_per_block, d->warp_size);
	putf(b, "\"smem_per_sm\":%zu,\"smem_per_block\":%zu,", d->smem_per_sm,
	     d->smem_per_block);
	putf(b, "\"smem_per_block_optin\":%zu,\"reserved_smem_per_block\":%zu}",
	     d->smem_per_block_optin, d->reserved_smem_per_block);
}

int
kprof_render(const struct kprof_agg *agg, const struct kprof_meta *meta,
		 struct kprof_buf *out)
{
	out->len = 0;
	out->overflow = 0;
	struct kprof_buf *b = out;

	puts_(b, "{\"source\":\"cupti\",\"mode\":");
	put_str(b, meta->mode == KPROF_MODE_METRICS ? "metrics" : "trace");
	puts_(b, meta->complete ? ",\"complete\":true" : ",\"complete\":false");
	puts_(b, ",\"status\":");
	put_str(b, meta->status ? meta->status : "error");
	if (meta->message[0]) {
		puts_(b, ",\"message\":");
		put_str(b, meta->message);
	}
	if (meta->cupti_version) {
		put(b, ",", 1);
		put_u64(b, "cupti_version", meta->cupti_version);
	}
	put(b, ",", 1);
	put_u64(b, "cupti_header_version", meta->cupti_header_version);
	if (meta->holder[0]) {
		puts_(b, ",\"holder\":");
		put_str(b, meta->holder);
	}
	puts_(b, ",\"gate\":");
	put_str(b, meta->gate == KPROF_GATE_ALL ? "all" : "profiler_api");
	put(b, ",", 1);
	put_int(b, "pid", (long long)getpid());

	int dev = meta->device;
	if (dev < 0 && agg->nkernels)
		dev = (int)agg->kernels[0].shape.device_id;
	if (dev < 0)
		dev = 0;
	if (dev < KPROF_MAX_DEVICES && agg->devices[dev].valid)
		put_device(b, &agg->devices[dev]);

	put(b, ",", 1);
	put_u64(b, "kernel_count", agg->nkernels);
	put(b, ",", 1);
	put_u64(b, "launches", agg->launches);
	if (agg->table_full)
		puts_(b, ",\"kernel_table_full\":true");

	size_t *order = agg->nkernels ? malloc(agg->nkernels * sizeof *order) : NULL;
	if (agg->nkernels && !order)
		return -1;
	for (size_t i = 0; i < agg->nkernels; i++)
		order[i] = i;
	if (agg->nkernels)
		qsort_r(order, agg->nkernels, sizeof *order, by_time, (void *)agg);
	size_t top = (size_t)(meta->top > 0 ? meta->top : KPROF_TOP_DEFAULT);
	if (top > KPROF_TOP_MAX)
		top = KPROF_TOP_MAX;

	puts_(b, ",\"kernels\":[");
	uint64_t other_kernels = 0, other_calls = agg->overflow_calls,
		 other_ns = agg->overflow_ns;
	for (size_t i = 0; i < agg->nkernels; i++) {
		const struct kprof_kernel *k = &agg->kernels[order[i]];
		if (i < top) {
			if (i)
				put(b, ",", 1);
			put_kernel(b, agg, meta, k);
		} else {
			other_kernels++;
			other_calls += k->calls;
			other_ns += k->total_ns;
		}
	}
	free(order);
	put(b, "]", 1);
	putf(b, ",\"other\":{\"kernels\":%llu,\"calls\":%llu,\"total_ns\":%llu",
	     (unsigned long long)other_kernels, (unsigned long long)other_calls,
	     (unsigned long long)other_ns);
	if (agg->overflow_calls)
		putf(b, ",\"untracked_calls\":%llu", (unsigned long long)agg->overflow_calls);
	put(b, "}", 1);

	if (meta->mode == KPROF_MODE_TRACE) {
		put(b, ",", 1);
		put_totals(b, "memcpy", &agg->memcpy, 1);
		put(b, ",", 1);
		put_totals(b, "memset", &agg->memset, 1);
		put(b, ",", 1);
		put_totals(b, "overhead", &agg->overhead, 0);
		put(b, ",", 1);
		put_u64(b, "dropped", agg->dropped);
		put(b, ",", 1);
		put_u64(b, "no_timestamp", agg->no_timestamp);
		puts_(b, ",\"streams\":[");
		for (size_t i = 0; i < agg->nstreams; i++)
			putf(b, "%s{\"id\":%u,\"kernels\":%llu,\"total_ns\":%llu}", i ? "," : "",
			     agg->streams[i].id, (unsigned long long)agg->streams[i].kernels,
			     (unsigned long long)agg->streams[i].total_ns);
		put(b, "]", 1);
		if (agg->streams_more)
			puts_(b, ",\"streams_more\":true");
	}

	if (meta->mode == KPROF_MODE_METRICS) {
		puts_(b, ",\"metrics_status\":");
		put_str(b, meta->metrics_status ? meta->metrics_status : "error");
		if (meta->chip[0]) {
			puts_(b, ",\"chip\":");
			put_str(b, meta->chip);
		}
		if (meta->metrics) {
			puts_(b, ",\"metric_names\":[");
			for (size_t i = 0; i < meta->metrics->count; i++) {
				if (i)
					put(b, ",", 1);
				put_str(b, meta->metrics->names[i]);
			}
			put(b, "]", 1);
			if (meta->metrics->ndropped) {
				puts_(b, ",\"metrics_dropped\":[");
				for (size_t i = 0; i < meta->metrics->ndropped; i++) {
					if (i)
						put(b, ",", 1);
					put_str(b, meta->metrics->dropped[i]);
				}
				put(b, "]", 1);
			}
		}
		if (meta->metrics_passes) {
			put(b, ",", 1);
			put_u64(b, "passes", meta->metrics_passes);
		}
		if (meta->availability) {
			puts_(b, ",\"counter_availability\":");
			put_str(b, meta->availability);
		}
		if (meta->ranges_dropped) {
			put(b, ",", 1);
			put_u64(b, "ranges_dropped", meta->ranges_dropped);
		}
	}
	puts_(b, "}\n");
	return b->overflow ? -1 : 0;
}

int
kprof_write_atomic(const char *path, const char *data, size_t len, int durable)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int err = 0;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	if (!err && durable && fsync(fd) != 0)
		err = -errno;
	if (close(fd) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
