# The layering rules of docs/architecture.md, checked on every source file
# (ctest Layers.IncludesPointDown). Run: cmake -DSOURCE_DIR=<repo> -P this.
#
# Each rule: a folder (or file prefix) and the project folders its files may
# include. The CMake libraries catch calls that point up a layer at link time
# (rotor_<layer>_layer_check); this catches includes, inside train/'s rooms
# too, and keeps the third-party headers in their rooms.
set(rules
  "core/|core/"
  "nn/|core/ nn/"
  "train/io/|core/ train/io/"
  "train/tokenizer/|core/ train/io/ train/tokenizer/"
  "train/data/|core/ train/io/ train/tokenizer/ train/data/"
  "train/optim/|core/ nn/ train/optim/"
  "train/eval/|core/ nn/ train/io/ train/tokenizer/ train/data/ train/eval/"
  "train/config/|core/ nn/ train/io/ train/tokenizer/ train/data/ train/eval/ train/config/"
  "train/hf/|core/ nn/ train/io/ train/tokenizer/ train/config/ train/hf/"
  "train/gguf/|core/ nn/ train/io/ train/tokenizer/ train/config/ train/gguf/"
  "train/checkpoint|core/ nn/ train/io/ train/tokenizer/ train/data/ train/eval/ train/config/ train/optim/ train/hf/ train/checkpoint"
  "train/metrics|core/ nn/ train/io/ train/tokenizer/ train/data/ train/eval/ train/metrics"
  "train/distributed/|core/ train/distributed/"
  "train/trainer|core/ nn/ train/"
  "train/extend/|core/ nn/ train/"
  "tools/|core/ nn/ train/ tools/")
# Third-party headers that belong to one room: <header prefix>|<allowed file
# prefixes>.
set(private_headers
  "yaml-cpp/|train/config/"
  "nlohmann/|train/io/json.h"
  "CLI/|tools/"
  "pcre2.h|train/tokenizer/"
  "utf8proc.h|train/tokenizer/"
  "mpi.h|train/distributed/mpi_communicator.cc"
  "xxhash.h|train/io/weights_hash.cc"
  "oneapi/|core/ops/gemm_onednn.cc"
  "omp.h|core/ops/gemm_onednn.cc")

set(problems "")
file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/core/*.h ${SOURCE_DIR}/core/*.cc
     ${SOURCE_DIR}/nn/*.h ${SOURCE_DIR}/nn/*.cc
     ${SOURCE_DIR}/train/*.h ${SOURCE_DIR}/train/*.cc
     ${SOURCE_DIR}/tools/*.h ${SOURCE_DIR}/tools/*.cc)
foreach(source ${sources})
  file(STRINGS ${SOURCE_DIR}/${source} includes REGEX "^#include [\"<]")
  # The rule of the longest matching prefix.
  set(allowed "")
  set(matched_length 0)
  foreach(rule ${rules})
    string(REPLACE "|" ";" parts "${rule}")
    list(GET parts 0 prefix)
    list(GET parts 1 allowed_text)
    string(LENGTH "${prefix}" length)
    string(FIND "${source}" "${prefix}" at)
    if(at EQUAL 0 AND length GREATER matched_length)
      string(REPLACE " " ";" allowed "${allowed_text}")
      set(matched_length ${length})
    endif()
  endforeach()
  foreach(line ${includes})
    string(REGEX MATCH "^#include [\"<]([^\">]+)[\">]" _ "${line}")
    set(included "${CMAKE_MATCH_1}")
    if(included MATCHES "^(core|nn|train|tools)/")
      set(ok FALSE)
      foreach(prefix ${allowed})
        string(FIND "${included}" "${prefix}" at)
        if(at EQUAL 0)
          set(ok TRUE)
        endif()
      endforeach()
      if(NOT ok)
        list(APPEND problems "${source} includes ${included} (allowed: ${allowed})")
      endif()
    endif()
    foreach(rule ${private_headers})
      string(REPLACE "|" ";" parts "${rule}")
      list(GET parts 0 header)
      list(GET parts 1 home)
      string(FIND "${included}" "${header}" at)
      string(FIND "${source}" "${home}" in_home)
      if(at EQUAL 0 AND NOT in_home EQUAL 0)
        list(APPEND problems "${source} includes ${included} (only ${home} may)")
      endif()
    endforeach()
    # The JSON adapter keeps nlohmann-json out of every header.
    if(included STREQUAL "train/io/json.h" AND source MATCHES "\\.h$")
      list(APPEND problems "${source} includes train/io/json.h (only .cc files may)")
    endif()
  endforeach()
endforeach()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "includes that break the layering:\n  ${text}")
endif()
list(LENGTH sources count)
message(STATUS "layering: ${count} files, every include points down")
