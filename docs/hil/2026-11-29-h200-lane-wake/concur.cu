// Throwaway probe: do the SMs' reads of host memory and a copy engine's DMA add up?
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); return 1;}}while(0)
__global__ void __launch_bounds__(512) Rd(const uint4* src, uint4* dst, uint64_t n16){
  for(uint64_t r=(uint64_t)blockIdx.x*blockDim.x*4; r<n16; r+=(uint64_t)gridDim.x*blockDim.x*4){
    uint4 v[4];
#pragma unroll
    for(int k=0;k<4;++k){uint64_t i=r+threadIdx.x+(uint64_t)k*blockDim.x; if(i<n16) v[k]=__ldcv(src+i);}
#pragma unroll
    for(int k=0;k<4;++k){uint64_t i=r+threadIdx.x+(uint64_t)k*blockDim.x; if(i<n16) dst[i]=v[k];}
  }
}
int main(){
  const uint64_t B=256ull<<20;
  uint4 *h1,*h1d,*h2,*h3,*d1,*d2,*d3;
  CK(cudaHostAlloc((void**)&h1,B,cudaHostAllocMapped)); CK(cudaHostGetDevicePointer((void**)&h1d,h1,0));
  CK(cudaHostAlloc((void**)&h2,B,0)); CK(cudaHostAlloc((void**)&h3,B,0));
  CK(cudaMalloc((void**)&d1,B)); CK(cudaMalloc((void**)&d2,B)); CK(cudaMalloc((void**)&d3,B));
  memset(h1,1,B); memset(h2,2,B); memset(h3,3,B);
  cudaStream_t s1,s2,s3; cudaStreamCreateWithFlags(&s1,cudaStreamNonBlocking); cudaStreamCreateWithFlags(&s2,cudaStreamNonBlocking); cudaStreamCreateWithFlags(&s3,cudaStreamNonBlocking);
  cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto time=[&](int mode, uint64_t sm_bytes, uint64_t ce_bytes)->double{
    std::vector<double> t;
    for(int i=0;i<12;++i){
      CK(cudaDeviceSynchronize());
      cudaEventRecord(a,s1); cudaStreamWaitEvent(s2,a); cudaStreamWaitEvent(s3,a);
      if(sm_bytes) Rd<<<132,512,0,s1>>>(h1d,d1,sm_bytes/16);
      if(ce_bytes) cudaMemcpyAsync(d2,h2,ce_bytes,cudaMemcpyHostToDevice,s2);
      if(mode==2) cudaMemcpyAsync(d3,h3,ce_bytes,cudaMemcpyHostToDevice,s3);
      cudaEvent_t e2,e3; cudaEventCreate(&e2); cudaEventCreate(&e3); cudaEventRecord(e2,s2); cudaEventRecord(e3,s3);
      cudaStreamWaitEvent(s1,e2); cudaStreamWaitEvent(s1,e3); cudaEventRecord(b,s1); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms,a,b); if(i>=2) t.push_back(ms);
    }
    std::sort(t.begin(),t.end()); return (sm_bytes+ce_bytes*(mode==2?2:1))/(t[t.size()/2]*1e-3)/1e9;
  };
  for(uint64_t mib: {64ull,256ull}){
    uint64_t x=mib<<20;
    printf("%3lu MiB: CE alone %.2f GB/s, SM alone %.2f, SM+CE together %.2f, two CE streams %.2f, SM 1/3 + CE 2/3 together %.2f\n",
      mib, time(1,0,x), time(1,x,0), time(1,x,x), time(2,0,x), time(1,x/3/4096*4096,x-x/3/4096*4096));
  }
  return 0;
}
