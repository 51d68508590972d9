// kprof_probe.cu: a CUDA program for the GPU tests of the CUPTI injection library
// (tests/kprof/kprof_gpu.py), built with nvcc at test time. Modes:
//   trace        known_kernel (grid 7x3, block 128x2, 4 KiB static shared memory) launched
//                5 times between cudaProfilerStart and cudaProfilerStop; outside_kernel
//                launched before the start and after the stop
//   loop         tiny_kernel launched without end inside the gate (the test kills it)
//   copy BYTES   copy_kernel over BYTES bytes, 3 launches inside the gate
// std::string keeps libstdc++ loaded, as in a torch process, so names can be demangled.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#define CK(x)                                                                          \
	do {                                                                           \
		cudaError_t e_ = (x);                                                  \
		if (e_ != cudaSuccess) {                                               \
			std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
			std::exit(2);                                                  \
		}                                                                      \
	} while (0)

__global__ void known_kernel(float *out, int n)
{
	__shared__ float s[1024];
	int t = threadIdx.y * blockDim.x + threadIdx.x;
	for (int i = t; i < 1024; i += blockDim.x * blockDim.y)
		s[i] = (float)(i + blockIdx.x);
	__syncthreads();
	int g = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y + t;
	if (g < n)
		out[g] = s[(t * 7) & 1023] * 2.0f + s[t & 1023];
}

__global__ void outside_kernel(float *out, int n)
{
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	if (g < n)
		out[g] += 1.0f;
}

__global__ void tiny_kernel(float *out)
{
	out[threadIdx.x] += 1.0f;
}

__global__ void copy_kernel(const float4 *src, float4 *dst, size_t n4)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = src[i];
}

int main(int argc, char **argv)
{
	std::string mode = argc > 1 ? argv[1] : "trace";
	if (mode == "trace") {
		float *buf;
		const int n = 7 * 3 * 256;
		CK(cudaMalloc(&buf, n * sizeof(float)));
		outside_kernel<<<3, 64>>>(buf, n);
		CK(cudaDeviceSynchronize());
		CK(cudaProfilerStart());
		for (int i = 0; i < 5; i++)
			known_kernel<<<dim3(7, 3, 1), dim3(128, 2, 1)>>>(buf, n);
		CK(cudaDeviceSynchronize());
		CK(cudaProfilerStop());
		outside_kernel<<<3, 64>>>(buf, n);
		CK(cudaDeviceSynchronize());
		std::printf("trace: done\n");
		return 0;
	}
	if (mode == "loop") {
		float *buf;
		CK(cudaMalloc(&buf, 32 * sizeof(float)));
		CK(cudaProfilerStart());
		for (long round = 0;; round++) {
			for (int i = 0; i < 1000; i++)
				tiny_kernel<<<1, 32>>>(buf);
			CK(cudaDeviceSynchronize());
			if (round % 10 == 0) {
				std::printf("loop: %ld launches\n", (round + 1) * 1000);
				std::fflush(stdout);
			}
		}
	}
	if (mode == "copy" && argc > 2) {
		size_t bytes = std::strtoull(argv[2], nullptr, 10);
		size_t n4 = bytes / sizeof(float4);
		float4 *src, *dst;
		CK(cudaMalloc(&src, bytes));
		CK(cudaMalloc(&dst, bytes));
		CK(cudaMemset(src, 1, bytes));
		CK(cudaMemset(dst, 0, bytes));
		CK(cudaDeviceSynchronize());
		CK(cudaProfilerStart());
		for (int i = 0; i < 3; i++)
			copy_kernel<<<132 * 8, 256>>>(src, dst, n4);
		CK(cudaDeviceSynchronize());
		CK(cudaProfilerStop());
		std::printf("copy: %zu bytes\n", bytes);
		return 0;
	}
	std::fprintf(stderr, "usage: kprof_probe trace | loop | copy BYTES\n");
	return 2;
}
