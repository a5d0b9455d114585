# What the layers' include roots cannot catch, checked by ctest (cmake -DSOURCE_DIR=... -P this):
# - a public header (src/<layer>/include/) that includes a third-party library only some layers
#   link (nlohmann-json, CLI11, libjpeg-turbo, zlib): those headers are installed system-wide, so
#   every layer would compile it, and the library would leak out of the layer that owns it;
# - a source or header under src/<layer>/ that includes a file of another layer's directory by a
#   relative path ("../analysis/region_scan.h"), around the include roots.
file(GLOB_RECURSE public_headers "${SOURCE_DIR}/src/*/include/*.h")
foreach(header ${public_headers})
  file(STRINGS ${header} includes REGEX "^#include +[<\"](nlohmann/|CLI/|turbojpeg\\.h|zlib\\.h)")
  foreach(line ${includes})
    file(RELATIVE_PATH name ${SOURCE_DIR} ${header})
    message(SEND_ERROR "${name}: a public header includes a library of one layer: ${line}")
  endforeach()
endforeach()

file(GLOB_RECURSE files "${SOURCE_DIR}/src/*.cpp" "${SOURCE_DIR}/src/*.h")
foreach(file ${files})
  file(RELATIVE_PATH name ${SOURCE_DIR}/src ${file})
  string(REGEX MATCH "^[^/]+" layer ${name})
  get_filename_component(dir ${file} DIRECTORY)
  file(STRINGS ${file} includes REGEX "^#include +\"[^\"]*\\.\\./")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include +\"([^\"]*)\".*" "\\1" included "${line}")
    get_filename_component(target "${dir}/${included}" ABSOLUTE)
    file(RELATIVE_PATH target_name ${SOURCE_DIR}/src ${target})
    if(NOT target_name MATCHES "^${layer}/")
      message(SEND_ERROR "src/${name}: includes ${included}, a file of another layer")
    endif()
  endforeach()
endforeach()
