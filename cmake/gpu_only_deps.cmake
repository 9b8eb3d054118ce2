# WL_GPU_ONLY: the core's dependencies from a folder of copied headers and libraries
# (scripts/gpu-check.sh prepares it from this machine's Debian packages), under the names the
# packages' own CMake and pkg-config files give them, for a GPU machine that has none of them.
if(NOT EXISTS "${WL_GPU_DEPS}/include/fmt/format.h")
  message(FATAL_ERROR "WL_GPU_ONLY needs WL_GPU_DEPS: a folder with include/{fmt,nlohmann,hwy,gtest,openssl,liburing} and lib/ (scripts/gpu-check.sh --prepare)")
endif()
add_library(fmt::fmt INTERFACE IMPORTED)
target_include_directories(fmt::fmt SYSTEM INTERFACE "${WL_GPU_DEPS}/include")
target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE "${WL_GPU_DEPS}/include")
add_library(PkgConfig::HWY SHARED IMPORTED)
set_target_properties(PkgConfig::HWY PROPERTIES IMPORTED_LOCATION "${WL_GPU_DEPS}/lib/libhwy.so"
                      INTERFACE_INCLUDE_DIRECTORIES "${WL_GPU_DEPS}/include")
# Content digests (verify=sha256, recorded tensor digests) hash through OpenSSL's libcrypto.
add_library(OpenSSL::Crypto SHARED IMPORTED)
set_target_properties(OpenSSL::Crypto PROPERTIES IMPORTED_LOCATION "${WL_GPU_DEPS}/lib/libcrypto.so"
                      INTERFACE_INCLUDE_DIRECTORIES "${WL_GPU_DEPS}/include")
# io=uring's rings through liburing, linked statically.
add_library(PkgConfig::URING STATIC IMPORTED)
set_target_properties(PkgConfig::URING PROPERTIES IMPORTED_LOCATION "${WL_GPU_DEPS}/lib/liburing.a"
                      INTERFACE_INCLUDE_DIRECTORIES "${WL_GPU_DEPS}/include")
add_library(GTest::gtest STATIC IMPORTED)
set_target_properties(GTest::gtest PROPERTIES IMPORTED_LOCATION "${WL_GPU_DEPS}/lib/libgtest.a"
                      INTERFACE_INCLUDE_DIRECTORIES "${WL_GPU_DEPS}/include" INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(GTest::gtest_main STATIC IMPORTED)
set_target_properties(GTest::gtest_main PROPERTIES IMPORTED_LOCATION "${WL_GPU_DEPS}/lib/libgtest_main.a"
                      INTERFACE_LINK_LIBRARIES GTest::gtest)
