# booster_cc_library / booster_cc_test: the two ways every component declares targets,
# after Abseil's absl_cc_library. They apply the project's warnings and sanitizer flags
# in one place.
#
#   booster_cc_library(NAME watch_decoder
#     SRCS watch_decoder.cc HDRS watch_decoder.h DEPS absl::status)
#   booster_cc_test(NAME watch_decoder_test SRCS watch_decoder_test.cc DEPS watch_decoder)
#
# Targets are named booster_<NAME> with an alias booster::<NAME>.

set(_shadow "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_shadow -Wshadow=local)  # gcc only; clang (the fuzz build) has no such option
endif()
set(BOOSTER_WARNINGS -Wall -Wextra -Wpedantic ${_shadow} -Wnon-virtual-dtor
    -Wno-missing-field-initializers)
if(BOOSTER_WERROR)
  list(APPEND BOOSTER_WARNINGS -Werror)
endif()

set(BOOSTER_SANITIZER_FLAGS "")
if(BOOSTER_SANITIZE)
  set(BOOSTER_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
  add_compile_options(${BOOSTER_SANITIZER_FLAGS})
  add_link_options(${BOOSTER_SANITIZER_FLAGS})
  # -O1, as the sanitizers' own docs advise: unoptimised code under ASan is several times
  # slower (the rollout property tests took over 15 minutes at -O0) and finds nothing more;
  # asserts stay on in a Debug build.
  if(CMAKE_BUILD_TYPE STREQUAL "Debug")
    add_compile_options(-O1)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # gcc 12's flow analysis under -fsanitize=address gives false maybe-uninitialized
    # warnings inside libstdc++ (std::regex's std::function); the plain build keeps them.
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()
if(BOOSTER_TSAN)
  if(BOOSTER_SANITIZE OR BOOSTER_FUZZ)
    message(FATAL_ERROR "BOOSTER_TSAN cannot be combined with BOOSTER_SANITIZE or BOOSTER_FUZZ")
  endif()
  set(BOOSTER_SANITIZER_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
  add_compile_options(${BOOSTER_SANITIZER_FLAGS})
  add_link_options(${BOOSTER_SANITIZER_FLAGS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # gcc warns that TSan does not model atomic_thread_fence (the control page's seqlock
    # uses one); the runtime's own tests cover that code, not the TSan build.
    add_compile_options(-Wno-tsan)
  endif()
endif()
# Fuzz build: every library is instrumented for coverage (fuzzer-no-link) and for ASan +
# UBSan; only the fuzz targets link libFuzzer itself (fuzz/CMakeLists.txt).
if(BOOSTER_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "BOOSTER_FUZZ needs clang: CC=clang CXX=clang++ cmake ...")
  endif()
  if(BOOSTER_SANITIZE)
    message(FATAL_ERROR "BOOSTER_FUZZ already builds with ASan + UBSan; drop BOOSTER_SANITIZE")
  endif()
  set(BOOSTER_SANITIZER_FLAGS -fsanitize=fuzzer-no-link,address,undefined
      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_compile_options(${BOOSTER_SANITIZER_FLAGS})
  add_link_options(-fsanitize=address,undefined)
endif()

# ThreadSanitizer builds: Debian's Abseil is not instrumented, so every test binary gets
# the annotations that make absl::Mutex visible to TSan (cmake/tsan/absl_mutex_tsan.cc),
# and TSAN_OPTIONS points at the suppressions for other uninstrumented libraries.
if(BOOSTER_TSAN)
  add_library(booster_tsan_absl_mutex OBJECT ${CMAKE_CURRENT_LIST_DIR}/tsan/absl_mutex_tsan.cc)
  find_package(absl REQUIRED)
  target_link_libraries(booster_tsan_absl_mutex PUBLIC absl::synchronization ${CMAKE_DL_LIBS})
  set(BOOSTER_TSAN_SUPPRESSIONS ${CMAKE_CURRENT_LIST_DIR}/tsan/tsan.supp)
  # The completion-queue edges of Debian's uninstrumented gRPC (cmake/tsan/grpc_tsan.cc),
  # for the tests that link gRPC; a test links it itself (operator/feedback/CMakeLists.txt).
  add_library(booster_tsan_grpc OBJECT ${CMAKE_CURRENT_LIST_DIR}/tsan/grpc_tsan.cc)
  target_link_libraries(booster_tsan_grpc PUBLIC ${CMAKE_DL_LIBS})
endif()

function(booster_apply_flags target)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${BOOSTER_WARNINGS}>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra $<$<BOOL:${BOOSTER_WERROR}>:-Werror>>)
endfunction()

# booster_cc_library(NAME n [SRCS ...] [HDRS ...] [DEPS ...] [PUBLIC_DEPS ...]
#                    [INCLUDES ...] [SHARED] [DEFINES ...])
# Without SRCS the library is header-only (INTERFACE).
function(booster_cc_library)
  cmake_parse_arguments(A "SHARED" "NAME" "SRCS;HDRS;DEPS;PUBLIC_DEPS;INCLUDES;DEFINES" ${ARGN})
  set(_t booster_${A_NAME})
  if(NOT A_SRCS)
    add_library(${_t} INTERFACE ${A_HDRS})
    target_link_libraries(${_t} INTERFACE ${A_DEPS} ${A_PUBLIC_DEPS})
    target_include_directories(${_t} INTERFACE ${PROJECT_SOURCE_DIR} ${A_INCLUDES})
  else()
    if(A_SHARED)
      add_library(${_t} SHARED ${A_SRCS} ${A_HDRS})
    else()
      add_library(${_t} STATIC ${A_SRCS} ${A_HDRS})
    endif()
    target_include_directories(${_t} PUBLIC ${PROJECT_SOURCE_DIR} ${A_INCLUDES})
    target_link_libraries(${_t} PRIVATE ${A_DEPS} PUBLIC ${A_PUBLIC_DEPS})
    target_compile_definitions(${_t} PRIVATE ${A_DEFINES})
    booster_apply_flags(${_t})
  endif()
  add_library(booster::${A_NAME} ALIAS ${_t})
endfunction()

# booster_cc_test(NAME n SRCS ... [DEPS ...] [LABELS unit|e2e ...] [TIMEOUT s]
#                 [ENV K=V ...] [TSAN_OPTIONS a=1:b=2] [NO_GTEST_MAIN])
# Registers a GoogleTest binary with CTest. LABELS defaults to "unit". TSAN_OPTIONS adds
# to the ThreadSanitizer options of a BOOSTER_TSAN build.
function(booster_cc_test)
  cmake_parse_arguments(A "NO_GTEST_MAIN" "NAME;TIMEOUT;TSAN_OPTIONS" "SRCS;DEPS;LABELS;ENV"
                        ${ARGN})
  if(NOT A_LABELS)
    set(A_LABELS unit)
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  add_executable(${A_NAME} ${A_SRCS})
  if(A_NO_GTEST_MAIN)
    target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock Threads::Threads)
  else()
    target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                          Threads::Threads)
  endif()
  target_include_directories(${A_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  booster_apply_flags(${A_NAME})
  if(BOOSTER_TSAN)
    target_link_libraries(${A_NAME} PRIVATE booster_tsan_absl_mutex)
  endif()
  add_test(NAME ${A_NAME} COMMAND ${A_NAME})
  set_tests_properties(${A_NAME} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT})
  if(BOOSTER_TSAN)
    # A report makes the binary exit 66 at the end (TSan's default exitcode), so a race
    # fails the test without hiding the reports after it.
    set(_tsan_options "suppressions=${BOOSTER_TSAN_SUPPRESSIONS}:second_deadlock_stack=1")
    if(A_TSAN_OPTIONS)
      string(APPEND _tsan_options ":${A_TSAN_OPTIONS}")
    endif()
    list(APPEND A_ENV "TSAN_OPTIONS=${_tsan_options}")
  endif()
  if(A_ENV)
    set_tests_properties(${A_NAME} PROPERTIES ENVIRONMENT "${A_ENV}")
  endif()
endfunction()

# End-to-end tests need the real cluster of tests/e2e/cluster. They run only under the
# `e2e` label, after the `booster_cluster` CTest fixture (declared in tests/e2e/) has
# brought the cluster up, and find its admin kubeconfig through KUBECONFIG.
set(BOOSTER_E2E_STATE "/var/lib/booster-e2e" CACHE PATH
    "State directory of the end-to-end cluster (certificates, kubeconfig, logs)")
set(BOOSTER_E2E_KUBECONFIG "${BOOSTER_E2E_STATE}/admin.kubeconfig")

# booster_e2e_test(NAME n SRCS ... [DEPS ...] [TIMEOUT s] [ENV K=V ...])
function(booster_e2e_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SRCS;DEPS;ENV" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 900)
  endif()
  booster_cc_test(NAME ${A_NAME} SRCS ${A_SRCS} DEPS ${A_DEPS} LABELS e2e TIMEOUT ${A_TIMEOUT}
                  ENV KUBECONFIG=${BOOSTER_E2E_KUBECONFIG} BOOSTER_E2E_STATE=${BOOSTER_E2E_STATE}
                      ${A_ENV})
  set_tests_properties(${A_NAME} PROPERTIES FIXTURES_REQUIRED booster_cluster RESOURCE_LOCK booster_cluster)
endfunction()
