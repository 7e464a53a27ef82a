#!/usr/bin/env node
// The E2B emulator: a local server speaking the subset of the vendor's API
// that rakazo and the official SDKs (`e2b`, `@e2b/desktop`) call, on loopback.
//
//   node tests/emulators/e2b/server.mjs [--port N] [--port-file FILE] [--image IMAGE]
//
// Control plane (the OpenAPI spec the `e2b` package is generated from):
//   POST /sandboxes, POST /v2/sandboxes          create from a template
//   GET /sandboxes, GET /v2/sandboxes            list (v2 takes ?state=running,paused)
//   GET /sandboxes/{id}, DELETE /sandboxes/{id}
//   POST /sandboxes/{id}/timeout                 {"timeout": seconds}
//   POST /sandboxes/{id}/pause                   {"memory": false} drops memory (a stop)
//   POST /sandboxes/{id}/resume, POST /v2/sandboxes/{id}/connect
// Auth: X-API-Key (any non-empty key, or exactly $E2B_EMULATOR_API_KEY).
//
// envd, the in-sandbox daemon (E2B_SANDBOX_URL points the SDK here; the
// sandbox is named by the E2b-Sandbox-Id header the SDK sends, or by a Host
// of the form 49983-<id>.<domain>). Auth: X-Access-Token from create.
//   GET /health; GET /files?path= (download); POST /files?path= (multipart upload)
//   Connect RPC, JSON codec: /filesystem.Filesystem/{Stat,ListDir,MakeDir,Move,Remove}
//   /process.Process/{Start,Connect} (server streams, application/connect+json)
//   /process.Process/{List,SendInput,SendSignal,CloseStdin,Update}
//
// Each sandbox is a real container of the rakazo-computer image (--network
// none, labelled rakazo.test=$RAKAZO_TEST_LABEL and rakazo.e2b-emulator=<pid>),
// so files and processes are real. Pause is `docker pause` (memory kept) or,
// with memory false, `docker stop` (files kept); connect undoes either.
//
// The emulated "desktop" template is that image plus a few stand-ins for
// what the vendor's template has and ours lacks, mounted into /usr/local/bin:
// scrot (ImageMagick import) and startxfce4 (openbox run as xfwm4, and
// placeholders named xfce4-session and xfdesktop, which the desktop SDK waits
// for by name).
//
// Faults on demand (for tests):
//   POST /_emulator/faults {"method":"POST","path":"^/v2/sandboxes$","kind":"429|500|502|503|slow|drop|vanish",
//                           "count":1,"delay_ms":1500,"retry_after":"0"}
//     429/5xx: answered instead of the call; slow: delayed, then served;
//     drop: the call is carried out, then the connection is cut before the
//     reply; vanish: the sandbox's container is removed before the call.
//   GET /_emulator/requests   every call seen, [{"method","path","status"}]
//   DELETE /_emulator/faults, DELETE /_emulator/requests
//   POST /_emulator/sandboxes/{id}/vanish   the sandbox disappears now
//   POST /_emulator/sandboxes/{id}/expire   its timeout runs out now (pause or kill, per its lifecycle)
// On SIGTERM/SIGINT the emulator removes the containers it made.

import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const args = process.argv.slice(2);
function arg(name, def) {
	const i = args.indexOf(name);
	return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
}
const PORT = Number(arg('--port', process.env.E2B_EMULATOR_PORT || '0'));
const PORT_FILE = arg('--port-file', '');
const IMAGE = arg('--image', process.env.E2B_EMULATOR_IMAGE || '');
const DOCKER_SOCK = process.env.DOCKER_SOCK || '/var/run/docker.sock';
const TEST_LABEL = process.env.RAKAZO_TEST_LABEL || `e2b-emulator-${process.pid}`;
const API_KEY = process.env.E2B_EMULATOR_API_KEY || '';
const TEMPLATES = new Set((process.env.E2B_EMULATOR_TEMPLATES || 'desktop,base').split(','));
const ENVD_VERSION = '0.2.4';
const USER = 'user';

if (!IMAGE) {
	console.error('e2b emulator: --image IMAGE (or E2B_EMULATOR_IMAGE) is required');
	process.exit(2);
}

// --- docker ------------------------------------------------------------------

function docker(argv, input) {
	return new Promise((resolve) => {
		const child = execFile('docker', argv, { maxBuffer: 64 << 20, encoding: 'buffer' }, (err, stdout, stderr) => {
			resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr: stderr.toString() });
		});
		if (input !== undefined) child.stdin.end(input);
	});
}

// A request to the Docker Engine API; resolves {status, body(Buffer)}.
function engine(method, p, body) {
	return new Promise((resolve, reject) => {
		const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
		const req = http.request(
			{ socketPath: DOCKER_SOCK, method, path: p, headers: data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {} },
			(res) => {
				const chunks = [];
				res.on('data', (c) => chunks.push(c));
				res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
			},
		);
		req.on('error', reject);
		if (data) req.write(data);
		req.end();
	});
}

// Starts an exec and hands back its hijacked stream:
// {socket, id}; non-tty output is multiplexed (8-byte frame headers).
async function execStart(ctr, { cmd, env = [], cwd, tty = false, user = USER, rows = 24, cols = 80 }) {
	const created = await engine('POST', `/containers/${ctr}/exec`, {
		AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: tty,
		Cmd: cmd, Env: env, WorkingDir: cwd || undefined, User: user,
		ConsoleSize: tty ? [rows, cols] : undefined,
	});
	if (created.status !== 201) throw new Error(`docker exec: ${created.body.toString().trim()}`);
	const id = JSON.parse(created.body.toString()).Id;
	const socket = await new Promise((resolve, reject) => {
		const data = Buffer.from(JSON.stringify({ Detach: false, Tty: tty }));
		const req = http.request({
			socketPath: DOCKER_SOCK, method: 'POST', path: `/exec/${id}/start`,
			headers: { 'Content-Type': 'application/json', 'Content-Length': data.length, Connection: 'Upgrade', Upgrade: 'tcp' },
		});
		req.on('upgrade', (res, sock, head) => {
			if (head && head.length) sock.unshift(head);
			resolve(sock);
		});
		req.on('response', (res) => reject(new Error(`docker exec start: HTTP ${res.statusCode}`)));
		req.on('error', reject);
		req.end(data);
	});
	return { id, socket };
}

// Splits Docker's multiplexed stream into (stream, payload) callbacks.
function demux(onFrame) {
	let buf = Buffer.alloc(0);
	return (chunk) => {
		buf = Buffer.concat([buf, chunk]);
		while (buf.length >= 8) {
			const len = buf.readUInt32BE(4);
			if (buf.length < 8 + len) break;
			onFrame(buf[0], buf.subarray(8, 8 + len));
			buf = buf.subarray(8 + len);
		}
	};
}

async function execInspect(id) {
	for (let i = 0; i < 100; i++) {
		const r = await engine('GET', `/exec/${id}/json`);
		const j = JSON.parse(r.body.toString());
		if (!j.Running) return j;
		await new Promise((res) => setTimeout(res, 20));
	}
	return { ExitCode: -1 };
}

// Runs a command to its end: {code, stdout, stderr} (Buffers).
async function run(ctr, cmd, { input, user = USER, cwd } = {}) {
	const { id, socket } = await execStart(ctr, { cmd, user, cwd });
	const out = [], err = [];
	await new Promise((resolve) => {
		socket.on('data', demux((s, p) => (s === 2 ? err : out).push(Buffer.from(p))));
		socket.on('end', resolve);
		socket.on('close', resolve);
		socket.on('error', resolve);
		if (input !== undefined) socket.write(input);
		socket.end();
	});
	const info = await execInspect(id);
	return { code: info.ExitCode, stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
}

// --- the stand-ins of the desktop template ------------------------------------

const SHIMS = fs.mkdtempSync(path.join(os.tmpdir(), 'e2b-emulator-bin-'));
fs.chmodSync(SHIMS, 0o755);
function shim(name, text) {
	fs.writeFileSync(path.join(SHIMS, name), text, { mode: 0o755 });
}
shim('scrot', '#!/bin/sh\n# stand-in: scrot [--pointer] FILE, through ImageMagick\nfor a; do f=$a; done\nexec import -window root "$f"\n');
shim('startxfce4',
	'#!/bin/sh\n# stand-in for the vendor template\'s XFCE session: processes by the names\n' +
	'# the desktop SDK waits for (openbox as the window manager)\n' +
	'D=/tmp/e2b-emulator-session\nmkdir -p $D\n' +
	'ln -sf /usr/bin/sleep $D/xfce4-session\nln -sf /usr/bin/sleep $D/xfdesktop\nln -sf /usr/bin/openbox $D/xfwm4\n' +
	'$D/xfce4-session infinity &\n$D/xfdesktop infinity &\nHOME=/tmp $D/xfwm4 &\nwait\n');

// --- sandboxes ---------------------------------------------------------------

const sandboxes = new Map(); // id -> sandbox
const requests = [];
let faults = [];

function newId(n = 20) {
	const abc = 'abcdefghijklmnopqrstuvwxyz0123456789';
	let s = '';
	for (const b of crypto.randomBytes(n)) s += abc[b % abc.length];
	return s;
}

function sandboxJSON(s) {
	return {
		sandboxID: s.id, templateID: s.templateID, alias: s.templateID, clientID: 'emulator',
		startedAt: new Date(s.startedAt).toISOString(), endAt: new Date(s.endAt).toISOString(),
		cpuCount: 2, memoryMB: 1024, diskSizeMB: 4096, metadata: s.metadata,
		state: s.state, envdVersion: ENVD_VERSION, domain: null,
		lifecycle: { onTimeout: s.autoPause ? 'pause' : 'kill', autoResume: false },
	};
}

function createdJSON(s) {
	return {
		sandboxID: s.id, templateID: s.templateID, alias: s.templateID, clientID: 'emulator',
		envdVersion: ENVD_VERSION, envdAccessToken: s.token, trafficAccessToken: null, domain: null,
	};
}

function armTimer(s) {
	clearTimeout(s.timer);
	s.endAt = Date.now() + s.timeoutSec * 1000;
	s.timer = setTimeout(() => onTimeout(s), s.timeoutSec * 1000);
	s.timer.unref();
}

async function onTimeout(s) {
	if (!sandboxes.has(s.id) || s.state !== 'running') return;
	if (s.autoPause) await pauseSandbox(s, true);
	else await killSandbox(s);
}

async function createSandbox(body) {
	const id = newId();
	const env = [];
	for (const [k, v] of Object.entries(body.envVars || {})) env.push(`${k}=${v}`);
	const argv = ['run', '-d', '--network', 'none', '--label', `rakazo.test=${TEST_LABEL}`,
		'--label', `rakazo.e2b-emulator=${process.pid}`, '--label', `e2b.sandbox=${id}`,
		'--hostname', `e2b-${id.slice(0, 8)}`, '--shm-size', '256m'];
	for (const name of fs.readdirSync(SHIMS)) argv.push('-v', `${path.join(SHIMS, name)}:/usr/local/bin/${name}:ro`);
	for (const e of env) argv.push('-e', e);
	argv.push(IMAGE);
	const r = await docker(argv);
	if (r.code !== 0) throw Object.assign(new Error(`cannot start the sandbox: ${r.stderr.trim()}`), { status: 500 });
	const s = {
		id, ctr: r.stdout.toString().trim(), templateID: body.templateID, metadata: body.metadata || {},
		token: crypto.randomBytes(16).toString('hex'), state: 'running', memory: true,
		autoPause: !!body.autoPause, timeoutSec: Number(body.timeout || 15), startedAt: Date.now(), endAt: 0,
		procs: new Map(),
	};
	sandboxes.set(id, s);
	armTimer(s);
	return s;
}

async function pauseSandbox(s, memory) {
	clearTimeout(s.timer);
	for (const p of s.procs.values()) p.detach();
	if (memory) await docker(['pause', s.ctr]);
	else await docker(['stop', '-t', '2', s.ctr]);
	s.state = 'paused';
	s.memory = memory;
}

async function resumeSandbox(s, timeout) {
	if (s.memory) await docker(['unpause', s.ctr]);
	else await docker(['start', s.ctr]);
	s.state = 'running';
	if (timeout) s.timeoutSec = Number(timeout);
	armTimer(s);
}

async function killSandbox(s) {
	clearTimeout(s.timer);
	sandboxes.delete(s.id);
	for (const p of s.procs.values()) p.detach();
	await docker(['rm', '-f', s.ctr]);
}

// --- HTTP plumbing -------------------------------------------------------------

function send(res, status, body, headers = {}) {
	if (res.headersSent || res.destroyed) return;
	if (body === undefined || body === null) {
		res.writeHead(status, headers);
		res.end();
		return;
	}
	const data = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
	res.writeHead(status, { 'Content-Type': Buffer.isBuffer(body) ? 'application/octet-stream' : 'application/json', 'Content-Length': data.length, ...headers });
	res.end(data);
}

function apiError(res, status, message) {
	send(res, status, { code: status, message });
}

const CONNECT_STATUS = { invalid_argument: 400, unauthenticated: 401, permission_denied: 403, not_found: 404, already_exists: 409, failed_precondition: 412, resource_exhausted: 429, internal: 500, unavailable: 503, deadline_exceeded: 504 };
function connectError(res, code, message) {
	send(res, CONNECT_STATUS[code] || 500, { code, message });
}
class RpcError extends Error {
	constructor(code, message) {
		super(message);
		this.code = code;
	}
}

function readBody(req) {
	return new Promise((resolve, reject) => {
		const chunks = [];
		let n = 0;
		req.on('data', (c) => {
			n += c.length;
			if (n > 512 << 20) req.destroy();
			else chunks.push(c);
		});
		req.on('end', () => resolve(Buffer.concat(chunks)));
		req.on('error', reject);
	});
}

function json(buf) {
	if (!buf.length) return {};
	try {
		return JSON.parse(buf.toString());
	} catch {
		return undefined;
	}
}

// --- envd: files ---------------------------------------------------------------

// File type letter from find's %y to the protobuf enum.
const FILE_TYPES = { f: 'FILE_TYPE_FILE', d: 'FILE_TYPE_DIRECTORY', l: 'FILE_TYPE_SYMLINK' };
const FIND_FMT = '%y\\t%s\\t%m\\t%u\\t%g\\t%T@\\t%Y\\t%p\\t%l\\0';

function resolvePath(p, user) {
	if (!p) return `/home/${user}`;
	if (p.startsWith('~/')) return `/home/${user}/${p.slice(2)}`;
	if (!p.startsWith('/')) return `/home/${user}/${p}`;
	return p;
}

function entryFrom(rec) {
	const [y, size, mode, owner, group, mtime, ytarget, p, link] = rec.split('\t');
	const e = {
		name: path.posix.basename(p), type: FILE_TYPES[y] || 'FILE_TYPE_UNSPECIFIED', path: p,
		size: String(size), mode: parseInt(mode, 8) | (y === 'd' ? 0o20000000000 : 0), permissions: permString(y, parseInt(mode, 8)),
		owner, group, modifiedTime: new Date(Math.floor(Number(mtime) * 1000)).toISOString(),
	};
	if (y === 'l') {
		e.symlinkTarget = link;
		e.type = FILE_TYPES[ytarget] || 'FILE_TYPE_FILE';
	}
	return e;
}

function permString(y, m) {
	let s = y === 'd' ? 'd' : y === 'l' ? 'L' : '-';
	for (let i = 8; i >= 0; i--) s += m & (1 << i) ? 'rwx'[(8 - i) % 3] : '-';
	return s;
}

async function findEntries(s, p, depth) {
	const script = 'test -e "$1" || test -L "$1" || exit 44; ' +
		'if [ "$2" = 0 ]; then find "$1" -maxdepth 0 -printf "$3"; ' +
		'else test -d "$1" || exit 45; find "$1" -mindepth 1 -maxdepth "$2" -printf "$3"; fi';
	const r = await run(s.ctr, ['sh', '-c', script, 'sh', p, String(depth), FIND_FMT]);
	if (r.code === 44) throw new RpcError('not_found', `path '${p}' does not exist`);
	if (r.code === 45) throw new RpcError('invalid_argument', `path '${p}' is not a directory`);
	if (r.code !== 0) throw new RpcError('internal', `error reading '${p}': ${r.stderr.toString().trim()}`);
	return r.stdout.toString().split('\0').filter(Boolean).map(entryFrom);
}

const filesystem = {
	async Stat(s, q, user) {
		const p = resolvePath(q.path, user);
		return { entry: (await findEntries(s, p, 0))[0] };
	},
	async ListDir(s, q, user) {
		const p = resolvePath(q.path, user);
		return { entries: await findEntries(s, p, q.depth || 1) };
	},
	async MakeDir(s, q, user) {
		const p = resolvePath(q.path, user);
		const r = await run(s.ctr, ['sh', '-c', 'test -e "$1" && exit 46; mkdir -p -- "$1"', 'sh', p]);
		if (r.code === 46) throw new RpcError('already_exists', `directory '${p}' already exists`);
		if (r.code !== 0) throw new RpcError('internal', r.stderr.toString().trim());
		return { entry: (await findEntries(s, p, 0))[0] };
	},
	async Move(s, q, user) {
		const src = resolvePath(q.source, user), dst = resolvePath(q.destination, user);
		const r = await run(s.ctr, ['sh', '-c', 'test -e "$1" || exit 44; mkdir -p -- "$(dirname -- "$2")" && mv -- "$1" "$2"', 'sh', src, dst]);
		if (r.code === 44) throw new RpcError('not_found', `path '${src}' does not exist`);
		if (r.code !== 0) throw new RpcError('internal', r.stderr.toString().trim());
		return { entry: (await findEntries(s, dst, 0))[0] };
	},
	async Remove(s, q, user) {
		const p = resolvePath(q.path, user);
		const r = await run(s.ctr, ['sh', '-c', 'test -e "$1" || test -L "$1" || exit 44; rm -rf -- "$1"', 'sh', p]);
		if (r.code === 44) throw new RpcError('not_found', `path '${p}' does not exist`);
		if (r.code !== 0) throw new RpcError('internal', r.stderr.toString().trim());
		return {};
	},
};

// multipart/form-data: the parts' bodies, in order.
function multipartParts(body, contentType) {
	const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType || '');
	if (!m) return null;
	const boundary = Buffer.from(`--${m[1] || m[2]}`);
	const parts = [];
	let pos = body.indexOf(boundary);
	while (pos >= 0) {
		const start = pos + boundary.length;
		if (body.subarray(start, start + 2).toString() === '--') break;
		const headEnd = body.indexOf('\r\n\r\n', start);
		if (headEnd < 0) break;
		const next = body.indexOf(boundary, headEnd + 4);
		if (next < 0) break;
		const head = body.subarray(start, headEnd).toString();
		const fn = /filename="([^"]*)"/i.exec(head);
		parts.push({ filename: fn ? fn[1] : null, data: body.subarray(headEnd + 4, next - 2) });
		pos = next;
	}
	return parts;
}

async function filesGet(s, url, res, user) {
	const p = resolvePath(url.searchParams.get('path'), user);
	const r = await run(s.ctr, ['sh', '-c', 'test -e "$1" || exit 44; test -d "$1" && exit 45; cat -- "$1"', 'sh', p]);
	if (r.code === 44) return send(res, 404, { code: 404, message: `path '${p}' does not exist` });
	if (r.code === 45) return send(res, 400, { code: 400, message: `path '${p}' is a directory` });
	if (r.code !== 0) return send(res, 500, { code: 500, message: r.stderr.toString().trim() });
	send(res, 200, r.stdout, { 'Content-Disposition': `inline; filename="${path.posix.basename(p)}"` });
}

async function filesPost(s, url, req, res, user) {
	const body = await readBody(req);
	const parts = multipartParts(body, req.headers['content-type']);
	if (!parts || !parts.length) return send(res, 400, { code: 400, message: 'expected a multipart/form-data body with a file part' });
	const out = [];
	for (const part of parts) {
		const target = url.searchParams.get('path') || part.filename;
		if (!target) return send(res, 400, { code: 400, message: 'no path for the uploaded file' });
		const p = resolvePath(target, user);
		const r = await run(s.ctr, ['sh', '-c', 'test -d "$1" && exit 45; mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'sh', p], { input: part.data });
		if (r.code === 45) return send(res, 400, { code: 400, message: `path '${p}' is a directory` });
		if (r.code !== 0) return send(res, 500, { code: 500, message: r.stderr.toString().trim() });
		out.push({ name: path.posix.basename(p), type: 'file', path: p });
	}
	send(res, 200, out);
}

// --- envd: processes ------------------------------------------------------------

// The wrapper that makes the command its own process group and reports its
// pid inside the sandbox on stderr's first line, then becomes the command.
const WRAP = 'import os,sys\ntry:\n os.setpgid(0,0)\nexcept OSError:\n pass\n' +
	"os.write(2, b'E2BEMU_PID=%d\\n' % os.getpid())\nos.execvp(sys.argv[1], sys.argv[1:])";
const SIGNAL_NAMES = { 1: 'hangup', 2: 'interrupt', 3: 'quit', 6: 'aborted', 9: 'killed', 13: 'broken pipe', 14: 'alarm clock', 15: 'terminated' };

class Proc {
	constructor(s, config, tag, tty) {
		this.s = s;
		this.config = config;
		this.tag = tag;
		this.tty = tty;
		this.pid = 0;
		this.listeners = new Set();
		this.history = [];
		this.ended = null;
		this.pidKnown = null;
	}
	emit(ev) {
		if (!ev.start) this.history.push(ev);
		for (const l of this.listeners) l(ev);
	}
	async start(q) {
		const c = q.process || {};
		const env = Object.entries(c.envs || {}).map(([k, v]) => `${k}=${v}`);
		const cmd = ['python3', '-c', WRAP, c.cmd, ...(c.args || [])];
		const size = q.pty && q.pty.size ? q.pty.size : null;
		const { id, socket } = await execStart(this.s.ctr, {
			cmd, env, cwd: c.cwd, tty: this.tty, rows: size ? size.rows : 24, cols: size ? size.cols : 80,
		});
		this.execId = id;
		this.socket = socket;
		let head = Buffer.alloc(0), headDone = false;
		const onOut = (stream, payload) => {
			if (!headDone && (this.tty || stream === 2)) {
				head = Buffer.concat([head, payload]);
				const nl = head.indexOf(10);
				if (nl < 0) return;
				const m = /E2BEMU_PID=(\d+)/.exec(head.subarray(0, nl).toString());
				this.pid = m ? Number(m[1]) : 0;
				headDone = true;
				this.s.procs.set(this.pid, this);
				this.pidKnown();
				payload = head.subarray(nl + 1);
				if (!payload.length) return;
			}
			const key = this.tty ? 'pty' : stream === 2 ? 'stderr' : 'stdout';
			this.emit({ data: { [key]: payload.toString('base64') } });
		};
		socket.on('data', this.tty ? (c) => onOut(1, c) : demux(onOut));
		const known = new Promise((resolve) => (this.pidKnown = resolve));
		socket.on('close', async () => {
			if (!headDone) {
				headDone = true;
				this.pidKnown();
			}
			if (this.detached) return;
			const info = await execInspect(id);
			const code = info.ExitCode;
			const sig = this.signalled || (code > 128 && code < 160 ? code - 128 : 0);
			let end;
			if (sig && (this.signalled || code - 128 === sig) && SIGNAL_NAMES[sig])
				end = { exitCode: -1, exited: false, status: `signal: ${SIGNAL_NAMES[sig]}` };
			else end = { exitCode: code, exited: true, status: `exit status ${code}` };
			this.ended = end;
			this.s.procs.delete(this.pid);
			this.emit({ end });
		});
		socket.on('error', () => {});
		if (q.stdin !== true && !this.tty) socket.end();
		await known;
	}
	detach() {
		this.detached = true;
		if (this.socket) this.socket.destroy();
		for (const l of this.listeners) l(null);
	}
}

function selectProc(s, sel) {
	const p = sel && sel.pid !== undefined ? s.procs.get(Number(sel.pid)) : [...s.procs.values()].find((x) => sel && x.tag === sel.tag);
	if (!p) throw new RpcError('not_found', `process with ${sel && sel.pid !== undefined ? `pid ${sel.pid}` : `tag ${sel && sel.tag}`} not found`);
	return p;
}

function envelope(flags, obj) {
	const data = Buffer.from(JSON.stringify(obj));
	const h = Buffer.alloc(5);
	h[0] = flags;
	h.writeUInt32BE(data.length, 1);
	return Buffer.concat([h, data]);
}

function streamProc(p, res, fromStart) {
	res.writeHead(200, { 'Content-Type': 'application/connect+json' });
	if (fromStart) res.write(envelope(0, { event: { start: { pid: p.pid } } }));
	const keep = setInterval(() => res.write(envelope(0, { event: { keepalive: {} } })), 10000);
	const listener = (ev) => {
		if (!ev) {
			clearInterval(keep);
			res.destroy();
			return;
		}
		res.write(envelope(0, { event: ev }));
		if (ev.end) {
			clearInterval(keep);
			p.listeners.delete(listener);
			res.end(envelope(2, {}));
		}
	};
	res.on('close', () => {
		clearInterval(keep);
		p.listeners.delete(listener);
	});
	for (const ev of p.history) listener(ev);
	if (p.ended) return;
	p.listeners.add(listener);
}

const processUnary = {
	async List(s) {
		return { processes: [...s.procs.values()].map((p) => ({ config: p.config, pid: p.pid, tag: p.tag })) };
	},
	async SendInput(s, q) {
		const p = selectProc(s, q.process);
		const input = q.input || {};
		const data = Buffer.from(input.stdin || input.pty || '', 'base64');
		if (p.socket && !p.socket.destroyed) p.socket.write(data);
		return {};
	},
	async CloseStdin(s, q) {
		const p = selectProc(s, q.process);
		if (p.tty) throw new RpcError('failed_precondition', 'cannot close stdin of a pty process');
		if (p.socket && !p.socket.destroyed) p.socket.end();
		return {};
	},
	async SendSignal(s, q) {
		const p = selectProc(s, q.process);
		const sig = q.signal === 'SIGNAL_SIGKILL' || q.signal === 9 ? 9 : q.signal === 'SIGNAL_SIGTERM' || q.signal === 15 ? 15 : 0;
		if (!sig) throw new RpcError('invalid_argument', `unsupported signal ${q.signal}`);
		p.signalled = sig;
		await run(s.ctr, ['sh', '-c', 'kill -s "$1" -- "-$2" 2>/dev/null || kill -s "$1" "$2"', 'sh', String(sig), String(p.pid)]);
		return {};
	},
	async Update(s, q) {
		const p = selectProc(s, q.process);
		if (q.pty && q.pty.size && p.tty)
			await engine('POST', `/exec/${p.execId}/resize?h=${Number(q.pty.size.rows)}&w=${Number(q.pty.size.cols)}`);
		return {};
	},
};

// --- routing -------------------------------------------------------------------------

function takeFault(method, p) {
	for (const f of faults) {
		if (f.count <= 0) continue;
		if (f.method && f.method !== method) continue;
		if (f.path && !new RegExp(f.path).test(p)) continue;
		f.count--;
		return f;
	}
	return null;
}

async function control(req, res, url, f) {
	const p = url.pathname;
	const key = req.headers['x-api-key'];
	if (!key || (API_KEY && key !== API_KEY)) return apiError(res, 401, 'Invalid API key, it must start with e2b_ prefix');
	const body = req.method === 'POST' ? json(await readBody(req)) : {};
	if (body === undefined) return apiError(res, 400, 'request body is not valid JSON');
	let m;
	const done = (status, out) => {
		if (f && f.kind === 'drop') return res.socket.destroy();
		send(res, status, out);
	};
	if (req.method === 'POST' && (p === '/sandboxes' || p === '/v2/sandboxes')) {
		if (!body.templateID || typeof body.templateID !== 'string') return apiError(res, 400, 'templateID is required');
		if (!TEMPLATES.has(body.templateID)) return apiError(res, 404, `template '${body.templateID}' not found`);
		if (body.timeout !== undefined && (!Number.isInteger(body.timeout) || body.timeout < 0 || body.timeout > 86400))
			return apiError(res, 400, 'timeout must be an integer number of seconds up to 86400');
		const s = await createSandbox(body);
		return done(201, createdJSON(s));
	}
	if (req.method === 'GET' && (p === '/sandboxes' || p === '/v2/sandboxes')) {
		const states = (url.searchParams.get('state') || (p === '/sandboxes' ? 'running' : 'running,paused')).split(',');
		const meta = new URLSearchParams(url.searchParams.get('metadata') || '');
		const list = [...sandboxes.values()].filter((s) => states.includes(s.state) && [...meta].every(([k, v]) => s.metadata[k] === v));
		return done(200, list.map(sandboxJSON));
	}
	if ((m = /^\/(?:v2\/)?sandboxes\/([^/]+)(\/[a-z]+)?$/.exec(p))) {
		const s = sandboxes.get(m[1]);
		if (!s) return apiError(res, 404, `sandbox "${m[1]}" doesn't exist or you don't have access to it`);
		const verb = m[2] || '';
		if (req.method === 'GET' && verb === '') return done(200, sandboxJSON(s));
		if (req.method === 'DELETE' && verb === '') {
			await killSandbox(s);
			return done(204);
		}
		if (req.method === 'POST' && verb === '/timeout') {
			if (!Number.isInteger(body.timeout) || body.timeout < 0) return apiError(res, 400, 'timeout must be a non-negative integer');
			if (s.state !== 'running') return apiError(res, 409, `sandbox "${s.id}" is paused`);
			s.timeoutSec = body.timeout;
			armTimer(s);
			return done(204);
		}
		if (req.method === 'POST' && verb === '/pause') {
			if (s.state === 'paused') return apiError(res, 409, `sandbox "${s.id}" is already paused`);
			await pauseSandbox(s, body.memory !== false);
			return done(204);
		}
		if (req.method === 'POST' && (verb === '/resume' || verb === '/connect')) {
			if (s.state === 'running') {
				if (verb === '/resume') return apiError(res, 409, `sandbox "${s.id}" is already running`);
				if (body.timeout) {
					s.timeoutSec = Math.max(s.timeoutSec, Number(body.timeout));
					armTimer(s);
				}
				return done(200, createdJSON(s));
			}
			await resumeSandbox(s, body.timeout);
			return done(201, createdJSON(s));
		}
	}
	return apiError(res, 404, `no route for ${req.method} ${p}`);
}

async function envd(req, res, url, s, f) {
	const p = url.pathname;
	if (s.state !== 'running') return send(res, 502, { code: 502, message: `The sandbox ${s.id} is paused; connect to it to resume it` });
	if (p === '/health') return send(res, 204);
	const token = req.headers['x-access-token'];
	if (token !== s.token) return send(res, 401, { code: 401, message: 'invalid or missing X-Access-Token' });
	const user = url.searchParams.get('username') || USER;
	if (p === '/files' && req.method === 'GET') return filesGet(s, url, res, user);
	if (p === '/files' && req.method === 'POST') return filesPost(s, url, req, res, user);
	const m = /^\/(filesystem\.Filesystem|process\.Process)\/([A-Za-z]+)$/.exec(p);
	if (!m || req.method !== 'POST') return send(res, 404, { code: 404, message: `no route for ${req.method} ${p}` });
	const [, service, method] = m;
	const raw = await readBody(req);
	const streaming = service === 'process.Process' && (method === 'Start' || method === 'Connect');
	let q;
	if (streaming) {
		if (!/^application\/connect\+json/.test(req.headers['content-type'] || ''))
			return connectError(res, 'invalid_argument', 'a streaming call takes application/connect+json');
		if (raw.length < 5 || raw.readUInt32BE(1) !== raw.length - 5) return connectError(res, 'invalid_argument', 'malformed envelope');
		q = json(raw.subarray(5));
	} else {
		if (!/^application\/json/.test(req.headers['content-type'] || '')) return connectError(res, 'invalid_argument', 'a unary call takes application/json');
		q = json(raw);
	}
	if (q === undefined) return connectError(res, 'invalid_argument', 'the request is not valid JSON');
	try {
		if (service === 'filesystem.Filesystem') {
			if (!filesystem[method]) throw new RpcError('unimplemented', `${method} is not implemented`);
			const out = await filesystem[method](s, q, user);
			if (f && f.kind === 'drop') return res.socket.destroy();
			return send(res, 200, out);
		}
		if (method === 'Start') {
			const c = q.process;
			if (!c || !c.cmd) throw new RpcError('invalid_argument', 'process.cmd is required');
			const proc = new Proc(s, { cmd: c.cmd, args: c.args || [], envs: c.envs || {}, cwd: c.cwd }, q.tag, !!q.pty);
			await proc.start(q);
			if (f && f.kind === 'drop') return res.socket.destroy();
			return streamProc(proc, res, true);
		}
		if (method === 'Connect') return streamProc(selectProc(s, q.process), res, false);
		if (!processUnary[method]) throw new RpcError('unimplemented', `${method} is not implemented`);
		const out = await processUnary[method](s, q);
		if (f && f.kind === 'drop') return res.socket.destroy();
		return send(res, 200, out);
	} catch (e) {
		if (e instanceof RpcError) {
			if (streaming && res.headersSent) return res.end(envelope(2, { error: { code: e.code, message: e.message } }));
			return connectError(res, e.code, e.message);
		}
		throw e;
	}
}

function envdSandbox(req) {
	const id = req.headers['e2b-sandbox-id'];
	if (id) return { id };
	const host = (req.headers.host || '').split(':')[0];
	const m = /^(\d+)-([a-z0-9]+)\./.exec(host);
	if (m) return { id: m[2], port: m[1] };
	return null;
}

async function admin(req, res, url) {
	const p = url.pathname;
	let m;
	if (p === '/_emulator/faults' && req.method === 'POST') {
		const f = json(await readBody(req));
		if (!f || !f.kind) return send(res, 400, { message: 'a fault needs a kind' });
		faults.push({ count: 1, ...f });
		return send(res, 201, { faults });
	}
	if (p === '/_emulator/faults' && req.method === 'DELETE') {
		faults = [];
		return send(res, 204);
	}
	if (p === '/_emulator/requests' && req.method === 'GET') return send(res, 200, requests);
	if (p === '/_emulator/requests' && req.method === 'DELETE') {
		requests.length = 0;
		return send(res, 204);
	}
	if (p === '/_emulator/sandboxes' && req.method === 'GET')
		return send(res, 200, [...sandboxes.values()].map((s) => ({ ...sandboxJSON(s), container: s.ctr })));
	if ((m = /^\/_emulator\/sandboxes\/([^/]+)\/vanish$/.exec(p)) && req.method === 'POST') {
		const s = sandboxes.get(m[1]);
		if (!s) return send(res, 404, { message: 'no such sandbox' });
		await killSandbox(s);
		return send(res, 204);
	}
	if ((m = /^\/_emulator\/sandboxes\/([^/]+)\/expire$/.exec(p)) && req.method === 'POST') {
		const s = sandboxes.get(m[1]);
		if (!s) return send(res, 404, { message: 'no such sandbox' });
		await onTimeout(s);
		return send(res, 204);
	}
	return send(res, 404, { message: 'no such emulator route' });
}

async function handle(req, res) {
	const url = new URL(req.url, 'http://emulator');
	if (url.pathname.startsWith('/_emulator/')) return admin(req, res, url);
	const entry = { method: req.method, path: url.pathname, sandbox: req.headers['e2b-sandbox-id'] || null, status: 0 };
	requests.push(entry);
	if (requests.length > 5000) requests.shift();
	res.on('finish', () => (entry.status = res.statusCode));
	const f = takeFault(req.method, url.pathname);
	if (f) {
		entry.fault = f.kind;
		if (/^\d+$/.test(f.kind)) {
			const h = f.kind === '429' || f.kind === '503' ? { 'Retry-After': String(f.retry_after ?? '0') } : {};
			return send(res, Number(f.kind), { code: Number(f.kind), message: `emulated fault ${f.kind}` }, h);
		}
		if (f.kind === 'slow') await new Promise((r) => setTimeout(r, f.delay_ms || 2000));
		if (f.kind === 'vanish') {
			const sb = envdSandbox(req) || {};
			const id = sb.id || (/sandboxes\/([^/]+)/.exec(url.pathname) || [])[1];
			const s = sandboxes.get(id);
			if (s) await killSandbox(s);
		}
	}
	const sb = envdSandbox(req);
	if (sb && (!sb.port || sb.port === '49983')) {
		const s = sandboxes.get(sb.id);
		if (!s) return send(res, 502, { code: 502, message: `The sandbox ${sb.id} was not found`, sandboxId: sb.id });
		return envd(req, res, url, s, f);
	}
	return control(req, res, url, f);
}

const server = http.createServer((req, res) => {
	handle(req, res).catch((e) => {
		console.error('e2b emulator:', e && e.stack ? e.stack : e);
		if (!res.headersSent) send(res, e.status || 500, { code: e.status || 500, message: String(e.message || e) });
		else res.destroy();
	});
});
server.keepAliveTimeout = 30000;
server.requestTimeout = 0;

async function shutdown() {
	server.close();
	await Promise.all([...sandboxes.values()].map((s) => docker(['rm', '-f', s.ctr])));
	fs.rmSync(SHIMS, { recursive: true, force: true });
	process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

server.listen(PORT, '127.0.0.1', () => {
	const port = server.address().port;
	if (PORT_FILE) fs.writeFileSync(PORT_FILE + '.tmp', `${port}\n`), fs.renameSync(PORT_FILE + '.tmp', PORT_FILE);
	console.log(`e2b emulator: listening on http://127.0.0.1:${port} (image ${IMAGE})`);
});
