# What the wheel carries besides the Python sources (scikit-build-core installs into the wheel's
# platlib, so these paths are inside the package):
#   nvfp4_verify/_core.*.so                 the extension (python/CMakeLists.txt)
#   nvfp4_verify/bin/nvfp4-verify           the CLI; the console script nvfp4-verify runs it
#                                           (python/nvfp4_verify/_cli.py)
#   nvfp4_verify/lib/libnvfp4_*_plugin.so   the device and cuBLASLt plugins, in a build with CUDA
# The CUDA runtime is linked statically into each and cuBLASLt is opened at run time, so only the
# NVIDIA driver is needed where they run. No headers or CMake package: C++ users build from source.
set(_wheel_binaries nvfp4-verify _core)
install(TARGETS nvfp4-verify RUNTIME DESTINATION nvfp4_verify/bin)
if(NVFP4_HAVE_CUDA)
  install(TARGETS nvfp4_device_plugin nvfp4_cublaslt_plugin LIBRARY DESTINATION nvfp4_verify/lib)
  list(APPEND _wheel_binaries nvfp4_device_plugin nvfp4_cublaslt_plugin)
endif()
# libstdc++ is linked in (CMakeLists.txt) and its one reference to glibc 2.36 goes to a
# replacement (wheel_arc4random.cpp): glibc 2.34 is the newest any of them asks for.
foreach(binary IN LISTS _wheel_binaries)
  target_sources(${binary} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/wheel_arc4random.cpp)
  target_link_options(${binary} PRIVATE -Wl,--wrap=arc4random)
endforeach()
