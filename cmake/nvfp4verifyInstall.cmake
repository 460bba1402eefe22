# Install rules and the CMake package `nvfp4verify`, so that a C++ project can write
#
#   find_package(nvfp4verify CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE nvfp4verify::reference)
#
# Exported targets (the same nvfp4verify:: names are ALIAS targets inside this build tree):
#   nvfp4verify::reference       reference/  the CPU emulator (xtensor, fmt header-only)
#   nvfp4verify::io              io/         safetensors reading and writing (nlohmann_json)
#   nvfp4verify::tensor_convert  io/         safetensors tensors <-> reference xtensor types
#   nvfp4verify::cases           cases/      the case model and the CPU backends
#   nvfp4verify::compare         compare/    bitwise diffs and mismatch explanations
#   nvfp4verify::plugin_abi      include/nvfp4_verify/plugin.h, the plugin ABI's C header (dlpack);
#                                a plain C plugin may instead add -I PREFIX/include
# and, in a build with CUDA (NVFP4_HAVE_CUDA):
#   nvfp4verify::device          device/kernels/, device/runtime/  the kernels' host launchers
#                                (CUDA::cudart_static)
#   nvfp4verify::rank_flow       device/flow/     one data-parallel rank's master-weight cast
#   nvfp4verify::device_backend  device/backend/  the kernels as a backend of the case model
# Headers go to include/nvfp4verify/<layer>/, which the targets carry as include directory; the
# plugin ABI's header goes to include/nvfp4_verify/plugin.h, where a C compiler finds it.
# fuzz/, vectors/, reports/ and bench/ stay internal (fuzz/ needs RapidCheck); the CLI goes to bin/.
include(CMakePackageConfigHelpers)

set(_nvfp4verify_layers reference io cases compare)
set(_nvfp4verify_targets nvfp4_reference nvfp4_io nvfp4_tensor_convert nvfp4_cases nvfp4_compare nvfp4_plugin_abi)
if(NVFP4_HAVE_CUDA)
  list(APPEND _nvfp4verify_layers device)
  list(APPEND _nvfp4verify_targets nvfp4_device nvfp4_rank_flow nvfp4_device_backend)
endif()

set(NVFP4VERIFY_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nvfp4verify)

foreach(layer IN LISTS _nvfp4verify_layers)
  # Every header of the layer, subfolders included (cases/ops/), except device/nccl/ and the seed
  # corpus, cases/seeds/ (neither is exported).
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/
          DESTINATION ${NVFP4VERIFY_INSTALL_INCLUDEDIR}/${layer}
          COMPONENT nvfp4verify_development
          FILES_MATCHING PATTERN "*.h"
          PATTERN "nccl" EXCLUDE
          PATTERN "seeds" EXCLUDE)
endforeach()

install(FILES ${PROJECT_SOURCE_DIR}/include/nvfp4_verify/plugin.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nvfp4_verify
        COMPONENT nvfp4verify_development)

install(TARGETS ${_nvfp4verify_targets}
        EXPORT nvfp4verifyTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT nvfp4verify_development
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT nvfp4verify_development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT nvfp4verify_runtime)
install(TARGETS nvfp4-verify RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT nvfp4verify_runtime)

install(EXPORT nvfp4verifyTargets
        NAMESPACE nvfp4verify::
        DESTINATION ${NVFP4VERIFY_INSTALL_CMAKEDIR}
        COMPONENT nvfp4verify_development)

# Generated into a folder that find_package's search rules do not look at, so that a build
# tree on CMAKE_PREFIX_PATH is never mistaken for an installed copy.
set(_nvfp4verify_config_dir ${PROJECT_BINARY_DIR}/package-config)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nvfp4verifyConfig.cmake.in
                              ${_nvfp4verify_config_dir}/nvfp4verifyConfig.cmake
                              INSTALL_DESTINATION ${NVFP4VERIFY_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${_nvfp4verify_config_dir}/nvfp4verifyConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${_nvfp4verify_config_dir}/nvfp4verifyConfig.cmake
              ${_nvfp4verify_config_dir}/nvfp4verifyConfigVersion.cmake
        DESTINATION ${NVFP4VERIFY_INSTALL_CMAKEDIR}
        COMPONENT nvfp4verify_development)
