"""Header blocks made by Python's hpack encoder (python3-hpack, which python3-h2 uses), for the HPACK decoder's
interop test: sequences of blocks sharing one dynamic table, Huffman-coded or not, some fields never indexed,
some encoders with a smaller table (announced by a size update), values of any octet. Prints JSON: a list of
sequences, each a list of {"hex": block, "fields": [[name, value], ...]} (names and values as latin1 text).

Usage: hpack_blocks.py SEED SEQUENCES
"""
import json
import random
import sys

import hpack

NAMES = [':path', ':method', ':authority', 'content-type', 'user-agent', 'grpc-timeout', 'x-a']
VALUES = ['POST', '/inference.GRPCInferenceService/ModelInfer', 'application/grpc', 'localhost']


def main():
    rng = random.Random(int(sys.argv[1]))
    out = []
    for _ in range(int(sys.argv[2])):
        encoder = hpack.Encoder()
        if rng.random() < 0.3:
            encoder.header_table_size = rng.choice([0, 100, 256, 4096])
        sequence = []
        for _ in range(10):
            fields = []
            for _ in range(rng.randint(1, 8)):
                name = rng.choice(NAMES + ['x-%d' % rng.randint(0, 20)])
                if rng.random() < 0.5:
                    value = ''.join(chr(rng.randint(0, 255)) for _ in range(rng.randint(0, 60)))
                else:
                    value = rng.choice(VALUES + ['v' * rng.randint(0, 300)])
                fields.append((name, value))
            encoded = [hpack.NeverIndexedHeaderTuple(n.encode('latin1'), v.encode('latin1')) if rng.random() < 0.1
                       else (n.encode('latin1'), v.encode('latin1')) for n, v in fields]
            block = encoder.encode(encoded, huffman=rng.random() < 0.7)
            sequence.append({'hex': block.hex(), 'fields': [list(f) for f in fields]})
        out.append(sequence)
    print(json.dumps(out))


main()
