# Sanitizer and fuzzing builds (docs/hardening.md). Both apply to every C++ target of the build,
# so the tests of a sanitizer build exercise the instrumented argus binary and libraries.
#   -DARGUS_SANITIZE=address,undefined   ASan + UBSan (g++ or Clang); any UB aborts the test
#   -DARGUS_SANITIZE=thread              TSan
#   -DARGUS_FUZZ=ON                      libFuzzer targets under tests/fuzz (Clang only); add
#                                        ARGUS_SANITIZE=address,undefined for the usual setup
set(ARGUS_SANITIZE "" CACHE STRING
    "Sanitizers for every C++ target: address,undefined or thread (empty: none)")
option(ARGUS_FUZZ "Build the libFuzzer targets under tests/fuzz (needs Clang)" OFF)

if(ARGUS_SANITIZE)
  if(NOT ARGUS_SANITIZE MATCHES "^(address,undefined|address|undefined|thread)$")
    message(FATAL_ERROR "ARGUS_SANITIZE=${ARGUS_SANITIZE}: give address,undefined, address, "
                        "undefined or thread")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${ARGUS_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${ARGUS_SANITIZE})
  # g++ warns of maybe-uninitialized values inside the sanitizers' own instrumentation (libstdc++'s
  # std::function and <regex> under ASan): not our code's, and the plain builds keep the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
  endif()
endif()

if(ARGUS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ARGUS_FUZZ needs Clang (libFuzzer): configure with "
                        "-DCMAKE_CXX_COMPILER=clang++-16 (Debian package clang-16, "
                        "libclang-rt-16-dev); scripts/fuzz.sh does it")
  endif()
  # Coverage instrumentation everywhere; only the fuzz targets link libFuzzer's main.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()

# The warning-free rule is the g++ build's (every build CI makes first); a Clang sanitizer build
# reports its own warnings without failing on them, so a Clang-only diagnostic cannot stop the
# sanitizers from running.
# (Appended to argus::warnings, after its -Werror, so that it wins.)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND (ARGUS_SANITIZE OR ARGUS_FUZZ))
  target_compile_options(argus_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-error>)
endif()

# Debian's g++ links with --as-needed and Clang does not: without it a Clang build's tests record
# every library their targets name, such as the CUDA stub libcuda.so.1 that CUDA::nvrtc brings,
# and cannot start on a machine without a driver.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_link_options(LINKER:--as-needed)
endif()

# Clang before 19 announces __cpp_concepts 201907 although it implements what libstdc++ 12's
# <expected> needs (P0848, conditionally trivial special members, Clang 16), so that header
# hides std::expected from it. The Clang builds (fuzzing) announce the C++20 value.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 19)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-U__cpp_concepts>
                      $<$<COMPILE_LANGUAGE:CXX>:-D__cpp_concepts=202002L>
                      $<$<COMPILE_LANGUAGE:CXX>:-Wno-builtin-macro-redefined>)
endif()
