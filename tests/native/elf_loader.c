// SPDX-License-Identifier: BSD-3-Clause
/* elf_loader.c - loads shared libraries the way an application does, for the
 * load check of tests/test_scenarios.py (Linux).
 *
 * Usage: elf_loader LIB.so...
 *
 * Each library is loaded with dlopen(RTLD_NOW | RTLD_LOCAL): every undefined
 * symbol is bound at load, so a library that loads has all its imports bound.
 * Only the library's own RUNPATH and the system's defaults are searched (run it
 * with LD_LIBRARY_PATH unset). Prints "loaded <lib>" or "FAILED <lib>: <dlerror>",
 * then "uses <path>" for every pteron library in the process (libpteron*), so a
 * test can tell which copy of the package was bound.
 *
 * Exit: 0 every library loaded, 1 a library failed to load, 2 usage. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

static int print_pteron(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  const char* slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
  if (slash && strncmp(slash + 1, "libpteron", 9) == 0) printf("uses %s\n", info->dlpi_name);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: elf_loader LIB.so...\n");
    return 2;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    void* h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      printf("loaded %s\n", argv[i]);
    } else {
      const char* err = dlerror();
      printf("FAILED %s: %s\n", argv[i], err ? err : "(no dlerror)");
      rc = 1;
    }
  }
  dl_iterate_phdr(print_pteron, NULL);
  fflush(stdout);
  return rc;
}
