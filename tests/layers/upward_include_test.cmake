# cmake/check_layers.cmake against a copy of the tree: clean, it passes; with an include of a
# higher layer's header added to a core file, and one of a header private to a format's folder
# added to an engine file, it fails naming both.
#   cmake -DWL_ROOT=<source tree> -DWL_WORK=<scratch folder> -P upward_include_test.cmake
file(REMOVE_RECURSE ${WL_WORK})
foreach(dir src include cli python/bind cmake)
  get_filename_component(parent ${WL_WORK}/${dir} DIRECTORY)
  file(COPY ${WL_ROOT}/${dir} DESTINATION ${parent})
endforeach()

function(check expect_ok)
  execute_process(COMMAND ${CMAKE_COMMAND} -DWL_ROOT=${WL_WORK} -P ${WL_WORK}/cmake/check_layers.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "the clean tree was refused:\n${out}")
  elseif(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "an upward include passed the check")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

check(TRUE)
file(APPEND ${WL_WORK}/src/core/error.cpp "#include \"loaders/rank_shards.hpp\"\n")
file(APPEND ${WL_WORK}/src/engine/sampler.cpp "#include \"formats/gguf/ggml_types.hpp\"\n")
check(FALSE)
foreach(expected
    "src/core/error.cpp: includes \"loaders/rank_shards.hpp\" (layer loaders), above its own layer core"
    "src/engine/sampler.cpp: includes \"formats/gguf/ggml_types.hpp\", private to src/formats/gguf (layer formats)")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the refusal does not say: ${expected}\nit says:\n${out}")
  endif()
endforeach()
file(REMOVE_RECURSE ${WL_WORK})
