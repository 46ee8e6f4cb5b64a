# One warnings interface target for every Argus C++ target; CUDA sources get the same host
# flags through -Xcompiler. The build must stay warning-free: warnings are errors.
add_library(argus_warnings INTERFACE)
add_library(argus::warnings ALIAS argus_warnings)
set(ARGUS_HOST_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
                        -Wnon-virtual-dtor -Wold-style-cast -Werror)
target_compile_options(argus_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:${ARGUS_HOST_WARNINGS}>
  $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror>)
