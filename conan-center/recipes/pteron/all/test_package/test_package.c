#include <stdio.h>
#include <string.h>

#include <pteron/pteron.h>

int main(void) {
  /* The kernel libraries register with the runtime from their static initialisers; the
     program calls none of their functions, so this checks that the package's link flags
     kept them linked. */
  size_t kernels = pteron_kernel_count();
  size_t portable = 0;
  for (size_t i = 0; i < kernels; ++i) {
    pteron_kernel_info info;
    pteron_status* s = pteron_kernel_get(i, &info);
    if (s == NULL && strcmp(info.library, "kernels_portable") == 0) {
      ++portable;
    }
    pteron_status_release(s);
  }
  printf("pteron %s: %zu kernels, %zu from kernels_portable, %zu backends\n", pteron_version(),
         kernels, portable, pteron_backend_count());
  return portable > 0 ? 0 : 1;
}
