// The Collect executors of per-PC hardware evidence under libargus_cupti_sass.so; they publish
// the one evidence artifact of per-PC collections, the "PC bundle" (argus/evidence/pc_bundle.h),
// as the `ncu` adapter does (argus/backends/ncu.h).
//
//   pc_mapping         mapping build (clone_shared_callees + paint_ptx) under
//   libargus_cupti_sass.so
//                      with smsp__sass_inst_executed: n(r,p), every PC one owner
//   cupti_sass         reference build (paint_ptx), CUPTI SASS metrics: warp/thread instructions...
//   cupti_pc_sampling  reference build, CUPTI PC sampling: stall reasons per PC
//   ncu                reference build under `ncu --clock-control none` (source counters;
//                      the ncu adapter)
//
// Inputs (bound by the planner): `executable` and `cubin` of build/<variant>, `paint_map` of
// variant/<variant>; for the reference variant also its painted `ptx` and the front end's
// `unpainted_ptx`, from which the executor checks that painting changed no SASS. Config: `kernel`
// (mangled), optional `launches` (collected launches of the kernel, default 1: the first) and
// `metrics` (SASS metric names). Output: the evidence name of the recipe, a PC bundle.
//
// Identity checks, each failing the task with a message that says what differed:
//   CUPTI: the cubin the driver loaded (saved by the collector as cubin-<crc>.cubin) must be the
//   build's cubin byte for byte (or, failing that, hold the same SASS per function);
//   ncu: every profiled PC's instruction must be the build's instruction at that PC.
#pragma once

#include <filesystem>

#include "argus/program/program.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::backends {

/// Where the collectors find libargus_cupti_sass.so: $ARGUS_CUPTI_SASS_LIB, else the build tree's.
[[nodiscard]] Result<std::filesystem::path> cuptiSassLibrary();

/// Registers pc_mapping, cupti_sass and cupti_pc_sampling (libargus_cupti_sass.so) for `spec`.
void registerCuptiPcExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec);

}  // namespace argus::backends
