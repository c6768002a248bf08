:: SPDX-License-Identifier: BSD-3-Clause
:: pteron on Windows (conda-forge's MSVC toolchain and the host prefix's python): see
:: build_pteron.sh. The extension links libpteron's import library in %LIBRARY_PREFIX%; at run
:: time the package finds pteron.dll in the prefix's Library\bin (os.add_dll_directory).
:: --no-compile: see build_pteron.sh.
%PYTHON% -m pip install . -vv --no-deps --no-build-isolation --no-compile ^
  -Ccmake.source-dir=python ^
  -Ccmake.define.CMAKE_PREFIX_PATH="%LIBRARY_PREFIX%" ^
  -Ccmake.define.PTERON_PYTHON_STUB=OFF
if errorlevel 1 exit 1
:: pip's direct_url.json names the build's work folder, a path of the build machine: not shipped
:: (nor listed in RECORD).
for /d %%d in ("%SP_DIR%\pteron-*.dist-info") do (
  del /q "%%d\direct_url.json"
  findstr /v /c:"direct_url.json" "%%d\RECORD" > "%%d\RECORD.new"
  move /y "%%d\RECORD.new" "%%d\RECORD"
)
if errorlevel 1 exit 1
