/* fake_libcuda: a stand-in for the CUDA driver library (SONAME libcuda.so.1) exporting only the
 * queries the injector makes when it describes the devices in META: driver version, device
 * count, device handle, name and UUID. Two devices, fixed answers, so the replay test can check
 * META's devices exactly on a machine without a GPU. Test-only; never installed. */
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct { char bytes[16]; } CUuuid;

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* v) { *v = 13000; return 0; }
__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int* n) { *n = 2; return 0; }
__attribute__((visibility("default"))) CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (ordinal < 0 || ordinal > 1) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *d = ordinal;
  return 0;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  const char* n = d == 0 ? "Fake GPU \"zero\"" : "Fake GPU one";
  strncpy(name, n, (size_t)len);
  if (len > 0) name[len - 1] = '\0';
  return 0;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetUuid_v2(CUuuid* u, CUdevice d) {
  for (int i = 0; i < 16; ++i) u->bytes[i] = (char)(0x10 * d + i); /* device 1: 0x10..0x1f */
  u->bytes[0] = (char)(d == 0 ? 0xab : 0xcd);
  return 0;
}
