# Fails when a source file, script or document of the project cites a file
# that is not in the repository (the team's design and style notes) or an
# issue number: someone who clones the project has neither, so the reason
# belongs inline or in docs/. Run by ctest:
#   cmake -DSOURCE_DIR=<tree> -P tests/check_self_contained.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "give -DSOURCE_DIR=<the tree to check>")
endif()

set(FOLDERS ir shapes onnx_io costmodel search passes pipeline tools fuzz tests scripts docs .ci)
set(PATTERNS *.h *.cc *.mjs *.js *.py *.sh *.cmake *.md *.txt *.proto run)
set(files "")
foreach(folder IN LISTS FOLDERS)
  foreach(pattern IN LISTS PATTERNS)
    file(GLOB_RECURSE found "${SOURCE_DIR}/${folder}/${pattern}")
    list(APPEND files ${found})
  endforeach()
endforeach()
file(GLOB top_level "${SOURCE_DIR}/*.md" "${SOURCE_DIR}/CMakeLists.txt")
list(APPEND files ${top_level})
list(REMOVE_DUPLICATES files)
# Installed packages, and the planted example that the second ctest checks
# (matched on the path inside SOURCE_DIR, so the example itself is checked).
set(kept "")
foreach(file IN LISTS files)
  file(RELATIVE_PATH where "${SOURCE_DIR}" "${file}")
  if(NOT where MATCHES "node_modules/|^tests/testing/outside_reference/")
    list(APPEND kept "${file}")
  endif()
endforeach()
set(files ${kept})

set(violations "")
foreach(file IN LISTS files)
  file(STRINGS "${file}" lines REGEX "(DESIGN|STYLE)\\.md|[Ii]ssues? #?[0-9]")
  foreach(line IN LISTS lines)
    file(RELATIVE_PATH where "${SOURCE_DIR}" "${file}")
    string(STRIP "${line}" line)
    string(APPEND violations "  ${where}: ${line}\n")
  endforeach()
endforeach()

list(LENGTH files checked)
if(checked EQUAL 0)
  message(FATAL_ERROR "no files under ${SOURCE_DIR}")
endif()
if(violations)
  message(FATAL_ERROR "references outside the repository:\n${violations}")
endif()
message(STATUS "${checked} files cite nothing outside the repository")
