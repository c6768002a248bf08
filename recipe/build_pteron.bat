:: SPDX-License-Identifier: BSD-3-Clause
:: pteron on a Windows build machine (conda-forge's MSVC toolchain and the host prefix's python,
:: nanobind and numpy): see build_pteron.sh. The extension links libpteron's import library in
:: %LIBRARY_PREFIX%; at run time the package finds pteron.dll in the prefix's Library\bin
:: (os.add_dll_directory). Never run here: this machine has no Windows build host.
cmake -S python -B build-conda-py -G Ninja %CMAKE_ARGS% -DCMAKE_BUILD_TYPE=Release ^
  -DCMAKE_PREFIX_PATH="%LIBRARY_PREFIX%" -DPython_EXECUTABLE="%PYTHON%" ^
  -DCMAKE_INSTALL_PREFIX="%PREFIX%" -DPTERON_PYTHON_INSTALL_DIR=Lib/site-packages/pteron
if errorlevel 1 exit 1
cmake --build build-conda-py --parallel %CPU_COUNT%
if errorlevel 1 exit 1
cmake --install build-conda-py
if errorlevel 1 exit 1
xcopy /s /i /y python\pteron\*.py "%SP_DIR%\pteron\"
if errorlevel 1 exit 1
