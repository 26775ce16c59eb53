import { pythonBackend } from '../python/backend.js';

/**
 * Backend "pytorch" (platform pytorch_libtorch): TorchScript models, `<version>/model.pt`, with Triton's
 * INPUT__0 / OUTPUT__0 naming. They run on the Python backend's stub machinery, with a built-in runner
 * (python/nereid_torch_runner.py) in place of a model.py, on the interpreter's torch (Debian's python3-torch).
 */
export const pytorchBackend = pythonBackend('pytorch', { defaultFile: 'model.pt', runner: 'nereid_torch_runner' });
