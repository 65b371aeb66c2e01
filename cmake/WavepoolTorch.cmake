# LibTorch for the runtime (only runtime/ and its tests link it; docs/architecture.md).
#
# wavepool::torch carries LibTorch and the definitions every runtime source compiles with; one
# precompiled <torch/torch.h> (wavepool_torch_pch) is shared by every LibTorch target through
# wavepool_use_torch(<target>), so that each source pays for the LibTorch headers once per build.
find_package(Torch REQUIRED)
message(STATUS "wavepool: LibTorch ${Torch_VERSION} (CUDA: ${TORCH_CUDA_LIBRARIES})")
# find_package's imported targets (torch, c10, ...) are visible only in the directory that found
# them; the runtime's tests (tests/runtime) link LibTorch too.
get_directory_property(wavepool_torch_imported IMPORTED_TARGETS)
foreach(imported IN LISTS wavepool_torch_imported)
  set_target_properties(${imported} PROPERTIES IMPORTED_GLOBAL TRUE)
endforeach()

add_library(wavepool_torch INTERFACE)
target_link_libraries(wavepool_torch INTERFACE ${TORCH_LIBRARIES})
if(TORCH_CUDA_LIBRARIES)
  target_compile_definitions(wavepool_torch INTERFACE WAVEPOOL_TORCH_CUDA=1)
endif()
add_library(wavepool::torch ALIAS wavepool_torch)

add_library(wavepool_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/runtime/src/torch_pch.cpp)
target_link_libraries(wavepool_torch_pch PRIVATE wavepool_torch)
target_precompile_headers(wavepool_torch_pch PRIVATE <torch/torch.h>)
wavepool_set_warnings(wavepool_torch_pch)

# wavepool_use_torch(<target>): links LibTorch and reuses the shared precompiled header.
function(wavepool_use_torch target)
  target_link_libraries(${target} PUBLIC wavepool_torch)
  target_precompile_headers(${target} REUSE_FROM wavepool_torch_pch)
endfunction()
