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
