# What the wheel carries besides the Python sources (scikit-build-core installs into the wheel's
# platlib, so these paths are inside the package):
#   nvfp4_verify/_core.*.so                 the extension (python/CMakeLists.txt)
#   nvfp4_verify/bin/nvfp4-verify           the CLI; the console script nvfp4-verify runs it
#                                           (python/nvfp4_verify/_cli.py)
#   nvfp4_verify/lib/libnvfp4_*_plugin.so   the device and cuBLASLt plugins, in a build with CUDA
# The CUDA runtime is linked statically into each and cuBLASLt is opened at run time, so only the
# NVIDIA driver is needed where they run. No headers or CMake package: C++ users build from source.
install(TARGETS nvfp4-verify RUNTIME DESTINATION nvfp4_verify/bin)
if(NVFP4_HAVE_CUDA)
  install(TARGETS nvfp4_device_plugin nvfp4_cublaslt_plugin LIBRARY DESTINATION nvfp4_verify/lib)
endif()
