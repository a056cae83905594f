# Build helpers shared by every room.
#   contextd_library(NAME SRCS a.cc b.cc DEPS x y)   -> static library contextd_NAME
#   contextd_test(NAME SRCS a_test.cc DEPS x y)      -> gtest binary registered with ctest
#                                                       (not built when CONTEXTD_TESTS is off);
#                                                       ONE_PROCESS: one ctest for the whole binary
#                                                       (tests sharing an expensive fixture, such
#                                                       as a PostgreSQL server)
#   contextd_fuzzer(NAME SRCS f.cc DEPS x CORPUS dir) -> libFuzzer target (CONTEXTD_FUZZ=ON, clang);
#                                                       the corpus is always replayed as a ctest.
include_guard(GLOBAL)

set(CONTEXTD_WARNINGS -Wall -Wextra -Wshadow)

if(CONTEXTD_SANITIZE)
  string(REPLACE ";" "," _san "${CONTEXTD_SANITIZE}")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_san})
endif()

# Under the fuzz preset every library is coverage-instrumented, so libFuzzer sees the code under
# test and not only the fuzz target's own file.
if(CONTEXTD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

function(contextd_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(contextd_${name} STATIC ${ARG_SRCS})
  target_include_directories(contextd_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(contextd_${name} PRIVATE ${CONTEXTD_WARNINGS})
  target_link_libraries(contextd_${name} PUBLIC ${ARG_DEPS})
endfunction()

function(contextd_test name)
  cmake_parse_arguments(ARG "ONE_PROCESS" "" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT CONTEXTD_TESTS)
    # A server-only build (scripts/serve.sh) has no GoogleTest: the target exists, so that a
    # room's CMakeLists can still name it, but is never built nor registered.
    add_executable(${name} EXCLUDE_FROM_ALL ${ARG_SRCS})
    return()
  endif()
  add_executable(${name} ${ARG_SRCS})
  # Test files keep their own helpers file-local under the same names: never batched (unity.cmake).
  set_target_properties(${name} PROPERTIES UNITY_BUILD OFF)
  target_compile_options(${name} PRIVATE ${CONTEXTD_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  include(GoogleTest)
  set(_props ENVIRONMENT "CONTEXTD_SOURCE_DIR=${PROJECT_SOURCE_DIR};CONTEXTD_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(ARG_LABELS)
    list(APPEND _props LABELS "${ARG_LABELS}")
  endif()
  if(ARG_ONE_PROCESS)
    add_test(NAME ${name} COMMAND ${name})
    set_property(TEST ${name} PROPERTY ENVIRONMENT
                 "CONTEXTD_SOURCE_DIR=${PROJECT_SOURCE_DIR}" "CONTEXTD_BINARY_DIR=${PROJECT_BINARY_DIR}")
    if(ARG_LABELS)
      set_property(TEST ${name} PROPERTY LABELS ${ARG_LABELS})
    endif()
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${_props})
  endif()
endfunction()

# A fuzz target is one function `extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t)`.
# With CONTEXTD_FUZZ (clang) it links libFuzzer; otherwise a small driver replays the seed corpus,
# so every build runs the seeds as an ordinary test.
function(contextd_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;CORPUS" ${ARGN})
  if(CONTEXTD_FUZZ)
    add_executable(${name} ${ARG_SRCS})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  endif()
  add_executable(${name}_replay ${ARG_SRCS} ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_main.cc)
  set_target_properties(${name}_replay PROPERTIES UNITY_BUILD OFF)
  target_link_libraries(${name}_replay PRIVATE ${ARG_DEPS})
  add_test(NAME ${name}_corpus COMMAND ${name}_replay ${ARG_CORPUS})
endfunction()
