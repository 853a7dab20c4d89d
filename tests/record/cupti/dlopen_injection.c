/* Loads a CUDA injection library the way the CUDA driver does, in a process
 * that never linked it: dlopen(RTLD_NOW | RTLD_LOCAL), then
 * InitializeInjection. Says whether any library of gpudiag it brought in is
 * marked STATIC_TLS (which makes such a dlopen fail once the loader's static
 * TLS surplus is used up).
 * Usage: dlopen_injection LIBRARY [call]
 * Exit: 0 loaded (and called), 2 dlopen failed, 3 no InitializeInjection,
 * 4 a gpudiag library needs static TLS. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

static int needs_static_tls(const struct link_map* m) {
  for (const ElfW(Dyn)* d = m->l_ld; d && d->d_tag != DT_NULL; ++d)
    if (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_STATIC_TLS)) return 1;
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBRARY [call]\n", argv[0]);
    return 64;
  }
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    printf("dlopen failed: %s\n", dlerror());
    return 2;
  }
  int (*init)(void) = (int (*)(void))dlsym(handle, "InitializeInjection");
  if (init == NULL) {
    printf("no InitializeInjection\n");
    return 3;
  }
  struct link_map* map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0) {
    while (map && map->l_prev) map = map->l_prev;
    for (; map; map = map->l_next)
      if (strstr(map->l_name, "gpudiag") && needs_static_tls(map)) {
        printf("static TLS: %s\n", map->l_name);
        return 4;
      }
  }
  if (argc > 2 && strcmp(argv[2], "call") == 0) printf("InitializeInjection returned %d\n", init());
  printf("loaded\n");
  return 0;
}
