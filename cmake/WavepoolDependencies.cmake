# Every third-party dependency comes from a Debian bookworm package (scripts/setup installs them).
find_package(absl REQUIRED CONFIG)
find_package(nlohmann_json 3.10 REQUIRED CONFIG)
find_package(yaml-cpp REQUIRED CONFIG)
find_package(OpenSSL REQUIRED)
find_package(Threads REQUIRED)
if(WAVEPOOL_WITH_TORCH)
  # libjpeg-turbo (libjpeg62-turbo-dev) decodes the imagefolder data source's JPEGs. FindJPEG
  # searches CMAKE_PREFIX_PATH first, so an unpacked package under PREFIX/usr is found; Debian
  # keeps jconfig.h, which jpeglib.h includes, in the multiarch folder below the headers, which
  # the compiler searches by itself only under /usr/include.
  find_package(JPEG REQUIRED)
  if(CMAKE_LIBRARY_ARCHITECTURE
     AND EXISTS "${JPEG_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}/jconfig.h")
    set_property(TARGET JPEG::JPEG APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
                 "${JPEG_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}")
  endif()
endif()
if(NOT WAVEPOOL_RUNTIME_ONLY)
  find_package(CLI11 REQUIRED CONFIG)
  find_package(prometheus-cpp REQUIRED CONFIG)
  find_package(cpprestsdk REQUIRED CONFIG)
  find_package(Boost 1.74 REQUIRED)  # headers: Beast and Asio for the test API server
  # cpprestsdk's headers call OpenSSL (through Boost.Asio) directly, and Debian's cpprestsdk
  # config does not say so: link through this target, not cpprestsdk::cpprest.
  add_library(wavepool_cpprest INTERFACE)
  target_link_libraries(wavepool_cpprest INTERFACE cpprestsdk::cpprest OpenSSL::SSL
                        OpenSSL::Crypto)
  add_library(wavepool::cpprest ALIAS wavepool_cpprest)
endif()

if(WAVEPOOL_BUILD_TESTS)
  find_package(GTest REQUIRED CONFIG)
endif()
if(WAVEPOOL_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED CONFIG)
endif()

# The CUDA toolkit is optional: components with CUDA paths test WAVEPOOL_HAVE_CUDA_TOOLKIT.
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  set(WAVEPOOL_HAVE_CUDA_TOOLKIT ON)
  message(STATUS "wavepool: CUDA toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}")
else()
  set(WAVEPOOL_HAVE_CUDA_TOOLKIT OFF)
  message(STATUS "wavepool: no CUDA toolkit; CUDA paths are not built")
endif()
