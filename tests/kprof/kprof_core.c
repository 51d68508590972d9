/* kprof_core.c: the pure parts of the CUPTI injection library (kprof/core.c), fed
 * with synthetic records: the per-kernel table (separate entries per grid, min/max/mean,
 * streams, skipped records, the caps and the "other" bucket), theoretical occupancy against
 * hand-computed H100 values, the JSON document parsed back with jansson (odd and truncated
 * names, metrics mode), short names of demangled C++ names, target lists, metric sets, the
 * environment and the atomic write. */
#include <dlfcn.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kprof/kprof.h"

#include "kb_check.h"

static struct kprof_kernel_rec
rec(const char *name, int gx, int bx, uint64_t start, uint64_t ns, uint32_t stream)
{
	struct kprof_kernel_rec r = {
		.name = name, .start = start, .end = start + ns,
		.grid = { gx, 1, 1 }, .block = { bx, 1, 1 },
		.registers = 32, .static_smem = 0, .dynamic_smem = 0, .local_mem = 0,
		.stream_id = stream, .device_id = 0, .carveout = -1,
	};
	return r;
}

/* The attributes an H100 SXM (sm_90, 132 SMs) reports. */
static struct kprof_device
h100(void)
{
	struct kprof_device d = {
		.valid = 1, .name = "NVIDIA H100 80GB HBM3", .cc_major = 9, .cc_minor = 0,
		.sm_count = 132, .max_threads_per_block = 1024, .max_threads_per_sm = 2048,
		.regs_per_block = 65536, .regs_per_sm = 65536, .warp_size = 32,
		.smem_per_block = 49152, .smem_per_sm = 233472, .smem_per_block_optin = 232448,
		.reserved_smem_per_block = 1024,
	};
	return d;
}

static json_t *
render(const struct kprof_agg *agg, const struct kprof_meta *meta)
{
	struct kprof_buf buf = { 0 };
	CHECK(kprof_render(agg, meta, &buf) == 0);
	json_error_t err;
	json_t *doc = buf.data ? json_loads(buf.data, 0, &err) : NULL;
	CHECKM(doc != NULL, "JSON does not parse: %s (line %d col %d)\n%.2000s",
	       doc ? "" : err.text, err.line, err.column, buf.data ? buf.data : "(null)");
	kprof_buf_free(&buf);
	return doc;
}

static json_int_t
int_at(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	CHECKM(json_is_integer(v), "%s is not an integer", key);
	return json_integer_value(v);
}

static const char *
str_at(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	CHECKM(json_is_string(v), "%s is not a string", key);
	return json_is_string(v) ? json_string_value(v) : "";
}

static json_t *
kernel_with(json_t *doc, const char *mangled, int gx)
{
	json_t *k;
	size_t i;
	json_array_foreach(json_object_get(doc, "kernels"), i, k) {
		json_t *grid = json_object_get(k, "grid");
		if (strcmp(str_at(k, "mangled"), mangled) == 0 &&
		    json_integer_value(json_array_get(grid, 0)) == gx)
			return k;
	}
	return NULL;
}

static void
test_aggregation(void)
{
	struct kprof_agg agg;
	kprof_agg_init(&agg);
	agg.devices[0] = h100();

	struct kprof_kernel_rec a1 = rec("_Z4kernPf", 10, 256, 1000, 100, 7);
	struct kprof_kernel_rec a2 = rec("_Z4kernPf", 10, 256, 2000, 300, 7);
	struct kprof_kernel_rec a3 = rec("_Z4kernPf", 10, 256, 3000, 200, 9);
	struct kprof_kernel_rec b = rec("_Z4kernPf", 20, 256, 4000, 50, 7);
	struct kprof_kernel_rec c = rec("small", 1, 32, 5000, 10, 7);
	struct kprof_kernel_rec none = rec("_Z4kernPf", 10, 256, 0, 0, 7);
	struct kprof_kernel_rec backwards = rec("_Z4kernPf", 10, 256, 9000, 0, 7);
	backwards.end = 8000;
	CHECK(kprof_agg_kernel(&agg, &a1) == 0);
	CHECK(kprof_agg_kernel(&agg, &a2) == 0);
	CHECK(kprof_agg_kernel(&agg, &a3) == 0);
	CHECK(kprof_agg_kernel(&agg, &b) == 0);
	CHECK(kprof_agg_kernel(&agg, &c) == 0);
	CHECK(kprof_agg_kernel(&agg, &none) == 1);
	CHECK(kprof_agg_kernel(&agg, &backwards) == 1);
	kprof_agg_memcpy(&agg, 4096, 100, 150);
	kprof_agg_memcpy(&agg, 1024, 200, 210);
	kprof_agg_memcpy(&agg, 999, 0, 0);
	kprof_agg_memset(&agg, 64, 300, 303);
	kprof_agg_overhead(&agg, 10, 30);
	agg.dropped = 3;

	struct kprof_config cfg = { .top = 2 };
	struct kprof_meta meta;
	kprof_meta_init(&meta, &cfg, 130001);
	meta.complete = 1;
	json_t *doc = render(&agg, &meta);
	if (!doc)
		goto out;
	CHECK(strcmp(str_at(doc, "source"), "cupti") == 0);
	CHECK(strcmp(str_at(doc, "mode"), "trace") == 0);
	CHECK(strcmp(str_at(doc, "status"), "ok") == 0);
	CHECK(json_is_true(json_object_get(doc, "complete")));
	CHECK(int_at(doc, "kernel_count") == 3);
	CHECK(int_at(doc, "launches") == 5);
	CHECK(int_at(doc, "no_timestamp") == 2);
	CHECK(int_at(doc, "dropped") == 3);
	CHECK(json_array_size(json_object_get(doc, "kernels")) == 2);

	json_t *ka = kernel_with(doc, "_Z4kernPf", 10);
	CHECK(ka != NULL);
	if (ka) {
		CHECK(int_at(ka, "calls") == 3);
		CHECK(int_at(ka, "total_ns") == 600);
		CHECK(int_at(ka, "mean_ns") == 200);
		CHECK(int_at(ka, "min_ns") == 100);
		CHECK(int_at(ka, "max_ns") == 300);
		json_t *st = json_object_get(ka, "streams");
		CHECK(json_array_size(st) == 2);
		CHECK(json_integer_value(json_array_get(st, 0)) == 7);
		CHECK(json_integer_value(json_array_get(st, 1)) == 9);
		CHECK(json_integer_value(json_array_get(json_object_get(ka, "block"), 0)) == 256);
		CHECK(int_at(ka, "registers") == 32);
		json_t *occ = json_object_get(ka, "occupancy");
		CHECK(json_is_object(occ));
	}
	/* sorted by total time: the 600 ns entry first, then the 50 ns one; "small" (10 ns)
	 * is past KPROF_TOP=2 */
	json_t *first = json_array_get(json_object_get(doc, "kernels"), 0);
	CHECK(first == ka);
	CHECK(kernel_with(doc, "_Z4kernPf", 20) != NULL);
	CHECK(kernel_with(doc, "small", 1) == NULL);
	json_t *other = json_object_get(doc, "other");
	CHECK(int_at(other, "kernels") == 1);
	CHECK(int_at(other, "calls") == 1);
	CHECK(int_at(other, "total_ns") == 10);

	json_t *mc = json_object_get(doc, "memcpy");
	CHECK(int_at(mc, "count") == 2 && int_at(mc, "bytes") == 5120 &&
	      int_at(mc, "total_ns") == 60);
	json_t *ms = json_object_get(doc, "memset");
	CHECK(int_at(ms, "count") == 1 && int_at(ms, "bytes") == 64 && int_at(ms, "total_ns") == 3);
	CHECK(int_at(json_object_get(doc, "overhead"), "total_ns") == 20);
	json_t *streams = json_object_get(doc, "streams");
	CHECK(json_array_size(streams) == 2);
	json_t *s7 = json_array_get(streams, 0);
	CHECK(int_at(s7, "id") == 7 && int_at(s7, "kernels") == 4 && int_at(s7, "total_ns") == 460);
	json_t *dev = json_object_get(doc, "device");
	CHECK(strcmp(str_at(dev, "name"), "NVIDIA H100 80GB HBM3") == 0);
	CHECK(int_at(dev, "sm_count") == 132);
	CHECK(json_integer_value(json_array_get(json_object_get(dev, "cc"), 0)) == 9);
	json_decref(doc);
out:
	kprof_agg_free(&agg);
}

static void
test_caps(void)
{
	struct kprof_agg agg;
	kprof_agg_init(&agg);
	char name[32];
	for (int i = 0; i < KPROF_MAX_KERNELS + 10; i++) {
		snprintf(name, sizeof name, "k%d", i);
		struct kprof_kernel_rec r = rec(name, 1, 32, 100 + (uint64_t)i, 5, 1);
		CHECK(kprof_agg_kernel(&agg, &r) == (i < KPROF_MAX_KERNELS ? 0 : 2));
	}
	/* a kernel already in the table still counts in its own entry */
	struct kprof_kernel_rec again = rec("k3", 1, 32, 50000, 7, 1);
	CHECK(kprof_agg_kernel(&agg, &again) == 0);
	/* more streams than one kernel lists, and than the global list holds */
	for (uint32_t s = 0; s < KPROF_MAX_STREAMS + 5; s++) {
		struct kprof_kernel_rec r = rec("k5", 1, 32, 60000 + s, 1, 100 + s);
		kprof_agg_kernel(&agg, &r);
	}
	struct kprof_config cfg = { .top = 3 };
	struct kprof_meta meta;
	kprof_meta_init(&meta, &cfg, 130001);
	json_t *doc = render(&agg, &meta);
	if (doc) {
		CHECK(int_at(doc, "kernel_count") == KPROF_MAX_KERNELS);
		CHECK(int_at(doc, "launches") == KPROF_MAX_KERNELS + 10 + 1 + KPROF_MAX_STREAMS + 5);
		CHECK(json_is_true(json_object_get(doc, "kernel_table_full")));
		json_t *other = json_object_get(doc, "other");
		CHECK(int_at(other, "untracked_calls") == 10);
		CHECK(int_at(other, "kernels") == KPROF_MAX_KERNELS - 3);
		CHECK(json_array_size(json_object_get(doc, "streams")) == KPROF_MAX_STREAMS);
		CHECK(json_is_true(json_object_get(doc, "streams_more")));
		json_t *k5 = json_array_get(json_object_get(doc, "kernels"), 0);
		CHECK(strcmp(str_at(k5, "mangled"), "k5") == 0);
		CHECK(json_array_size(json_object_get(k5, "streams")) == KPROF_KERNEL_STREAMS);
		CHECK(json_is_true(json_object_get(k5, "streams_more")));
		CHECK(int_at(k5, "calls") == 1 + KPROF_MAX_STREAMS + 5);
		json_decref(doc);
	}
	kprof_agg_free(&agg);
}

struct occ_case {
	const char *what;
	int threads, regs, static_smem;
	int blocks;
	const char *limiter;
	double theoretical;
};

static void
test_occupancy(void)
{
	struct kprof_device d = h100();
	/* By hand, H100: 64 warps, 65536 registers, 228 KiB shared memory and 32 blocks per
	 * SM; 1 KiB reserved per block.
	 * - 256 threads x 64 regs = 16384 regs per block -> 4 blocks; smem 17 KiB -> 13;
	 *   warps 8 per block -> 8: 4 blocks, register-limited, 4*8/64 = 50%.
	 * - 128 threads, 32 regs, 48 KiB static: smem 49 KiB per block -> 233472/50176 = 4
	 *   blocks; regs 4096 -> 16; warps 4 -> 16: shared-memory-limited, 4*4/64 = 25%.
	 * - 768 threads, 16 regs: warps 24 per block -> 2 blocks; regs 12288 -> 5:
	 *   warp-limited, 2*24/64 = 75%.
	 * - 32 threads, 16 regs: 1 warp per block -> 64, but 32 blocks per SM at most:
	 *   block-limited, 32*1/64 = 50%.
	 * - 512 threads, 32 regs: 16384 regs -> 4 blocks; warps 16 per block -> 4: 100%. */
	static const struct occ_case cases[] = {
		{ "registers", 256, 64, 16384, 4, "registers", 0.5 },
		{ "shared memory", 128, 32, 49152, 4, "shared_memory", 0.25 },
		{ "warps", 768, 16, 0, 2, "warps", 0.75 },
		{ "blocks", 32, 16, 0, 32, "blocks", 0.5 },
		/* 512 threads x 32 regs: registers and warps both allow 4 blocks, 100%: the
		 * warps are named */
		{ "full", 512, 32, 0, 4, "warps", 1.0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct occ_case *c = &cases[i];
		struct kprof_kernel_rec r = rec("k", 1, c->threads, 1, 1, 0);
		r.registers = (uint32_t)c->regs;
		r.static_smem = c->static_smem;
		struct kprof_occupancy occ;
		CHECKM(kprof_occupancy(&d, &r, &occ) == 0, "%s: calculator refused", c->what);
		CHECKM(occ.blocks_per_sm == c->blocks, "%s: %d blocks per SM, want %d", c->what,
		       occ.blocks_per_sm, c->blocks);
		CHECKM(occ.limiter && strcmp(occ.limiter, c->limiter) == 0, "%s: limiter %s",
		       c->what, occ.limiter ? occ.limiter : "(null)");
		CHECKM(fabs(occ.theoretical - c->theoretical) < 1e-9, "%s: occupancy %g, want %g",
		       c->what, occ.theoretical, c->theoretical);
	}
	/* The register case's per-limit numbers, as the JSON shows them. */
	struct kprof_kernel_rec r = rec("k", 1, 256, 1, 1, 0);
	r.registers = 64;
	r.static_smem = 16384;
	struct kprof_occupancy occ;
	kprof_occupancy(&d, &r, &occ);
	CHECK(occ.limit_registers == 4 && occ.limit_shared_memory == 13 && occ.limit_warps == 8 &&
	      occ.limit_blocks == 32);
	/* Dynamic shared memory counts like static. */
	r.static_smem = 0;
	r.dynamic_smem = 16384;
	kprof_occupancy(&d, &r, &occ);
	CHECK(occ.limit_shared_memory == 13);

	/* Refusals: a block larger than the device allows, an unknown device. */
	struct kprof_kernel_rec big = rec("k", 1, 2048, 1, 1, 0);
	CHECK(kprof_occupancy(&d, &big, &occ) == -1);
	struct kprof_device none = { 0 };
	CHECK(kprof_occupancy(&none, &r, &occ) == -1);
	CHECK(kprof_occupancy(NULL, &r, &occ) == -1);
	struct kprof_device future = h100();
	future.cc_major = 42;
	CHECK(kprof_occupancy(&future, &r, &occ) == -1);
}

static void
test_json_names(void)
{
	struct kprof_agg agg;
	kprof_agg_init(&agg);
	static const char odd[] = "we\"ird\\name\nwith\ttabs\x01 caf\xc3\xa9 bad\xff end";
	static const char odd_back[] = "we\"ird\\name\nwith\ttabs\x01 caf\xc3\xa9 bad\xef\xbf\xbd end";
	struct kprof_kernel_rec r = rec(odd, 1, 32, 10, 5, 0);
	r.device_id = 5; /* unknown device: occupancy null */
	kprof_agg_kernel(&agg, &r);
	char *longname = malloc(5000);
	memset(longname, 'x', 4999);
	longname[4999] = '\0';
	struct kprof_kernel_rec l = rec(longname, 1, 32, 20, 3, 0);
	kprof_agg_kernel(&agg, &l);
	/* same 2047-byte prefix: the same (truncated) kernel */
	longname[4000] = 'y';
	struct kprof_kernel_rec l2 = rec(longname, 1, 32, 30, 3, 0);
	kprof_agg_kernel(&agg, &l2);

	struct kprof_config cfg = { .top = 20 };
	struct kprof_meta meta;
	kprof_meta_init(&meta, &cfg, 130001);
	meta.status = "cupti_busy";
	snprintf(meta.holder, sizeof meta.holder, "nsys \"x\"");
	kprof_meta_note(&meta, "line one\nline two");
	kprof_meta_note(&meta, "second clause");
	meta.cupti_version = 130001;
	json_t *doc = render(&agg, &meta);
	if (doc) {
		CHECK(strcmp(str_at(doc, "status"), "cupti_busy") == 0);
		CHECK(strcmp(str_at(doc, "holder"), "nsys \"x\"") == 0);
		CHECK(strcmp(str_at(doc, "message"), "line one line two; second clause") == 0);
		CHECK(int_at(doc, "cupti_version") == 130001);
		CHECK(json_is_false(json_object_get(doc, "complete")));
		CHECK(json_object_get(doc, "device") == NULL);
		json_t *k = kernel_with(doc, odd_back, 1);
		CHECKM(k != NULL, "odd name not read back");
		if (k) {
			CHECK(strcmp(str_at(k, "name"), odd_back) == 0);
			CHECK(json_is_null(json_object_get(k, "occupancy")));
		}
		longname[KPROF_NAME_MAX - 1] = '\0';
		k = kernel_with(doc, longname, 1);
		CHECKM(k != NULL, "truncated name not found");
		if (k) {
			CHECK(json_is_true(json_object_get(k, "name_truncated")));
			CHECK(int_at(k, "calls") == 2);
		}
		json_decref(doc);
	}
	free(longname);
	kprof_agg_free(&agg);
}

static void
test_metrics_json(void)
{
	struct kprof_agg agg;
	kprof_agg_init(&agg);
	struct kprof_config cfg = { .top = 20, .mode = KPROF_MODE_METRICS };
	struct kprof_meta meta;
	kprof_meta_init(&meta, &cfg, 130001);
	struct kprof_metric_set set;
	kprof_metrics_select(NULL, NULL, NULL, &set);
	meta.metrics = &set;
	meta.metrics_status = "ok";
	meta.metrics_passes = 2;
	meta.availability = "cached";
	snprintf(meta.chip, sizeof meta.chip, "GH100");

	struct kprof_kernel_rec r = rec("_Z4copyPKfPfm", 65536, 256, 0, 0, 0);
	struct kprof_kernel *k = kprof_agg_entry(&agg, &r);
	CHECK(k != NULL);
	CHECK(kprof_agg_entry(&agg, &r) == k);
	if (k) {
		k->calls = 3;
		k->profiled = 1;
		for (size_t i = 0; i < set.count; i++) {
			const char *key = kprof_metric_key(set.names[i]);
			k->metrics[i] = strcmp(key, "dram_read_bytes") == 0 ? 268435456.0
				      : strcmp(key, "dram_pct") == 0	  ? 87.25
									  : 1.0;
			if (strcmp(key, "tensor_pct") != 0)
				k->metrics_mask |= 1u << i;
		}
	}
	json_t *doc = render(&agg, &meta);
	if (doc) {
		CHECK(strcmp(str_at(doc, "mode"), "metrics") == 0);
		CHECK(strcmp(str_at(doc, "metrics_status"), "ok") == 0);
		CHECK(strcmp(str_at(doc, "chip"), "GH100") == 0);
		CHECK(int_at(doc, "passes") == 2);
		CHECK(strcmp(str_at(doc, "counter_availability"), "cached") == 0);
		CHECK(json_array_size(json_object_get(doc, "metric_names")) == 8);
		CHECK(json_object_get(doc, "memcpy") == NULL);
		json_t *kj = json_array_get(json_object_get(doc, "kernels"), 0);
		CHECK(int_at(kj, "calls") == 3);
		CHECK(int_at(kj, "profiled") == 1);
		CHECK(json_object_get(kj, "total_ns") == NULL);
		CHECK(json_object_get(kj, "registers") == NULL);
		json_t *m = json_object_get(kj, "metrics");
		CHECK(int_at(m, "dram_read_bytes") == 268435456);
		CHECK(fabs(json_number_value(json_object_get(m, "dram_pct")) - 87.25) < 1e-9);
		CHECK(json_object_get(m, "tensor_pct") == NULL);
		CHECK(json_object_get(m, "duration_ns") != NULL);
		json_decref(doc);
	}
	kprof_agg_free(&agg);
}

static void
test_short_names(void)
{
	static const char *const cases[][2] = {
		{ "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
		  "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
		  "at::detail::Array<char*, 1>)",
		  "at::native::vectorized_elementwise_kernel" },
		{ "relu_kernel(float const*, float*, int)", "relu_kernel" },
		{ "my_kernel", "my_kernel" },
		{ "void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false>"
		  "(float*, float const*, int, int, int)",
		  "(anonymous namespace)::softmax_warp_forward" },
		{ "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
		  "at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, "
		  "at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, "
		  "at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float> >("
		  "at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::"
		  "{lambda(int)#1})",
		  "at::native::elementwise_kernel" },
		{ "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>("
		  "cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)",
		  "cutlass::Kernel2" },
		{ "void ns::kern<(bool)1, 3u>(int (*)(int), float)", "ns::kern" },
	};
	char out[KPROF_SHORT_MAX];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kprof_short_name(cases[i][0], out, sizeof out);
		CHECKM(strcmp(out, cases[i][1]) == 0, "short name of %s: '%s', want '%s'",
		       cases[i][0], out, cases[i][1]);
	}
	char tiny[8];
	kprof_short_name(cases[0][0], tiny, sizeof tiny);
	CHECK(strcmp(tiny, "at::nat") == 0);

	/* __cxa_demangle comes from libstdc++ when the process has it (a torch process
	 * does); this C test loads it to check the path, and the raw fallback. */
	char dem[KPROF_NAME_MAX];
	CHECK(kprof_demangle("plain_c_kernel", dem, sizeof dem) == 0);
	CHECK(strcmp(dem, "plain_c_kernel") == 0);
	/* RTLD_LOCAL, as Python loads torch (and libstdc++ with it): the symbol is not in the
	 * global scope, and the library must still find it. */
	if (dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL)) {
		CHECK(kprof_demangle("_Z11relu_kernelPKfPfi", dem, sizeof dem) == 1);
		CHECKM(strcmp(dem, "relu_kernel(float const*, float*, int)") == 0, "demangled: %s",
		       dem);
		CHECK(kprof_demangle("_Znot a name", dem, sizeof dem) == 0);
		CHECK(strcmp(dem, "_Znot a name") == 0);
	} else {
		fprintf(stderr, "note: libstdc++.so.6 not loadable; demangling not checked\n");
	}
}

static void
test_targets(void)
{
	CHECK(kprof_targets_match(NULL, "_Z1kv", "k()", "k"));
	CHECK(kprof_targets_match("", "_Z1kv", "k()", "k"));
	CHECK(kprof_targets_match(" , ", "_Z1kv", "k()", "k"));
	CHECK(kprof_targets_match("relu_kernel", "_Z11relu_kernelPf", "relu_kernel(float*)",
				  "relu_kernel"));
	CHECK(kprof_targets_match("other, relu_kernel ", "_Z11relu_kernelPf",
				  "relu_kernel(float*)", "relu_kernel"));
	CHECK(kprof_targets_match("_Z11relu_kernelPf", "_Z11relu_kernelPf", "x", "y"));
	CHECK(kprof_targets_match("fused", "_ZN2ns5fusedEv", "ns::fused()", "ns::fused"));
	CHECK(kprof_targets_match("ns::fused", "_ZN2ns5fusedEv", "ns::fused()", "ns::fused"));
	CHECK(!kprof_targets_match("relu", "_Z11relu_kernelPf", "relu_kernel(float*)",
				   "relu_kernel"));
	CHECK(!kprof_targets_match("gemm,copy", "_Z1kv", "k()", "k"));
}

static int
no_l2(const char *metric, void *ctx)
{
	(*(int *)ctx)++;
	return strncmp(metric, "lts__", 5) != 0;
}

static void
test_metric_sets(void)
{
	struct kprof_metric_set set;
	kprof_metrics_select(NULL, NULL, NULL, &set);
	CHECK(set.count == kprof_default_metrics_count && set.ndropped == 0);
	CHECK(set.count == 8);
	static const char *const keys[] = { "duration_ns", "dram_pct", "achieved_occupancy_pct",
					    "l1_hit_pct", "l2_hit_pct", "tensor_pct",
					    "dram_read_bytes", "dram_write_bytes" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		int found = 0;
		for (size_t j = 0; j < set.count; j++)
			found |= strcmp(kprof_metric_key(set.names[j]), keys[i]) == 0;
		CHECKM(found, "default set lacks %s", keys[i]);
	}
	int asked = 0;
	kprof_metrics_select("  ", no_l2, &asked, &set);
	CHECK(asked == 8 && set.count == 7 && set.ndropped == 1);
	CHECK(strcmp(set.dropped[0], "lts__t_sector_hit_rate.pct") == 0);

	kprof_metrics_select(" a.sum, b.sum ,,a.sum,lts__x.pct", no_l2, &asked, &set);
	CHECK(set.count == 2 && strcmp(set.names[0], "a.sum") == 0 &&
	      strcmp(set.names[1], "b.sum") == 0);
	CHECK(set.ndropped == 1 && strcmp(set.dropped[0], "lts__x.pct") == 0);
	CHECK(strcmp(kprof_metric_key("a.sum"), "a.sum") == 0);

	char list[4096] = "";
	for (int i = 0; i < 20; i++) {
		size_t n = strlen(list);
		snprintf(list + n, sizeof list - n, "m%d.sum,", i);
	}
	size_t n = strlen(list);
	memset(list + n, 'z', 200);
	list[n + 200] = '\0';
	kprof_metrics_select(list, NULL, NULL, &set);
	CHECK(set.count == KPROF_MAX_METRICS);
	CHECK(set.ndropped == 5);
	CHECK(strlen(set.dropped[4]) == KPROF_METRIC_NAME_MAX - 1);
}

static void
test_env_and_status(void)
{
	CHECK(strcmp(kprof_cupti_status(35), "not_permitted") == 0);
	CHECK(strcmp(kprof_cupti_status(27), "unsupported") == 0);
	CHECK(strcmp(kprof_cupti_status(43), "unsupported") == 0);
	CHECK(strcmp(kprof_cupti_status(999), "error") == 0);

	char out[64];
	CHECK(kprof_expand_path("/d/kprof.%p.json", 4242, out, sizeof out) == 0);
	CHECK(strcmp(out, "/d/kprof.4242.json") == 0);
	CHECK(kprof_expand_path("a%%b%q", 1, out, sizeof out) == 0);
	CHECK(strcmp(out, "a%b%q") == 0);
	CHECK(kprof_expand_path("0123456789%p", 123456, out, 12) == -1);

	struct kprof_config cfg;
	unsetenv("KPROF_OUT");
	unsetenv("KPROF_MODE");
	unsetenv("KPROF_GATE");
	unsetenv("KPROF_TOP");
	unsetenv("KPROF_TARGETS");
	unsetenv("KPROF_METRICS");
	unsetenv("KPROF_BUFFER_KB");
	unsetenv("KPROF_AVAILABILITY_DIR");
	unsetenv("KPROF_AVAILABILITY_WRITE");
	kprof_config_from_env(&cfg, 77);
	CHECK(cfg.out[0] == '\0' && cfg.mode == KPROF_MODE_TRACE &&
	      cfg.gate == KPROF_GATE_PROFILER_API && cfg.top == KPROF_TOP_DEFAULT &&
	      cfg.buffer_bytes == (size_t)KPROF_BUFFER_KB_DEFAULT << 10 && !cfg.warning[0]);
	CHECK(cfg.availability_dir[0] == '\0' && !cfg.availability_write);
	setenv("KPROF_OUT", "/tmp/k.%p.json", 1);
	setenv("KPROF_MODE", "metrics", 1);
	setenv("KPROF_GATE", "all", 1);
	setenv("KPROF_TOP", "5000", 1);
	setenv("KPROF_TARGETS", "relu_kernel", 1);
	setenv("KPROF_BUFFER_KB", "64", 1);
	setenv("KPROF_AVAILABILITY_DIR", "/cache/kprof", 1);
	setenv("KPROF_AVAILABILITY_WRITE", "1", 1);
	kprof_config_from_env(&cfg, 77);
	CHECK(strcmp(cfg.out, "/tmp/k.77.json") == 0);
	CHECK(strcmp(cfg.availability_dir, "/cache/kprof") == 0 && cfg.availability_write);
	CHECK(cfg.mode == KPROF_MODE_METRICS && cfg.gate == KPROF_GATE_ALL);
	CHECK(cfg.top == KPROF_TOP_MAX && cfg.buffer_bytes == 64u << 10);
	CHECK(strcmp(cfg.targets, "relu_kernel") == 0 && !cfg.warning[0]);
	setenv("KPROF_MODE", "fast", 1);
	setenv("KPROF_GATE", "sometimes", 1);
	setenv("KPROF_TOP", "ten", 1);
	setenv("KPROF_BUFFER_KB", "1", 1);
	setenv("KPROF_AVAILABILITY_WRITE", "yes", 1);	/* only "1" lets a process write */
	kprof_config_from_env(&cfg, 77);
	CHECK(!cfg.availability_write);
	unsetenv("KPROF_AVAILABILITY_DIR");
	unsetenv("KPROF_AVAILABILITY_WRITE");
	CHECK(cfg.mode == KPROF_MODE_TRACE && cfg.gate == KPROF_GATE_PROFILER_API &&
	      cfg.top == KPROF_TOP_DEFAULT && cfg.buffer_bytes == (size_t)KPROF_BUFFER_KB_DEFAULT << 10);
	CHECKM(strstr(cfg.warning, "KPROF_MODE=fast") && strstr(cfg.warning, "KPROF_GATE") &&
	       strstr(cfg.warning, "KPROF_TOP") && strstr(cfg.warning, "KPROF_BUFFER_KB"),
	       "warning: %s", cfg.warning);
	struct kprof_meta meta;
	kprof_meta_init(&meta, &cfg, 1);
	CHECK(strstr(meta.message, "KPROF_MODE=fast") != NULL);
}

static void
test_atomic_write(void)
{
	const char *base = getenv("KFORGE_TEST_TMP");
	char dir[512], path[600], tmp[620];
	snprintf(dir, sizeof dir, "%s/kprof-core-%d", base && *base ? base : "/tmp", (int)getpid());
	mkdir(base && *base ? base : "/tmp", 0755);
	CHECK(mkdir(dir, 0755) == 0);
	snprintf(path, sizeof path, "%s/out.json", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	CHECK(kprof_write_atomic(path, "{\"a\":1}\n", 8, 0) == 0);
	CHECK(kprof_write_atomic(path, "{\"a\":2}\n", 8, 1) == 0);
	json_error_t err;
	json_t *doc = json_load_file(path, 0, &err);
	CHECK(doc && json_integer_value(json_object_get(doc, "a")) == 2);
	json_decref(doc);
	CHECK(access(tmp, F_OK) != 0);
	char missing[700];
	snprintf(missing, sizeof missing, "%s/no/such/dir/x.json", dir);
	CHECK(kprof_write_atomic(missing, "{}", 2, 0) < 0);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	test_aggregation();
	test_caps();
	test_occupancy();
	test_json_names();
	test_metrics_json();
	test_short_names();
	test_targets();
	test_metric_sets();
	test_env_and_status();
	test_atomic_write();
	return failures ? 1 : 0;
}
