# source_patterns.cmake: qp_forbidden_patterns(FILES PATTERNS WHY OUT), shared by the source
# checks (check_layering.cmake, check_fence.cmake): appends to the variable OUT a line
# "  path: 'hit' (WHY)" for each file of FILES (absolute paths under SOURCE_DIR) in which a
# regular expression of PATTERNS matches.
function(qp_forbidden_patterns files patterns why out)
  set(found "${${out}}")
  foreach(f ${files})
    file(READ ${f} text)
    foreach(pattern ${patterns})
      string(REGEX MATCH "${pattern}" hit "${text}")
      if(hit)
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
        string(APPEND found "  ${rel}: '${hit}' (${why})\n")
      endif()
    endforeach()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()
