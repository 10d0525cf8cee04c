# Sanitizer build (README "Tests", docs/reliability.md "Sanitizers"):
#   cmake -S . -B build-asan -DQP_SANITIZE=address,undefined
# compiles and links every target with -fsanitize=<list>, frame pointers for readable stacks,
# and undefined behaviour fatal (-fno-sanitize-recover), so a sanitizer finding fails its test
# rather than scrolling past. QP_SANITIZED=1 lets a test relax what only holds without the
# sanitizer: ASan's shadow memory, redzones and quarantine add resident memory that the budget
# does not (and must not) predict, so RSS-fidelity assertions are loosened there, saying so.
set(QP_SANITIZE "" CACHE STRING
  "Comma-separated -fsanitize= list for a sanitizer build (e.g. address,undefined); empty: none")

if(QP_SANITIZE)
  if(QP_ENABLE_CUDA)
    message(FATAL_ERROR "QP_SANITIZE is not supported with QP_ENABLE_CUDA (nvcc objects and the "
      "CUDA driver are not built for ASan); configure a separate build without one of them.")
  endif()
  set(qp_sanitize_flags -fsanitize=${QP_SANITIZE} -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
  add_compile_options(${qp_sanitize_flags} -g)
  add_link_options(${qp_sanitize_flags})
  add_compile_definitions(QP_SANITIZED=1)
  message(STATUS "qmlpipe: sanitizer build (-fsanitize=${QP_SANITIZE})")
endif()

# qp_sanitize_programs(TARGET): with QP_SANITIZE, every program linking TARGET (qp_core: all
# tests and tools, and qmlpipe) gets the sanitizers' run-time defaults (tests/sanitizer/
# options.c.in, with the path of the LSan suppressions file written in).
function(qp_sanitize_programs target)
  if(NOT QP_SANITIZE)
    return()
  endif()
  set(QP_LSAN_SUPPRESSIONS ${PROJECT_SOURCE_DIR}/tests/sanitizer/lsan.supp)
  set(out ${PROJECT_BINARY_DIR}/generated/qp_sanitizer_options.c)
  configure_file(${PROJECT_SOURCE_DIR}/tests/sanitizer/options.c.in ${out} @ONLY)
  target_sources(${target} INTERFACE ${out})
endfunction()

# qp_sanitize_mpi_tests(): with QP_SANITIZE, called at the end of tests/mpi/CMakeLists.txt. Open
# MPI's libraries have no frame pointers and unload their components (dlclose) before exit, so
# LSan's fast unwinder stops at a nameless frame for what they allocate and leave at exit: its
# tests unwind with DWARF (fast_unwind_on_malloc=0, slower) and keep the components loaded, so
# that the Open MPI entries of tests/sanitizer/lsan.supp match. The label `mpi` is not part of
# .ci/run's sanitizer step (time); run it by hand: ctest --test-dir build-asan -L mpi.
function(qp_sanitize_mpi_tests)
  if(NOT QP_SANITIZE)
    return()
  endif()
  get_property(tests DIRECTORY PROPERTY TESTS)
  set_property(TEST ${tests} APPEND PROPERTY ENVIRONMENT
    "LSAN_OPTIONS=fast_unwind_on_malloc=0" "OMPI_MCA_mca_base_component_disable_dlclose=1")
endfunction()
