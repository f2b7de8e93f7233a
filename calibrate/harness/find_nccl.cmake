# Finds NCCL for the calibration harness; included by calibrate/harness/CMakeLists.txt and by the
# top-level CMakeLists.txt. Looks, in order, in:
#   NCCL_ROOT (CMake variable or environment), NCCL_HOME (environment, nccl-tests' name);
#   the CUDA toolkit (CUDAToolkit_LIBRARY_DIR / CUDAToolkit_INCLUDE_DIRS, e.g. /usr/local/cuda);
#   the nvidia/nccl folder of a pip-installed NCCL (PyTorch's nvidia-nccl-cu* wheel), found by
#   asking `python3` (or OVERLAPSIM_PYTHON) where the module nvidia.nccl lives;
#   the system paths.
# The pip wheel ships lib/libnccl.so.2 without the libnccl.so link, hence both names.
# Sets NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, and the imported target overlapsim::nccl.
if(TARGET overlapsim::nccl)
  return()
endif()

set(_nccl_hints "")
foreach(_root IN ITEMS "${NCCL_ROOT}" "$ENV{NCCL_ROOT}" "$ENV{NCCL_HOME}")
  if(_root)
    list(APPEND _nccl_hints "${_root}")
  endif()
endforeach()
if(CUDAToolkit_LIBRARY_DIR)
  get_filename_component(_cuda_root "${CUDAToolkit_LIBRARY_DIR}" DIRECTORY)
  list(APPEND _nccl_hints "${_cuda_root}" "${CUDAToolkit_LIBRARY_ROOT}")
endif()

if(NOT OVERLAPSIM_PYTHON)
  find_program(OVERLAPSIM_PYTHON NAMES python3 python)
endif()
if(OVERLAPSIM_PYTHON)
  execute_process(
    COMMAND "${OVERLAPSIM_PYTHON}" -c
            "import importlib.util as u; s = u.find_spec('nvidia.nccl'); print(list(s.submodule_search_locations)[0] if s else '')"
    OUTPUT_VARIABLE _nccl_pip ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_nccl_pip)
    list(APPEND _nccl_hints "${_nccl_pip}")
  endif()
endif()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)

if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(NCCL_FOUND TRUE)
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_ver REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
         NCCL_VERSION "${_nccl_ver}")
  add_library(overlapsim::nccl UNKNOWN IMPORTED)
  set_target_properties(overlapsim::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                                    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
else()
  set(NCCL_FOUND FALSE)
endif()
