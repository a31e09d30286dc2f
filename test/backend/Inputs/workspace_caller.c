/* A C caller of the workspace variant of tdsl_softmax: the size query,
 * then the checks the launcher makes before any CUDA call (so that they
 * run without a GPU). Prints one line per check. */
#include "softmax.h"

#include <stdint.h>
#include <stdio.h>

static const char *name(tdsl_status S) { return tdsl_status_string(S); }

int main(void) {
  size_t Bytes = 0;
  tdsl_status S = tdsl_softmax_workspace_size(3, 5, &Bytes);
  printf("workspace_size(3, 5): %s, %zu bytes\n", name(S), Bytes);
  S = tdsl_softmax_workspace_size(1000, 1000, &Bytes);
  printf("workspace_size(1000, 1000): %s, %zu bytes\n", name(S), Bytes);
  printf("workspace_size(0, 5): %s\n", name(tdsl_softmax_workspace_size(0, 5, &Bytes)));
  printf("workspace_size(3, 5, NULL): %s\n", name(tdsl_softmax_workspace_size(3, 5, NULL)));

  /* Addresses that are never dereferenced: every call below fails first. */
  const tdsl_f16 *X = (const tdsl_f16 *)(uintptr_t)0x10000;
  tdsl_f16 *Y = (tdsl_f16 *)(uintptr_t)0x20000;
  void *Workspace = (void *)(uintptr_t)0x30000;
  tdsl_softmax_workspace_size(3, 5, &Bytes);
  printf("too small: %s\n", name(tdsl_softmax_with_workspace(X, Y, 3, 5, Workspace, Bytes - 1, NULL)));
  printf("null workspace: %s\n", name(tdsl_softmax_with_workspace(X, Y, 3, 5, NULL, Bytes, NULL)));
  printf("misaligned workspace: %s\n",
         name(tdsl_softmax_with_workspace(X, Y, 3, 5, (char *)Workspace + 16, Bytes, NULL)));
  printf("null tensor: %s\n", name(tdsl_softmax_with_workspace(NULL, Y, 3, 5, Workspace, Bytes, NULL)));
  printf("bad size: %s\n", name(tdsl_softmax_with_workspace(X, Y, 3, -1, Workspace, Bytes, NULL)));
  return 0;
}
