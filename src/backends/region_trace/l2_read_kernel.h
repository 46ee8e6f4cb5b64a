// The one kernel libargus_inject.so launches itself: it reads a buffer twice the L2's size, so a
// new holder of the device's turn can empty the L2 before the program's work (gpu_turn.h,
// ARGUS_GPU_TURN_L2). Loaded from PTX by the driver, so the library needs no device code of its
// own; its records are left out of kernels.jsonl (kernelActivity).
#pragma once

#include <argus/inject/kernel_activity.h>  // kL2ReadKernel, the name the PTX declares

namespace argus::inject {

/// The kernel libargus_inject.so's readL2 launches (ARGUS_GPU_TURN_L2): every thread reads 16-byte
/// pieces of the buffer (`.cg`: cached in L2 only), grid-strided, and folds them into a value it
/// stores only when it equals a constant no zeroed buffer gives, so that ptxas keeps the loads.
/// PTX 7.0 for sm_70: the driver compiles it for the device at load time.
inline constexpr char kL2ReadPtx[] = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry argus_l2_read(.param .u64 base, .param .u64 pieces)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [base];
  ld.param.u64 %rd2, [pieces];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  cvt.u64.u32 %rd3, %r4;
  mov.u32 %r5, %nctaid.x;
  mul.lo.s32 %r6, %r5, %r2;
  cvt.u64.u32 %rd4, %r6;
  mov.b32 %r7, 0;
LOOP:
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra DONE;
  shl.b64 %rd5, %rd3, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.cg.v4.u32 {%r8, %r9, %r10, %r11}, [%rd6];
  xor.b32 %r7, %r7, %r8;
  xor.b32 %r7, %r7, %r9;
  xor.b32 %r7, %r7, %r10;
  xor.b32 %r7, %r7, %r11;
  add.s64 %rd3, %rd3, %rd4;
  bra LOOP;
DONE:
  setp.eq.u32 %p2, %r7, 1234567;
  @%p2 st.global.u32 [%rd1], %r7;
  ret;
}
)";

// g++'s AddressSanitizer makes a global's address non-constant, so its builds skip the check.
#if !defined(__SANITIZE_ADDRESS__)
static_assert(std::string_view(kL2ReadPtx).find(".entry argus_l2_read(") != std::string_view::npos,
              "kL2ReadKernel names the kernel kL2ReadPtx declares");
#endif

}  // namespace argus::inject
