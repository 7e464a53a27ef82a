'use strict';
// Shared parts of the vendor emulators (daytona, box): real sandboxes as
// local containers of the rakazo-computer image (--network none, labelled
// with RAKAZO_TEST_LABEL so the test harness can find them), the HTTP
// plumbing, and faults injected on demand through /_emulator/faults.
//
// A fault rule: {"method":"POST","path":"/sandbox$","status":503,
// "delay_ms":0,"drop":"before"|"after","times":1,"body":{...}}. "path" is
// a regular expression over the request path (no query). "drop":"after"
// lets the request take effect and then closes the connection without a
// reply; "before" closes it untouched. "status" answers with that status
// (and "body") instead of running the call; "delay_ms" alone slows it.

const { spawn } = require('child_process');
const http = require('http');
const fs = require('fs');

const LABEL = process.env.RAKAZO_TEST_LABEL || `emulator-${process.pid}`;

function parseArgs(argv) {
	const out = {};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a.startsWith('--')) {
			const k = a.slice(2);
			const v = argv[i + 1] && !argv[i + 1].startsWith('--') ? argv[++i] : '1';
			out[k] = v;
		}
	}
	return out;
}

// Runs the docker CLI; resolves {code, stdout, stderr} (Buffers).
function docker(args, input) {
	return new Promise((resolve) => {
		const p = spawn('docker', args, { stdio: ['pipe', 'pipe', 'pipe'] });
		const out = [];
		const err = [];
		p.stdout.on('data', (d) => out.push(d));
		p.stderr.on('data', (d) => err.push(d));
		p.on('error', (e) => resolve({ code: 127, stdout: Buffer.alloc(0), stderr: Buffer.from(String(e)) }));
		p.on('close', (code, sig) =>
			resolve({ code: code === null ? 128 + 9 : code, stdout: Buffer.concat(out), stderr: Buffer.concat(err) }),
		);
		p.stdin.on('error', () => {});
		if (input !== undefined) p.stdin.end(input);
		else p.stdin.end();
	});
}

class Containers {
	constructor(kind, image) {
		this.kind = kind;
		this.image = image;
		this.ids = new Set();
	}
	async create(sandboxId, env) {
		const args = ['run', '-d', '--network', 'none', '--shm-size', '256m'];
		args.push('--label', `rakazo.test=${LABEL}`, '--label', `rakazo.emulator=${this.kind}`);
		args.push('--label', `rakazo.sandbox=${sandboxId}`, '--name', `rakazo-${this.kind}-${sandboxId}`);
		for (const [k, v] of Object.entries(env || {})) args.push('-e', `${k}=${v}`);
		args.push(this.image);
		const r = await docker(args);
		if (r.code !== 0) throw new Error(`docker run failed: ${r.stderr.toString().trim()}`);
		const cid = r.stdout.toString().trim();
		this.ids.add(cid);
		return cid;
	}
	async state(cid) {
		const r = await docker(['inspect', '-f', '{{.State.Status}}', cid]);
		if (r.code !== 0) return 'gone';
		return r.stdout.toString().trim();
	}
	async start(cid) {
		const r = await docker(['start', cid]);
		if (r.code !== 0) throw new Error(`docker start failed: ${r.stderr.toString().trim()}`);
	}
	async stop(cid) {
		await docker(['stop', '-t', '2', cid]);
	}
	async remove(cid) {
		await docker(['rm', '-f', cid]);
		this.ids.delete(cid);
	}
	// Runs argv in the container as uid 1000; resolves {code, stdout, stderr}.
	exec(cid, argv, opts = {}) {
		return docker(this.execArgs(cid, argv, opts), opts.input);
	}
	execArgs(cid, argv, opts = {}) {
		const args = ['exec', '-i', '-u', '1000'];
		if (opts.cwd) args.push('-w', opts.cwd);
		for (const [k, v] of Object.entries(opts.env || {})) args.push('-e', `${k}=${v}`);
		args.push(cid, ...argv);
		return args;
	}
	spawn(cid, argv, opts = {}) {
		return spawn('docker', this.execArgs(cid, argv, opts), { stdio: ['pipe', 'pipe', 'pipe'] });
	}
	async removeAll() {
		const ids = [...this.ids];
		await Promise.all(ids.map((c) => this.remove(c)));
	}
}

function readBody(req, limit = 512 * 1024 * 1024) {
	return new Promise((resolve, reject) => {
		const chunks = [];
		let n = 0;
		req.on('data', (d) => {
			n += d.length;
			if (n > limit) {
				reject(new Error('body too large'));
				req.destroy();
				return;
			}
			chunks.push(d);
		});
		req.on('end', () => resolve(Buffer.concat(chunks)));
		req.on('error', reject);
	});
}

// multipart/form-data: [{name, filename, data(Buffer)}]
function parseMultipart(body, contentType) {
	const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType || '');
	if (!m) throw new Error('multipart body without a boundary');
	const boundary = Buffer.from(`--${m[1] || m[2]}`);
	const parts = [];
	let pos = body.indexOf(boundary);
	while (pos >= 0) {
		pos += boundary.length;
		if (body.slice(pos, pos + 2).toString() === '--') break;
		pos += 2; // CRLF
		const headEnd = body.indexOf('\r\n\r\n', pos);
		if (headEnd < 0) break;
		const head = body.slice(pos, headEnd).toString();
		const next = body.indexOf(boundary, headEnd + 4);
		if (next < 0) break;
		const data = body.slice(headEnd + 4, next - 2);
		const name = /name="([^"]*)"/i.exec(head);
		const filename = /filename="([^"]*)"/i.exec(head);
		parts.push({ name: name ? name[1] : '', filename: filename ? filename[1] : null, data });
		pos = next;
	}
	return parts;
}

class Faults {
	constructor() {
		this.rules = [];
	}
	add(rule) {
		const r = Object.assign({ times: 1 }, rule);
		r.re = new RegExp(r.path || '.*');
		this.rules.push(r);
	}
	match(method, path) {
		for (const r of this.rules) {
			if (r.times <= 0) continue;
			if (r.method && r.method !== method) continue;
			if (!r.re.test(path)) continue;
			r.times--;
			return r;
		}
		return null;
	}
	clear() {
		this.rules = [];
	}
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A reply: {status, body (object -> JSON | Buffer | string), headers}.
function send(res, reply) {
	const headers = Object.assign({}, reply.headers || {});
	let body = reply.body;
	if (body === undefined || body === null) body = '';
	if (!Buffer.isBuffer(body) && typeof body !== 'string') {
		body = JSON.stringify(body);
		headers['content-type'] = headers['content-type'] || 'application/json';
	}
	headers['content-length'] = Buffer.byteLength(body);
	res.writeHead(reply.status || 200, headers);
	res.end(body);
}

// Serves handler(ctx) -> reply under the fault rules and the emulator's own
// control routes. ctx: {method, path, query, headers, body, req}. Every
// request (faults too) goes into opts.log: {method, path, status (0: no
// reply), fault}.
function serve(opts) {
	const faults = new Faults();
	const server = http.createServer(async (req, res) => {
		const url = new URL(req.url, 'http://emulator');
		const ctx = { method: req.method, path: url.pathname, query: url.searchParams, headers: req.headers, req };
		try {
			ctx.body = await readBody(req);
			if (ctx.path === '/_emulator/faults') {
				if (req.method === 'DELETE') faults.clear();
				else faults.add(JSON.parse(ctx.body.toString() || '{}'));
				return send(res, { status: 200, body: { ok: true } });
			}
			if (ctx.path.startsWith('/_emulator/')) {
				const r = await opts.control(ctx);
				return send(res, r || { status: 404, body: { message: 'no such control route' } });
			}
			const rule = faults.match(req.method, ctx.path);
			const note = (status) => {
				if (opts.log) opts.log.push({ method: req.method, path: ctx.path, status, fault: !!rule });
				if (opts.log && opts.log.length > 5000) opts.log.shift();
			};
			if (rule && rule.delay_ms) await sleep(rule.delay_ms);
			if (rule && rule.drop === 'before') {
				note(0);
				return req.socket.destroy();
			}
			if (rule && rule.status) {
				note(rule.status);
				const headers = rule.retry_after !== undefined ? { 'retry-after': String(rule.retry_after) } : {};
				return send(res, {
					status: rule.status,
					headers,
					body: rule.body || { statusCode: rule.status, message: `injected fault ${rule.status}` },
				});
			}
			const reply = await opts.handler(ctx);
			note(rule && rule.drop === 'after' ? 0 : reply.status || 200);
			if (rule && rule.drop === 'after') return req.socket.destroy();
			send(res, reply);
		} catch (e) {
			send(res, { status: 500, body: { statusCode: 500, message: String(e && e.message ? e.message : e) } });
		}
	});
	const port = Number(opts.port || 0);
	server.listen(port, '127.0.0.1', () => {
		const addr = server.address();
		const line = `http://127.0.0.1:${addr.port}`;
		if (opts.portFile) fs.writeFileSync(opts.portFile + '.tmp', line + '\n');
		if (opts.portFile) fs.renameSync(opts.portFile + '.tmp', opts.portFile);
		process.stdout.write(`listening ${line}\n`);
	});
	return { server, faults };
}

// Removes every container on SIGTERM/SIGINT, and when stdin closes with
// --exit-with-stdin (the test harness dies, the emulator follows).
function cleanupOnExit(containers, server) {
	let done = false;
	const bye = async () => {
		if (done) return;
		done = true;
		server.close();
		await containers.removeAll();
		process.exit(0);
	};
	process.on('SIGTERM', bye);
	process.on('SIGINT', bye);
	// the harness that started us went away (killed): so do we, and our containers
	const parent = process.ppid;
	setInterval(() => {
		try {
			process.kill(parent, 0);
		} catch (e) {
			bye();
		}
	}, 1000).unref();
	return bye;
}

function shq(s) {
	return `'${String(s).replace(/'/g, `'\\''`)}'`;
}

module.exports = { parseArgs, docker, Containers, serve, send, parseMultipart, cleanupOnExit, sleep, shq, LABEL };
