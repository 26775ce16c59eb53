/*
 * Maps POSIX shared-memory objects (shm_open + mmap) for Nereid's system shared-memory regions, because Node
 * has no mmap. One call maps a registered region and returns it as an ArrayBuffer over the mapping, so tensor
 * inputs are views of the client's memory and outputs are written straight into it.
 *
 *   map(key, offset, byteSize) -> [ArrayBuffer, handle]   throws Error with .code (an errno name, or EBOUNDS)
 *   unmap(arrayBuffer, handle)                            detaches every view, then munmaps
 *   faulted(handle) -> boolean                            true once an access found the object shrunk
 *   guarded                                               true when shrunk objects cannot crash the process
 *   pageSize                                              the unit mappings are made of
 *
 * Unmapping detaches the ArrayBuffer first, so a view that outlived its region reads as empty instead of
 * touching unmapped memory. A region never unmapped explicitly is unmapped when its ArrayBuffer is collected.
 *
 * A shrunk object. The process that made an object can ftruncate it after the server mapped it; touching a page
 * of the mapping that now lies past the end of the object raises SIGBUS, which would end the server, whichever
 * thread touched it (the event loop copying an output, an ONNX Runtime thread reading an input view). Checking
 * the size first cannot help: the object can shrink between the check and the access. So every mapping is listed
 * in a table that a SIGBUS handler reads: a fault inside a listed mapping replaces the whole mapping, in place,
 * with private zero pages (one mmap with MAP_FIXED: same addresses, no new mapping in the process's count), marks
 * it faulted and returns, and the faulting access runs again on the zero pages and completes. Nothing crashes;
 * the region's data is gone, which faulted() tells the server, who fails every request that used the region.
 * A SIGBUS that is not about a listed mapping goes to the disposition that was there before (by default, the
 * process ends as it would have). The table is read without locks in the handler: slots are atomics, chunks of
 * slots are added but never freed.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* One mapping as the SIGBUS handler sees it: [start, end), and whether a fault emptied it. All zero when free. */
typedef struct {
  _Atomic uintptr_t start;
  _Atomic uintptr_t end;
  atomic_int faulted;
  int used; /* taken by a Mapping; guarded by table_lock, never read by the handler */
} Slot;

#define SLOTS_PER_CHUNK 256

typedef struct Chunk {
  Slot slots[SLOTS_PER_CHUNK];
  struct Chunk* _Atomic next;
} Chunk;

static Chunk table;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static struct sigaction previous_sigbus;
static int guard_installed;

typedef struct {
  void* base;     /* page-aligned start of the mapping; NULL once unmapped */
  size_t length;  /* bytes mapped from base */
  Slot* slot;     /* its entry in the table; NULL once unmapped */
} Mapping;

/* Hands a SIGBUS that is none of ours to whoever had it before; by default that ends the process. */
static void pass_on(int sig, siginfo_t* info, void* context) {
  if (previous_sigbus.sa_flags & SA_SIGINFO) {
    if (previous_sigbus.sa_sigaction != NULL) {
      previous_sigbus.sa_sigaction(sig, info, context);
      return;
    }
  } else if (previous_sigbus.sa_handler != SIG_DFL && previous_sigbus.sa_handler != SIG_IGN) {
    previous_sigbus.sa_handler(sig);
    return;
  } else if (previous_sigbus.sa_handler == SIG_IGN && info->si_code <= 0) {
    return; /* an ignored SIGBUS sent by kill(): still ignored */
  }
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, NULL);
  /* A fault repeats when the handler returns, now with the default action; a signal sent by kill() is raised again. */
  if (info->si_code <= 0) raise(SIGBUS);
}

static void on_sigbus(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  uintptr_t addr = (uintptr_t)info->si_addr;
  if (info->si_code > 0) {
    for (Chunk* c = &table; c != NULL; c = atomic_load(&c->next)) {
      for (int i = 0; i < SLOTS_PER_CHUNK; i++) {
        Slot* s = &c->slots[i];
        uintptr_t start = atomic_load(&s->start);
        uintptr_t end = atomic_load(&s->end);
        if (start == 0 || addr < start || addr >= end) continue;
        void* p = mmap((void*)start, end - start, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (p != MAP_FAILED) {
          atomic_store(&s->faulted, 1);
          errno = saved_errno;
          return;
        }
        goto foreign;
      }
    }
  }
foreign:
  errno = saved_errno;
  pass_on(sig, info, context);
}

static void install_guard(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  guard_installed = sigaction(SIGBUS, &sa, &previous_sigbus) == 0;
}

/*
 * Puts the handler back in front if a library loaded since replaced it (whatever it installed is then the one
 * that foreign faults go to). Called before each new mapping, so that no mapping is ever made unguarded.
 */
static int guard_in_place(void) {
  struct sigaction current;
  if (sigaction(SIGBUS, NULL, &current) != 0) return 0;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_sigbus) return 1;
  pthread_mutex_lock(&table_lock);
  install_guard();
  int ok = guard_installed;
  pthread_mutex_unlock(&table_lock);
  return ok;
}

/* A free slot of the table, listed as [start, start + length); NULL when memory runs out. */
static Slot* take_slot(uintptr_t start, size_t length) {
  pthread_mutex_lock(&table_lock);
  Chunk* c = &table;
  Slot* found = NULL;
  for (;;) {
    for (int i = 0; i < SLOTS_PER_CHUNK && found == NULL; i++) {
      if (!c->slots[i].used) found = &c->slots[i];
    }
    if (found != NULL) break;
    Chunk* next = atomic_load(&c->next);
    if (next == NULL) {
      next = (Chunk*)calloc(1, sizeof *next);
      if (next == NULL) break;
      atomic_store(&c->next, next);
    }
    c = next;
  }
  if (found != NULL) {
    found->used = 1;
    atomic_store(&found->faulted, 0);
    atomic_store(&found->end, start + length);
    atomic_store(&found->start, start);
  }
  pthread_mutex_unlock(&table_lock);
  return found;
}

/* Takes a mapping out of the table (before it is unmapped, so that the handler never patches freed addresses). */
static void free_slot(Slot* s) {
  pthread_mutex_lock(&table_lock);
  atomic_store(&s->start, 0);
  atomic_store(&s->end, 0);
  s->used = 0;
  pthread_mutex_unlock(&table_lock);
}

static void unmap_mapping(Mapping* m) {
  if (m->base == NULL) return;
  if (m->slot != NULL) free_slot(m->slot);
  m->slot = NULL;
  munmap(m->base, m->length);
  m->base = NULL;
}

static napi_value throw_code(napi_env env, const char* code, const char* message) {
  napi_throw_error(env, code, message);
  return NULL;
}

static napi_value throw_errno(napi_env env, int err, const char* what) {
  char message[256];
  const char* code;
  switch (err) {
    case ENOENT: code = "ENOENT"; break;
    case EACCES: code = "EACCES"; break;
    case EINVAL: code = "EINVAL"; break;
    case ENOMEM: code = "ENOMEM"; break;
    case EMFILE: code = "EMFILE"; break;
    case ENAMETOOLONG: code = "ENAMETOOLONG"; break;
    default: code = "EIO"; break;
  }
  snprintf(message, sizeof message, "%s: %s", what, strerror(err));
  return throw_code(env, code, message);
}

/* Runs on the JS thread after the ArrayBuffer's memory is released (collected, or detached by unmap). */
static void finalize_mapping(napi_env env, void* data, void* hint) {
  (void)env;
  (void)data;
  Mapping* m = (Mapping*)hint;
  unmap_mapping(m);
  free(m);
}

static int get_size(napi_env env, napi_value v, size_t* out) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok) return 0;
  if (!(d >= 0) || d > 9007199254740991.0 || d != (double)(uint64_t)d) return 0;
  *out = (size_t)d;
  return 1;
}

static napi_value map_region(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) {
    return throw_code(env, "EINVAL", "map(key, offset, byteSize) takes three arguments");
  }
  char key[256];
  size_t key_length = 0;
  if (napi_get_value_string_utf8(env, argv[0], key, sizeof key, &key_length) != napi_ok || key_length == 0 ||
      key_length >= sizeof key - 1) {
    return throw_code(env, "EINVAL", "the key must be a non-empty string shorter than 255 bytes");
  }
  size_t offset, byte_size;
  if (!get_size(env, argv[1], &offset) || !get_size(env, argv[2], &byte_size)) {
    return throw_code(env, "EINVAL", "offset and byteSize must be non-negative integers");
  }
  if (byte_size == 0) return throw_code(env, "EINVAL", "byteSize must be greater than 0");
  if (!guard_in_place()) return throw_code(env, "EIO", "the SIGBUS handler that guards mappings could not be installed");

  int fd = shm_open(key, O_RDWR, S_IRUSR | S_IWUSR);
  if (fd == -1) return throw_errno(env, errno, "shm_open");
  struct stat st;
  if (fstat(fd, &st) == -1) {
    int err = errno;
    close(fd);
    return throw_errno(env, err, "fstat");
  }
  /* offset + byte_size cannot overflow: both are below 2^53. */
  if (st.st_size < 0 || offset + byte_size > (size_t)st.st_size) {
    close(fd);
    return throw_code(env, "EBOUNDS", "offset + byteSize is past the end of the shared-memory object");
  }
  /* mmap wants a page-aligned file offset: map from the page that holds `offset` and skip the difference. */
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t skip = offset % page;
  size_t length = byte_size + skip;
  void* base = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(offset - skip));
  int map_errno = errno;
  close(fd);
  if (base == MAP_FAILED) return throw_errno(env, map_errno, "mmap");

  Mapping* m = (Mapping*)malloc(sizeof *m);
  Slot* slot = m == NULL ? NULL : take_slot((uintptr_t)base, length);
  if (slot == NULL) {
    munmap(base, length);
    free(m);
    return throw_code(env, "ENOMEM", "out of memory");
  }
  m->base = base;
  m->length = length;
  m->slot = slot;
  napi_value buffer, handle, result;
  if (napi_create_external_arraybuffer(env, (uint8_t*)base + skip, byte_size, finalize_mapping, m, &buffer) != napi_ok) {
    unmap_mapping(m);
    free(m);
    return throw_code(env, "EIO", "could not create an ArrayBuffer over the mapping");
  }
  /* From here the finalizer owns m. */
  napi_create_external(env, m, NULL, NULL, &handle);
  napi_create_array_with_length(env, 2, &result);
  napi_set_element(env, result, 0, buffer);
  napi_set_element(env, result, 1, handle);
  return result;
}

static napi_value unmap_region(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) {
    return throw_code(env, "EINVAL", "unmap(arrayBuffer, handle) takes two arguments");
  }
  Mapping* m = NULL;
  if (napi_get_value_external(env, argv[1], (void**)&m) != napi_ok || m == NULL) {
    return throw_code(env, "EINVAL", "not a mapping handle");
  }
  if (m->base == NULL) return NULL;
  if (napi_detach_arraybuffer(env, argv[0]) != napi_ok) {
    return throw_code(env, "EINVAL", "the ArrayBuffer could not be detached; the region stays mapped");
  }
  unmap_mapping(m);
  return NULL;
}

static napi_value mapping_faulted(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  Mapping* m = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_external(env, argv[0], (void**)&m) != napi_ok || m == NULL) {
    return throw_code(env, "EINVAL", "faulted(handle) takes a mapping handle");
  }
  napi_value result;
  napi_get_boolean(env, m->slot != NULL && atomic_load(&m->slot->faulted) != 0, &result);
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  pthread_once(&guard_once, install_guard);
  napi_value guarded, page_size;
  napi_get_boolean(env, guard_installed, &guarded);
  napi_create_double(env, (double)sysconf(_SC_PAGESIZE), &page_size);
  napi_property_descriptor props[] = {
    { "map", NULL, map_region, NULL, NULL, NULL, napi_default, NULL },
    { "unmap", NULL, unmap_region, NULL, NULL, NULL, napi_default, NULL },
    { "faulted", NULL, mapping_faulted, NULL, NULL, NULL, napi_default, NULL },
    { "guarded", NULL, NULL, NULL, NULL, guarded, napi_enumerable, NULL },
    { "pageSize", NULL, NULL, NULL, NULL, page_size, napi_enumerable, NULL },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
