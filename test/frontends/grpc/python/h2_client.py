"""A gRPC call made with python3-h2's HTTP/2 state machine over a plain socket: several streams at once, request
bodies larger than the server's initial windows (so they go as the server credits them), a PING, and the
responses' headers, messages and trailers read back. Prints what it received as JSON, one line.

Usage: h2_client.py PORT
"""
import json
import socket
import sys

import h2.config
import h2.connection
import h2.events

PATH = '/inference.GRPCInferenceService/ServerLive'
BIG = 200_000


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def grpc_message(payload):
    return b'\x00' + len(payload).to_bytes(4, 'big') + payload


def main():
    port = int(sys.argv[1])
    sock = socket.create_connection(('127.0.0.1', port), timeout=20)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding='utf-8'))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())

    # ServerLiveRequest has no fields; an unknown length-delimited field (15) is skipped by any protobuf reader,
    # so the odd streams carry a 200 kB body that is still a valid request.
    pending = {}
    for i in range(8):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(':method', 'POST'), (':scheme', 'http'), (':path', PATH), (':authority', 'localhost'),
                                ('content-type', 'application/grpc'), ('te', 'trailers')])
        body = b'\x7a' + varint(BIG) + b'x' * BIG if i % 2 else b''
        pending[sid] = bytearray(grpc_message(body))
    conn.ping(b'interop!')

    result = {'streams': {}, 'ping': False, 'window_updates': 0}
    ended = set()
    while len(ended) < 8 or not result['ping']:
        for sid in list(pending):
            data = pending[sid]
            while data:
                n = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, len(data))
                if n <= 0:
                    break
                conn.send_data(sid, bytes(data[:n]))
                del data[:n]
            if not data:
                conn.end_stream(sid)
                del pending[sid]
        sock.sendall(conn.data_to_send())
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit('the server closed the connection: ' + json.dumps(result))
        for event in conn.receive_data(chunk):
            s = result['streams'].setdefault(str(getattr(event, 'stream_id', 0)), {})
            if isinstance(event, h2.events.ResponseReceived):
                s['headers'] = dict(event.headers)
            elif isinstance(event, h2.events.DataReceived):
                s['data'] = s.get('data', '') + event.data.hex()
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.TrailersReceived):
                s['trailers'] = dict(event.headers)
            elif isinstance(event, h2.events.StreamEnded):
                ended.add(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                raise SystemExit('stream %d reset with %d' % (event.stream_id, event.error_code))
            elif isinstance(event, h2.events.PingAckReceived):
                result['ping'] = event.ping_data == b'interop!'
            elif isinstance(event, h2.events.WindowUpdated):
                result['window_updates'] += 1
            elif isinstance(event, h2.events.ConnectionTerminated):
                raise SystemExit('GOAWAY %d' % event.error_code)
        sock.sendall(conn.data_to_send())
    result['streams'].pop('0', None)
    conn.close_connection()
    sock.sendall(conn.data_to_send())
    sock.close()
    print(json.dumps(result))


main()
