// Argus region markers: name a portion of a CUDA kernel so that Argus can measure it.
//
// A marker expands to an inline-asm PTX comment, one line per marker, in the grammar that the
// PTX region analysis parses:
//
//   // @argus begin NAME[ iter=OPERAND][ role=TAG]
//   // @argus end NAME
//
// NAME and TAG match [A-Za-z_][A-Za-z0-9_.-]* (checked at compile time; '/' is reserved for
// region paths). OPERAND is the PTX register (or immediate) that holds the iteration index,
// e.g. `iter=%r12`, so that Argus's passes can record it in traced variants.
//
// Cost. ptxas drops comments, so a marker adds no instruction. It can still change the code
// around it, because nvcc's optimizer (NVVM, as of 13.0) treats every inline-asm statement as an
// opaque operation with side effects: it keeps loads and stores on their side of a marker (no
// load reuse across it), does not if-convert or speculate a branch that holds a marker, and does
// not merge branch conditions across one. Measured on small kernels, each of these changed the
// SASS (tests/markers/perturbation_*.cu keep one of each). The example kernels are written so that
// it does not happen, and tests/markers checks that their SASS is identical with and without
// markers; Argus itself verifies that per build instead of assuming it.
//
// No "memory" clobber. Measured with nvcc 13.0 for sm_90a, adding "memory" changed neither the
// PTX nor the SASS of any example or test kernel: NVVM already orders memory accesses around the
// asm. The clobber is therefore left out, so a compiler that honours the difference (clang CUDA)
// can keep more code unchanged. `asm volatile` alone guarantees what the region analysis needs:
// markers are never deleted, never duplicated differently from the surrounding control flow,
// and stay in program order relative to each other and to other volatile asm (barriers, TMA,
// WGMMA). A region's boundary is therefore exact for control flow and side-effecting
// instructions; which block a plain arithmetic instruction lands in is up to the compiler.
//
// Host compilation pass, plain C++ compilers, and builds with ARGUS_DISABLE_MARKERS defined:
// every marker compiles to nothing. The name is still checked, and the iteration expression
// appears only in unevaluated operands (sizeof/decltype) so that it counts as used without
// producing code. Consequently the iteration expression must have no side effects.
//
// Works under nvcc and NVRTC: this header includes nothing.
//
// Region nesting follows the program text: a region begun inside another must end before it.
// The scoped forms (ARGUS_REGION*) end their region on every exit from the enclosing C++ scope
// (fall-through, break, continue, return), so the PTX may hold several `end` lines for one
// `begin`; all of them close the same region.
//
// Which threads run a marker. Traced variants record one occurrence per warp, stored by lane 0
// with lane 0's count of the warp's occurrences. Put markers where the whole warp runs them, or
// where lane 0 does (one thread issuing TMA loads: `if (threadIdx.x % 32 == 0)`; elect.sync
// does not promise lane 0). Occurrences that only other lanes run are not recorded; Argus
// counts them as dropped when those lanes ran more markers than lane 0 (format.h).
#pragma once

#if defined(__CUDACC__)
#define ARGUS_DETAIL_HD __host__ __device__
#else
#define ARGUS_DETAIL_HD
#endif

namespace argus::detail {

/// True when `c` may start a marker name or tag.
ARGUS_DETAIL_HD constexpr bool isMarkerHead(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/// True when `s` (a string literal) matches [A-Za-z_][A-Za-z0-9_.-]*. Evaluated only at compile
/// time, in static_assert.
template <decltype(sizeof(0)) N>
ARGUS_DETAIL_HD constexpr bool isMarkerName(const char (&s)[N]) {
  // One loop without early returns: an empty literal (N == 1) must not make the loop body
  // unreachable, which nvcc reports as a warning before the static_assert message.
  bool ok = N >= 2 && s[N - 1] == '\0';
  for (decltype(sizeof(0)) i = 0; i + 1 < N; ++i) {
    const char c = s[i];
    const bool digit = c >= '0' && c <= '9';
    ok = ok && (isMarkerHead(c) || (i > 0 && (digit || c == '.' || c == '-')));
  }
  return ok;
}

}  // namespace argus::detail

#define ARGUS_DETAIL_CAT2(a, b) a##b
#define ARGUS_DETAIL_CAT(a, b) ARGUS_DETAIL_CAT2(a, b)

// A token unique per scoped marker. NVRTC has no __COUNTER__; there two scoped markers on one
// source line would clash (a compile error, not a silent fault).
#if defined(__COUNTER__)
#define ARGUS_DETAIL_UNIQUE __COUNTER__
#else
#define ARGUS_DETAIL_UNIQUE __LINE__
#endif

// `"" name` only parses when `name` is a string literal, so a non-literal name fails here with
// this message next to the parse error.
#define ARGUS_DETAIL_CHECK_NAME(name)                                 \
  static_assert(::argus::detail::isMarkerName("" name),               \
                "argus: a region name must be a string literal that " \
                "matches [A-Za-z_][A-Za-z0-9_.-]*")
#define ARGUS_DETAIL_CHECK_ROLE(role)                                   \
  static_assert(::argus::detail::isMarkerName("" role),                 \
                "argus: a warp-role tag must be a string literal that " \
                "matches [A-Za-z_][A-Za-z0-9_.-]*")
// Integer division tells integers from floating-point types without <type_traits>.
#define ARGUS_DETAIL_CHECK_ITER(iter)                                                     \
  static_assert(static_cast<decltype((iter) + 0)>(3) / 2 == 1 && sizeof((iter) + 0) <= 8, \
                "argus: an iteration index must be an integer expression")

/// ARGUS_MARKERS_ACTIVE is 1 in a compilation pass whose markers emit PTX comments (device pass
/// without ARGUS_DISABLE_MARKERS) and 0 otherwise.
#if defined(__CUDA_ARCH__) && !defined(ARGUS_DISABLE_MARKERS)
#define ARGUS_MARKERS_ACTIVE 1

// Experiment switch for tests/markers only: adds a "memory" clobber to every marker so that the
// SASS comparison can show what the clobber would cost. Not for users.
#if defined(ARGUS_DETAIL_MARKER_MEMORY_CLOBBER)
#define ARGUS_DETAIL_CLOBBERS : "memory"
#else
#define ARGUS_DETAIL_CLOBBERS
#endif

#define ARGUS_DETAIL_ASM(text) asm volatile(text : : ARGUS_DETAIL_CLOBBERS)
// 32-bit indices use an "r" operand and 64-bit ones an "l" operand, so the PTX names the
// register that already holds the value and no conversion is added. (Formatting off: clang-format
// would glue the clobber macro to the operand.)
// clang-format off
#define ARGUS_DETAIL_ASM_ITER(prefix, iter, suffix)                                             \
  do {                                                                                          \
    if constexpr (sizeof((iter) + 0) > 4) {                                                     \
      asm volatile(prefix " iter=%0" suffix                                                     \
                   : : "l"(static_cast<unsigned long long>(iter)) ARGUS_DETAIL_CLOBBERS);       \
    } else {                                                                                    \
      asm volatile(prefix " iter=%0" suffix                                                     \
                   : : "r"(static_cast<unsigned>(iter)) ARGUS_DETAIL_CLOBBERS);                 \
    }                                                                                           \
  } while (0)
// clang-format on
#define ARGUS_DETAIL_END_DTOR(name, id)                     \
  struct ARGUS_DETAIL_CAT(ArgusRegionScope_, id) {          \
    __device__ ~ARGUS_DETAIL_CAT(ArgusRegionScope_, id)() { \
      ARGUS_DETAIL_ASM("// @argus end " name);              \
    }                                                       \
  } ARGUS_DETAIL_CAT(argus_region_scope_, id)

#else  // host pass, plain C++, or ARGUS_DISABLE_MARKERS: no code at all
#define ARGUS_MARKERS_ACTIVE 0
#define ARGUS_DETAIL_ASM(text) ((void)0)
#define ARGUS_DETAIL_ASM_ITER(prefix, iter, suffix) ((void)sizeof((iter) + 0))
#define ARGUS_DETAIL_END_DTOR(name, id) static_assert(true, "")
#endif

#define ARGUS_DETAIL_BEGIN_TEXT(name) "// @argus begin " name
#define ARGUS_DETAIL_END_TEXT(name) "// @argus end " name

// ---------------------------------------------------------------------------------------------
// Explicit forms: every BEGIN needs a matching END with the same name on every path.

/// Begins region `name` (a string literal). Emits `// @argus begin name`.
#define ARGUS_REGION_BEGIN(name)                     \
  do {                                               \
    ARGUS_DETAIL_CHECK_NAME(name);                   \
    ARGUS_DETAIL_ASM(ARGUS_DETAIL_BEGIN_TEXT(name)); \
  } while (0)

/// Ends region `name`. Emits `// @argus end name`.
#define ARGUS_REGION_END(name)                     \
  do {                                             \
    ARGUS_DETAIL_CHECK_NAME(name);                 \
    ARGUS_DETAIL_ASM(ARGUS_DETAIL_END_TEXT(name)); \
  } while (0)

/// Begins region `name` in iteration `iter`: an integer expression without side effects
/// (evaluated once where markers are active, never elsewhere). Emits
/// `// @argus begin name iter=%rN` (`%rdN` for 64-bit types).
#define ARGUS_REGION_BEGIN_ITER(name, iter)                         \
  do {                                                              \
    ARGUS_DETAIL_CHECK_NAME(name);                                  \
    ARGUS_DETAIL_CHECK_ITER(iter);                                  \
    ARGUS_DETAIL_ASM_ITER(ARGUS_DETAIL_BEGIN_TEXT(name), iter, ""); \
  } while (0)

/// Begins region `name` executed by warps in role `role` (a string literal tag such as
/// "producer"). Emits `// @argus begin name role=role`.
#define ARGUS_REGION_BEGIN_ROLE(name, role)                        \
  do {                                                             \
    ARGUS_DETAIL_CHECK_NAME(name);                                 \
    ARGUS_DETAIL_CHECK_ROLE(role);                                 \
    ARGUS_DETAIL_ASM(ARGUS_DETAIL_BEGIN_TEXT(name) " role=" role); \
  } while (0)

/// Begins region `name` in iteration `iter` for role `role`. Emits
/// `// @argus begin name iter=%rN role=role`.
#define ARGUS_REGION_BEGIN_ITER_ROLE(name, iter, role)                         \
  do {                                                                         \
    ARGUS_DETAIL_CHECK_NAME(name);                                             \
    ARGUS_DETAIL_CHECK_ITER(iter);                                             \
    ARGUS_DETAIL_CHECK_ROLE(role);                                             \
    ARGUS_DETAIL_ASM_ITER(ARGUS_DETAIL_BEGIN_TEXT(name), iter, " role=" role); \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Scoped forms: begin now, end when the enclosing C++ scope is left (any exit path). Use as a
// statement: `ARGUS_REGION("epilogue");`. Not usable as the body of an unbraced if/for.

/// Scoped region `name`.
#define ARGUS_REGION(name) ARGUS_DETAIL_SCOPED(name, ARGUS_REGION_BEGIN(name), ARGUS_DETAIL_UNIQUE)

/// Scoped region `name` in iteration `iter`.
#define ARGUS_REGION_ITER(name, iter) \
  ARGUS_DETAIL_SCOPED(name, ARGUS_REGION_BEGIN_ITER(name, iter), ARGUS_DETAIL_UNIQUE)

/// Scoped region `name` for role `role`.
#define ARGUS_REGION_ROLE(name, role) \
  ARGUS_DETAIL_SCOPED(name, ARGUS_REGION_BEGIN_ROLE(name, role), ARGUS_DETAIL_UNIQUE)

/// Scoped region `name` in iteration `iter` for role `role`.
#define ARGUS_REGION_ITER_ROLE(name, iter, role) \
  ARGUS_DETAIL_SCOPED(name, ARGUS_REGION_BEGIN_ITER_ROLE(name, iter, role), ARGUS_DETAIL_UNIQUE)

// A local struct whose destructor emits the end marker: C++ runs it on every scope exit.
#define ARGUS_DETAIL_SCOPED(name, begin, id) \
  begin;                                     \
  ARGUS_DETAIL_END_DTOR(name, id)
