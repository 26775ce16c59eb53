/*
 * trim(): gives the memory the C heap holds free back to the system (glibc's malloc_trim), after a model has
 * been unloaded to keep within --model-memory-budget. glibc raises its mmap threshold once a large block that
 * came from mmap is freed, so the next models' weights come from the heap, and what they leave behind when
 * they are unloaded stays resident until trimmed. Elsewhere (no glibc) it does nothing and returns false.
 */
#include <node_api.h>
#include <stdbool.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static napi_value trim(napi_env env, napi_callback_info info) {
  bool released = false;
#if defined(__GLIBC__)
  released = malloc_trim(0) == 1;
#endif
  napi_value result;
  napi_get_boolean(env, released, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  return exports;
}
