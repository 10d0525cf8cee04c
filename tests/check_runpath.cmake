# check_runpath.cmake: qmlpipe started in a directory that holds files named like its shared
# libraries loads its own libraries, not those (CMakeLists.txt, "RUNPATH"): an empty entry in
# the binary's RUNPATH makes the loader search the current directory, where a job's data lives.
#   cmake -DQMLPIPE=path/to/qmlpipe -DWORK_DIR=dir -P check_runpath.cmake
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
# Not ELF files: the loader stops at the first one it opens ("file too short", exit 127).
foreach(lib libgomp.so.1 libm.so.6 libmpi.so.40 libopenblas.so.0 libblis.so.4 libblas.so.3
    liblapack.so.3 libhdf5_serial.so.103 libcfitsio.so.10 libyaml-0.so.2 libc.so.6)
  file(WRITE ${WORK_DIR}/${lib} "not a library\n")
endforeach()
execute_process(COMMAND ${QMLPIPE} --help WORKING_DIRECTORY ${WORK_DIR}
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
file(REMOVE_RECURSE ${WORK_DIR})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "qmlpipe --help in a directory of planted libraries exited ${rc}: ${err}")
endif()
message(STATUS "qmlpipe ignored the libraries planted in its working directory")
