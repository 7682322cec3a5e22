// Throwaway probe: SM read bandwidth from pinned host memory by load flavour and shape.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); return 1;}}while(0)
enum Op { CV=0, CG=1, PLAIN=2, NC=3, CV256=4, CG256=5, RELAXED=6 };
template<int OP> __device__ __forceinline__ uint4 Ld(const uint4* p){
  uint4 v;
  if (OP==CV) v=__ldcv(p);
  else if (OP==CG) v=__ldcg(p);
  else if (OP==PLAIN) v=*p;
  else if (OP==NC) v=__ldg(p);
  else if (OP==CV256) asm volatile("ld.global.cv.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];":"=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w):"l"(p));
  else if (OP==CG256) asm volatile("ld.global.cg.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];":"=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w):"l"(p));
  else asm volatile("ld.relaxed.sys.global.v4.u32 {%0,%1,%2,%3}, [%4];":"=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w):"l"(p));
  return v;
}
// Pieces of `piece` bytes, block b takes pieces b, b+grid, ...; L loads in flight per thread.
template<int OP,int L> __global__ void __launch_bounds__(512) Piece(const uint4* src, uint4* dst, uint64_t n16, uint64_t piece16){
  const uint64_t pieces=(n16+piece16-1)/piece16;
  for(uint64_t p=blockIdx.x;p<pieces;p+=gridDim.x){
    const uint64_t at=p*piece16, end=min(n16,at+piece16);
    for(uint64_t r=at;r<end;r+=(uint64_t)L*blockDim.x){
      uint4 v[L];
#pragma unroll
      for(int k=0;k<L;++k){uint64_t i=r+threadIdx.x+(uint64_t)k*blockDim.x; if(i<end) v[k]=Ld<OP>(src+i);}
#pragma unroll
      for(int k=0;k<L;++k){uint64_t i=r+threadIdx.x+(uint64_t)k*blockDim.x; if(i<end) dst[i]=v[k];}
    }
  }
}
template<int OP,int L> float Run(const uint4* s, uint4* d, uint64_t bytes, int grid, uint64_t piece, int reps){
  cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> t;
  for(int i=0;i<reps+2;++i){
    cudaEventRecord(a); Piece<OP,L><<<grid,512>>>(s,d,bytes/16,piece/16); cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms,a,b); if(i>=2) t.push_back(ms);
  }
  std::sort(t.begin(),t.end()); return bytes/(t[t.size()/2]*1e-3)/1e9;
}
int main(){
  const uint64_t max=256ull<<20;
  uint4 *h,*hd,*d;
  CK(cudaHostAlloc((void**)&h,max,cudaHostAllocMapped)); CK(cudaHostGetDevicePointer((void**)&hd,h,0));
  CK(cudaMalloc((void**)&d,max)); memset(h,1,max);
  const char* names[]={"cv","cg","plain","nc","cv.L2::256B","cg.L2::256B","relaxed.sys"};
  for(uint64_t mib: {16ull,64ull}){
    uint64_t bytes=mib<<20;
    cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<float> t;
    for(int i=0;i<12;++i){cudaEventRecord(a); cudaMemcpyAsync(d,h,bytes,cudaMemcpyHostToDevice); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms,a,b); if(i>=2)t.push_back(ms);}
    std::sort(t.begin(),t.end()); printf("%3lu MiB cudaMemcpy %.2f GB/s\n",mib,bytes/(t[t.size()/2]*1e-3)/1e9);
    struct Shape{int grid; uint64_t piece; const char* n;} shapes[]={{32,32<<10,"32x512 32K pieces"},{132,32<<10,"132x512 32K pieces"},{32,128<<10,"32x512 128K pieces"}};
    for(auto sh: shapes){
      printf("%3lu MiB %-20s L4:",mib,sh.n);
      float r[7]={Run<CV,4>(hd,d,bytes,sh.grid,sh.piece,10),Run<CG,4>(hd,d,bytes,sh.grid,sh.piece,10),Run<PLAIN,4>(hd,d,bytes,sh.grid,sh.piece,10),Run<NC,4>(hd,d,bytes,sh.grid,sh.piece,10),Run<CV256,4>(hd,d,bytes,sh.grid,sh.piece,10),Run<CG256,4>(hd,d,bytes,sh.grid,sh.piece,10),Run<RELAXED,4>(hd,d,bytes,sh.grid,sh.piece,10)};
      for(int k=0;k<7;++k) printf(" %s %.2f",names[k],r[k]); printf("\n");
      printf("%3lu MiB %-20s L8:",mib,sh.n);
      float q[3]={Run<CV,8>(hd,d,bytes,sh.grid,sh.piece,10),Run<CG,8>(hd,d,bytes,sh.grid,sh.piece,10),Run<CV256,8>(hd,d,bytes,sh.grid,sh.piece,10)};
      printf(" cv %.2f cg %.2f cv.L2::256B %.2f\n",q[0],q[1],q[2]);
    }
  }
  return 0;
}
