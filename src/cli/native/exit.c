/*
 * exitNow(code): ends the process at once with _exit(2), without tearing down worker threads. Used only when
 * the exit timeout expired with work still running: a worker thread inside a native call (an ONNX Runtime run)
 * that Node stops during its ordinary exit can abort the whole process when the call returns into a stopping
 * JavaScript environment, turning tritonserver's exit status 1 into a crash. Output was written synchronously
 * before this is called; stdio buffers of C code are flushed here.
 */
#include <node_api.h>
#include <stdio.h>
#include <unistd.h>

static napi_value exit_now(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t code = 1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc == 1) napi_get_value_int32(env, argv[0], &code);
  fflush(NULL);
  _exit(code);
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "exitNow", NAPI_AUTO_LENGTH, exit_now, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "exitNow", fn) != napi_ok) return NULL;
  return exports;
}
