# Fails when a source file includes a header of a folder its folder may not
# depend on (docs/ARCHITECTURE.md, "Dependencies"). Run by ctest:
#   cmake -DSOURCE_DIR=<tree> -P tests/check_layering.cmake
# Only the project's own folders are checked; "absl/...", "onnx/..." and other
# libraries' headers are not ours to layer.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "give -DSOURCE_DIR=<the tree to check>")
endif()

# Each folder and the project folders it may include from (itself included).
set(ALLOWED_ir ir)
set(ALLOWED_shapes shapes ir)
set(ALLOWED_onnx_io onnx_io ir)
set(ALLOWED_costmodel costmodel shapes ir)
set(ALLOWED_search search costmodel shapes ir)
set(ALLOWED_passes passes costmodel shapes onnx_io ir)
set(ALLOWED_training training costmodel shapes onnx_io ir)
set(ALLOWED_pipeline pipeline training passes search costmodel shapes onnx_io ir)
set(ALLOWED_tools/artifacts tools/artifacts pipeline training passes search costmodel shapes onnx_io ir)
set(ALLOWED_tools/cli tools/cli tools/artifacts pipeline training passes search costmodel shapes onnx_io ir)
set(ALLOWED_tools/bench tools/bench tools/cli tools/artifacts pipeline training passes search costmodel
                        shapes onnx_io ir)
set(ALLOWED_fuzz fuzz pipeline passes search costmodel shapes onnx_io ir)
set(FOLDERS ir shapes onnx_io costmodel search passes training pipeline tools/artifacts tools/cli tools/bench fuzz)
# First path components that name one of our folders (tools/ and tests/ by
# their subfolders).
set(OURS ir shapes onnx_io costmodel search passes training pipeline tools fuzz tests)

set(violations "")
set(checked 0)
foreach(folder IN LISTS FOLDERS)
  file(GLOB_RECURSE files "${SOURCE_DIR}/${folder}/*.h" "${SOURCE_DIR}/${folder}/*.cc")
  foreach(file IN LISTS files)
    math(EXPR checked "${checked} + 1")
    file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" header "${line}")
      string(REGEX MATCH "^[^/]+" top "${header}")
      if(NOT top IN_LIST OURS)
        continue()
      endif()
      set(ok FALSE)
      foreach(allowed IN LISTS ALLOWED_${folder})
        string(LENGTH "${allowed}/" n)
        string(SUBSTRING "${header}" 0 ${n} prefix)
        if(prefix STREQUAL "${allowed}/")
          set(ok TRUE)
        endif()
      endforeach()
      if(NOT ok)
        file(RELATIVE_PATH where "${SOURCE_DIR}" "${file}")
        string(REPLACE ";" ", " allowed_text "${ALLOWED_${folder}}")
        string(APPEND violations "  ${where} includes \"${header}\" (${folder}/ may include "
                                 "${allowed_text})\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "no source files under ${SOURCE_DIR}")
endif()
if(violations)
  message(FATAL_ERROR "forbidden includes:\n${violations}")
endif()
message(STATUS "${checked} files follow the dependency rule")
