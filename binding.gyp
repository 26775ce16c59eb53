{
  "targets": [
    {
      "target_name": "nereid_shm",
      "sources": ["src/sharedmemory/native/shm.c"],
      "cflags": ["-O2", "-Wall"],
      "libraries": ["-lrt"]
    }
  ]
}
