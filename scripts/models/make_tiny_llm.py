#!/usr/bin/env python3
"""Makes a tiny llama-architecture GGUF with random weights, for tests and examples.

Nothing is downloaded: node-llama-cpp ships llama.cpp's source as a git bundle, and that source holds both
the GGUF writer (gguf-py) and vocabulary-only GGUF files. This script checks the two out of the bundle into a
temporary folder, takes the 32,000-token SentencePiece vocabulary of ggml-vocab-llama-spm.gguf, adds a
ChatML chat template, and writes a two-layer model of width 32 whose weights come from a fixed random seed,
so the same inputs always give the same file (about 3 MB). The text it generates is gibberish; what matters
is that it is a real model that llama.cpp tokenizes, evaluates and samples like any other.

Usage: python3 scripts/models/make_tiny_llm.py [OUTPUT] [--width N] [--layers N] [--embedding]
  OUTPUT defaults to the example repository's tiny_llm. --width and --layers make a larger model of the same kind
  (width a multiple of 32; heads of 16; feed-forward 4x the width), for benchmarks that need a token to take as
  long as a real model's (bench/gateway.mjs --model-width); the committed examples always use the tiny shape.
  --embedding makes the embedding variant: the same weights, named nereid-tiny-embed, without a chat template,
  and with the GGUF key llama.pooling_type = MEAN, so llama.cpp pools its vectors as the mean of the tokens'
  states (as it does for real embedding models) without being told.
make_examples.py calls it too, to write examples/model_repository/tiny_llm with its config, and make_fixtures.py
for test/fixtures/embedding/tiny_embed.
Needs numpy (gguf-py's only requirement here), git, and node_modules (npm ci) for the bundle.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUNDLE = os.path.join(ROOT, 'node_modules', 'node-llama-cpp', 'llama', 'gitRelease.bundle')
DEFAULT_OUTPUT = os.path.join(ROOT, 'examples', 'model_repository', 'tiny_llm', '1', 'model.gguf')
VOCAB = 'models/ggml-vocab-llama-spm.gguf'

# Small enough to be committed and to run at thousands of tokens/s on one core; the shapes keep every
# llama.cpp kernel on its ordinary path (head size 16, rows a multiple of the Q8_0 block of 32).
# Width 32 (two heads of 16), two layers, feed-forward 128.
TINY = {'embd': 32, 'layers': 2}
CONTEXT_LENGTH = 2048
SEED = 20260407

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def checkout(bundle, into):
    """Only the two paths this script needs, from the bundle's one commit."""
    subprocess.run(['git', 'clone', '--quiet', '--no-checkout', bundle, into], check=True)
    subprocess.run(['git', '-C', into, '-c', 'advice.detachedHead=false', 'checkout', '--quiet', 'HEAD', '--', 'gguf-py', VOCAB], check=True)


def read_vocab(gguf, path):
    r = gguf.GGUFReader(path)

    def field(name):
        f = r.fields[name]
        return [f.parts[i] for i in f.data]

    tokens = [bytes(p) for p in field('tokenizer.ggml.tokens')]
    scores = [float(p[0]) for p in field('tokenizer.ggml.scores')]
    types = [int(p[0]) for p in field('tokenizer.ggml.token_type')]
    ids = {k: int(field(f'tokenizer.ggml.{k}')[0][0]) for k in ('bos_token_id', 'eos_token_id', 'unknown_token_id')}
    return tokens, scores, types, ids


def write_model(gguf, out, tokens, scores, types, ids, shape, embedding=False):
    N_EMBD, N_LAYER = shape['embd'], shape['layers']
    N_HEAD, N_FF = N_EMBD // 16, 4 * N_EMBD
    rng = np.random.default_rng(SEED)

    def weight(*shape, scale=None):
        s = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * s).astype(np.float32)

    w = gguf.GGUFWriter(out, 'llama')
    w.add_name('nereid-tiny-embed' if embedding else 'nereid-tiny-llm')
    w.add_context_length(CONTEXT_LENGTH)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_tokenizer_model('llama')
    w.add_tokenizer_pre('default')
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(ids['bos_token_id'])
    w.add_eos_token_id(ids['eos_token_id'])
    w.add_unk_token_id(ids['unknown_token_id'])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    if embedding:
        w.add_pooling_type(gguf.PoolingType.MEAN)
    else:
        w.add_chat_template(CHATML)

    # The embedding and the output projection are the two large tensors (vocabulary x width), kept in Q8_0.
    # The output is not tied to the embedding: tied random weights make each token predict itself, and the
    # model would repeat one token forever. Its scale gives logits a spread of about 2, so sampling settings
    # (temperature, top-k, seeds) visibly change the text.
    q8 = gguf.GGMLQuantizationType.Q8_0
    for name, scale in (('token_embd.weight', 1.0), ('output.weight', 2.0 / np.sqrt(N_EMBD))):
        w.add_tensor(name, gguf.quants.quantize(weight(len(tokens), N_EMBD, scale=scale), q8), raw_dtype=q8)
    w.add_tensor('output_norm.weight', np.ones(N_EMBD, dtype=np.float32))
    for i in range(N_LAYER):
        b = f'blk.{i}'
        w.add_tensor(f'{b}.attn_norm.weight', np.ones(N_EMBD, dtype=np.float32))
        for name in ('attn_q', 'attn_k', 'attn_v', 'attn_output'):
            w.add_tensor(f'{b}.{name}.weight', weight(N_EMBD, N_EMBD))
        w.add_tensor(f'{b}.ffn_norm.weight', np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f'{b}.ffn_gate.weight', weight(N_FF, N_EMBD))
        w.add_tensor(f'{b}.ffn_up.weight', weight(N_FF, N_EMBD))
        w.add_tensor(f'{b}.ffn_down.weight', weight(N_EMBD, N_FF))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tiny_llm_bytes(shape=TINY, embedding=False):
    """The model file's bytes (make_examples.py and make_fixtures.py write them into their repositories)."""
    if not os.path.isfile(BUNDLE):
        raise SystemExit(f'{BUNDLE} is missing: run npm ci first (node-llama-cpp ships the llama.cpp source bundle)')
    with tempfile.TemporaryDirectory(prefix='llama-src-') as src:
        checkout(BUNDLE, src)
        sys.path.insert(0, os.path.join(src, 'gguf-py'))
        try:
            import gguf  # noqa: E402 (from the bundle, checked out just above)
            tokens, scores, types, ids = read_vocab(gguf, os.path.join(src, VOCAB))
            path = os.path.join(src, 'model.gguf')
            write_model(gguf, path, tokens, scores, types, ids, shape, embedding)
            with open(path, 'rb') as f:
                return f.read()
        finally:
            sys.path.remove(os.path.join(src, 'gguf-py'))


def main():
    args = sys.argv[1:]
    shape = dict(TINY)
    embedding = '--embedding' in args
    if embedding:
        args.remove('--embedding')
    for flag, key in (('--width', 'embd'), ('--layers', 'layers')):
        if flag in args:
            i = args.index(flag)
            shape[key] = int(args[i + 1])
            del args[i:i + 2]
    if shape['embd'] % 32 != 0 or shape['embd'] <= 0 or shape['layers'] <= 0:
        raise SystemExit('--width must be a positive multiple of 32 and --layers positive')
    out = os.path.abspath(args[0]) if args else DEFAULT_OUTPUT
    data = tiny_llm_bytes(shape, embedding)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'wb') as f:
        f.write(data)
    print(f'wrote {out} ({len(data) / 1e6:.1f} MB)')


if __name__ == '__main__':
    main()
