# The ctest labels (docs/testing.md). Each Catch test case gets exactly one, from its tags: the
# first label in DUMPSIFT_TEST_LABELS whose Catch test spec it matches. [cluster]: a fleet of
# machines; [browser]: headless Chromium; [live]: a live process dumped with gcore, or a runtime
# (JVM, .NET, Mono, Go, Wine, RabbitMQ, node); none of these: unit (no process but the tool and
# small command-line tools, no network, seconds). requireNotUnit (tests/support/test_support.h)
# fails a unit test that starts a live process, a runtime or a browser. Hidden test cases ([.],
# [.perf], [.jdk24]) get no entry: they run by hand. Included by tests/CMakeLists.txt and by
# discover_tests.cmake.
set(DUMPSIFT_TEST_LABELS cluster browser live unit)
set(DUMPSIFT_TEST_SPEC_cluster "[cluster]~[.]")
set(DUMPSIFT_TEST_SPEC_browser "[browser]~[cluster]~[.]")
set(DUMPSIFT_TEST_SPEC_live "[live]~[browser]~[cluster]~[.]")
set(DUMPSIFT_TEST_SPEC_unit "~[live]~[browser]~[cluster]~[.]")

# Seconds each entry may take before ctest stops it: long enough for what the label runs on a
# loaded 2-core machine, short enough that a hang shows in minutes. Under the sanitizers
# (DUMPSIFT_SANITIZE, a Debug build) everything runs several times slower: tests/CMakeLists.txt
# multiplies these by DUMPSIFT_TEST_TIMEOUT_SCALE there.
set(DUMPSIFT_TEST_TIMEOUT_unit 60)
set(DUMPSIFT_TEST_TIMEOUT_live 300)
set(DUMPSIFT_TEST_TIMEOUT_browser 180)
set(DUMPSIFT_TEST_TIMEOUT_cluster 900)

# The exit code of a test binary whose test case was skipped (kSkipExitCode in
# tests/support/test_run.h): ctest reports it as skipped.
set(DUMPSIFT_TEST_SKIP_CODE 77)
