/*
 * Maps POSIX shared-memory objects (shm_open + mmap) for Nereid's system shared-memory regions, because Node
 * has no mmap. One call maps a registered region and returns it as an ArrayBuffer over the mapping, so tensor
 * inputs are views of the client's memory and outputs are written straight into it.
 *
 *   map(key, offset, byteSize) -> [ArrayBuffer, handle]   throws Error with .code (an errno name, or EBOUNDS)
 *   unmap(arrayBuffer, handle)                            detaches every view, then munmaps
 *
 * Unmapping detaches the ArrayBuffer first, so a view that outlived its region reads as empty instead of
 * touching unmapped memory. A region never unmapped explicitly is unmapped when its ArrayBuffer is collected.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  void* base;     /* page-aligned start of the mapping; NULL once unmapped */
  size_t length;  /* bytes mapped from base */
} Mapping;

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
  if (m->base != NULL) munmap(m->base, m->length);
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
  if (m == NULL) {
    munmap(base, length);
    return throw_code(env, "ENOMEM", "out of memory");
  }
  m->base = base;
  m->length = length;
  napi_value buffer, handle, result;
  if (napi_create_external_arraybuffer(env, (uint8_t*)base + skip, byte_size, finalize_mapping, m, &buffer) != napi_ok) {
    munmap(base, length);
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
  munmap(m->base, m->length);
  m->base = NULL;
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    { "map", NULL, map_region, NULL, NULL, NULL, napi_default, NULL },
    { "unmap", NULL, unmap_region, NULL, NULL, NULL, napi_default, NULL },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
