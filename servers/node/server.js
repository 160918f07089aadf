#!/usr/bin/env node
// server.js: the benchmark's contract (CONTRACT.md) in Node.js's own `http` module, no npm
// packages: a template for benchmarking a server from elsewhere (servers/node-users.toml).
// One process, one event loop, the users in memory (an array: user N at index N - 1). Per
// /users request it does the work the built-in servers do (CONTRACT.md "Same work"): the
// bearer check, an X-Request-Id, the JSON rendered from the stored fields, one access-log
// line. No /metrics (optional: the runner then reports no handler latency).
// Stops on SIGTERM or SIGINT: stops accepting, closes idle connections, flushes the log, exits 0.
'use strict';

const fs = require('fs');
const http = require('http');

const USAGE = `usage: node server.js --port N [--host ADDR] [--bearer TOKEN] [--seed-users N]
                      [--access-log FILE]
  --host        address to listen on (default 127.0.0.1)
  --port        TCP port (0: any free one)
  --bearer      the token /users requests must carry (default: $BEARER)
  --seed-users  users 1..N created at start as user-N / user-N@example.com (default 10000)
  --access-log  one line per /users request, appended (default /dev/null: formatted, not kept)
Prints 'listening on http://HOST:PORT' on stderr when ready.`;

// ---- the command line: exit 2 with the usage on any error
function usageError(msg) {
  process.stderr.write(`node-users: ${msg}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opt = { host: '127.0.0.1', port: null, bearer: process.env.BEARER || '', seedUsers: 10000,
    accessLog: '/dev/null' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    }
    const key = a.split('=')[0];
    if (!['--host', '--port', '--bearer', '--seed-users', '--access-log'].includes(key)) usageError(`unknown option '${a}'`);
    let val = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
    if (val === undefined) usageError(`'${key}' needs a value`);
    if (key === '--host') opt.host = val;
    else if (key === '--bearer') opt.bearer = val;
    else if (key === '--access-log') opt.accessLog = val;
    else {
      if (!/^[0-9]+$/.test(val)) usageError(`${key} must be a whole number, got '${val}'`);
      const n = Number(val);
      if (key === '--port') {
        if (n > 65535) usageError(`--port must be 0..65535, got '${val}'`);
        opt.port = n;
      } else {
        opt.seedUsers = n;
      }
    }
  }
  if (opt.port === null) usageError('--port is required');
  if (opt.bearer === '') usageError('a bearer token is required (--bearer or $BEARER)');
  return opt;
}

const opt = parseArgs(process.argv.slice(2));

// ---- the store: ids are assigned in order, so user N lives at users[N - 1]; responses are
// rendered from these fields per request, as the built-in servers do (no cached bodies)
const users = [];
for (let i = 1; i <= opt.seedUsers; i++) {
  users.push({ id: i, name: `user-${i}`, email: `user-${i}@example.com` });
}
const LIST_MAX = 100;
const BODY_MAX = 4096;

// ---- the access log: "MS METHOD TARGET STATUS DURus REQUEST_ID" per /users request, buffered
// and written at 64 KiB or every 100 ms (as the built-in servers' logger)
let logFd;
try {
  logFd = fs.openSync(opt.accessLog, 'a');
} catch (err) {
  process.stderr.write(`node-users: cannot open access log '${opt.accessLog}': ${err.code}\n`);
  process.exit(1);
}
let logBuf = '';
function logFlush() {
  if (logBuf !== '') {
    fs.writeSync(logFd, logBuf);
    logBuf = '';
  }
}
setInterval(logFlush, 100).unref();
function accessLog(req, status, t0, rid) {
  const us = Number((process.hrtime.bigint() - t0) / 1000n);
  logBuf += `${Date.now()} ${req.method} ${req.url.slice(0, 256)} ${status} ${us}us ${rid}\n`;
  if (logBuf.length >= 65536) logFlush();
}

// X-Request-Id: the client's when it is 1..64 of [A-Za-z0-9._-], else 16 fresh hex digits
const RID_OK = /^[A-Za-z0-9._-]{1,64}$/;
function hex8() {
  return ((Math.random() * 0x100000000) >>> 0).toString(16).padStart(8, '0');
}
function requestId(req) {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && RID_OK.test(given) ? given : hex8() + hex8();
}

// ---- responses: always Content-Length framed, so that keep-alive holds
function send(res, status, type, body, extra) {
  const headers = { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) };
  if (extra) Object.assign(headers, extra);
  res.writeHead(status, headers);
  res.end(body); // a HEAD request gets the headers only (the http module drops the body)
}

function sendJson(res, status, body, extra) {
  send(res, status, 'application/json', body, extra);
}

function sendError(res, status, message, extra) {
  sendJson(res, status, JSON.stringify({ error: message }), extra);
}

// authorized: "Authorization: Bearer TOKEN", the scheme in any case, the token exactly
function authorized(req) {
  const h = req.headers.authorization;
  return typeof h === 'string' && h.length === 7 + opt.bearer.length &&
    h.slice(0, 7).toLowerCase() === 'bearer ' && h.slice(7) === opt.bearer;
}

// a whole number in 0..2^64-1 from decimal digits (as a Number: exact up to 2^53, and any
// id above that is unknown anyway), or -1
function parseId(text) {
  if (!/^[0-9]{1,20}$/.test(text) || BigInt(text) > 18446744073709551615n) return -1;
  return Number(text);
}

function listUsers(res, query) {
  let limit = 10;
  let after = 0;
  for (const kv of query ? query.split('&') : []) {
    const eq = kv.indexOf('=');
    const k = eq < 0 ? kv : kv.slice(0, eq);
    const v = eq < 0 ? '' : kv.slice(eq + 1);
    if (k === 'limit') {
      limit = parseId(v);
      if (limit < 1 || limit > LIST_MAX) return sendError(res, 400, `limit must be an integer 1..${LIST_MAX}`);
    } else if (k === 'after') {
      after = parseId(v);
      if (after < 0) return sendError(res, 400, 'after must be a non-negative integer');
    }
  }
  const page = users.slice(after, after + limit);
  const next = after + limit < users.length ? after + page.length : null;
  return sendJson(res, 200, JSON.stringify({ users: page, next }));
}

function createUser(req, res) {
  const type = (req.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') return drain(req, () => sendError(res, 415, 'content type must be application/json'));
  const chunks = [];
  let size = 0;
  let tooBig = false;
  req.on('data', (c) => {
    size += c.length;
    if (size > BODY_MAX) tooBig = true;
    else chunks.push(c);
  });
  req.on('end', () => {
    if (tooBig) return sendError(res, 413, 'body too large');
    let doc;
    try {
      doc = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      return sendError(res, 400, 'body is not valid JSON');
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return sendError(res, 400, 'body must be a JSON object');
    const { name, email } = doc;
    if (typeof name !== 'string' || Buffer.byteLength(name) < 1 || Buffer.byteLength(name) > 64) {
      return sendError(res, 400, 'name must be a string of 1..64 bytes');
    }
    if (typeof email !== 'string' || Buffer.byteLength(email) < 3 || Buffer.byteLength(email) > 128 || !email.includes('@')) {
      return sendError(res, 400, 'email must be a string of 3..128 bytes containing @');
    }
    const user = { id: users.length + 1, name, email };
    users.push(user);
    return sendJson(res, 201, JSON.stringify(user), { Location: `/users/${user.id}` });
  });
}

// drain REQ's body (so the connection stays usable), then call DONE
function drain(req, done) {
  req.resume();
  req.on('end', done);
}

function handle(req, res) {
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  const query = q < 0 ? '' : req.url.slice(q + 1);
  const read = req.method === 'GET' || req.method === 'HEAD';

  if (path === '/ping') {
    if (!read) return drain(req, () => sendError(res, 405, 'method not allowed', { Allow: 'GET, HEAD' }));
    return send(res, 200, 'text/plain', 'pong');
  }
  if (path === '/users' || path.startsWith('/users/')) {
    // the middleware of every /users request: a request id on the answer, a log line after it
    const t0 = process.hrtime.bigint();
    const rid = requestId(req);
    res.setHeader('X-Request-Id', rid);
    res.on('finish', () => accessLog(req, res.statusCode, t0, rid));
    if (!authorized(req)) {
      return drain(req, () => sendError(res, 401, req.headers.authorization ? 'invalid bearer token' : 'missing bearer token',
        { 'WWW-Authenticate': 'Bearer' }));
    }
    if (path === '/users') {
      if (req.method === 'POST') return createUser(req, res);
      if (!read) return drain(req, () => sendError(res, 405, 'method not allowed', { Allow: 'GET, HEAD, POST' }));
      return listUsers(res, query);
    }
    if (!read) return drain(req, () => sendError(res, 405, 'method not allowed', { Allow: 'GET, HEAD' }));
    let seg;
    try {
      seg = decodeURIComponent(path.slice('/users/'.length));
    } catch (e) {
      return sendError(res, 400, 'id must be a positive integer');
    }
    const id = parseId(seg);
    if (id < 1) return sendError(res, 400, 'id must be a positive integer');
    if (id > users.length) return sendError(res, 404, 'user not found');
    return sendJson(res, 200, JSON.stringify(users[id - 1]));
  }
  return drain(req, () => sendError(res, 404, 'not found'));
}

// ---- the server: keep-alive connections idle up to 60 s (as ours), never closed for
// their request count
const server = http.createServer(handle);
server.keepAliveTimeout = 60000;
server.headersTimeout = 61000;
server.maxRequestsPerSocket = 0;
server.on('error', (err) => {
  process.stderr.write(`node-users: cannot listen on ${opt.host}:${opt.port}: ${err.code || err.message}\n`);
  process.exit(1);
});
server.listen({ host: opt.host, port: opt.port, backlog: 4096 }, () => {
  const a = server.address();
  process.stderr.write(`node-users: listening on http://${a.address}:${a.port} (users=${users.length}, node ${process.version})\n`);
});

function stop(sig) {
  process.stderr.write(`node-users: ${sig} received, stopping\n`);
  server.close(() => {
    logFlush();
    process.exit(0);
  });
  server.closeIdleConnections();
  setTimeout(() => {
    logFlush();
    process.exit(0);
  }, 2000).unref(); // busy connections get 2 s
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
