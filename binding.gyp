{
  "targets": [
    {
      "target_name": "nereid_shm",
      "sources": ["src/sharedmemory/native/shm.c"],
      "cflags": ["-O2", "-Wall"],
      "libraries": ["-lrt"]
    },
    {
      "target_name": "nereid_malloc",
      "sources": ["src/models/native/malloc.c"],
      "cflags": ["-O2", "-Wall"]
    },
    {
      "target_name": "nereid_exit",
      "sources": ["src/cli/native/exit.c"],
      "cflags": ["-O2", "-Wall"]
    }
  ]
}
