# Unity builds (CMAKE_UNITY_BUILD, on in the `serve` preset, docs/decisions/0034-first-build.md, and
# for the libraries of the `debug` and `tsan` presets: test and fuzz executables are never batched,
# and the `fuzz` preset compiles every file alone, so a file that compiles only after its batch's
# neighbours' includes still fails CI).
# A unity build compiles a target's .cc files in batches of 8 as one translation unit, so the
# heavy headers (nlohmann/json, Boost.Beast, abseil) are parsed and their templates instantiated
# and optimised once per batch instead of once per file.
#
# Files that define the same file-local name as another file of their target cannot share a batch
# (a redefinition, or worse a silent overload). They are compiled on their own; the list is by file
# name, so it survives a file moving to another room. scripts/test.sh builds the debug and tsan
# presets, whose libraries are batched as the serve preset's are, so a new clash fails CI instead
# of a newcomer's first build.
#   pg_*.cc                      the PostgreSQL store mirrors the SQLite one helper for helper
#                                (kColumns, ReadRow, Cutoff, k0001Init...)
#   sqlite_memory_store.cc       kColumns, as sqlite_mcp_session_store.cc
#   openai_chat_request.cc,      kRecordDepth (as anthropic_request.cc), IsPreambleRole,
#   openai_responses_request.cc  PartKind, ArgumentsText
#   connect_codex.cc             kMcpServers ("mcp_servers"; connect_cli.cc: "mcpServers")
#   http_client.cc               Lower (as internal/http_util.cc); also the heaviest file alone
#   hnsw_index.cc                defines NO_MANUAL_VECTORIZATION before including hnswlib (it
#                                must see hnswlib first), and its Impl holds an anonymous-namespace
#                                type, which g++ reports (-Wsubobject-linkage) in a batch
include_guard(GLOBAL)

set(CONTEXTD_UNITY_SKIP
    "pg_*.cc" sqlite_memory_store.cc openai_chat_request.cc openai_responses_request.cc
    connect_codex.cc http_client.cc hnsw_index.cc)

# Marks the files named in CONTEXTD_UNITY_SKIP, in every target of `dir` and below, to be compiled
# on their own. Called once, after every room is added.
function(contextd_unity_exclusions dir)
  if(NOT CMAKE_UNITY_BUILD)
    return()
  endif()
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_t ${_targets})
    get_target_property(_type ${_t} TYPE)
    if(_type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    get_target_property(_srcs ${_t} SOURCES)
    get_target_property(_srcdir ${_t} SOURCE_DIR)
    foreach(_s ${_srcs})
      get_filename_component(_name ${_s} NAME)
      # Relative paths would be read against the calling directory, not the target's.
      get_filename_component(_s ${_s} ABSOLUTE BASE_DIR ${_srcdir})
      foreach(_pattern ${CONTEXTD_UNITY_SKIP})
        string(REPLACE "." "\\." _re "${_pattern}")
        string(REPLACE "*" ".*" _re "${_re}")
        if(_name MATCHES "^${_re}$")
          set_source_files_properties(${_s} DIRECTORY ${dir}
                                      PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
        endif()
      endforeach()
    endforeach()
  endforeach()
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_d ${_subdirs})
    contextd_unity_exclusions(${_d})
  endforeach()
endfunction()
