#!/usr/bin/env node
'use strict';
// A local Box (ascii.dev sandbox machines): the calls the reference
// implementation makes through @asciidev/box-sdk (BoxApi: create, get,
// update, resume, stop, command, commandStatus, writeFile, artifactRaw,
// desktop, and DELETE with X-Ascii-Confirm-Delete). That SDK is not
// published on npm, so the paths below follow its method names and the
// shapes the reference reads (box.state, command.finished/started, running,
// processId, tailBytes); where the real service differs, this file is the
// one to fix.
//
//   node server.js --image IMAGE [--port N] [--port-file F] [--key KEY]
//
// Base path /api/box/v1. Every call needs "Authorization: Bearer KEY".
// A box is a real local container of the rakazo-computer image:
//   - ttlSeconds (default 7200) runs from the last create/resume/update; at
//     expiry the box is archived (its container stopped, files kept);
//   - noEnv:false hands the account's key into the machine as ASCII_API_KEY,
//     as a box made for its owner gets; noEnv:true keeps the machine clean;
//   - one desktop per machine: POST .../desktop with a display other than 0
//     is refused (409 MULTI_SCREEN_UNAVAILABLE);
//   - the desktop URL carries a secret _token (what our gateway must hide):
//     http://127.0.0.1:PORT/vnc.html?_token=T, a loopback listener of its
//     own per desktop (the service gives each box a host of its own), where
//     /websockify?_token=T is the desktop's VNC over WebSocket (binary
//     messages, as websockify serves noVNC): 401 without the token or with
//     a wrong one; else relayed to the box's x11vnc (its unix socket in the
//     container, through a python3 socket relay under docker exec);
// Faults and the request log: see ../daytona/common.js; control routes
// GET /_emulator/boxes, POST /_emulator/boxes/<id>/vanish,
// POST /_emulator/boxes/<id>/desktop/rotate (a new secret: the old URL now
// gets 401), POST /_emulator/boxes/<id>/desktop/down (the desktop's
// listener closes: its address refuses connections),
// GET|DELETE /_emulator/requests.

const crypto = require('crypto');
const http = require('http');
const C = require('../daytona/common.js');

const args = C.parseArgs(process.argv.slice(2));
const IMAGE = args.image || process.env.RAKAZO_IMAGE;
if (!IMAGE) {
	process.stderr.write('box emulator: --image is required\n');
	process.exit(2);
}
const KEY = args.key || process.env.BOX_API_KEY || 'emulator-key';
const HOME = '/home/user';
const BASE = '/api/box/v1';
const containers = new C.Containers('box', IMAGE);
const boxes = new Map();
const requests = [];

const now = () => new Date().toISOString();
const err = (status, message, code) => ({ status, body: { error: { code: code || String(status), message } } });

function view(b) {
	return {
		id: b.id,
		state: b.state,
		ttlSeconds: b.ttlSeconds,
		expiresAt: new Date(b.expiresAtMs).toISOString(),
		noEnv: b.noEnv,
		createdAt: b.createdAt,
		updatedAt: b.updatedAt,
	};
}

function arm(b, ttl) {
	if (ttl !== undefined) b.ttlSeconds = ttl;
	b.expiresAtMs = Date.now() + b.ttlSeconds * 1000;
	b.updatedAt = now();
	if (b.timer) clearTimeout(b.timer);
	b.timer = setTimeout(() => expire(b), Math.min(b.ttlSeconds * 1000, 2 ** 31 - 1));
	b.timer.unref();
}

async function expire(b) {
	if (b.state !== 'ready' || !boxes.has(b.id)) return;
	b.state = 'archiving';
	await containers.stop(b.cid);
	b.state = 'archived';
	dropDesktop(b);
}

async function lookup(id) {
	const b = boxes.get(id);
	if (!b) return null;
	if ((await containers.state(b.cid)) === 'gone') {
		dropDesktop(b);
		boxes.delete(id);
		return null;
	}
	return b;
}

const validTtl = (t) => t === undefined || (Number.isInteger(t) && t >= 60 && t <= 86400);

async function runCommand(b, cmd, cwd) {
	const dir = cwd ? (cwd.startsWith('/') ? cwd : `${HOME}/${cwd}`) : HOME;
	return containers.spawn(b.cid, ['bash', '-c', cmd], { cwd: dir });
}

function finishOf(p) {
	const c = { stdout: [], stderr: [], exitCode: undefined, pid: 0, proc: p };
	p.stdout.on('data', (d) => c.stdout.push(d));
	p.stderr.on('data', (d) => c.stderr.push(d));
	p.stdin.on('error', () => {});
	p.stdin.end();
	c.done = new Promise((resolve) =>
		p.on('close', (code) => {
			c.exitCode = code === null ? 137 : code;
			resolve();
		}),
	);
	return c;
}

const tail = (bufs, n) => {
	const all = Buffer.concat(bufs);
	return (all.length > n ? all.slice(all.length - n) : all).toString('utf8');
};

async function route(ctx) {
	if (ctx.headers.authorization !== `Bearer ${KEY}`)
		return err(401, 'missing or invalid API key', 'unauthorized');
	if (!ctx.path.startsWith(`${BASE}/boxes`)) return err(404, `no route ${ctx.method} ${ctx.path}`, 'not_found');
	const parts = ctx.path.slice(BASE.length).split('/').filter(Boolean).map(decodeURIComponent);
	const m = ctx.method;
	let body = {};
	if (ctx.body.length && (ctx.headers['content-type'] || '').includes('json')) {
		try {
			body = JSON.parse(ctx.body.toString());
		} catch (e) {
			return err(400, 'the body is not JSON', 'invalid_request');
		}
	}
	if (parts.length === 1 && m === 'POST') {
		if (!validTtl(body.ttlSeconds)) return err(400, 'ttlSeconds must be an integer from 60 to 86400', 'invalid_request');
		const id = `box_${crypto.randomBytes(9).toString('base64url')}`;
		const env = Object.assign({}, body.env || {});
		if (body.noEnv !== true) env.ASCII_API_KEY = KEY;
		const b = { id, state: 'provisioning', ttlSeconds: body.ttlSeconds || 7200, noEnv: body.noEnv === true, createdAt: now() };
		b.processes = new Map();
		b.cid = await containers.create(id, env);
		boxes.set(id, b);
		b.state = 'ready';
		arm(b);
		return { status: 201, body: { box: view(b) } };
	}
	const b = await lookup(parts[1]);
	if (!b) return err(404, `box ${parts[1]} not found`, 'not_found');
	const verb = parts[2];
	if (parts.length === 2 && m === 'GET') return { status: 200, body: { box: view(b) } };
	if (parts.length === 2 && m === 'PATCH') {
		if (!validTtl(body.ttlSeconds)) return err(400, 'ttlSeconds must be an integer from 60 to 86400', 'invalid_request');
		if (b.state === 'ready') arm(b, body.ttlSeconds);
		return { status: 200, body: { box: view(b) } };
	}
	if (parts.length === 2 && m === 'DELETE') {
		if (ctx.headers['x-ascii-confirm-delete'] !== b.id)
			return err(400, 'deleting a box needs X-Ascii-Confirm-Delete: <box id>', 'confirmation_required');
		b.state = 'deleting';
		if (b.timer) clearTimeout(b.timer);
		dropDesktop(b);
		await containers.remove(b.cid);
		boxes.delete(b.id);
		return { status: 202, body: { box: view(b) } };
	}
	if (verb === 'stop' && m === 'POST') {
		if (b.state === 'ready') {
			b.state = 'archiving';
			if (b.timer) clearTimeout(b.timer);
			await containers.stop(b.cid);
			b.state = 'archived';
			dropDesktop(b);
		}
		return { status: 200, body: { box: view(b) } };
	}
	if (verb === 'resume' && m === 'POST') {
		if (!validTtl(body.ttlSeconds)) return err(400, 'ttlSeconds must be an integer from 60 to 86400', 'invalid_request');
		if (b.state !== 'archived') return err(409, `box ${b.id} is ${b.state}, not archived`, 'conflict');
		if (body.noEnv !== true)
			return err(400, 'this box was made with noEnv: resume it with noEnv too', 'invalid_request');
		await containers.start(b.cid);
		b.state = 'ready';
		b.processes = new Map();
		arm(b, body.ttlSeconds);
		return { status: 200, body: { box: view(b) } };
	}
	if (b.state !== 'ready') return err(409, `box ${b.id} is ${b.state}: resume it first`, 'conflict');
	if (verb === 'command' && parts.length === 3 && m === 'POST') {
		if (typeof body.command !== 'string' || !body.command) return err(400, 'command is required', 'invalid_request');
		const c = finishOf(await runCommand(b, body.command, body.cwd));
		if (body.detached) {
			const pid = 1000 + b.processes.size + 1;
			c.pid = pid;
			b.processes.set(pid, c);
			return { status: 200, body: { type: 'command.started', processId: pid } };
		}
		const secs = Math.min(Number(body.timeoutSeconds || 60), 600);
		const timedOut = !(await Promise.race([c.done.then(() => true), C.sleep(secs * 1000).then(() => false)]));
		if (timedOut) c.proc.kill('SIGKILL');
		return {
			status: 200,
			body: {
				type: 'command.finished',
				stdout: Buffer.concat(c.stdout).toString(),
				stderr: Buffer.concat(c.stderr).toString(),
				exitCode: timedOut ? null : c.exitCode,
				timedOut,
			},
		};
	}
	if (verb === 'commands' && parts.length === 4 && m === 'GET') {
		const c = b.processes.get(Number(parts[3]));
		if (!c) return err(404, `process ${parts[3]} not found`, 'not_found');
		const n = Math.max(0, Math.min(Number(ctx.query.get('tailBytes') || 65536), 64 * 1024 * 1024));
		return {
			status: 200,
			body: {
				processId: c.pid,
				pid: c.pid,
				running: c.exitCode === undefined,
				exitCode: c.exitCode === undefined ? null : c.exitCode,
				stdout: tail(c.stdout, n),
				stderr: tail(c.stderr, n),
			},
		};
	}
	if (verb === 'files' && m === 'POST') {
		if (typeof body.path !== 'string' || !body.path.startsWith('/')) return err(400, 'path must be absolute', 'invalid_request');
		if (typeof body.content !== 'string') return err(400, 'content is required', 'invalid_request');
		const data = body.encoding === 'base64' ? Buffer.from(body.content, 'base64') : Buffer.from(body.content);
		if (data.length > 5 * 1024 * 1024) return err(413, 'files over 5 MiB go through commands', 'too_large');
		const q = C.shq(body.path);
		const r = await containers.exec(b.cid, ['bash', '-c', `mkdir -p "$(dirname ${q})" && cat > ${q}`], { input: data });
		if (r.code !== 0) return err(400, `cannot write ${body.path}: ${r.stderr.toString().trim()}`, 'invalid_request');
		return { status: 200, body: { path: body.path, size: data.length } };
	}
	if (verb === 'artifacts' && parts[3] === 'raw' && m === 'GET') {
		const p = ctx.query.get('path') || '';
		if (!p.startsWith('/')) return err(400, 'path must be absolute', 'invalid_request');
		const r = await containers.exec(b.cid, ['bash', '-c', `test -f ${C.shq(p)} || exit 44; cat ${C.shq(p)}`]);
		if (r.code === 44) return err(404, `no file ${p}`, 'not_found');
		if (r.code !== 0) return err(400, r.stderr.toString().trim(), 'invalid_request');
		return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: r.stdout };
	}
	if (verb === 'desktop' && m === 'POST') {
		const display = body.display === undefined ? 0 : body.display;
		if (display !== 0)
			return err(409, 'a box has one desktop: display 0 only', 'MULTI_SCREEN_UNAVAILABLE');
		if (!b.desktop) {
			// one start at a time: a second caller waits for the first's desktop
			if (!b.starting)
				b.starting = (async () => {
					const r = await containers.exec(b.cid, ['bash', '-c', 'rakazo-desktop start 0 1920x1080 - >/dev/null']);
					if (r.code !== 0) throw new Error(`the desktop did not start: ${r.stderr.toString().trim()}`);
					b.desktop = await startDesktop(b);
				})().finally(() => {
					b.starting = null;
				});
			try {
				await b.starting;
			} catch (e) {
				return err(500, e.message, 'internal');
			}
			if (!b.desktop) return err(409, `box ${b.id} lost its desktop while it started`, 'conflict');
		}
		const url = `http://127.0.0.1:${b.desktop.port}/vnc.html?_token=${b.desktop.token}`;
		return { status: 200, body: { state: 'ready', vnc: true, publicAccess: false, url } };
	}
	return err(404, `no route ${m} ${ctx.path}`, 'not_found');
}

// --- the desktop's websockify endpoint -------------------------------------------

// Inside the box: joins stdin/stdout to the x11vnc unix socket argv[1].
const RELAY = `
import os, socket, sys, threading
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
def up():
    while True:
        d = os.read(0, 65536)
        if not d:
            break
        s.sendall(d)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while True:
    d = s.recv(65536)
    if not d:
        break
    os.write(1, d)
`;
const VNC_SOCKET = '/run/rakazo/vnc/0.sock';

function tokenOk(url, token) {
	const given = Buffer.from(url.searchParams.get('_token') || '');
	const want = Buffer.from(token);
	return given.length === want.length && crypto.timingSafeEqual(given, want);
}

// One WebSocket frame (server to client: unmasked).
function frame(op, payload) {
	const n = payload.length;
	let head;
	if (n < 126) head = Buffer.from([0x80 | op, n]);
	else if (n < 65536) {
		head = Buffer.alloc(4);
		head[0] = 0x80 | op;
		head[1] = 126;
		head.writeUInt16BE(n, 2);
	} else {
		head = Buffer.alloc(10);
		head[0] = 0x80 | op;
		head[1] = 127;
		head.writeBigUInt64BE(BigInt(n), 2);
	}
	return Buffer.concat([head, payload]);
}

// Parses the client's (masked) frames off buf; calls onFrame(op, payload)
// for each whole one; returns what is left.
function unframe(buf, onFrame) {
	for (;;) {
		if (buf.length < 2) return buf;
		let n = buf[1] & 0x7f;
		let off = 2;
		if (n === 126) {
			if (buf.length < 4) return buf;
			n = buf.readUInt16BE(2);
			off = 4;
		} else if (n === 127) {
			if (buf.length < 10) return buf;
			n = Number(buf.readBigUInt64BE(2));
			off = 10;
		}
		const masked = buf[1] & 0x80;
		const mask = masked ? buf.slice(off, off + 4) : null;
		if (masked) off += 4;
		if (buf.length < off + n) return buf;
		const payload = Buffer.from(buf.slice(off, off + n));
		if (mask) for (let i = 0; i < n; i++) payload[i] ^= mask[i & 3];
		onFrame(buf[0] & 0x0f, payload);
		buf = buf.slice(off + n);
	}
}

function refuseUpgrade(socket, status, text) {
	socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nContent-Length: ${text.length}\r\nConnection: close\r\n\r\n${text}`);
}

function onUpgrade(b, d, req, socket, head) {
	const url = new URL(req.url, 'http://desktop');
	if (url.pathname !== '/websockify') return refuseUpgrade(socket, 404, 'Not Found');
	if (!tokenOk(url, d.token)) return refuseUpgrade(socket, 401, 'Unauthorized');
	const key = req.headers['sec-websocket-key'];
	if (!key || (req.headers.upgrade || '').toLowerCase() !== 'websocket') return refuseUpgrade(socket, 400, 'Bad Request');
	const accept = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
	const offered = (req.headers['sec-websocket-protocol'] || '').split(',').map((p) => p.trim());
	let reply = `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n`;
	if (offered.includes('binary')) reply += 'Sec-WebSocket-Protocol: binary\r\n';
	socket.write(reply + '\r\n');
	const p = containers.spawn(b.cid, ['python3', '-c', RELAY, VNC_SOCKET]);
	d.conns.add(socket);
	let pending = head && head.length ? Buffer.from(head) : Buffer.alloc(0);
	let closed = false;
	const end = (code, why) => {
		if (closed) return;
		closed = true;
		d.conns.delete(socket);
		const body = Buffer.alloc(2 + Buffer.byteLength(why));
		body.writeUInt16BE(code, 0);
		body.write(why, 2);
		if (!socket.destroyed) socket.end(frame(8, body));
		p.stdin.end();
		p.kill('SIGKILL');
	};
	const feed = (data) => {
		pending = unframe(Buffer.concat([pending, data]), (op, payload) => {
			if (op === 8) end(1000, '');
			else if (op === 9) socket.write(frame(10, payload));
			else if (op === 0 || op === 1 || op === 2) p.stdin.write(payload);
		});
	};
	p.stdin.on('error', () => {});
	p.stdout.on('data', (out) => {
		if (!closed) socket.write(frame(2, out));
	});
	p.on('close', () => end(1011, 'the VNC server closed the connection'));
	socket.on('data', feed);
	socket.on('close', () => end(1000, ''));
	socket.on('error', () => end(1000, ''));
	if (pending.length) feed(Buffer.alloc(0));
}

function closeDesktop(d) {
	if (!d || !d.server) return;
	d.server.close();
	d.server = null;
	for (const s of d.conns) s.destroy();
	d.conns.clear();
}

function dropDesktop(b) {
	closeDesktop(b.desktop);
	b.desktop = null;
}

// A loopback listener for box b's desktop: {token, port, server, conns}.
function startDesktop(b) {
	const d = { token: crypto.randomBytes(18).toString('base64url'), conns: new Set() };
	d.server = http.createServer((req, res) => {
		const url = new URL(req.url, 'http://desktop');
		if (!tokenOk(url, d.token)) return C.send(res, { status: 401, body: 'Unauthorized' });
		if (url.pathname !== '/vnc.html') return C.send(res, { status: 404, body: 'Not Found' });
		C.send(res, { status: 200, headers: { 'content-type': 'text/html' }, body: '<!doctype html><title>noVNC</title>' });
	});
	d.server.on('upgrade', (req, socket, head) => onUpgrade(b, d, req, socket, head));
	return new Promise((resolve, reject) => {
		d.server.once('error', reject);
		d.server.listen(0, '127.0.0.1', () => {
			d.port = d.server.address().port;
			resolve(d);
		});
	});
}

const handler = route;

async function control(ctx) {
	const parts = ctx.path.split('/').filter(Boolean);
	if (parts[1] === 'requests' && ctx.method === 'GET') return { status: 200, body: requests };
	if (parts[1] === 'requests' && ctx.method === 'DELETE') {
		requests.length = 0;
		return { status: 200, body: { ok: true } };
	}
	if (parts[1] === 'boxes' && parts.length === 2)
		return { status: 200, body: [...boxes.values()].map((b) => Object.assign(view(b), { desktop: !!b.desktop })) };
	if (parts[1] === 'boxes' && parts[3] === 'vanish' && ctx.method === 'POST') {
		const b = boxes.get(parts[2]);
		if (!b) return { status: 404, body: { message: 'no such box' } };
		dropDesktop(b);
		await containers.remove(b.cid);
		boxes.delete(b.id);
		return { status: 200, body: { ok: true } };
	}
	if (parts[1] === 'boxes' && parts[3] === 'desktop' && ctx.method === 'POST') {
		const b = boxes.get(parts[2]);
		if (!b || !b.desktop) return { status: 404, body: { message: 'no such box desktop' } };
		if (parts[4] === 'rotate') {
			b.desktop.token = crypto.randomBytes(18).toString('base64url');
			return { status: 200, body: { ok: true } };
		}
		if (parts[4] === 'down') {
			closeDesktop(b.desktop);
			return { status: 200, body: { ok: true } };
		}
		return null;
	}
	if (parts[1] === 'boxes' && parts[3] === 'expire' && ctx.method === 'POST') {
		const b = boxes.get(parts[2]);
		if (!b) return { status: 404, body: { message: 'no such box' } };
		await expire(b);
		return { status: 200, body: view(b) };
	}
	return null;
}

const { server } = C.serve({ handler, control, log: requests, port: args.port, portFile: args['port-file'] });
C.cleanupOnExit(containers, server);
