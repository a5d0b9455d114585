# What the layers' include roots cannot catch, checked by ctest (cmake -DSOURCE_DIR=... -P this):
# - a public header (include/dumpsift/<layer>/) that includes a third-party library only some
#   layers link (nlohmann-json, CLI11, libjpeg-turbo, zlib, SQLite): those headers are installed
#   system-wide, so every layer would compile it, and the library would leak out of the layer that
#   owns it;
# - a file of one layer (its sources and private headers under src/<layer>/, its public headers
#   under include/dumpsift/<layer>/) that includes a file of another layer by a relative path
#   ("../analysis/region_scan.h", "../../include/dumpsift/report/report.h"), around the include
#   roots.
file(GLOB_RECURSE public_headers "${SOURCE_DIR}/include/dumpsift/*.h")
foreach(header ${public_headers})
  file(STRINGS ${header} includes REGEX "^#include +[<\"](nlohmann/|CLI/|turbojpeg\\.h|zlib\\.h|sqlite3\\.h)")
  foreach(line ${includes})
    file(RELATIVE_PATH name ${SOURCE_DIR} ${header})
    message(SEND_ERROR "${name}: a public header includes a library of one layer: ${line}")
  endforeach()
endforeach()

# The layer a file of the source tree belongs to ("src/heap/glibc/x.cpp" and
# "include/dumpsift/heap/walker.h": heap), or "" for a file of no layer.
function(layer_of path out)
  set(layer "")
  if(path MATCHES "^src/([^/]+)/")
    set(layer ${CMAKE_MATCH_1})
  elseif(path MATCHES "^include/dumpsift/([^/]+)/")
    set(layer ${CMAKE_MATCH_1})
  endif()
  set(${out} "${layer}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE files "${SOURCE_DIR}/src/*.cpp" "${SOURCE_DIR}/src/*.h" "${SOURCE_DIR}/src/*.def"
     "${SOURCE_DIR}/include/*.h" "${SOURCE_DIR}/include/*.def")
foreach(file ${files})
  file(RELATIVE_PATH name ${SOURCE_DIR} ${file})
  layer_of(${name} layer)
  get_filename_component(dir ${file} DIRECTORY)
  file(STRINGS ${file} includes REGEX "^#include +\"[^\"]*\\.\\./")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include +\"([^\"]*)\".*" "\\1" included "${line}")
    get_filename_component(target "${dir}/${included}" ABSOLUTE)
    file(RELATIVE_PATH target_name ${SOURCE_DIR} ${target})
    layer_of(${target_name} target_layer)
    if(NOT target_layer STREQUAL layer)
      message(SEND_ERROR "${name}: includes ${included}, a file of another layer")
    endif()
  endforeach()
endforeach()
