// The design's merged call-chain example, as a raw truffld dump held in memory: one step with
// three requests, nested frontend/backend ranges, API calls, kernels, a memset, a collective,
// a range naming a request subset, an orphan kernel and a launch outside any step.
#pragma once

#include <string>

namespace truffld::merge::testing {

inline std::string AppendixExampleDump() {
  auto push = [](const char* n, int ts) {
    return std::string("{\"type\":\"NVTX_PUSH\",\"name\":\"") + n + "\",\"timestamp\":" + std::to_string(ts) +
           ",\"process_id\":1,\"thread_id\":1}\n";
  };
  auto pop = [](int ts) {
    return "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(ts) + ",\"process_id\":1,\"thread_id\":1}\n";
  };
  auto api = [](const char* n, int s, int e, int corr) {
    return std::string("{\"type\":\"RUNTIME\",\"cbid\":211,\"name\":\"") + n + "\",\"start\":" + std::to_string(s) +
           ",\"end\":" + std::to_string(e) + ",\"correlation_id\":" + std::to_string(corr) +
           ",\"process_id\":1,\"thread_id\":1}\n";
  };
  auto kernel = [](const char* n, int s, int e, int corr) {
    return std::string("{\"type\":\"KERNEL\",\"name\":\"") + n + "\",\"gpu_start\":" + std::to_string(s) +
           ",\"gpu_end\":" + std::to_string(e) + ",\"correlation_id\":" + std::to_string(corr) +
           ",\"device\":0,\"stream\":7}\n";
  };
  std::string d =
      "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"node1\",\"process_id\":1,\"rank\":0,"
      "\"clock\":\"realtime\",\"clock_sync\":{\"realtime_ns\":0,\"monotonic_ns\":0}}\n";
  d += push("step_execute_model[request_ids:0_1_2]", 1000);
  d += push("torch.nn.functional.embedding .../torch/nn/functional.py:2437", 1100);
  d += push("aten::empty, op_id = 1", 1200) + pop(1300);
  d += push("aten::index_select, op_id = 3", 1400);
  d += api("cudaLaunchKernel", 1500, 1600, 10) + kernel("void at::native::indexSelectLargeIndex<float, 2>(float*)", 1700, 2500, 10);
  d += api("cudaMemsetAsync", 1650, 1680, 11);
  d += "{\"type\":\"MEMSET\",\"bytes\":256,\"gpu_start\":2600,\"gpu_end\":2700,\"correlation_id\":11,\"device\":0,\"stream\":7}\n";
  d += pop(2900) + pop(3000);
  d += push("torch.nn.functional.linear f.py:1", 3100) + push("aten::mm, seq = 0, op_id = 5", 3200);
  d += api("cudaLaunchKernel", 3300, 3400, 12) + kernel("void gemm<float>(float*, int)", 3500, 4500, 12);
  d += pop(5000) + pop(6000);
  d += push("ncclAllReduce", 6100) + api("cudaLaunchKernel", 6200, 6300, 13) +
       kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", 6400, 7900, 13) + pop(8000);
  d += push("sampler[request_ids:1]", 8100) + api("cudaMemcpyAsync", 8120, 8150, 14) + pop(8200);
  d += pop(10000);
  d += kernel("orphan_kernel", 9000, 9100, 99);
  d += api("cudaLaunchKernel", 20000, 20010, 15) + kernel("late_kernel", 20100, 20200, 15);
  d += "{\"type\":\"STATS\",\"records_written\":40,\"records_dropped\":{\"KERNEL\":3}}\n";
  return d;
}

}  // namespace truffld::merge::testing
