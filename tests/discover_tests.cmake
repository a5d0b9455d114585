# Registers the test cases of one Catch2 test binary with ctest, one entry per test case named
# "<FOLDER>: <test case>", with the label, the timeout and the skip code of its tags
# (test_labels.cmake). Run by the binary's POST_BUILD step (dumpsift_discover_tests in
# tests/CMakeLists.txt), with
#   -D EXECUTABLE=   the test binary
#   -D FOLDER=       its folder of tests/ (cmake -D would drop a prefix's trailing space)
#   -D WORKING_DIR=  where the entries run
#   -D TIMEOUT_SCALE= a factor for every label's timeout (the sanitizer build's)
#   -D EXTRA_PROPERTIES= more test properties for every entry (a list: NAME;VALUE;...)
#   -D CTEST_FILE=   the file written, which the build tree's CTestTestfile.cmake includes.
include(${CMAKE_CURRENT_LIST_DIR}/test_labels.cmake)

# A bracket argument holding `text` as is.
function(bracketed text out)
  set(${out} "[==[${text}]==]" PARENT_SCOPE)
endfunction()

set(script "")
set(extra "")
foreach(value IN LISTS EXTRA_PROPERTIES)
  bracketed("${value}" quoted)
  string(APPEND extra " ${quoted}")
endforeach()
foreach(label IN LISTS DUMPSIFT_TEST_LABELS)
  execute_process(COMMAND "${EXECUTABLE}" "${DUMPSIFT_TEST_SPEC_${label}}" --list-test-names-only
                  OUTPUT_VARIABLE listed RESULT_VARIABLE result
                  WORKING_DIRECTORY "${WORKING_DIR}")
  # Catch exits with the number of test cases listed; anything else is a crash.
  if(NOT result MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${EXECUTABLE} cannot list its test cases: ${result}\n${listed}")
  endif()
  math(EXPR timeout "${DUMPSIFT_TEST_TIMEOUT_${label}} * ${TIMEOUT_SCALE}")
  # One name a line; a ';' in a name must not split it.
  string(REPLACE ";" "\\;" listed "${listed}")
  string(REPLACE "\n" ";" names "${listed}")
  foreach(name IN LISTS names)
    if(name STREQUAL "")
      continue()
    endif()
    # Catch reads its argument as a test spec: a name's ',', '[', ']' and '\' are escaped.
    string(REGEX REPLACE "([],[\\])" "\\\\\\1" spec "${name}")
    bracketed("${FOLDER}: ${name}" test)
    bracketed("${spec}" spec)
    string(APPEND script
           "add_test(${test} [==[${EXECUTABLE}]==] ${spec} --warn NoTests)\n"
           "set_tests_properties(${test} PROPERTIES WORKING_DIRECTORY [==[${WORKING_DIR}]==] "
           "LABELS ${label} TIMEOUT ${timeout} SKIP_RETURN_CODE ${DUMPSIFT_TEST_SKIP_CODE}"
           "${extra})\n")
  endforeach()
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
