// kbench.cu: kernels of known character for tools/bench/kprof, which checks the CUPTI
// injection library's numbers against CUDA events (durations) and against ncu (DRAM
// throughput, achieved and theoretical occupancy, registers). Our own writing.
//
//   kbench KERNEL ITERS    3 launches outside the profiler gate (warm-up), then ITERS
//                          launches inside cudaProfilerStart/Stop, each timed by a pair of
//                          CUDA events; prints one JSON line with the events' mean and
//                          median in microseconds.
// KERNEL: copy (float4 copy of 256 MiB: memory-bound), fma (a chain of FMAs in registers:
// compute-bound), regs (a kernel that keeps many values live: occupancy limited by
// registers), smem (48 KiB of dynamic shared memory per 256-thread block: limited by
// shared memory).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                          \
	do {                                                                           \
		cudaError_t e_ = (x);                                                  \
		if (e_ != cudaSuccess) {                                               \
			std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
			std::exit(2);                                                  \
		}                                                                      \
	} while (0)

static const size_t COPY_BYTES = (size_t)256 << 20;
static const int FMA_THREADS = 1 << 22;
static const int FMA_STEPS = 2048;
static const int SMEM_BYTES = 48 << 10;

__global__ void copy_kernel(const float4 *__restrict__ src, float4 *__restrict__ dst, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = src[i];
}

__global__ void fma_kernel(float *out, float a, float b)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float x = (float)i * 1e-7f, y = 1.0f - x;
	for (int k = 0; k < FMA_STEPS; k++) {
		x = fmaf(x, a, b);
		y = fmaf(y, b, a);
	}
	out[i] = x + y;
}

// 64 live accumulators per thread, each updated from the others: the compiler keeps them
// in registers, so registers per thread (and not warps) bound the blocks per SM.
__global__ void regs_kernel(float *out, int n)
{
	float acc[64];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
	for (int k = 0; k < 64; k++)
		acc[k] = (float)(i + k) * 1e-3f;
	for (int r = 0; r < 64; r++) {
#pragma unroll
		for (int k = 0; k < 64; k++)
			acc[k] = fmaf(acc[k], acc[(k + 1) & 63], acc[(k + 7) & 63]) * 0.5f;
	}
	float s = 0.0f;
#pragma unroll
	for (int k = 0; k < 64; k++)
		s += acc[k];
	if (i < n)
		out[i] = s;
}

__global__ void smem_kernel(float *out, int n)
{
	extern __shared__ float buf[];
	int words = SMEM_BYTES / (int)sizeof(float);
	for (int k = threadIdx.x; k < words; k += blockDim.x)
		buf[k] = (float)(k + blockIdx.x);
	__syncthreads();
	float s = 0.0f;
	for (int r = 0; r < 64; r++)
		s += buf[(threadIdx.x * 33 + r * 97) % words];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = s;
}

struct bufs {
	float4 *src, *dst;
	float *out;
};

static void launch(const char *k, const bufs &b)
{
	if (std::strcmp(k, "copy") == 0)
		copy_kernel<<<132 * 8, 512>>>(b.src, b.dst, COPY_BYTES / sizeof(float4));
	else if (std::strcmp(k, "fma") == 0)
		fma_kernel<<<FMA_THREADS / 256, 256>>>(b.out, 0.999f, 1e-4f);
	else if (std::strcmp(k, "regs") == 0)
		regs_kernel<<<FMA_THREADS / 256, 256>>>(b.out, FMA_THREADS);
	else
		smem_kernel<<<FMA_THREADS / 256, 256, SMEM_BYTES>>>(b.out, FMA_THREADS);
	CK(cudaGetLastError());
}

int main(int argc, char **argv)
{
	if (argc != 3 || (std::strcmp(argv[1], "copy") && std::strcmp(argv[1], "fma") &&
			  std::strcmp(argv[1], "regs") && std::strcmp(argv[1], "smem"))) {
		std::fprintf(stderr, "usage: kbench copy|fma|regs|smem ITERS\n");
		return 2;
	}
	const char *k = argv[1];
	int iters = std::atoi(argv[2]);
	bufs b;
	CK(cudaMalloc(&b.src, COPY_BYTES));
	CK(cudaMalloc(&b.dst, COPY_BYTES));
	CK(cudaMalloc(&b.out, FMA_THREADS * sizeof(float)));
	CK(cudaMemset(b.src, 1, COPY_BYTES));
	CK(cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
				SMEM_BYTES));
	for (int w = 0; w < 3; w++)
		launch(k, b);
	CK(cudaDeviceSynchronize());
	std::vector<cudaEvent_t> ev(2 * iters);
	for (auto &e : ev)
		CK(cudaEventCreate(&e));
	CK(cudaProfilerStart());
	for (int i = 0; i < iters; i++) {
		CK(cudaEventRecord(ev[2 * i]));
		launch(k, b);
		CK(cudaEventRecord(ev[2 * i + 1]));
	}
	CK(cudaDeviceSynchronize());
	CK(cudaProfilerStop());
	std::vector<float> us(iters);
	double sum = 0;
	for (int i = 0; i < iters; i++) {
		float ms;
		CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
		us[i] = ms * 1000.0f;
		sum += us[i];
	}
	std::sort(us.begin(), us.end());
	std::printf("{\"kernel\": \"%s\", \"iters\": %d, \"event_mean_us\": %.3f, "
		    "\"event_median_us\": %.3f}\n", k, iters, sum / iters, us[iters / 2]);
	return 0;
}
