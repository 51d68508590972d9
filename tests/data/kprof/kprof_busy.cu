// kprof_busy.cu: holds CUPTI before CUDA starts, as nsys, ncu or a profiler in the candidate
// would, so that the injection library finds it busy (tests/kprof/kprof_gpu.py busy). Its own
// subscriber is named "kprof-test-holder"; the library must report that name and exit
// cleanly with the program.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>

static void CUPTIAPI ignore(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

__global__ void busy_kernel(float *out)
{
	out[threadIdx.x] = 1.0f;
}

int main()
{
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	CUpti_SubscriberParams p = {};
	p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	p.subscriberName = "kprof-test-holder";
	p.oldSubscriberName = old;
	p.oldSubscriberSize = sizeof old;
	CUpti_SubscriberHandle h;
	CUptiResult r = cuptiSubscribe_v2(&h, ignore, nullptr, &p);
	if (r != CUPTI_SUCCESS) {
		std::fprintf(stderr, "busy: cuptiSubscribe_v2 failed (%d), held by '%s'\n", (int)r,
			     old);
		return 2;
	}
	float *buf;
	if (cudaMalloc(&buf, 32 * sizeof(float)) != cudaSuccess)
		return 2;
	cudaProfilerStart();
	busy_kernel<<<1, 32>>>(buf);
	cudaDeviceSynchronize();
	cudaProfilerStop();
	std::printf("busy: done\n");
	return 0;
}
