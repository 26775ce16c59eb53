"""Decodes header blocks with Python's hpack decoder (python3-hpack, which python3-h2 uses), the reference of the
HPACK decoder's differential fuzz. Reads JSON from stdin: a list of sequences, each a list of blocks in hex that
share one dynamic table (SETTINGS_HEADER_TABLE_SIZE 4096). Prints JSON: for each sequence, for each block until
the first refused, {"ok": [[name, value], ...]} (latin1 text) or {"err": the exception's class}.
"""
import json
import sys

import hpack


def main():
    out = []
    for sequence in json.load(sys.stdin):
        decoder = hpack.Decoder()
        decoder.max_header_list_size = 2 ** 31
        results = []
        for block in sequence:
            try:
                fields = decoder.decode(bytes.fromhex(block), raw=True)
                results.append({'ok': [[n.decode('latin1'), v.decode('latin1')] for n, v in fields]})
            except Exception as e:  # every refusal, whatever its class, is a COMPRESSION_ERROR to compare
                results.append({'err': type(e).__name__})
                break
        out.append(results)
    print(json.dumps(out))


main()
