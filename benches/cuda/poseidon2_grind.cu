// A CUDA ceiling for the WGSL Poseidon2 kernels (not part of the library): the same algorithm as
// wgsl/poseidon2/permutation.wgsl and wgsl/pow/grind.wgsl (BabyBear in Montgomery form, x^7
// S-box, 4 + 13 + 4 rounds, the same external and internal linear layers, one grind candidate
// per thread), timed over 2^28 candidates with no hit (mask all ones), so every permutation runs.
// Round constants are arbitrary: the speed does not depend on them. On a CUDA machine:
//   nvcc -O3 -arch=sm_90 -o poseidon2_grind benches/cuda/poseidon2_grind.cu && ./poseidon2_grind
//   cuobjdump -sass poseidon2_grind   # the instruction mix
// BENCHMARKS.md ("the CUDA ceiling") compares it with poseidon2_bench on the same GPU.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define P 0x78000001u
#define MU 0x88000001u
__constant__ uint32_t RC[141];
__device__ __forceinline__ uint32_t add(uint32_t a, uint32_t b){uint32_t s=a+b; return s>=P? s-P: s;}
__device__ __forceinline__ uint32_t sub(uint32_t a, uint32_t b){uint32_t d=a-b; return a<b? d+P: d;}
__device__ __forceinline__ uint32_t mul(uint32_t a, uint32_t b){
  uint64_t ab=(uint64_t)a*b; uint32_t q=(uint32_t)ab*MU; uint32_t h=ab>>32; uint32_t qp=__umulhi(q,P);
  uint32_t r=h-qp; return h<qp? r+P: r;}
__device__ __forceinline__ uint32_t sbox(uint32_t x){uint32_t x2=mul(x,x); uint32_t x3=mul(x2,x); return mul(mul(x3,x3),x);}
__device__ __forceinline__ uint32_t div2k(uint32_t x, int k){uint32_t q=(0u-x)&((1u<<k)-1u); uint32_t r=((x+q)>>k)+q*(15u<<(27-k)); return r>=P? r-P: r;}
__device__ __forceinline__ void mat4(uint32_t* x){
  uint32_t t01=add(x[0],x[1]), t23=add(x[2],x[3]), t0123=add(t01,t23), t01123=add(t0123,x[1]), t01233=add(t0123,x[3]);
  uint32_t y0=add(t01123,t01), y1=add(t01123,add(x[2],x[2])), y2=add(t01233,t23), y3=add(t01233,add(x[0],x[0]));
  x[0]=y0;x[1]=y1;x[2]=y2;x[3]=y3;}
__device__ __forceinline__ void ext(uint32_t* s){
  for(int i=0;i<4;i++) mat4(s+4*i);
  uint32_t sums[4]; for(int j=0;j<4;j++) sums[j]=add(add(s[j],s[4+j]),add(s[8+j],s[12+j]));
  for(int i=0;i<16;i++) s[i]=add(s[i],sums[i&3]);}
__device__ __forceinline__ void internal(uint32_t* s, uint32_t rc){
  uint32_t x0=sbox(add(s[0],rc));
  uint32_t part=s[1]; for(int i=2;i<16;i++) part=add(part,s[i]);
  uint32_t full=add(part,x0);
  uint32_t n[16];
  n[0]=sub(part,x0); n[1]=add(full,s[1]); n[2]=add(full,add(s[2],s[2])); n[3]=add(full,div2k(s[3],1));
  n[4]=add(full,add(add(s[4],s[4]),s[4])); n[5]=add(full,add(add(s[5],s[5]),add(s[5],s[5]))); n[6]=sub(full,div2k(s[6],1)); n[7]=sub(full,add(add(s[7],s[7]),s[7]));
  n[8]=sub(full,add(add(s[8],s[8]),add(s[8],s[8]))); n[9]=add(full,div2k(s[9],8)); n[10]=add(full,div2k(s[10],2)); n[11]=add(full,div2k(s[11],3));
  n[12]=add(full,div2k(s[12],27)); n[13]=sub(full,div2k(s[13],8)); n[14]=sub(full,div2k(s[14],4)); n[15]=sub(full,div2k(s[15],27));
  for(int i=0;i<16;i++) s[i]=n[i];}
__device__ __forceinline__ void perm(uint32_t* s){
  ext(s);
  #pragma unroll
  for(int r=0;r<4;r++){ for(int i=0;i<16;i++) s[i]=sbox(add(s[i],RC[16*r+i])); ext(s);}
  #pragma unroll
  for(int r=0;r<13;r++) internal(s,RC[128+r]);
  #pragma unroll
  for(int r=0;r<4;r++){ for(int i=0;i<16;i++) s[i]=sbox(add(s[i],RC[64+16*r+i])); ext(s);}
}
__global__ void grind(uint32_t start, uint32_t mask, uint32_t* best){
  uint32_t c=start+blockIdx.x*blockDim.x+threadIdx.x;
  uint32_t s[16];
  for(int i=0;i<16;i++) s[i]=(0x1234567u*(i+1))%P;
  s[3]=mul(c,0x45dddde3u);
  perm(s);
  uint32_t v=mul(s[7],1u);
  if((v&mask)==0) atomicMin(best,c);
}
int main(){
  uint32_t h[141]; for(int i=0;i<141;i++) h[i]=(0x9e3779b9u*(i+7))%P;
  cudaMemcpyToSymbol(RC,h,sizeof(h));
  uint32_t* best; cudaMalloc(&best,4);
  cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b);
  for(int rep=0;rep<4;rep++){
    uint32_t init=0xffffffffu; cudaMemcpy(best,&init,4,cudaMemcpyHostToDevice);
    uint32_t n=1u<<28; int bs=256;
    cudaEventRecord(a);
    grind<<<n/bs,bs>>>(0,0xffffffffu,best);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms,a,b);
    uint32_t out; cudaMemcpy(&out,best,4,cudaMemcpyDeviceToHost);
    printf("cuda poseidon2 grind: 2^28 perms in %.2f ms = %.3f G perm/s (best %u)\n", ms, n/ms/1e6, out);
  }
}
