// SPDX-License-Identifier: BSD-3-Clause
/* win_loader.c - loads DLLs the way Windows does, for tests/test_windows_mingw.py
 * (run under Wine).
 *
 * Usage: win_loader [--registry] DLL...
 *
 * Each DLL is loaded with LoadLibraryExW(LOAD_WITH_ALTERED_SEARCH_PATH): its
 * own directory is searched for its imports, nothing else is added (no PATH
 * changes). The PE loader binds every import at load, so a DLL that loads has
 * all its imports bound. Prints "loaded <dll>" or "FAILED <dll>: error <n>"
 * (GetLastError; 126 = a module it imports was not found, 127 = a procedure it
 * imports was not found). Then "uses <path>" for pteron.dll when it is in the
 * process, so a test can tell which copy of the package was bound.
 *
 * --registry: afterwards, if pteron.dll is loaded in the process, prints its
 * ABI version and every registration error through the C API, found with
 * GetProcAddress:
 *   abi version: <n>
 *   registration errors: <count>
 *   registration error: <message>      (one line each)
 *
 * Exit: 0 every DLL loaded, 1 a DLL failed to load, 2 usage, 4 --registry but
 * pteron.dll is not loaded or lacks the functions. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <wchar.h>
#include <windows.h>

typedef uint32_t (*abi_version_fn)(void);
typedef size_t (*error_count_fn)(void);
typedef const char* (*error_fn)(size_t);

static int print_registry(void) {
  HMODULE rt = GetModuleHandleW(L"pteron.dll");
  if (!rt) {
    printf("pteron.dll is not loaded\n");
    return 4;
  }
  abi_version_fn abi = (abi_version_fn)(void*)GetProcAddress(rt, "pteron_abi_version");
  error_count_fn count =
      (error_count_fn)(void*)GetProcAddress(rt, "pteron_registration_error_count");
  error_fn get = (error_fn)(void*)GetProcAddress(rt, "pteron_registration_error");
  if (!abi || !count || !get) {
    printf("pteron.dll lacks the registration API: error %lu\n", (unsigned long)GetLastError());
    return 4;
  }
  printf("abi version: %u\n", (unsigned)abi());
  size_t n = count();
  printf("registration errors: %lu\n", (unsigned long)n);
  for (size_t i = 0; i < n; ++i) {
    const char* msg = get(i);
    printf("registration error: %s\n", msg ? msg : "(null)");
  }
  return 0;
}

int wmain(int argc, wchar_t** argv) {
  int registry = 0, first = 1, rc = 0;
  if (argc > 1 && wcscmp(argv[1], L"--registry") == 0) {
    registry = 1;
    first = 2;
  }
  if (first >= argc) {
    fprintf(stderr, "usage: win_loader [--registry] DLL...\n");
    return 2;
  }
  for (int i = first; i < argc; ++i) {
    HMODULE h = LoadLibraryExW(argv[i], NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (h) {
      printf("loaded %ls\n", argv[i]);
    } else {
      printf("FAILED %ls: error %lu\n", argv[i], (unsigned long)GetLastError());
      rc = 1;
    }
  }
  HMODULE runtime = GetModuleHandleW(L"pteron.dll");
  wchar_t where[MAX_PATH];
  if (runtime && GetModuleFileNameW(runtime, where, MAX_PATH)) printf("uses %ls\n", where);
  if (registry) {
    int r = print_registry();
    if (r != 0 && rc == 0) rc = r;
  }
  fflush(stdout);
  return rc;
}
