#!/usr/bin/env node
// The yardstick for bench/gateway.mjs: the least a Node proxy in front of an OpenAI-compatible engine can do.
// node:http in, one undici Pool out, the request body forwarded as it is and the engine's answer piped back
// byte for byte (no parsing of either, no validation, no scheduling, no statistics). It prints the port it
// serves on once listening.
// Usage: node bench/proxy-reference-server.mjs --engine http://127.0.0.1:PORT [--port N]
import http from 'node:http';
import { Pool } from 'undici';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const pool = new Pool(arg('--engine'), { connections: 16 });

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    pool.request({ method: req.method, path: req.url, headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) }).then((r) => {
      res.writeHead(r.statusCode, { 'content-type': r.headers['content-type'] ?? 'application/json' });
      r.body.on('data', (c) => res.write(c));
      r.body.on('end', () => res.end());
      r.body.on('error', () => res.destroy());
      res.on('close', () => r.body.destroy());
    }, (e) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(e));
    });
  });
});
server.listen(Number(arg('--port', '0')), '127.0.0.1', () => console.log(server.address().port));
